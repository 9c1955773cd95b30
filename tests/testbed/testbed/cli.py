"""Command line for the test bed (wrapped by scripts/testbed).

    scripts/testbed up [--dir D] [--hadoop 3.5|2.7] [--datanodes N] [--no-yarn]
                       [--no-spark] [--no-hdfs] [--no-metastore]
    scripts/testbed status [--dir D] [--json]
    scripts/testbed env [--dir D]          # eval "$(scripts/testbed env)"
    scripts/testbed logs [--dir D] [SERVICE] [-n LINES]
    scripts/testbed down [--dir D]
    scripts/testbed fetch [--hadoop 3.5|2.7|all]   # only download jars (CI cache step)

D defaults to $LAKEKEEPER_TESTBED_DIR, else <repo>/.lakekeeper/testbed; status, env,
logs and down also accept $LAKEKEEPER_TESTBED_JSON when --dir is not given.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from . import hadoop3, hadoop_jars, maven
from .bed import DEFAULT_BLOCK_SIZE, DEFAULT_TIMEOUT, HADOOP_LINES, JSON_NAME, Testbed
from .procs import TestbedError, log_tail

REPO = Path(__file__).resolve().parents[3]


def default_dir() -> Path:
    return Path(os.environ.get("LAKEKEEPER_TESTBED_DIR") or REPO / ".lakekeeper" / "testbed")


def _json_path(args) -> Path:
    if args.dir:
        return Path(args.dir) / JSON_NAME
    if os.environ.get("LAKEKEEPER_TESTBED_JSON"):
        return Path(os.environ["LAKEKEEPER_TESTBED_JSON"])
    return default_dir() / JSON_NAME


def cmd_up(args) -> int:
    run = Path(args.dir) if args.dir else default_dir()
    print(f"testbed: starting in {run} ...", file=sys.stderr, flush=True)
    bed = Testbed.start(run, hdfs=not args.no_hdfs, metastore=not args.no_metastore,
                        spark=not args.no_spark, block_size=args.block_size,
                        worker_cores=args.worker_cores, worker_memory=args.worker_memory,
                        timeout=args.timeout, hadoop=args.hadoop, yarn=False if args.no_yarn else None,
                        datanodes=args.datanodes)
    t = bed.info["timings"]
    print(f"testbed: up in {t['total_start_s']} s (ready after: "
          + ", ".join(f"{k} {v} s" for k, v in t["ready_after_s"].items()) + ")", file=sys.stderr)
    _print_summary(bed)
    print(f'  client shell: eval "$(scripts/testbed env --dir {run})"', file=sys.stderr)
    print(bed.json_path)
    return 0


def _print_summary(bed: Testbed, file=sys.stderr) -> None:
    hdfs = f"{bed.hdfs_uri} (Hadoop {bed.hadoop_version}, {bed.datanodes} DataNode(s)" + (
        f", erasure coding: {', '.join(bed.ec_policies)})" if bed.ec_policies else ")") if bed.hdfs_uri else None
    rows = [("HDFS", hdfs), ("YARN RM", bed.yarn_rm), ("Metastore", bed.metastore_uri),
            ("Spark master", bed.master_url),
            ("warehouse", bed.warehouse_dir), ("client conf", str(bed.conf_dir)),
            ("logs", str(bed.log_dir)), ("json", str(bed.json_path))]
    for k, v in rows:
        if v:
            print(f"  {k:13} {v}", file=file)


def cmd_down(args) -> int:
    path = _json_path(args)
    if not path.exists():
        print(f"testbed: nothing to stop ({path} does not exist)", file=sys.stderr)
        return 0
    bed = Testbed.load(path)
    notes = bed.stop()
    for n in notes:
        print(f"testbed: {n}", file=sys.stderr)
    left = {name: p.members() for name, p in bed.procs.items() if p.members()}
    if left:
        print(f"testbed: processes still running: {left}", file=sys.stderr)
        return 1
    print(f"testbed: stopped ({len(bed.procs)} services; logs kept in {bed.log_dir})", file=sys.stderr)
    return 0


def cmd_status(args) -> int:
    bed = Testbed.load(_json_path(args))
    st = bed.status()
    if args.json:
        print(json.dumps({"state": bed.info.get("state"), "json": str(bed.json_path), "services": st}, indent=2))
    else:
        print(f"test bed {bed.json_path} (recorded state: {bed.info.get('state')})")
        _print_summary(bed, file=sys.stdout)
        for name, s in st.items():
            extra = f" listening {s['listening']}" if s["alive"] else ""
            kids = len(s["group"]) - (1 if s["alive"] else 0)
            extra += f" +{kids} child process(es)" if kids > 0 else ""
            print(f"  {name:13} pid {s['pid']:>7} {'UP  ' if s['alive'] else 'DOWN'}{extra}")
    return 0 if bed.alive() else 3


def cmd_env(args) -> int:
    bed = Testbed.load(_json_path(args))
    sys.stdout.write(bed.export_lines())
    if not bed.alive():
        print("testbed: warning: not all services are running (scripts/testbed status)", file=sys.stderr)
    return 0


def cmd_logs(args) -> int:
    bed = Testbed.load(_json_path(args))
    names = [args.service] if args.service else list(bed.procs)
    for name in names:
        p = bed.procs.get(name)
        if p is None:
            print(f"testbed: no service {name!r} (have: {', '.join(bed.procs)})", file=sys.stderr)
            return 2
        print(f"==> {p.log} <==")
        if args.lines:
            print(log_tail(p.log, args.lines))
    return 0


def cmd_fetch(args) -> int:
    if args.hadoop in ("3.5", "all"):
        print(hadoop3.jars())
    if args.hadoop in ("2.7", "all"):
        print(hadoop_jars.ensure_jars())
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="scripts/testbed", description="Real HDFS + YARN + Hive Metastore + Spark "
                                 "standalone on 127.0.0.1 for the lakekeeper tests.",
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    up = sub.add_parser("up", help="start the services and write D/testbed.json")
    up.add_argument("--dir", help="run directory (data, conf, logs)")
    up.add_argument("--hadoop", choices=sorted(HADOOP_LINES), default=None,
                    help="Hadoop line: 3.5 (default, or $LAKEKEEPER_TESTBED_HADOOP; HDFS + YARN in one JVM) "
                         "or 2.7 (NameNode + DataNode, no YARN)")
    up.add_argument("--datanodes", type=int, default=None,
                    help=f"DataNodes (3.5 only; default {hadoop3.DEFAULT_DATANODES}: erasure coding "
                         "XOR-2-1-1024k; 5 adds RS-3-2-1024k)")
    up.add_argument("--no-yarn", action="store_true", help="no ResourceManager/NodeManager (3.5)")
    up.add_argument("--no-hdfs", action="store_true", help="no NameNode/DataNode; warehouse on file://")
    up.add_argument("--no-metastore", action="store_true", help="no Hive Metastore service")
    up.add_argument("--no-spark", action="store_true", help="no Spark standalone master/worker")
    up.add_argument("--block-size", type=int, default=DEFAULT_BLOCK_SIZE, help="dfs.blocksize in bytes")
    up.add_argument("--worker-cores", type=int, default=2)
    up.add_argument("--worker-memory", default="1g")
    up.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds to wait per start")
    up.set_defaults(func=cmd_up)
    for name, func, hlp in (("down", cmd_down, "stop every service (whole process groups)"),
                            ("status", cmd_status, "is each service up? (exit 3 if not)"),
                            ("env", cmd_env, "print export lines for a client shell"),
                            ("logs", cmd_logs, "log file paths (and tails with -n)")):
        p = sub.add_parser(name, help=hlp)
        p.add_argument("--dir", help="run directory")
        if name == "status":
            p.add_argument("--json", action="store_true")
        if name == "logs":
            p.add_argument("service", nargs="?")
            p.add_argument("-n", "--lines", type=int, default=0)
        p.set_defaults(func=func)
    f = sub.add_parser("fetch", help="download the jars into the cache only: Hadoop 3.5.0 (Maven Central), "
                                     "Hadoop 2.7.3 (pyspark 2.4.8 sdist) or both")
    f.add_argument("--hadoop", choices=["3.5", "2.7", "all"], default="all")
    f.set_defaults(func=cmd_fetch)
    args = ap.parse_args(argv)
    try:
        return args.func(args)
    except (TestbedError, hadoop_jars.JarFetchError, maven.MavenError) as e:
        print(f"testbed: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
