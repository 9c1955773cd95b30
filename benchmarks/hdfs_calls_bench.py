"""A unit's HDFS calls of issue 49, each both ways, on one session against a
test bed, the two ways taking turns in the same process (the machine's load
falls on both alike):

* the open-file check: ``isFileClosed`` a file (on up to 8 threads) against
  one located listing a directory (``listLocatedStatus``, the files' states
  read in the JVM);
* a rename: checked after (two ``exists``) against trusted (HDFS's own).

    python benchmarks/hdfs_calls_bench.py --testbed BED.json [--files 4,40] [--dirs 1,8] [--rounds 30] [--threads 4]

For each shape (directories asked at once x files each, none open): the
median and mean milliseconds of a call each way, the two ways taking turns
round by round, and the driver's gateway calls a call made. ``--threads N``:
N such calls at once, each on directories of its own (as the units that
check their directory before their swap at the same time); their times are
each call's own. NameNode RPCs a
call: ``isFileClosed`` one a file, the listing one ``getListing`` a
directory (up to ``dfs.ls.limit`` entries); unit_profile.py counts them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

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
    ap.add_argument("--threads", type=int, default=1, help="calls at once (default %(default)s)")
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
            sets = []
            for t in range(args.threads):
                dirs = [f"{base}/f{n_files}/t{t}/d{d}" for d in range(n_dirs)]
                for d in dirs:
                    for i in range(n_files):
                        if not fs.exists(f"{d}/part-{i:05d}"):
                            fs.write_text(f"{d}/part-{i:05d}", "x")
                sets.append({d: [f"part-{i:05d}" for i in range(n_files)] for d in dirs})
            ways = {"per file": lambda names: fs._open_by_file(names, 8),  # pylint: disable=protected-access
                    "listing": fs.open_files}
            times: dict[str, list[float]] = {w: [] for w in ways}
            gateway: dict[str, int] = dict.fromkeys(ways, 0)

            def timed(call: Any, names: dict[str, list[str]], into: list[float]) -> None:
                t0 = time.perf_counter()
                assert not any(call(names).values())
                into.append((time.perf_counter() - t0) * 1000)

            for call in ways.values():  # warm both
                call(sets[0])
            with ThreadPoolExecutor(args.threads) as pool:
                for _round in range(args.rounds):
                    for w, call in ways.items():
                        g0 = meter.calls["gateway.calls"]
                        for f in [pool.submit(timed, call, names, times[w]) for names in sets]:
                            f.result()
                        gateway[w] += meter.calls["gateway.calls"] - g0
            calls = args.rounds * args.threads
            for w in ways:
                print(f"{n_dirs:>5} x {n_files:<5} {w:>10} {statistics.median(times[w]):>10.2f} "
                      f"{statistics.mean(times[w]):>9.2f} {gateway[w] / calls:>13.1f}")
    renames(fs, base, args.rounds * 4)
    spark.stop()
    return 0


def renames(fs: Any, base: str, rounds: int) -> None:
    """A directory renamed back and forth, the rename trusted (HDFS's own)
    and checked after (as on any other filesystem), taking turns."""
    a, b = f"{base}/rename/a", f"{base}/rename/b"
    if fs.exists(b):
        fs.delete(b)
    fs.mkdirs(a)
    fs.rename(a, b)  # the decision made, and cached, for this filesystem
    fs.rename(b, a)
    (key,) = [k for k in fs._fs_cache if k.startswith("atomic_rename:")]  # pylint: disable=protected-access
    assert fs._fs_cache[key], "not HDFS itself: nothing to compare"  # pylint: disable=protected-access
    times: dict[str, list[float]] = {"checked": [], "trusted": []}
    for _round in range(rounds):
        for way in times:
            fs._fs_cache[key] = way == "trusted"  # pylint: disable=protected-access
            for src, dst in ((a, b), (b, a)):
                t0 = time.perf_counter()
                fs.rename(src, dst)
                times[way].append((time.perf_counter() - t0) * 1000)
    fs._fs_cache[key] = True  # pylint: disable=protected-access
    for way, ts in times.items():
        print(f"{'rename':>13} {way:>10} {statistics.median(ts):>10.2f} {statistics.mean(ts):>9.2f}")


if __name__ == "__main__":
    sys.exit(main())
