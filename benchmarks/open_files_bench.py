"""The open-file check of a unit on HDFS, both ways, on one session against a
test bed (issue 49): ``isFileClosed`` a file (on up to 8 threads) against one
located listing a directory (``listLocatedStatus``, the files' states read
in the JVM), alternated, in the same process.

    python benchmarks/open_files_bench.py --testbed BED.json [--files 4,40] [--dirs 1,8] [--rounds 30]

For each shape (directories asked at once x files each, none open): the
median and mean milliseconds of a call each way, the two ways taking turns
round by round, and the driver's gateway calls a call made. NameNode RPCs a
call: ``isFileClosed`` one a file, the listing one ``getListing`` a
directory (up to ``dfs.ls.limit`` entries); unit_profile.py counts them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "spark_app"))
sys.path.insert(0, HERE)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def main() -> int:
    import unit_profile as up

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--testbed", required=True)
    ap.add_argument("--files", default="4,40", help="files a directory (default %(default)s)")
    ap.add_argument("--dirs", default="1,8", help="directories asked at once (default %(default)s)")
    ap.add_argument("--rounds", type=int, default=30)
    args = ap.parse_args()
    args.master, args.state = "local[1]", None
    spark, base = up.session(args, "")
    from lakekeeper_spark.storage.fs import HadoopFS

    meter = up.Meter()
    up.count_gateway_calls(meter)
    fs = HadoopFS(spark)
    base = f"{base}-open-files"
    print(f"{'dirs x files':>13} {'way':>10} {'median ms':>10} {'mean ms':>9} {'gateway/call':>13}")
    for n_files in (int(x) for x in args.files.split(",")):
        for n_dirs in (int(x) for x in args.dirs.split(",")):
            dirs = [f"{base}/f{n_files}/d{d}" for d in range(n_dirs)]
            for d in dirs:
                for i in range(n_files):
                    if not fs.exists(f"{d}/part-{i:05d}"):
                        fs.write_text(f"{d}/part-{i:05d}", "x")
            names = {d: [f"part-{i:05d}" for i in range(n_files)] for d in dirs}
            ways = {"per file": lambda: fs._open_by_file(names, 8),  # pylint: disable=protected-access
                    "listing": lambda: fs.open_files(names)}
            for way in ways.values():  # warm both
                way()
            times: dict[str, list[float]] = {w: [] for w in ways}
            gateway: dict[str, int] = dict.fromkeys(ways, 0)
            for _ in range(args.rounds):
                for w, call in ways.items():
                    g0 = meter.calls["gateway.calls"]
                    t0 = time.perf_counter()
                    assert not any(call().values())
                    times[w].append((time.perf_counter() - t0) * 1000)
                    gateway[w] += meter.calls["gateway.calls"] - g0
            for w in ways:
                print(f"{n_dirs:>5} x {n_files:<5} {w:>10} {statistics.median(times[w]):>10.2f} "
                      f"{statistics.mean(times[w]):>9.2f} {gateway[w] / args.rounds:>13.1f}")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
