"""Z-order benchmark: the files a filtered read must open after compacting
the same small files with no sort, a linear ``sort_by: a, b`` and
``sort_by: zorder(a, b)``, side by side in one run.

    .venv/bin/python benchmarks/zorder_bench.py [--rows 2000000] [--files 400] [--target-mb 2] [--runs 1]

One run of this script:

1. writes, once, a non-partitioned Parquet table of ``--files`` small part-
   files as a Spark job leaves them (every file holds rows from the whole
   range of every column): ``a`` and ``b`` uniform and uncorrelated,
   ``c = a + noise`` (correlated with ``a``), ``pad`` a 64-byte string;
2. for each strategy (in an order that alternates between runs), copies the
   table's files into a table of its own and times ``compact`` of it
   in-process (one local[2] SparkSession, generated code, as the engine runs
   on a cluster), with ``--target-mb`` as the target file size;
3. reads every output file's footer (pyarrow: the min/max statistics of
   each column over its row groups) and, for 50 random range filters of 1 %
   of the domain on ``a`` alone, ``b`` alone, ``c`` alone and ``a AND b``
   (each side 10 %), counts the files whose min/max overlap the filter:
   the files a reader that skips by statistics must open;
4. prints, per strategy, the files written, the compaction's seconds (and
   its ratio to no sort) and the share of files opened per filter (and the
   skipping gain: files opened with no sort / with this strategy), and the
   load average (the machine is shared; the seconds are only as good as it
   is quiet).

Not a timed test: a script run by hand; its printed numbers go to
docs/benchmarks.md ("Z-order").
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "spark_app"))
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

STRATEGIES = {"none": None, "linear(a,b)": "a, b", "zorder(a,b)": "zorder(a, b)"}
DOMAIN = 1_000_000  # a, b in [0, DOMAIN)
FILTERS = 50


def _footer_ranges(path: str) -> list[dict[str, tuple[float, float]]]:
    import pyarrow.parquet as pq

    out = []
    for name in sorted(os.listdir(path)):
        if name.startswith((".", "_")):
            continue
        meta = pq.ParquetFile(os.path.join(path, name)).metadata
        ranges = {}
        for col in ("a", "b", "c"):
            idx = meta.schema.names.index(col)
            stats = [meta.row_group(g).column(idx).statistics for g in range(meta.num_row_groups)]
            ranges[col] = (min(s.min for s in stats), max(s.max for s in stats))
        out.append(ranges)
    return out


def _filters(seed: int) -> dict[str, list[dict[str, tuple[float, float]]]]:
    rnd = random.Random(seed)

    def window(width: float) -> tuple[float, float]:
        lo = rnd.uniform(0, DOMAIN * (1 - width))
        return lo, lo + DOMAIN * width

    return {
        "a": [{"a": window(0.01)} for _i in range(FILTERS)],
        "b": [{"b": window(0.01)} for _i in range(FILTERS)],
        "c": [{"c": window(0.01)} for _i in range(FILTERS)],
        "a AND b": [{"a": window(0.1), "b": window(0.1)} for _i in range(FILTERS)],
    }


def _opened(files: list[dict[str, tuple[float, float]]], flt: dict[str, tuple[float, float]]) -> int:
    """Files whose min/max overlap every column's range of the filter."""
    return sum(all(f[c][0] <= hi and f[c][1] >= lo for c, (lo, hi) in flt.items()) for f in files)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--files", type=int, default=400)
    ap.add_argument("--target-mb", type=float, default=2.0)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--work", default=None)
    args = ap.parse_args()
    from lakekeeper_spark.session import build_session

    work = args.work or tempfile.mkdtemp(prefix="lk-zorder-")
    spark = build_session("local[2]", os.path.join(work, "state"), {"spark.ui.enabled": "false"})
    spark.sparkContext.setLogLevel("ERROR")
    spark.sql("CREATE DATABASE IF NOT EXISTS lkz")
    from lakekeeper_spark.catalog.catalog import Catalog
    from lakekeeper_spark.catalog.context import Context
    from lakekeeper_spark.cli import _run_tables
    from lakekeeper_spark.policy.config import build_settings
    from lakekeeper_spark.storage.fs import HadoopFS
    from lakekeeper_spark.storage.layout import new_run_id

    pristine = os.path.join(work, "pristine")
    if not os.path.isdir(pristine):
        spark.range(args.rows).selectExpr(
            f"pmod(xxhash64(id, 1), {DOMAIN}) AS a", f"pmod(xxhash64(id, 2), {DOMAIN}) AS b",
            f"least({DOMAIN - 1}, greatest(0, pmod(xxhash64(id, 1), {DOMAIN}) + pmod(xxhash64(id, 3), 20001) - 10000))"
            " AS c", "sha2(cast(id AS string), 256) AS pad",
        ).repartition(args.files).write.parquet("file://" + pristine)
    cols = "a BIGINT, b BIGINT, c BIGINT, pad STRING"
    seconds: dict[str, list[float]] = {k: [] for k in STRATEGIES}
    layout: dict[str, list[dict[str, tuple[float, float]]]] = {}
    names = list(STRATEGIES)
    for run in range(args.runs):
        for key in (names if run % 2 == 0 else names[::-1]):
            tname = "t_" + "".join(ch for ch in key if ch.isalnum())
            loc = os.path.join(work, tname)
            shutil.rmtree(loc, ignore_errors=True)
            shutil.copytree(pristine, loc)
            spark.sql(f"DROP TABLE IF EXISTS lkz.{tname}")
            spark.sql(f"CREATE EXTERNAL TABLE lkz.{tname} ({cols}) STORED AS PARQUET LOCATION 'file://{loc}'")
            settings = {"target_file_size_mb": args.target_mb}
            if STRATEGIES[key]:
                settings["sort_by"] = STRATEGIES[key]
            ctx = Context(spark, HadoopFS(spark), Catalog(spark), build_settings({}, settings), new_run_id())
            t0 = time.monotonic()
            (res,) = _run_tables(ctx, "compact", [f"lkz.{tname}"], None)
            seconds[key].append(time.monotonic() - t0)
            if res["status"] != "compacted":
                raise SystemExit(f"{key}: {res['status']}: {res['reason']}")
            layout[key] = _footer_ranges(loc)
    flts = _filters(7)
    base_s = statistics.median(seconds["none"])
    opened = {k: {f: statistics.mean(_opened(layout[k], x) for x in xs) for f, xs in flts.items()} for k in names}
    print(f"{args.rows:,} rows in {args.files} files -> target {args.target_mb} MB; {args.runs} run(s); "
          f"{FILTERS} filters each: 1 % of a, b or c; a AND b: 10 % of each; load average "
          f"{os.getloadavg()[0]:.1f} at the end")
    head = f"{'strategy':<12} {'files':>5} {'compact s':>9} {'x none':>6}"
    for f in flts:
        head += f" {('open ' + f):>12} {'gain':>5}"
    print(head)
    for k in names:
        n = len(layout[k])
        s = statistics.median(seconds[k])
        line = f"{k:<12} {n:>5} {s:>9.1f} {s / base_s:>6.2f}"
        for f in flts:
            share = opened[k][f] / n
            gain = opened["none"][f] / opened[k][f] if opened[k][f] else float("inf")
            line += f" {share:>11.1%} {gain:>5.1f}"
        print(line)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
