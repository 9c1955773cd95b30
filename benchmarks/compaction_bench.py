"""Compaction benchmark: the floor, our engine and lakekeeper 0.0.6 on the same tables.

(One file of more than 500 lines: a script run by hand, whose contenders,
data generation and report are read together; its app launchers live in
bench_apps.py.)

    .venv/bin/python benchmarks/compaction_bench.py [--runs 3] [--block-size 64] [--scale 10000]

One run of this script:

1. generates, once (kept under ``--work``), the pristine data: ``flat`` (a
   non-partitioned Parquet table of 2,000 files, 4 M rows), ``parted`` (50
   partitions: 30 of 40 small files, 20 healthy single-file ones) and
   ``orc`` (1,000 ORC files, 2 M rows);
2. installs lakekeeper 0.0.6 from PyPI into its own virtualenv
   (``~/.cache/lakekeeper-bench/venv``, with the same pyspark as ours);
3. for each run and table, restores the table's files (hard links to the
   pristine copy) and times, each as its own process from start to exit,
   in an order that alternates between runs:
   ``floor`` (a bare Spark copy of the data to compact: read once, write
   once, its reads packed as ours are, one output directory per partition,
   so it writes the file count ours writes), ``floor_content`` (the same
   copy verifying its content as ``ours`` does by default, with the
   engine's own checksum: observed on the write, the whole copy read back
   in one job; the least a content-verified copy costs, with no Metastore,
   journal or swap), ``ours`` (``run_lakekeeper.py compact --table``)
   and ``lakekeeper`` (``lakekeeper compact --table``, its README's
   scenario 1: a local SparkSession; the Spark settings come from a
   ``spark-defaults.conf`` in ``SPARK_CONF_DIR`` naming the same embedded
   Derby Metastore and warehouse as ours); plus ``all``: every table in one
   application (``--tables``) for both tools;
4. counts each contender's data scans from its Spark event log (records
   read by all tasks / rows of the data to compact), the rows it wrote
   (a floor or ours that did not write every row once is not a result) and
   its output files;
5. prints the medians, the ratios ours / floor and lakekeeper / ours, the
   standard error of ours / floor (whether the runs resolve 5 %), the
   load average and, where a cgroup can be made (``CpuMeter``), each
   contender's CPU seconds and their ratios, paired per run; ``--scale N`` also times ``analyze`` of a table with N
   partitions (created once, 500 partitions per ALTER TABLE).

``--via-ansible`` adds the contender ``ours_ansible``: the figure a user
sees. The collection is built and installed (``ansible-galaxy collection
build`` and ``install``, as a user installs it), and ``ansible-playbook``
runs ``lakekeeper.hive.lakekeeper_compact``, which submits the engine with
``spark-submit`` (``--master local[2]`` like the others) to a Hive Metastore
*service* (the test bed's, ``tests/testbed``, started without HDFS or Spark
unless ``LAKEKEEPER_TESTBED_JSON`` names a running one), over its own copy
of each table's files (``lkb_svc``). Everything from ``ansible-playbook``'s
start to its exit counts: Ansible, the module, the application's transfer
and unpacking, the driver's start, the Metastore's round trips. Its rows
are checked from its Spark event log like the others'.

``ours_svc`` (with ``--via-ansible``) is ``ours`` as an edge node runs it:
``run_lakekeeper.py compact`` against that Metastore service instead of
the embedded Derby one, over the same copy as ``ours_ansible`` (``lkb_svc``),
without Ansible: what the engine costs where users run it.

``--spark-lanes spark-3.3,spark-3.5`` adds a row per table for each older
Spark line (the virtualenvs of ``scripts/spark-lanes``, ``.lanes/<name>``):
the floor and ours run again with that lane's Python and pyspark, one right
after the other, so each Spark line has its own ours / floor ratio.

Everything runs with ``--master local[2]`` and ``SPARK_LOCAL_IP=127.0.0.1``,
one Spark process at a time. Raw results go to ``<work>/results.json``.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PY = sys.executable
LK_VERSION = "0.0.6"

TABLES = {  # name -> format, codec, partitioned, rows to compact (filled from the generator)
    "flat": {"format": "parquet", "codec": "snappy"},
    "parted": {"format": "parquet", "codec": "snappy"},
    "orc": {"format": "orc", "codec": "zlib"},
}


class CpuMeter:
    """The CPU seconds of every process a command starts (its JVMs too, which
    outlive the Python that launched them by a moment): one cgroup a command
    (scripts/suite.py's ``Cgroups``), read once the group is empty. Wall time
    on a shared two-core machine spreads by 10-20 % from one run to the next;
    CPU time, which waiting for a core does not add to, spreads less. None
    where no cgroup can be made."""

    def __init__(self) -> None:
        self.groups = None
        self.last: float | None = None
        self._n = 0

    def start(self):
        if self.groups is None:
            sys.path.insert(0, os.path.join(ROOT, "scripts"))
            from suite import Cgroups  # pylint: disable=import-outside-toplevel

            self.groups = Cgroups()
        self._n += 1
        return self.groups.make(f"cmd{self._n}")

    def finish(self, group) -> float | None:
        if group is None:
            return None
        deadline = time.time() + 30
        while time.time() < deadline:  # the JVM a Python launched ends a moment after it
            try:
                if not (group / "cgroup.procs").read_text().strip():
                    break
            except OSError:
                break
            time.sleep(0.1)
        cpu = self.groups.cpu_seconds(group)
        try:
            group.rmdir()
        except OSError:
            pass
        return None if cpu is None else round(cpu, 2)

    def stop(self) -> None:
        if self.groups is not None:
            self.groups.cleanup()


CPU = CpuMeter()


def sh(cmd: list[str], env: dict[str, str] | None = None, cwd: str | None = None,
       log: str | None = None) -> tuple[float, int, str]:
    """Run a process; (wall seconds, exit code, stdout). Stderr to ``log``.
    Its CPU seconds (every process it started): ``CPU.last``."""
    group = CPU.start()

    def enter() -> None:  # in the child, before it runs the command
        if group is not None:
            with open(group / "cgroup.procs", "w", encoding="utf-8") as fh:
                fh.write(str(os.getpid()))

    t0 = time.time()
    with open(log or os.devnull, "w", encoding="utf-8") as err:
        p = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=err, text=True, check=False,
                           preexec_fn=enter)  # noqa: PLW1509 - the bench starts no threads
    secs = time.time() - t0
    CPU.last = CPU.finish(group)
    return secs, p.returncode, p.stdout


def base_env() -> dict[str, str]:
    env = dict(os.environ)
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    env.pop("SPARK_CONF_DIR", None)
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    return env


# ---------------------------------------------------------------- setup


def ensure_data(work: str, regenerate: bool) -> dict:
    pristine = os.path.join(work, "pristine")
    meta = os.path.join(pristine, "meta.json")
    if regenerate and os.path.isdir(pristine):
        shutil.rmtree(pristine)
    if not os.path.exists(meta):
        os.makedirs(pristine, exist_ok=True)
        print("generating the tables (once) ...", flush=True)
        secs, rc, out = sh([PY, os.path.join(HERE, "bench_apps.py"), "generate", "--out", pristine,
                            "--conf", "spark.ui.showConsoleProgress=false"],
                           env=base_env(), log=os.path.join(work, "generate.log"))
        if rc:
            sys.exit(f"generating the data failed, see {work}/generate.log")
        with open(meta, "w", encoding="utf-8") as fh:
            fh.write(out.strip().splitlines()[-1])
    with open(meta, encoding="utf-8") as fh:
        return json.load(fh)


def ensure_lakekeeper(venv: str) -> str:
    """lakekeeper==0.0.6 from PyPI in its own virtualenv, with our pyspark."""
    exe = os.path.join(venv, "bin", "lakekeeper")
    if not os.path.exists(exe):
        import pyspark

        print(f"installing lakekeeper=={LK_VERSION} into {venv} ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        subprocess.run([os.path.join(venv, "bin", "pip"), "install", "-q", f"lakekeeper=={LK_VERSION}",
                        f"pyspark=={pyspark.__version__}"], check=True)
    return exe


def data_dir(work: str, db: str, table: str) -> str:
    return os.path.join(work, "data", db, table)


def reset(work: str, db: str, table: str) -> None:
    """The table's files exactly as generated (hard links: no copy, the
    same page cache for every contender); everything the tools left next
    to them removed."""
    parent = os.path.join(work, "data", db)
    os.makedirs(parent, exist_ok=True)
    for name in os.listdir(parent):
        if name == table or name.startswith(table + "__") or name.startswith("." + table + "."):
            shutil.rmtree(os.path.join(parent, name))
    shutil.copytree(os.path.join(work, "pristine", table), os.path.join(parent, table), copy_function=os.link)


def table_spec(work: str, meta: dict, dbs: tuple[str, ...] = ("lkb_ours", "lkb_ref")) -> dict:
    spec = {}
    parts = [f"{p:02d}" for p in range(meta["parted"]["partitions"])]
    for db in dbs:
        spec[db] = {}
        for t, d in TABLES.items():
            spec[db][t] = {"format": d["format"], "location": data_dir(work, db, t)}
            if t == "parted":
                spec[db][t]["partitions"] = parts
    return spec


def lane_state(state: str, lane: str) -> str:
    """Each Spark line has its own embedded Metastore over the same table
    directories: Derby refuses a database a newer Derby (Spark 4's) made."""
    return state if lane == "main" else f"{state}-{lane}"


def create_tables(work: str, state: str, meta: dict, lane: str = "main") -> None:
    state = lane_state(state, lane)
    for db in ("lkb_ours", "lkb_ref"):
        for t in TABLES:
            reset(work, db, t)
    spec_file = os.path.join(work, "tables.json")
    with open(spec_file, "w", encoding="utf-8") as fh:
        json.dump(table_spec(work, meta), fh)
    env = base_env()
    if lane != "main":
        env["PYSPARK_PYTHON"] = lane_python(lane)
    log = os.path.join(work, "tables.log" if lane == "main" else f"tables-{lane}.log")
    _s, rc, _out = sh([lane_python(lane), os.path.join(HERE, "bench_apps.py"), "tables", "--state-dir", state,
                       "--spec", spec_file, "--conf", "spark.ui.showConsoleProgress=false"], env=env, log=log)
    if rc:
        sys.exit(f"creating the tables failed, see {log}")


class AnsiblePath:
    """What ``ours_ansible`` needs: the collection built and installed under
    ``<work>/collection``, a Hive Metastore service (a test bed without HDFS
    and Spark, or the one ``LAKEKEEPER_TESTBED_JSON`` names) and the
    benchmark's tables registered in it (database ``lkb_svc``, its own copy
    of the files)."""

    DB = "lkb_svc"

    def __init__(self, work: str, meta: dict):
        sys.path.insert(0, os.path.join(ROOT, "tests", "testbed"))
        from testbed import Testbed  # pylint: disable=import-error,import-outside-toplevel

        bindir = os.path.dirname(PY)
        self.playbook_exe = os.path.join(bindir, "ansible-playbook")
        col = os.path.join(work, "collection")
        shutil.rmtree(col, ignore_errors=True)
        dist, self.collections = os.path.join(col, "dist"), os.path.join(col, "installed")
        for cmd in ([os.path.join(bindir, "ansible-galaxy"), "collection", "build", ROOT, "--output-path", dist],):
            _s, rc, out = sh(cmd, log=os.path.join(work, "collection.log"))
            if rc:
                sys.exit(f"ansible-galaxy collection build failed, see {work}/collection.log\n{out}")
        tarball = glob.glob(os.path.join(dist, "lakekeeper-hive-*.tar.gz"))[0]
        _s, rc, out = sh([os.path.join(bindir, "ansible-galaxy"), "collection", "install", "--offline", "--no-deps",
                          "--force", "-p", self.collections, tarball],
                         env=dict(base_env(), ANSIBLE_COLLECTIONS_PATH=self.collections),
                         log=os.path.join(work, "collection.log"))
        if rc:
            sys.exit(f"ansible-galaxy collection install failed, see {work}/collection.log\n{out}")
        given = os.environ.get("LAKEKEEPER_TESTBED_JSON")
        if given:
            self.bed, self.owned = Testbed.load(given), False
        else:
            print("starting a Hive Metastore service (the test bed without HDFS and Spark) ...", flush=True)
            self.bed = Testbed.start(os.path.join(work, "metastore-service"), hdfs=False, spark=False)
            self.owned = True
        if not self.bed.metastore_uri:
            sys.exit("--via-ansible needs a test bed with a Metastore service")
        spec_file = os.path.join(work, "tables-svc.json")
        for t in TABLES:
            reset(work, self.DB, t)
        with open(spec_file, "w", encoding="utf-8") as fh:
            json.dump(table_spec(work, meta, (self.DB,)), fh)
        log = os.path.join(work, "tables-svc.log")
        _s, rc, _out = sh([PY, os.path.join(HERE, "bench_apps.py"), "tables", "--spec", spec_file, "--conf",
                           f"spark.hadoop.hive.metastore.uris={self.bed.metastore_uri}", "--conf",
                           "spark.ui.showConsoleProgress=false"], env=base_env(), log=log)
        if rc:
            sys.exit(f"creating the tables in the Metastore service failed, see {log}")

    def compact(self, args, names: list[str], confs: dict[str, str], work: str, tag: str,
                log: str) -> tuple[float, int, dict | None]:
        """``ansible-playbook`` running ``lakekeeper_compact`` on ``names``;
        (wall seconds, exit code, the module's result)."""
        import pyspark  # pylint: disable=import-outside-toplevel

        out = os.path.join(work, "ansible", tag)
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        conf_dir = str(self.bed.conf_dir)
        task = {"tables" if len(names) > 1 else "table": names if len(names) > 1 else names[0],
                "block_size_mb": args.block_size, "parallelism": args.parallelism,
                "python": PY, "spark_home": os.path.dirname(pyspark.__file__), "hadoop_conf_dir": conf_dir,
                "environment": {"SPARK_CONF_DIR": conf_dir, "SPARK_LOCAL_IP": "127.0.0.1"},
                "app_cache_dir": os.path.join(work, "ansible", "app-cache"),
                "spark_submit": {"enabled": True, "master": args.master, "python_env": PY,
                                 "extra_conf": dict(confs, **{"spark.ui.enabled": "false"}, **JVM_DEFAULTS)}}
        # One task, the compaction: its result comes from the ``minimal``
        # callback's output ("host | CHANGED => {...}"), not from a second
        # task (a copy task to keep it cost about a second of every run).
        play = [{"name": "Compact through the collection", "hosts": "localhost", "gather_facts": False,
                 "tasks": [{"name": "Compact", "lakekeeper.hive.lakekeeper_compact": task}]}]
        path = os.path.join(out, "play.yml")
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(play, fh)  # JSON is YAML
        env = dict(base_env(), ANSIBLE_COLLECTIONS_PATH=self.collections, ANSIBLE_NOCOLOR="1",
                   ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0",
                   ANSIBLE_STDOUT_CALLBACK="ansible.builtin.minimal",
                   PATH=os.path.dirname(PY) + os.pathsep + os.environ.get("PATH", ""))
        secs, rc, stdout = sh([self.playbook_exe, "-i", "localhost,", "-c", "local", "-e",
                               f"ansible_python_interpreter={PY}", path], env=env, cwd=out, log=log)
        with open(log, "a", encoding="utf-8") as fh:
            fh.write("\n--- stdout ---\n" + stdout)
        return secs, rc, minimal_result(stdout)

    def stop(self) -> None:
        if self.owned:
            self.bed.stop()


# The test bed's client spark-defaults.conf (SPARK_CONF_DIR above, for its Metastore) gives its drivers the
# test suite's quick-start JVM options (C1 only, the serial collector: tests/testbed/testbed/confs.py), which
# start a JVM sooner but run the data path slower: ``flat``'s write took 11.1 s that way against 8.1 s with
# the JVM's defaults (2026-12-01). Every other contender runs with the defaults; so does this one.
JVM_DEFAULTS = {"spark.driver.extraJavaOptions": "", "spark.executor.extraJavaOptions": ""}


def minimal_result(stdout: str) -> dict | None:
    """The task result the ``minimal`` callback printed: the JSON after
    ``localhost | <STATE> => `` (None if there is none)."""
    m = re.search(r"^localhost \| [A-Z!]+ => ", stdout, re.M)
    if m is None:
        return None
    try:
        return json.JSONDecoder().raw_decode(stdout[m.end():])[0]
    except ValueError:
        return None


# ---------------------------------------------------------------- measuring


def event_conf(events: str) -> dict[str, str]:
    return {
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": "file://" + events,
        "spark.eventLog.compress": "false",
        "spark.ui.showConsoleProgress": "false",
    }


def task_records(events: str) -> tuple[int, int, int]:
    """Records read, bytes read and records written by all tasks of the
    application(s) whose event logs are in ``events``: every scan of data
    shows up in the first two, and each contender must write every row it
    read once."""
    read = nbytes = written = 0
    for path in glob.glob(os.path.join(events, "**", "*"), recursive=True):
        if os.path.isdir(path):
            continue
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if '"SparkListenerTaskEnd"' not in line[:60]:
                    continue
                metrics = json.loads(line).get("Task Metrics") or {}
                im, om = metrics.get("Input Metrics") or {}, metrics.get("Output Metrics") or {}
                read += int(im.get("Records Read", 0))
                nbytes += int(im.get("Bytes Read", 0))
                written += int(om.get("Records Written", 0))
    return read, nbytes, written


def phases(events: str, seconds: float) -> dict[str, float] | None:
    """Where a contender's run went, from its Spark event log(s): ``start``
    (the process's start to the application's: Python, the JVM's launch and,
    through Ansible, ansible-playbook and the module), ``to_jobs`` (the
    application's start to its first job's: the SparkContext and whatever
    the contender does before any data - ours: the Hive client's start,
    lease, table load, listing, plan), ``jobs`` (the first job's start to
    the last one's end: the data, with whatever the driver does between the
    jobs) and ``after`` (the last job's end to the process's exit: swaps,
    journal, Metastore writes, stopping). None without an event log."""
    app_start = app_end = first = last = None
    for path in glob.glob(os.path.join(events, "**", "*"), recursive=True):
        if os.path.isdir(path):
            continue
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                head = line[:60]
                if "JobStart" not in head and "JobEnd" not in head and "Application" not in head:
                    continue
                e = json.loads(line)
                kind = e.get("Event")
                if kind == "SparkListenerApplicationStart":
                    app_start = e["Timestamp"] if app_start is None else min(app_start, e["Timestamp"])
                elif kind == "SparkListenerApplicationEnd":
                    app_end = e["Timestamp"] if app_end is None else max(app_end, e["Timestamp"])
                elif kind == "SparkListenerJobStart":
                    first = e["Submission Time"] if first is None else min(first, e["Submission Time"])
                elif kind == "SparkListenerJobEnd":
                    last = e["Completion Time"] if last is None else max(last, e["Completion Time"])
    if None in (app_start, first, last):
        return None
    app = ((app_end or last) - app_start) / 1000
    start = max(0.0, seconds - app)
    return {"start": round(start, 2), "to_jobs": round((first - app_start) / 1000, 2),
            "jobs": round((last - first) / 1000, 2), "after": round(seconds - start - (last - app_start) / 1000, 2)}


def floor_split_bytes(inputs: list[str], files: int | None, block_mb: int, master: str) -> int:
    """The floor's read splits, packed as ours packs a unit's: whole files
    (an open costing 1 byte) into ``files`` even splits (the smallest split
    size that gives that count), at least one per core (ours writes a small
    unit in pieces on every core it can use). ``files``: the file count ours
    wrote (None before ours ran: ours' planner's count for the input).
    Each split writes one file (per partition), so the floor writes what
    ours writes, as fast as a bare copy can."""
    sys.path.insert(0, os.path.join(ROOT, "spark_app"))
    from lakekeeper_spark.policy.planner import output_split, smallest_split  # pylint: disable=import-outside-toplevel

    sizes = []
    for d in inputs:
        for dirpath, _dirs, names in os.walk(d):
            sizes += [os.path.getsize(os.path.join(dirpath, n)) for n in names if not n.startswith((".", "_"))]
    m = re.match(r"local\[(\d+)\]", master)
    cores = int(m.group(1)) if m else os.cpu_count() or 1
    count = max(cores, files if files else output_split(sizes, block_mb * 1024 * 1024)[0])
    return smallest_split(sizes, count)


def ours_files(results: list[dict], table: str) -> int | None:
    """The files ours wrote for a table in its last good run, if any."""
    for r in reversed(results):
        if r["table"] == table and r["contender"] == "ours" and r["ok"] and r.get("files_after"):
            return int(r["files_after"])
    return None


def visible_files(path: str) -> int:
    n = 0
    for dirpath, dirnames, filenames in os.walk(path):
        # hidden entries and lakekeeper 0.0.6's visible leftovers (its originals and temporary copies)
        dirnames[:] = [d for d in dirnames if not d.startswith((".", "_")) and "__old_" not in d
                       and "__compact_tmp_" not in d]
        n += sum(1 for f in filenames if not f.startswith((".", "_")))
    return n


def lane_python(name: str) -> str:
    """The Python of an older-Spark lane (``scripts/spark-lanes``), or ours for ``main``."""
    if name == "main":
        return PY
    py = os.path.join(os.environ.get("LAKEKEEPER_LANES_DIR", os.path.join(ROOT, ".lanes")), name, "bin", "python")
    if not os.path.exists(py):
        sys.exit(f"no virtualenv for lane {name} at {py}: run scripts/spark-lanes {name} first")
    return py


def run_contender(args, work: str, state: str, meta: dict, contender: str, table: str, run: int,
                  lk_exe: str, lane: str = "main", ours_files: int | None = None,
                  via: AnsiblePath | None = None) -> dict:
    py = lane_python(lane)
    state = lane_state(state, lane)
    tabs = list(TABLES) if table == "all" else [table]
    db = {"lakekeeper": "lkb_ref", "ours_ansible": AnsiblePath.DB, "ours_svc": AnsiblePath.DB}.get(contender, "lkb_ours")
    for t in tabs:
        reset(work, db, t)
    tag = f"r{run}-{table}-{contender}" + ("" if lane == "main" else f"-{lane}")
    events = os.path.join(work, "events", tag)
    shutil.rmtree(events, ignore_errors=True)
    os.makedirs(events)
    log = os.path.join(work, "logs", tag + ".log")
    os.makedirs(os.path.dirname(log), exist_ok=True)
    env = base_env()
    if lane != "main":
        env["PYSPARK_PYTHON"] = py
    confs = event_conf(events)
    names = ",".join(f"{db}.{t}" for t in tabs)
    block = str(args.block_size)
    if contender in ("floor", "floor_content"):  # floor_content: the floor verifying its copy as ours does
        out = os.path.join(work, "floor_out")
        shutil.rmtree(out, ignore_errors=True)
        src = []
        for t in tabs:
            d = data_dir(work, db, t)
            src += ([os.path.join(d, f"part={p:02d}") for p in range(meta["parted"]["small_partitions"])]
                    if t == "parted" else [d])
        fmt, codec = TABLES[tabs[0]]["format"], TABLES[tabs[0]]["codec"]
        cmd = [py, os.path.join(HERE, "bench_apps.py"), "floor", "--state-dir", state, "--master", args.master,
               "--fmt", fmt, "--codec", codec, "--out", out] + [x for s in src for x in ("--input", s)]
        cmd += ["--content"] if contender == "floor_content" else []
        if tabs == ["parted"]:  # each split writes a file per partition it holds: one split per core
            cmd += ["--split-bytes", str(floor_split_bytes(src, 1, args.block_size, args.master))]
            cmd += ["--partition-column", "part", "--base-path", data_dir(work, db, "parted")]
        else:
            cmd += ["--split-bytes", str(floor_split_bytes(src, ours_files, args.block_size, args.master))]
        cmd += [x for k, v in confs.items() for x in ("--conf", f"{k}={v}")]
        secs, rc, stdout = sh(cmd, env=env, log=log)
        ok = rc == 0
        files_after = visible_files(out) if ok else None
        shutil.rmtree(out, ignore_errors=True)
        with open(log, "a", encoding="utf-8") as fh:  # its copy's (and verification's) seconds
            fh.write("\n--- stdout ---\n" + stdout)
    elif contender in ("ours", "ours_rows", "ours_svc"):
        # ours_rows: --verify rows (what content verification costs); ours_svc: ours as an edge node runs it,
        # against the Metastore service of --via-ansible instead of the embedded Derby one
        where, extra = ["--state-dir", state], {}
        if contender == "ours_svc":
            if via is None:
                raise SystemExit("ours_svc needs --via-ansible (its Metastore service)")
            env["SPARK_CONF_DIR"] = str(via.bed.conf_dir)
            where, extra = ["--require-metastore"], JVM_DEFAULTS
        cmd = [py, os.path.join(ROOT, "spark_app", "run_lakekeeper.py"), "compact",
               "--tables" if table == "all" else "--table", names, *where, "--master", args.master,
               "--block-size", block, "--parallelism", str(args.parallelism)]
        cmd += ["--verify", "rows"] if contender == "ours_rows" else []
        cmd += [x for k, v in dict(confs, **extra).items() for x in ("--conf", f"{k}={v}")]
        secs, rc, stdout = sh(cmd, env=env, log=log)
        try:
            doc = json.loads(stdout)
            ok = rc == 0 and all(r["status"] == "compacted" for r in doc["tables"])
        except ValueError:
            ok = False
        files_after = sum(visible_files(data_dir(work, db, t)) for t in tabs)
    elif contender == "ours_ansible":
        if via is None:
            raise SystemExit("ours_ansible needs --via-ansible")
        secs, rc, res = via.compact(args, [f"{db}.{t}" for t in tabs], confs, work, tag, log)
        ok = rc == 0 and res is not None and all(r.get("status") == "compacted" for r in res.get("tables") or [None])
        files_after = sum(visible_files(data_dir(work, db, t)) for t in tabs)
    else:
        conf_dir = os.path.join(work, "lakekeeper_conf", tag)
        os.makedirs(conf_dir, exist_ok=True)
        defaults = dict(confs)
        defaults.update({
            "spark.master": args.master,
            "spark.ui.enabled": "false",
            "spark.sql.warehouse.dir": "file://" + os.path.join(state, "warehouse"),
            "spark.hadoop.javax.jdo.option.ConnectionURL":
                f"jdbc:derby:;databaseName={os.path.join(state, 'metastore_db')};create=true",
            "spark.driver.extraJavaOptions": f"-Dderby.system.home={state}",
        })
        with open(os.path.join(conf_dir, "spark-defaults.conf"), "w", encoding="utf-8") as fh:
            fh.writelines(f"{k} {v}\n" for k, v in defaults.items())
        env["SPARK_CONF_DIR"] = conf_dir
        cwd = os.path.join(work, "lakekeeper_cwd")
        os.makedirs(cwd, exist_ok=True)
        cmd = [lk_exe, "compact", "--tables" if table == "all" else "--table", names, "--block-size", block]
        secs, rc, stdout = sh(cmd, env=env, cwd=cwd, log=log)
        with open(log, "a", encoding="utf-8") as fh:
            fh.write("\n--- stdout ---\n" + stdout)
        ok = rc == 0 and "FAILED" not in stdout.upper()
        files_after = sum(visible_files(data_dir(work, db, t)) for t in tabs)
    records, nbytes, written = task_records(events)
    profile = phases(events, secs)
    rows = sum(meta[t].get("rows_to_compact", meta[t]["rows"]) for t in tabs)
    if ok and contender != "lakekeeper" and written != rows:  # lost or doubled rows: not a result
        print(f"  {contender} {table}: wrote {written} rows, {rows} to compact", flush=True)
        ok = False
    cpu = CPU.last
    return {"contender": contender, "table": table if lane == "main" else f"{table}@{lane}", "lane": lane,
            "run": run, "seconds": round(secs, 2), "cpu_seconds": cpu, "ok": ok, "rows_written": written,
            "scans": round(records / rows, 2) if rows else None, "bytes_read": nbytes,
            "files_after": files_after, "load": round(os.getloadavg()[0], 2), "log": log, "phases": profile}


class TestbedRunner:
    """Runs the scale analysis on the test bed (HDFS, the Metastore service,
    Spark standalone; tests/testbed): the one given by
    ``LAKEKEEPER_TESTBED_JSON`` (left running), else one started under
    ``<work>/testbed`` and stopped at the end."""

    def __init__(self, work: str):
        sys.path.insert(0, os.path.join(ROOT, "tests", "testbed"))
        from testbed import Testbed  # pylint: disable=import-error,import-outside-toplevel

        given = os.environ.get("LAKEKEEPER_TESTBED_JSON")
        if given:
            self.bed, self.owned = Testbed.load(given), False
        else:
            print("starting the test bed (HDFS, Metastore service, Spark standalone) ...", flush=True)
            self.bed, self.owned = Testbed.start(os.path.join(work, "testbed")), True
        self.uri = self.bed.hdfs_uri

    def run(self, app: str, *args: str, log: str) -> tuple[float, int, str]:
        t0 = time.time()
        p = self.bed.spark_submit(app, *args, confs={"spark.pyspark.python": PY,
                                                     "spark.ui.showConsoleProgress": "false"}, timeout=3600)
        with open(log, "w", encoding="utf-8") as fh:
            fh.write(p.stderr)
        return time.time() - t0, p.returncode, p.stdout

    def stop(self) -> None:
        if self.owned:
            self.bed.stop()


def scale_analysis(args, work: str, state: str) -> dict:
    """``analyze`` of a table with ``--scale`` partitions: on the embedded
    default (local Spark, Derby, file://), or with ``--testbed`` under
    spark-submit on the test bed (hdfs://, Metastore service, standalone)."""
    n = args.scale
    where = "testbed" if args.testbed else "local"
    marker = os.path.join(work, f"scale_{where}_{n}.json")
    table = f"lkb_scale.t{n}"
    os.makedirs(os.path.join(work, "logs"), exist_ok=True)
    bed = TestbedRunner(work) if args.testbed else None
    try:
        if bed:
            def run(app, *a, log):
                return bed.run(app, *a, log=log)
            location = f"{bed.uri}/lkb_scale/t{n}"
        else:
            def run(app, *a, log):
                return sh([PY, app, *a, "--state-dir", state, "--master", args.master,
                           "--conf", "spark.ui.showConsoleProgress=false"], env=base_env(), log=log)
            location = os.path.join(work, "data", "scale", f"t{n}")
        if bed or not os.path.exists(marker):  # a test bed started here is new: make the table
            print(f"creating a table with {n} partitions ({where}, once) ...", flush=True)
            spec = os.path.join(work, "scale_spec.json")
            with open(spec, "w", encoding="utf-8") as fh:
                json.dump({"table": table, "partitions": n, "location": location}, fh)
            secs, rc, out = run(os.path.join(HERE, "bench_apps.py"), "scale", "--spec", spec,
                                log=os.path.join(work, "scale.log"))
            if rc:
                sys.exit(f"creating the scale table failed, see {work}/scale.log")
            setup = json.loads(out.strip().splitlines()[-1])
            setup["seconds"] = round(secs, 1)
            with open(marker, "w", encoding="utf-8") as fh:
                json.dump(setup, fh)
        with open(marker, encoding="utf-8") as fh:
            res = {"partitions": n, "where": where, "setup": json.load(fh), "runs": []}
        for run_no in range(args.scale_runs):
            result = os.path.join(work, f"scale-analyze-{run_no}.json")
            secs, rc, _out = run(os.path.join(ROOT, "spark_app", "run_lakekeeper.py"), "analyze", "--table", table,
                                 "--result-file", result, log=os.path.join(work, "logs", "scale-analyze.log"))
            with open(result, encoding="utf-8") as fh:
                t = json.load(fh)["tables"][0]
            res["runs"].append({"wall": round(secs, 1), "in_app": t.get("seconds"), "ok": rc == 0,
                                "partitions": len(t.get("partitions", [])),
                                "files": t.get("files"),
                                "load": round(os.getloadavg()[0], 2)})
        if args.scale_compact:
            res["compact"] = scale_compact(run, work, table, n, args.parallelism)
    finally:
        if bed:
            bed.stop()
    return res


def scale_compact(run, work: str, table: str, n: int, parallelism: int) -> dict:
    """``compact`` of every partition of the scale table (two files each),
    end to end, then ``analyze`` again: every partition must now hold one
    file. The per-partition figure is the application's time over the
    partitions compacted (the run's fixed cost included)."""
    print(f"compacting the {n} partitions of {table} ...", flush=True)
    result = os.path.join(work, "scale-compact.json")
    # the driver's CPU by thread (benchmarks/thread_cpu.py): its protocol's share against its jobs'
    threads_out = os.path.join(work, "scale-compact-threads.json")
    sampler = subprocess.Popen([PY, os.path.join(HERE, "thread_cpu.py"), threads_out,  # noqa: S603
                                f"--result-file {result}"])
    secs, rc, _out = run(os.path.join(ROOT, "spark_app", "run_lakekeeper.py"), "compact", "--table", table,
                         "--parallelism", str(parallelism), "--result-file", result,
                         log=os.path.join(work, "logs", "scale-compact.log"))
    try:
        sampler.wait(timeout=120)
    except subprocess.TimeoutExpired:
        sampler.kill()
    with open(result, encoding="utf-8") as fh:
        t = json.load(fh)["tables"][0]
    statuses: dict[str, int] = {}
    for part in t.get("partitions", []):
        statuses[part.get("status", "?")] = statuses.get(part.get("status", "?"), 0) + 1
    after = os.path.join(work, "scale-analyze-after.json")
    secs_after, rc_after, _out = run(os.path.join(ROOT, "spark_app", "run_lakekeeper.py"), "analyze", "--table", table,
                                     "--result-file", after, log=os.path.join(work, "logs", "scale-analyze-after.log"))
    with open(after, encoding="utf-8") as fh:
        a = json.load(fh)["tables"][0]
    done = statuses.get("compacted", 0)
    out = {"wall": round(secs, 1), "in_app": t.get("seconds"), "ok": rc == 0 and t.get("status") == "compacted",
           "status": t.get("status"), "partitions": statuses, "files_after": a.get("files"),
           "analyze_after_wall": round(secs_after, 1), "analyze_after_ok": rc_after == 0,
           "ms_per_partition": round(1000 * float(t.get("seconds") or secs) / done, 1) if done else None,
           "load": round(os.getloadavg()[0], 2)}
    if out["files_after"] != n:
        print(f"  after the compaction {out['files_after']} files in {n} partitions (expected one each)", flush=True)
        out["ok"] = False
    if done and os.path.exists(threads_out):
        with open(threads_out, encoding="utf-8") as fh:
            threads = json.load(fh)
        out["driver_cpu_ms_per_partition"] = {role: round(1000 * v / done, 1) for role, v in threads["seconds"].items()}
        out["driver_jvm_ms_per_partition_by_kind"] = {k: round(1000 * v / done, 1) for k, v in threads["kinds"].items()}
        out["driver_threads"] = threads["threads"]
    print(f"  compact: {out}", flush=True)
    return out


# ---------------------------------------------------------------- report


def median(xs: list[float]) -> float | None:
    xs = [x for x in xs if x is not None]
    return round(statistics.median(xs), 2) if xs else None


def paired_ratio(results: list[dict], table: str, num: str, den: str,
                 key: str = "seconds") -> tuple[float | None, list[float]]:
    """``num / den`` within each run (the two measured one right after the
    other, in the same machine state), and the median of those. The machine's speed
    drifts between runs by more than the differences measured, so a ratio
    of two medians can pair a fast run of one contender with a slow run of
    the other; a paired ratio cannot."""
    by_run: dict[int, dict[str, float]] = {}
    for r in results:
        if r["table"] == table and r["contender"] in (num, den) and r["ok"]:
            by_run.setdefault(r["run"], {})[r["contender"]] = r.get(key)
    ratios = [v[num] / v[den] for _run, v in sorted(by_run.items()) if v.get(num) and v.get(den)]
    return (round(statistics.median(ratios), 2) if ratios else None), [round(x, 2) for x in ratios]


def resolution(ratios: list[float]) -> float | None:
    """The standard error of the median ratio, relative (about 1.25 times
    that of the mean): below 0.05 the runs resolve a 5 % difference."""
    if len(ratios) < 2:
        return None
    return 1.25 * statistics.stdev(ratios) / (len(ratios) ** 0.5) / statistics.median(ratios)


def paired_lines(results: list[dict], rows: list[str], contender: str,
                 ratios: list[tuple[str, str, str]], key: str = "seconds") -> list[str]:
    """A line per table the contender ran: its median seconds (``key``), then each
    ``(num, den, label)`` ratio paired per run (``paired_ratio``)."""
    out = []
    for t in rows:
        secs = median([r.get(key) for r in results if r["table"] == t and r["contender"] == contender
                       and r.get(key) is not None])
        if secs is None:
            continue
        parts = []
        for num, den, label in ratios:
            ratio, runs = paired_ratio(results, t, num, den, key)
            parts.append(f"{label} {'-' if ratio is None else f'{ratio:.2f}'} ({' '.join(map(str, runs)) or '-'})")
        out.append(f"{t:16} {secs:.1f} s" + "".join(", " + x for x in parts))
    return out


def report(results: list[dict], contenders: list[str], tables: list[str]) -> str:
    lines = []
    head = (f"{'table':16} {'floor s':>8} {'ours s':>8} {'lk s':>8} {'ours/floor':>10} {'lk/ours':>8} "
            f"{'scans f/o/lk':>15} {'files o/lk':>11} {'ok':>3}   per run: ours/floor; lk/ours")
    lines += [head, "-" * len(head)]
    rows = []
    for t in tables:  # each table, then its rows on older Spark lines (table@lane)
        rows += [t] + sorted({r["table"] for r in results if r["table"].startswith(t + "@")})
    for t in rows:
        med, scans, files, ok = {}, {}, {}, True
        for c in contenders:
            rs = [r for r in results if r["table"] == t and r["contender"] == c]
            ok = ok and all(r["ok"] for r in rs)
            med[c] = median([r["seconds"] for r in rs])
            scans[c] = median([r["scans"] for r in rs])
            files[c] = median([r["files_after"] for r in rs])

        def fmt(x):
            return "-" if x is None else f"{x:.1f}"

        ratio_f, runs_f = paired_ratio(results, t, "ours", "floor")
        ratio_l, runs_l = paired_ratio(results, t, "lakekeeper", "ours")
        sc = "/".join(fmt(scans.get(c)) for c in ("floor", "ours", "lakekeeper"))
        fl = "/".join("-" if files.get(c) is None else str(int(files[c])) for c in ("ours", "lakekeeper"))
        per_run = f"{' '.join(map(str, runs_f)) or '-'}; {' '.join(map(str, runs_l)) or '-'}"
        lines.append(f"{t:16} {fmt(med.get('floor')):>8} {fmt(med.get('ours')):>8} {fmt(med.get('lakekeeper')):>8} "
                     f"{'-' if ratio_f is None else f'{ratio_f:.2f}':>10} {'-' if ratio_l is None else f'{ratio_l:.2f}':>8} "
                     f"{sc:>15} {fl:>11} {'yes' if ok else 'NO':>3}   {per_run}")
    notes = []
    for t in rows:
        _ratio, runs_f = paired_ratio(results, t, "ours", "floor")
        res = resolution(runs_f)
        if res is not None:
            notes.append(f"{t}: +-{res * 100:.1f} %" + ("" if res < 0.05 else " (more runs needed to resolve 5 %)"))
    if notes:
        lines += ["", "ours/floor, standard error of the median: " + "; ".join(notes)]
    if "ours_ansible" in contenders:
        lines += ["", "through Ansible (ours_ansible: ansible-playbook, the module, spark-submit, a Metastore service), "
                      "paired per run"]
        lines += paired_lines(results, rows, "ours_ansible",
                              [p for p in (("ours_ansible", "floor", "/ floor"), ("ours_ansible", "ours", "/ ours"),
                                           ("ours_ansible", "floor_content", "/ floor_content"))
                               if p[1] in contenders])
    if "ours_svc" in contenders:
        lines += ["", "ours against the Metastore service (ours_svc: as ours, without the embedded Derby Metastore, "
                      "as an edge node runs it), paired per run"]
        lines += paired_lines(results, rows, "ours_svc",
                              [p for p in (("ours_svc", "floor", "/ floor"), ("ours_svc", "ours", "/ ours"),
                                           ("ours_svc", "floor_content", "/ floor_content")) if p[1] in contenders])
    if "ours_rows" in contenders:
        lines += ["", "verify content / verify rows (ours / ours --verify rows, paired per run): what reading the copy "
                      "back costs"]
        for t in rows:
            ratio, runs = paired_ratio(results, t, "ours", "ours_rows")
            rs = median([r["seconds"] for r in results if r["table"] == t and r["contender"] == "ours_rows"])
            lines.append(f"{t:16} rows {'-' if rs is None else f'{rs:.1f}'} s, content/rows "
                         f"{'-' if ratio is None else f'{ratio:.2f}'} ({' '.join(map(str, runs)) or '-'})")
    if "floor_content" in contenders:
        lines += ["", "the floor verifying its copy as ours does (floor_content: the engine's checksum observed on the "
                      "write, the copy read back in one job; no Metastore, journal or swap), paired per run"]
        lines += paired_lines(results, rows, "floor_content",
                              [("floor_content", "floor", "/ floor"), ("ours", "floor_content", "ours / it")])
    lines += ["", "where the time goes (median seconds, from the event logs): start = process start to the "
                  "application's start; to_jobs = to the first Spark job (ours: the Hive client's start, lease, "
                  "table load, listing, plan); jobs = first job's start to last job's end; after = to the exit "
                  "(ours: swaps, journal, Metastore writes)"]
    for t in rows:
        for c in contenders:
            ps = [r["phases"] for r in results if r["table"] == t and r["contender"] == c and r.get("phases")]
            if ps:
                lines.append(f"{t:16} {c:14} " + "  ".join(
                    f"{k} {median([p[k] for p in ps]):5.1f}" for k in ("start", "to_jobs", "jobs", "after")))
    if any(r.get("cpu_seconds") for r in results):
        lines += ["", "CPU seconds (every process of the contender, its JVMs included; waiting for a core adds none), "
                      "paired per run"]
        for c, pairs in (("floor", []), ("floor_content", [("floor_content", "floor", "/ floor")]),
                         ("ours", [("ours", "floor", "/ floor"), ("ours", "floor_content", "/ floor_content")]),
                         ("ours_svc", [("ours_svc", "floor", "/ floor"), ("ours_svc", "floor_content", "/ floor_content")])):
            if c in contenders:
                lines += [f"{c:14} " + x for x in paired_lines(
                    results, rows, c, [p for p in pairs if p[1] in contenders], key="cpu_seconds")]
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--work", default="/tmp/lakekeeper-bench", help="data, Metastore, logs (default %(default)s)")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--block-size", type=int, default=64, help="MB, given to both tools (default %(default)s)")
    p.add_argument("--parallelism", type=int, default=4, help="ours: --parallelism")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--tables", default="flat,parted,orc,all")
    p.add_argument("--contenders", default="floor,ours,lakekeeper",
                   help="floor, ours, lakekeeper, ours_rows (ours with --verify rows: the cost of content "
                        "verification), floor_content (the floor verifying its copy's content as ours does), "
                        "ours_svc (ours against the Metastore service of --via-ansible instead of embedded Derby)")
    p.add_argument("--lakekeeper-venv", default=os.path.expanduser("~/.cache/lakekeeper-bench/venv"))
    p.add_argument("--scale", type=int, default=0, help="also time analyze of a table with this many partitions")
    p.add_argument("--scale-runs", type=int, default=1)
    p.add_argument("--scale-compact", action="store_true",
                   help="after the analysis, compact every partition of the --scale table and analyze it again")
    p.add_argument("--testbed", action="store_true",
                   help="--scale on the test bed (HDFS, Metastore service, Spark standalone) under spark-submit")
    p.add_argument("--via-ansible", action="store_true",
                   help="add ours_ansible: ansible-playbook, the installed collection, spark-submit, a Metastore service")
    p.add_argument("--regenerate", action="store_true")
    p.add_argument("--spark-lanes", default="",
                   help="comma-separated older-Spark lanes (scripts/spark-lanes): floor and ours again on each")
    args = p.parse_args()
    work = os.path.abspath(args.work)
    os.makedirs(work, exist_ok=True)
    state = os.path.join(work, "state")
    contenders = args.contenders.split(",")
    tables = [t for t in args.tables.split(",") if t]
    meta = ensure_data(work, args.regenerate)
    lk_exe = ensure_lakekeeper(args.lakekeeper_venv) if "lakekeeper" in contenders else ""
    if args.via_ansible and "ours_ansible" not in contenders:
        contenders.append("ours_ansible")
    if "ours_svc" in contenders and not args.via_ansible:
        sys.exit("ours_svc runs against the Metastore service of --via-ansible: add --via-ansible")
    via = AnsiblePath(work, meta) if "ours_ansible" in contenders and tables else None
    if tables:
        create_tables(work, state, meta)
        for lane in [x for x in args.spark_lanes.split(",") if x]:
            create_tables(work, state, meta, lane)
    results = []
    load_start = os.getloadavg()
    for run in range(1, args.runs + 1):
        for t in tables:
            # the contenders' order alternates between runs (the machine's drift within a run favours neither);
            # the first run starts with the last contender, so the floor knows the file count ours writes
            for c in (contenders[::-1] if run % 2 else contenders):
                if c in ("floor", "floor_content") and t == "all":
                    continue
                r = run_contender(args, work, state, meta, c, t, run, lk_exe, ours_files=ours_files(results, t),
                                  via=via)
                results.append(r)
                print(f"run {run} {r['table']:7} {c:10} {r['seconds']:7.1f}s scans {r['scans']} "
                      f"files {r['files_after']} {'ok' if r['ok'] else 'FAILED (' + r['log'] + ')'} "
                      f"load {r['load']} cpu {r['cpu_seconds']}", flush=True)
            for lane in [x for x in args.spark_lanes.split(",") if x]:
                for c in [c for c in contenders if c in ("floor", "ours", "ours_rows") and not (c == "floor" and t == "all")]:
                    r = run_contender(args, work, state, meta, c, t, run, lk_exe, lane=lane,
                                      ours_files=ours_files(results, f"{t}@{lane}"))
                    results.append(r)
                    print(f"run {run} {r['table']:7} {c:10} {r['seconds']:7.1f}s scans {r['scans']} "
                          f"files {r['files_after']} {'ok' if r['ok'] else 'FAILED (' + r['log'] + ')'} "
                          f"load {r['load']} cpu {r['cpu_seconds']}", flush=True)
    load_end = os.getloadavg()
    if via is not None:
        via.stop()
    CPU.stop()
    out = {"results": results, "block_size_mb": args.block_size, "master": args.master,
           "load_start": load_start, "load_end": load_end}
    if args.scale:
        out["scale"] = scale_analysis(args, work, state)
    with open(os.path.join(work, "results.json"), "w", encoding="utf-8") as fh:
        json.dump(out, fh, indent=1)
    print()
    print(f"median of {args.runs} run(s), {args.master}, block size {args.block_size} MB; "
          f"seconds are whole processes (JVM start to exit); ratios are the median of the ratios "
          f"within each run (the contenders of a run measured one right after the other)")
    print(report(results, contenders, list(tables)))
    print("scans: records read by all tasks / rows of the data to compact (1.0 = read once)")
    print(f"load average (1/5/15 min) at start {tuple(round(x, 2) for x in load_start)}, "
          f"at end {tuple(round(x, 2) for x in load_end)}")
    if args.scale:
        s = out["scale"]
        print(f"analyze of {s['partitions']} partitions ({s['where']}): wall {median([r['wall'] for r in s['runs']])} s, "
              f"in the application {median([r['in_app'] for r in s['runs']])} s "
              f"(setup: {s['setup']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
