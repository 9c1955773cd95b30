"""Where a driver's CPU goes, by thread: a sampler for the benchmark.

    python benchmarks/thread_cpu.py OUT.json PATTERN [--interval S] [--wait S]

Looks every ``--interval`` seconds (default 1) for the driver of a run: the
JVM (``SparkSubmit``) and the Python process whose command lines hold
``PATTERN`` (for instance ``run_lakekeeper.py compact``). It keeps the last
CPU time (user + system) it saw of every thread of both, by thread name
(Linux's ``comm``: Java threads carry their Java name, cut to 15
characters), and when both are gone (or after ``--wait`` seconds without
seeing them) writes OUT.json: per-thread and per-kind seconds, and the
processes' totals. A thread that ended between two looks counts with its
last look; what the looks missed shows as ``unattributed`` (the process's
total minus its threads).

The kinds split the driver's time between the compaction's protocol and
the Spark jobs it runs (see ``KINDS``): py4j's connection threads
(``Thread-N``) run what Python asks the JVM for - the Hadoop FileSystem
and Hive client calls of the protocol, and the calls that build and start
each job - while Spark's scheduler, RPC and listener threads serve the
jobs themselves.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time

TICK = os.sysconf("SC_CLK_TCK")

# (kind, pattern on the thread's comm), first match wins
KINDS = [
    ("py4j calls (the protocol's JVM side and the jobs' planning)", r"^Thread-\d+$"),
    ("HDFS client", r"^(IPC |LeaseRenewer|DataStreamer|DFSClient|ResponseProcessor|org\.apache\.hado|Hedged)"),
    ("Metastore client", r"^(HiveMetaStore|hive|Hive)"),
    ("Spark jobs: scheduling, RPC, results, listeners",
     r"^(dag-scheduler|dispatcher-|task-result-|spark-listener|map-output-|netty-rpc|rpc-|shuffle-|block-manager|"
     r"Spark Context|driver-|context-cleaner|heartbeat|appclient|executor-|Executor|broadcast|element-tracking|"
     r"cleaner|SparkUI|task-|spark-)"),
    ("JIT compiler", r"^(C1 Compiler|C2 Compiler|Sweeper)"),
    ("GC and VM", r"^(VM Thread|GC Thread|G1 |VM Periodic|Service Thread|Signal Dispatch|Finalizer|Reference Hand|"
                  r"Common-Cleaner|Notification Th|Monitor Deflat|Attach Listener|VM Operation)"),
    ("JVM main thread (spark-submit, Python's start)", r"^java$"),
]


def kind_of(name: str) -> str:
    for kind, pattern in KINDS:
        if re.match(pattern, name):
            return kind
    return "other threads"


def cmdline(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def find(pattern: str) -> dict[str, str]:
    """{"jvm": pid, "python": pid} of the driver whose command line holds ``pattern``."""
    found = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or pid == str(os.getpid()):
            continue
        cmd = cmdline(pid)
        if pattern not in cmd or "thread_cpu.py" in cmd or "org.apache.spark.launcher.Main" in cmd:
            continue  # not the launcher's JVM that spark-class runs first to build the command
        program = os.path.basename(cmd.split(" ", 1)[0])
        if program == "java" and "org.apache.spark.deploy.SparkSubmit" in cmd:
            found["jvm"] = pid
        elif program.startswith("python"):
            found["python"] = pid
    return found


def ticks(stat_path: str) -> int | None:
    try:
        with open(stat_path, encoding="utf-8") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return None


def look(pid: str, threads: dict[str, tuple[str, int]]) -> int | None:
    """Update ``threads`` (tid -> (name, ticks)); the process's total ticks."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for tid in tids:
        t = ticks(f"/proc/{pid}/task/{tid}/stat")
        if t is None:
            continue
        try:
            with open(f"/proc/{pid}/task/{tid}/comm", encoding="utf-8") as fh:
                name = fh.read().strip()
        except OSError:
            continue
        threads[tid] = (name, t)
    return ticks(f"/proc/{pid}/stat")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("out")
    ap.add_argument("pattern")
    ap.add_argument("--interval", type=float, default=1.0)
    ap.add_argument("--wait", type=float, default=600.0, help="give up after this long without a driver")
    args = ap.parse_args()
    pids: dict[str, str] = {}
    threads: dict[str, dict[str, tuple[str, int]]] = {"jvm": {}, "python": {}}
    totals: dict[str, int] = {}
    started = time.monotonic()
    seen = False
    misses = 0
    while True:
        alive = False
        for role, pid in find(args.pattern).items():
            if pids.setdefault(role, pid) != pid:
                continue  # one driver a sampler
            total = look(pid, threads[role])
            if total is not None:
                totals[role] = total
                alive = True
        seen = seen or alive
        misses = 0 if alive else misses + 1
        if (seen and misses >= 3) or (not seen and time.monotonic() - started > args.wait):
            break
        time.sleep(args.interval)
    out: dict = {"pids": pids, "seconds": {}, "kinds": {}, "threads": {}}
    for role in ("jvm", "python"):
        summed = 0
        by_name: dict[str, float] = {}
        for name, t in threads[role].values():
            summed += t
            key = re.sub(r"\d+", "N", name) if role == "jvm" else name
            by_name[key] = by_name.get(key, 0) + t / TICK
            if role == "jvm":
                kind = kind_of(name)
                out["kinds"][kind] = round(out["kinds"].get(kind, 0) + t / TICK, 2)
        total = totals.get(role, 0)
        out["seconds"][role] = round(total / TICK, 2)
        if role == "jvm":
            out["kinds"]["unattributed (threads ended between looks)"] = round(max(0, total - summed) / TICK, 2)
        out["threads"][role] = {k: round(v, 2) for k, v in sorted(by_name.items(), key=lambda kv: -kv[1])[:25]}
    with open(args.out, "w", encoding="utf-8") as fh:
        json.dump(out, fh, indent=2)


if __name__ == "__main__":
    main()
