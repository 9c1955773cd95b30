"""The older-Spark lanes.

The collection submits ``spark_app`` with the cluster's own ``spark-submit``,
so the application meets Spark 3.3 to 4.x. The main test run uses the
pinned pyspark (4.x) and runs every test there once. Each lane here installs
another pyspark (and Python) into its own virtualenv and runs, with that
Spark, only the tests whose behaviour can differ between Spark lines: what
goes through the compat seam (``spark_app/lakekeeper_spark/compat``: Scala
collections, catalog case classes, the Hive client, Parquet/ORC file joins),
the formats and codecs Spark writes, the content checksums Spark computes,
the rewrite and its pieces, fidelity of types and properties, and the
catalog. The protocol around them (journal, lease, swap, recovery, policy,
history) makes the same Hadoop FileSystem and Metastore calls whatever the
line, so the main line proves it; the merge's crash world runs on the oldest
line, with real processes.

What a lane runs is chosen by words on its ``# lane`` line of
requirements.txt (the one place versions are pinned):

- every lane but a ``seam`` one: the lifecycle, ``LIFECYCLE`` (the engine CLI under that
  Spark's ``spark-submit`` on the test bed: compact, rollback,
  compact, cleanup, a second process reading the table through the
  Metastore service after the first compaction and at the end), with the lane's Python packed by the
  ``lakekeeper.hive.python_env`` role (venv-pack, the real
  ``ansible-playbook``) as the driver's and the executors' Python, the way a
  cluster runs it (``LAKEKEEPER_APP_PYTHON``); and ``SUBMIT``, the argv and
  properties file the modules build for a secret-looking ``extra_conf`` key
  run by that Spark's own ``spark-submit`` (``--load-spark-defaults`` only
  exists from Spark 4.0: on 3.x the file must carry spark-defaults.conf);
- ``line``: the engine files in ``LINE_DEPENDENT`` (the oldest line, on
  the oldest Python, so that every module is imported and run on 3.9 too);
- ``seam``: ``SEAM``, the compat seam's own tests and the one rewrite whose
  path differs on the middle line (Scala 2.12 with parquet-mr 1.13's
  ParquetRewriter: only 3.5 has both), and ``SUBMIT``; not the lifecycle, whose
  spark-submit, Python packing and Scala line the oldest lane (3.3, Scala
  2.12) and the main line (4.x, Scala 2.13: inside test_playbooks_on_the_testbed)
  already run (about 100 CPU s
  a run: the lifecycle and the lane's own Spark master and worker);
- ``crash``: ``CRASH_TESTS`` (the merge killed at its journal steps, which
  scripts/test runs on the main line since 2026-11-30: no default lane is
  marked ``crash``; by hand, to kill a merge under another line's client);
- ``full``: the whole engine suite instead of ``LINE_DEPENDENT``, and a
  partitioned table killed at every compaction and rollback step, then
  ``recover`` (by hand: ``scripts/spark-lanes spark-3.4``).

The lifecycle uses the suite's one test bed when ``LAKEKEEPER_TESTBED_SHARED``
names it (scripts/suite.py: only the lane's own Spark master and worker are
started), else a test bed of its own. Lanes marked ``default`` run in
scripts/test. A venv is reused while its pins are unchanged (a stamp), in
``~/.cache/lakekeeper/lanes`` (``LAKEKEEPER_LANES_DIR``), so a second run,
even from a fresh clone, costs no install.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIFECYCLE = "tests/testbed/test_engine_on_testbed.py::test_cli_under_spark_submit_on_the_standalone_cluster"
# Every lane: the modules' spark-submit argv with a secret key, under the lane's spark-submit.
SUBMIT = "tests/engine/test_submit_secret_properties.py"
# The merge killed at its journal steps: on a lane marked ``crash`` (none by default: the main line runs it). The lane's
# crash matrix of one shape (a partitioned table killed at every step) only where the whole
# engine suite runs (``full``, by hand): the main line's file world kills the same shape at
# every step with the same FileSystem and Metastore calls, and the lane's own Hadoop client's
# renames are tested by test_engine.py there (110 CPU seconds saved a run).
CRASH_TESTS = ["tests/crash/test_crash_merge.py"]
FULL_CRASH_TESTS = ["tests/crash/test_crash_matrix.py::test_older_spark_lane_crash_matrix_one_shape"]
# The engine tests whose behaviour can differ between Spark lines (see the
# docstring); every other engine test runs on the main line only. Within a file,
# the tests of the protocol around a rewrite (refusals, journal and backups,
# rollback bookkeeping, database mode, merges) are left out: they make the same
# FileSystem and Metastore calls on every line.
LINE_DEPENDENT = [
    "tests/engine/test_compat.py",                # the seam itself
    "tests/engine/test_py4j_releases.py",         # py4j's releases in batches: py4j 0.10.9.5 (3.3) to .9 (4.x)
    # formats and codecs, the rewrite and its pieces, footers, the Hadoop client's listing and permissions,
    # the catalog (partitions outside the root, bulk listing, statistics), a full cycle
    *(f"tests/engine/test_engine.py::{t}" for t in (
        "test_non_partitioned_parquet_full_cycle",
        "test_two_level_partitions_with_one_outside_the_root",
        "test_formats_keep_their_codec",
        "test_rename_and_delete_refuse_what_they_must_and_say_why",
        "test_directory_names_match_hadoops_listing",
        "test_local_permission_copy_matches_hadoops",
        "test_verification_takes_rows_codec_and_schema_from_each_footer",
        "test_secret_properties_file_reads_the_same_in_java_and_the_engine",
        "test_files_fewer_than_the_cores_are_written_in_pieces_and_joined",
        "test_output_file_sizes_and_bulk_partition_listing",
        "test_statistics_retention_pins_and_analyze_sizes",
    )),
    "tests/engine/test_unit_formats_rules.py",    # what each format's unit may be written as
    # the checksums Spark computes (a changed value, null apart from empty)
    "tests/engine/test_content_verification.py::test_a_changed_value_is_caught_by_content_and_missed_by_rows",
    "tests/engine/test_content_verification.py::test_content_is_verified_by_default_and_sees_null_apart_from_empty",
    # the serde's properties, delimiters and each partition's own descriptor, as each line's Hive client reads them
    *(f"tests/engine/test_fidelity.py::{t}" for t in (
        "test_hive_default_control_character_delimiters",
        "test_table_properties_the_serde_reads_reach_the_written_files",
        "test_text_properties_a_rewrite_cannot_honour_are_refused",
        "test_each_partition_is_written_with_its_own_storage_descriptor",
        "test_content_verification_reads_a_partition_with_its_own_descriptor",
    )),
    "tests/engine/test_unit_fidelity.py",         # each unit's codec, layout and writer schema
    "tests/engine/test_catalog_check.py",         # the catalog's own reading of a table
    "tests/engine/test_schema_drift.py",          # Hive DDL run through each line's Hive client
    # the names each line's Spark skips
    "tests/engine/test_unreadable_files.py::test_a_partition_holding_a_file_spark_skips_is_refused_and_the_others_compact",
    "tests/engine/test_spark_dropped_values.py",  # what each line's readers decode (nanoseconds, timestamp types)
    "tests/engine/test_planner.py",               # pure, on the oldest Python
    "tests/engine/test_import_graph.py",          # every module imports on the oldest Python
]
SEAM = [
    "tests/engine/test_compat.py",
    "tests/engine/test_py4j_releases.py",
    "tests/engine/test_engine.py::test_files_fewer_than_the_cores_are_written_in_pieces_and_joined",
]
_WORDS = ("default", "crash", "full", "line", "seam")
_LANE = re.compile(r"^#\s*lane\s+(?P<name>[\w.-]+)\s+(?P<rest>.+)$")


def lanes() -> list[dict]:
    out = []
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        m = _LANE.match(line.strip())
        if not m:
            continue
        words = m.group("rest").split()
        lane = {"name": m.group("name"), "python": None, "pins": [],
                **{word: word in words for word in _WORDS}}
        for w in words:
            if w.startswith("python="):
                lane["python"] = w.split("=", 1)[1]
            elif w not in _WORDS:
                lane["pins"].append(w)
        if not lane["python"] or not any(p.startswith("pyspark==") for p in lane["pins"]):
            raise SystemExit(f"spark-lanes: lane {lane['name']} needs python=X.Y and pyspark==V: {line}")
        out.append(lane)
    return out


def cache_dir() -> Path:
    """Where runs keep what they build once (virtualenvs, the JVM archive):
    outside the clone, so a fresh clone of the same pins reuses them."""
    return Path(os.environ.get("LAKEKEEPER_CACHE") or Path.home() / ".cache" / "lakekeeper")


def find_python(version: str) -> str | None:
    """A working interpreter of ``version`` (X.Y): pyenv's, else on PATH
    (a pyenv shim on PATH may point at no installed version: each
    candidate is run once)."""
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    candidates = sorted(glob.glob(os.path.join(root, "versions", f"{version}.*", "bin", f"python{version}")))
    candidates += [c for c in (shutil.which(f"python{version}"),) if c]
    for cand in candidates:
        try:
            out = subprocess.run([cand, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                 capture_output=True, text=True, timeout=30, check=False)
        except OSError:
            continue
        if out.returncode == 0 and out.stdout.strip() == version:
            return cand
    return None


def ensure_venv(lane: dict, base: Path) -> tuple[Path, str]:
    """The lane's virtualenv (created or refreshed); returns (python, note)."""
    note = ""
    interp = find_python(lane["python"])
    if interp is None:
        interp = sys.executable
        note = (f"python {lane['python']} not found (PATH, pyenv); "
                f"ran on {sys.version_info[0]}.{sys.version_info[1]}")
        print(f"spark-lanes: WARNING {lane['name']}: {note}", flush=True)
    venv = base / lane["name"]
    py = venv / "bin" / "python"
    want = hashlib.sha256((interp + "\n" + "\n".join(lane["pins"])).encode()).hexdigest()
    stamp = venv / ".lane.sha256"
    if py.exists() and stamp.exists() and stamp.read_text().strip() == want:
        return py, note
    if venv.exists():
        shutil.rmtree(venv)
    t0 = time.monotonic()
    subprocess.run([interp, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", *lane["pins"]], check=True)
    stamp.write_text(want + "\n")
    print(f"spark-lanes: {lane['name']}: installed {' '.join(lane['pins'])} on {interp} "
          f"in {time.monotonic() - t0:.0f} s", flush=True)
    return py, note


def runtime_pins() -> list[str]:
    """The ``--- runtime`` section of requirements.txt minus pyspark (what
    the python_env role packs: the cluster provides Spark)."""
    pins, inside = [], False
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        text = line.strip()
        if text.startswith("# ---"):
            inside = text.startswith("# --- runtime")
        elif inside and text and not text.startswith(("#", "pyspark")):
            pins.append(text)
    return pins


def packed_env(lane: dict, base: Path, lane_python: Path) -> Path:
    """The lane's Python packed by the python_env role (run with this
    interpreter's ansible-playbook) and unpacked as a container would
    (``--archives <name>.tar.gz#lakekeeper_env``); returns its python."""
    info = subprocess.run([str(lane_python), "-c", "import sys; print(sys.base_prefix); print('%d.%d' % sys.version_info[:2])"],
                          capture_output=True, text=True, check=True).stdout.split()
    prefix, version = info[0], info[1]
    work = base / f"{lane['name']}-packed"
    target = work / "unpacked" / "lakekeeper_env"
    # reused while the interpreter, the pins and the role are unchanged (a stamp, like the venvs)
    role = sorted(p for p in (ROOT / "roles" / "python_env").rglob("*") if p.is_file())
    want = hashlib.sha256("\n".join([str(lane_python), prefix, *runtime_pins()]).encode()
                          + b"".join(p.read_bytes() for p in role)).hexdigest()
    stamp = work / ".packed.sha256"
    if (target / "bin" / "python").exists() and stamp.exists() and stamp.read_text().strip() == want:
        return target / "bin" / "python"
    (work / "collections" / "ansible_collections" / "lakekeeper").mkdir(parents=True, exist_ok=True)
    link = work / "collections" / "ansible_collections" / "lakekeeper" / "hive"
    if not link.exists():
        link.symlink_to(ROOT, target_is_directory=True)
    role_vars = {"python_env_dest": str(work / "dest"), "python_env_interpreter": f"{prefix}/bin/python{version}",
                 "python_env_python_prefix": prefix, "python_env_packages": runtime_pins()}
    play = work / "pack.yml"
    play.write_text(
        "- name: Pack the lane's Python\n  hosts: localhost\n  gather_facts: false\n  tasks:\n"
        "    - name: Build and publish the archive\n      ansible.builtin.include_role:\n"
        "        name: lakekeeper.hive.python_env\n")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(work / "collections"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    t0 = time.monotonic()
    bindir = Path(sys.executable).parent
    proc = subprocess.run([str(bindir / "ansible-playbook"), "-i", "localhost,", "-c", "local",
                           "-e", f"ansible_python_interpreter={sys.executable}", "-e", json.dumps(role_vars), str(play)],
                          cwd=str(work), env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"spark-lanes: {lane['name']}: the python_env role failed (rc {proc.returncode}):\n"
                         + (proc.stdout + proc.stderr)[-4000:])
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    with tarfile.open(work / "dest" / "lakekeeper_env.tar.gz") as tar:
        tar.extractall(target)  # noqa: S202 - the archive this run just built
    stamp.write_text(want + "\n")
    print(f"spark-lanes: {lane['name']}: packed Python {version} ({', '.join(role_vars['python_env_packages'])}) "
          f"with the python_env role in {time.monotonic() - t0:.0f} s", flush=True)
    return target / "bin" / "python"


def lane_tests(lane: dict) -> list[str]:
    """The pytest arguments of the lane's one session (see the docstring)."""
    if lane.get("full"):
        tests = ["tests/engine"]
    elif lane.get("line"):
        tests = list(LINE_DEPENDENT)
    elif lane.get("seam"):
        tests = list(SEAM)
    else:
        tests = []
    if lane.get("crash"):
        tests += CRASH_TESTS
    if lane.get("full"):
        tests += FULL_CRASH_TESTS
    if not lane.get("full"):  # the whole engine suite has it
        tests.append(SUBMIT)
    if lane.get("seam") and not (lane.get("line") or lane.get("full") or lane.get("crash")):
        return tests
    return tests + [LIFECYCLE]


def lane_jvm_archive(env: dict[str, str]) -> None:
    """The main line's class-data-sharing archive (scripts/jvm_archive.py)
    belongs to its own jars: a lane's drivers go without one. (A lane's own
    would not pay: its JVMs are one in-process session, the test bed's
    drivers, whose SPARK_CONF_DIR leads the class path and so never matches
    an archive, and on one lane the five processes of a crash world.)"""
    env.pop("LAKEKEEPER_JVM_BED_ARCHIVE", None)
    main_line = env.pop("LAKEKEEPER_JVM_ARCHIVE_OPTS", "")
    opts = env.get("SPARK_SUBMIT_OPTS", "").replace(main_line, "").strip() if main_line else None
    if opts == "":
        env.pop("SPARK_SUBMIT_OPTS", None)
    elif opts is not None:
        env["SPARK_SUBMIT_OPTS"] = opts


def needs_packed(lane: dict, extra: list[str]) -> bool:
    """Only the lifecycle runs the packed Python (and any tests named by hand)."""
    return bool(extra) or LIFECYCLE in lane_tests(lane)


def prepare_lane(lane: dict, base: Path, pack: bool = True) -> tuple[dict[str, str], Path, list[str], str]:
    """The lane's venv and (pack) packed Python; returns (environment, python,
    [pyspark version, Python version], note)."""
    py, note = ensure_venv(lane, base)
    env = dict(os.environ)
    if pack:
        env["LAKEKEEPER_APP_PYTHON"] = str(packed_env(lane, base, py))
    env.update(LAKEKEEPER_SPARK_LANE=lane["name"], PYSPARK_PYTHON=str(py), PYSPARK_DRIVER_PYTHON=str(py),
               SPARK_LOCAL_IP="127.0.0.1", PATH=f"{py.parent}{os.pathsep}{env.get('PATH', '')}")
    for var in ("SPARK_HOME", "PYTHONPATH", "VIRTUAL_ENV"):
        env.pop(var, None)
    lane_jvm_archive(env)
    versions = subprocess.run([str(py), "-c", "import sys, pyspark; print(pyspark.__version__, sys.version.split()[0])"],
                              capture_output=True, text=True, check=True, env=env).stdout.split()
    return env, py, versions, note


def pytest_cmd(py: Path, args: list[str]) -> list[str]:
    return [str(py), "-m", "pytest", "-q", "-p", "no:cacheprovider", "--timeout=1800", "-o", "addopts=-ra", *args]


def summary_line(lane: dict, versions: list[str], rc: int, seconds: float, note: str) -> str:
    return (f"lane {lane['name']}: pyspark {versions[0]}, Python {versions[1]}: "
            f"{'passed' if rc == 0 else f'FAILED (exit {rc})'} in {seconds:.0f} s" + (f" ({note})" if note else ""))


def run_lane(lane: dict, base: Path, extra: list[str]) -> tuple[int, str]:
    env, py, versions, note = prepare_lane(lane, base, needs_packed(lane, extra))
    print(f"== spark lane {lane['name']}: pyspark {versions[0]} on Python {versions[1]}", flush=True)
    t0 = time.monotonic()
    rc = subprocess.run(pytest_cmd(py, extra or lane_tests(lane)), cwd=str(ROOT), env=env, check=False).returncode
    return rc, summary_line(lane, versions, rc, time.monotonic() - t0, note)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="scripts/spark-lanes", description=__doc__.splitlines()[0])
    ap.add_argument("lanes", nargs="*", help="lane names (default: the lanes marked default)")
    ap.add_argument("--list", action="store_true", help="print the lanes and their tests")
    ap.add_argument("--pytest", nargs=argparse.REMAINDER, default=[],
                    help="run these pytest arguments instead of the lane's tests")
    ap.add_argument("--install", action="store_true",
                    help="only make the lanes' virtualenvs and packed Pythons (scripts/test, beside its other set-up)")
    args = ap.parse_args(argv)
    known = lanes()
    if args.list:
        for lane in known:
            print(f"{lane['name']}{' (default)' if lane['default'] else ''}: python {lane['python']}, "
                  f"{' '.join(lane['pins'])}", *lane_tests(lane), sep="\n  ")
        return 0
    by_name = {lane["name"]: lane for lane in known}
    unknown = [n for n in args.lanes if n not in by_name]
    if unknown:
        print(f"spark-lanes: unknown lane(s) {', '.join(unknown)}; known: {', '.join(by_name)}", file=sys.stderr)
        return 2
    chosen = [by_name[n] for n in args.lanes] if args.lanes else [lane for lane in known if lane["default"]]
    base = Path(os.environ.get("LAKEKEEPER_LANES_DIR") or cache_dir() / "lanes")
    base.mkdir(parents=True, exist_ok=True)
    if args.install:
        for lane in chosen:
            py = ensure_venv(lane, base)[0]
            if needs_packed(lane, []):
                packed_env(lane, base, py)
        return 0
    status, summaries = 0, []
    for lane in chosen:
        rc, summary = run_lane(lane, base, args.pytest)
        summaries.append(summary)
        status = status or rc
    print("\n".join(["== spark lanes"] + summaries), flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
