"""Parquet footer reads on the driver: Parquet's own default read options
against ours (``formats._parquet_reader``: options over the session's
Hadoop configuration), side by side in one JVM, alternating.

    .venv/bin/python benchmarks/footer_reads.py [--files 200] [--rounds 4]

The engine reads footers on the driver for every unit (its files' codec,
columns and layout; the payload estimate; the staged files' row counts).
``ParquetFileReader.open(file)`` without options builds its own, and from
Parquet 1.14 on (Spark 4) that is a new Hadoop ``Configuration`` loaded
from the XML files on the class path, each time. Prints milliseconds per
footer for both and their ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "spark_app"))
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=4)
    args = ap.parse_args()
    from pyspark.sql import SparkSession

    from lakekeeper_spark.storage.formats import _parquet_reader  # pylint: disable=protected-access

    spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")\
        .config("spark.ui.showConsoleProgress", "false").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    jvm, conf = spark._jvm, spark._jsc.hadoopConfiguration()
    with tempfile.TemporaryDirectory(prefix="lk-footers-") as tmp:
        data = os.path.join(tmp, "t")
        spark.range(0, args.files * 100, 1, args.files).selectExpr("id", "concat('v', id) AS v").write.parquet(
            "file://" + data)
        uris = ["file://" + os.path.join(data, n) for n in sorted(os.listdir(data)) if n.endswith(".parquet")]
        path = jvm.org.apache.hadoop.fs.Path

        def parquet_default(uri: str) -> int:
            r = jvm.org.apache.parquet.hadoop.ParquetFileReader.open(
                jvm.org.apache.parquet.hadoop.util.HadoopInputFile.fromPath(path(uri), conf))
            try:
                return int(r.getRecordCount())
            finally:
                r.close()

        def ours(uri: str) -> int:
            r = _parquet_reader(spark, path(uri), conf)
            try:
                return int(r.getRecordCount())
            finally:
                r.close()

        times: dict[str, list[float]] = {"parquet_default": [], "ours": []}
        for rnd in range(args.rounds):
            order = [("parquet_default", parquet_default), ("ours", ours)]
            for name, read in order if rnd % 2 == 0 else order[::-1]:
                t0 = time.perf_counter()
                rows = sum(read(u) for u in uris)
                times[name].append((time.perf_counter() - t0) * 1000 / len(uris))
                assert rows == args.files * 100, (name, rows)
    a, b = statistics.median(times["parquet_default"]), statistics.median(times["ours"])
    print(f"Spark {spark.version}, {len(uris)} footers a round, {args.rounds} rounds, alternating")
    print(f"ms per footer: Parquet's default options {a:.2f} ({', '.join(f'{x:.2f}' for x in times['parquet_default'])}); "
          f"ours {b:.2f} ({', '.join(f'{x:.2f}' for x in times['ours'])}); ratio {a / b:.1f}")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
