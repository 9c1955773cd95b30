"""Build (once) a class-data-sharing archive for the suite's Spark driver JVMs.

    python scripts/jvm_archive.py [PYTHON]     prints the archive's path (or nothing)

The suite starts a few hundred short-lived Spark drivers (every module run of
a playbook, every engine process of a crash world or of the test bed). Most
of a driver's start is spent loading and verifying the same few thousand
classes from ``pyspark/jars``. A dynamic CDS archive (JDK 13+:
``-XX:ArchiveClassesAtExit`` at a training run, ``-XX:SharedArchiveFile``
afterwards) maps them instead; on this machine it took a compaction of two
small tables from 24.8 s to 14.9 s and a rollback from 21.0 s to 10.9 s.

The training run is a real one: ``tests/e2e/create_tables.py`` makes two
small tables in a scratch embedded Metastore, then the engine's CLI compacts
them with ``-XX:ArchiveClassesAtExit``. The archive belongs to one JDK and one
set of jars: it is keyed by ``java -version``, PYTHON's pyspark jar names and
the JVM flags, and cached in ``~/.cache/lakekeeper/jvm/`` (``LAKEKEEPER_CACHE``),
outside the clone: with the virtualenv there too (scripts/bootstrap), a fresh
clone of the same pins reuses it instead of training again. A JVM whose class path does not
match an archive ignores it silently (``-Xshare:auto``), so a stale or foreign archive costs
nothing but the speed-up: the test bed's drivers, whose ``SPARK_CONF_DIR``
leads the class path, run without it. If the training run fails this prints
nothing and the suite runs without one. Product code never sees any of this:
it is ``SPARK_SUBMIT_OPTS`` set by ``scripts/test`` (the older-Spark lanes
drop it, scripts/spark_lanes.py).

    python scripts/jvm_archive.py --bed [PYTHON]   the test bed's archive

The test bed's drivers are the exception above: their ``SPARK_CONF_DIR``
(the bed's client conf, with files in it) comes first on the class path, and
a JVM neither archives nor maps classes from behind a non-empty directory
(``Error: non-empty directory`` when dumping; a mismatch at run time). With
``spark.driver.extraClassPath`` naming the same jars, the launcher puts them
ahead of the conf dir, and an archive trained that way serves every driver
whose class path starts with them, whatever conf dir follows (measured here:
a Hive-enabled driver of a tiny job 8.1-8.3 CPU s without an archive, 4.5-5.1
with the bed's). ``--bed`` trains that second archive, with a scratch conf dir
in the bed's place; tests/testbed/testbed/bed.py (``spark_confs``) sets both
the class path and ``-XX:SharedArchiveFile`` in the bed's client
``spark-defaults.conf`` when ``LAKEKEEPER_JVM_BED_ARCHIVE`` names it.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("LAKEKEEPER_CACHE") or Path.home() / ".cache" / "lakekeeper") / "jvm"


def quick_opts() -> str:
    return os.environ.get("LAKEKEEPER_QUICK_JVM_OPTS", "")


def jars_dir(python: str) -> Path | None:
    found = subprocess.run([python, "-c", "import os, pyspark; print(os.path.dirname(pyspark.__file__))"],
                           capture_output=True, text=True, check=False)
    return Path(found.stdout.strip()) / "jars" if found.returncode == 0 else None


def archive_key(python: str) -> str | None:
    java = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False)
    jars = jars_dir(python)
    if java.returncode != 0 or jars is None:
        return None
    names = sorted(p.name for p in jars.glob("*.jar"))
    digest = hashlib.sha256("\n".join([java.stderr, str(jars), quick_opts(), *names]).encode())
    return digest.hexdigest()[:16]


def wait_gone(marker: str, timeout: float = 180) -> None:
    """The JVM writes the archive as it exits, after its Python driver has
    gone: wait for every process whose command line names the archive."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(marker.encode() in cmdline for cmdline in command_lines()):
            return
        time.sleep(0.5)


def command_lines() -> list[bytes]:
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                found.append(Path(f"/proc/{pid}/cmdline").read_bytes())
            except OSError:
                continue
    return found


def train(python: str, target: Path, bed: bool = False) -> bool:
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYTHONUNBUFFERED="1")
    for var in ("SPARK_SUBMIT_OPTS", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "PYSPARK_SUBMIT_ARGS", "SPARK_CONF_DIR",
                "HADOOP_CONF_DIR", "YARN_CONF_DIR", "HIVE_CONF_DIR"):
        env.pop(var, None)
    with tempfile.TemporaryDirectory(prefix="lakekeeper-jvm-archive-") as tmp:
        work = Path(tmp)
        if bed:
            # the bed's shape: the jars ahead of a conf dir with files in it
            conf = work / "conf"
            conf.mkdir()
            (conf / "spark-defaults.conf").write_text(f"spark.driver.extraClassPath {jars_dir(python)}/*\n")
            (conf / "core-site.xml").write_text("<configuration></configuration>\n")
            env["SPARK_CONF_DIR"] = str(conf)
        state, data = work / "state", work / "data"
        # the tables' maker with the drivers' quick JIT too (70 -> 40 CPU s; no archive for it)
        made = subprocess.run([python, str(ROOT / "tests" / "e2e" / "create_tables.py"), str(state), str(data)],
                              cwd=tmp, env=dict(env, SPARK_SUBMIT_OPTS=quick_opts()), capture_output=True,
                              text=True, check=False)
        if made.returncode != 0:
            print(f"jvm-archive: creating the training tables failed:\n{made.stderr[-2000:]}", file=sys.stderr)
            return False
        partial = work / "classes.jsa"
        env["SPARK_SUBMIT_OPTS"] = f"{quick_opts()} -XX:ArchiveClassesAtExit={partial}".strip()
        run = subprocess.run([python, str(ROOT / "spark_app" / "run_lakekeeper.py"), "compact",
                              "--tables", "e2e.events,e2e.clicks", "--state-dir", str(state),
                              "--master", "local[2]", "--conf", "spark.ui.enabled=false"],
                             cwd=tmp, env=env, capture_output=True, text=True, check=False)
        wait_gone(str(partial))
        if run.returncode != 0 or not partial.is_file() or partial.stat().st_size == 0:
            print(f"jvm-archive: the training compaction failed (rc {run.returncode}):\n{run.stderr[-2000:]}",
                  file=sys.stderr)
            return False
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(partial), str(target))
        if bed:  # which jars it was trained on (the bed adds it only to drivers of these)
            Path(f"{target}.jars").write_text(f"{jars_dir(python)}\n")
    return True


def main(argv: list[str]) -> int:
    bed = "--bed" in argv
    argv = [a for a in argv if a != "--bed"]
    python = argv[0] if argv else sys.executable
    key = archive_key(python)
    if key is None:
        print("jvm-archive: no java or no pyspark; running without an archive", file=sys.stderr)
        return 0
    target = CACHE / f"spark-{'bed-driver' if bed else 'driver'}-{key}.jsa"
    if not target.is_file():
        t0 = time.monotonic()
        if not train(python, target, bed):
            return 0
        print(f"jvm-archive: {target.name} ({target.stat().st_size // 2**20} MB) built in "
              f"{time.monotonic() - t0:.0f} s", file=sys.stderr)
    print(target)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
