"""Spark programs the benchmark runs as separate processes (see compaction_bench.py).

    python bench_apps.py generate  --out DIR [--scale-partitions N]
    python bench_apps.py tables    --state-dir S --spec tables.json
    python bench_apps.py floor     --state-dir S --fmt parquet --codec snappy --out DIR --input DIR [--input DIR ...]
    python bench_apps.py scale     --state-dir S --spec scale.json

Each prints one JSON line on stdout. The floor is a plain Spark copy at
Spark's default settings: read the files once, write them once. With
``--content`` it also verifies the copy as the engine's ``verify: content``
does, with the engine's own checksum (``lakekeeper_spark.rewrite.content``): the
rows' checksum observed on the write, the whole copy read back in one job
and its checksum compared. That is the least a content-verified copy costs,
without a Metastore, a journal or a swap.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "spark_app"))
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def _session(master: str, state_dir: str | None, confs: list[str]):
    from lakekeeper_spark.session import build_session

    return build_session(master, state_dir, dict(c.split("=", 1) for c in confs), app_name="lakekeeper-bench")


def _rows(spark, n: int, parts: int, seed: int = 0):
    from pyspark.sql import functions as F

    df = spark.range(0, n, 1, numPartitions=parts)
    return df.select(
        F.col("id"),
        (F.lit(1_700_000_000) + F.col("id") * 7 + seed).cast("timestamp").alias("ts"),
        F.concat(F.lit("user_"), (F.col("id") * 7919 % 50_000).cast("string")).alias("user"),
        F.element_at(F.array(*[F.lit(c) for c in ("web", "app", "batch", "api", "mail", "sms")]),
                     (F.col("id") % 6 + 1).cast("int")).alias("channel"),
        (F.col("id") * 0.37 % 1000).alias("amount"),
        F.sha1(F.col("id").cast("string")).substr(1, 16).alias("token"),
    )


def generate(args) -> dict:
    """The pristine data: a non-partitioned Parquet table of many small
    files, a 50-partition Parquet table (30 small-file partitions, 20 healthy
    single-file ones) and an ORC table; written once, linked for each run."""
    spark = _session(args.master, None, args.conf)
    out = args.out
    t0 = time.time()
    info = {}
    flat = os.path.join(out, "flat")
    _rows(spark, args.flat_rows, args.flat_files).write.option("compression", "snappy").parquet("file://" + flat)
    info["flat"] = {"rows": args.flat_rows, "files": args.flat_files}
    parted = os.path.join(out, "parted")
    small_rows = 0
    for p in range(50):
        d = os.path.join(parted, f"part={p:02d}")
        if p < 30:  # 30 partitions of 40 small files
            n, files = 40_000, 40
            small_rows += n
        else:  # 20 healthy partitions: one file each
            n, files = 40_000, 1
        _rows(spark, n, files, seed=p).write.option("compression", "snappy").parquet("file://" + d)
    info["parted"] = {"rows": 50 * 40_000, "rows_to_compact": small_rows, "small_partitions": 30, "partitions": 50}
    orc = os.path.join(out, "orc")
    _rows(spark, args.orc_rows, args.orc_files).write.option("compression", "zlib").orc("file://" + orc)
    info["orc"] = {"rows": args.orc_rows, "files": args.orc_files}
    info["seconds"] = round(time.time() - t0, 1)
    spark.stop()
    return info


COLUMNS = "id BIGINT, ts TIMESTAMP, `user` STRING, channel STRING, amount DOUBLE, token STRING"


def tables(args) -> dict:
    """(Re)create the benchmark databases' tables over their data directories."""
    spec = json.load(open(args.spec, encoding="utf-8"))
    spark = _session(args.master, args.state_dir, args.conf)
    t0 = time.time()
    for db, tabs in spec.items():
        spark.sql(f"CREATE DATABASE IF NOT EXISTS `{db}`")
        for name, t in tabs.items():
            spark.sql(f"DROP TABLE IF EXISTS `{db}`.`{name}`")
            part = " PARTITIONED BY (part STRING)" if t.get("partitions") else ""
            stored = "PARQUET" if t["format"] == "parquet" else "ORC"
            spark.sql(f"CREATE EXTERNAL TABLE `{db}`.`{name}` ({COLUMNS}){part} STORED AS {stored} "
                      f"LOCATION 'file://{t['location']}'")
            for i in range(0, len(t.get("partitions", [])), 500):
                chunk = t["partitions"][i:i + 500]
                clauses = " ".join(f"PARTITION (part='{p}') LOCATION 'file://{t['location']}/part={p}'" for p in chunk)
                spark.sql(f"ALTER TABLE `{db}`.`{name}` ADD {clauses}")
    res = {"seconds": round(time.time() - t0, 1)}
    spark.stop()
    return res


def floor(args) -> dict:
    """The physical floor: read the same files once and write them once, same
    format and codec, packed as ours packs its reads (whole files into splits
    of ``--split-bytes``, an open costing 1 byte, no minimum number of
    splits: one output file per split and partition) and, for a partitioned
    table (``--partition-column``), one output directory per partition, as
    ours writes."""
    spark = _session(args.master, args.state_dir, args.conf)
    if args.split_bytes:
        spark.conf.set("spark.sql.files.maxPartitionBytes", str(args.split_bytes))
        spark.conf.set("spark.sql.files.openCostInBytes", "1")
        spark.conf.set("spark.sql.files.minPartitionNum", "1")
    t0 = time.time()
    reader = spark.read.format(args.fmt)
    if args.base_path:  # the partition column from the directories' names
        reader = reader.option("basePath", "file://" + args.base_path)
    df = reader.load(["file://" + p for p in args.input])
    observation = None
    if args.content:  # the engine's checksum of the rows read, observed on the way to the writer
        from pyspark.sql import Observation

        from lakekeeper_spark.rewrite import content

        data = [c for c in df.columns if c != args.partition_column]
        observation = Observation("floor_content")
        df = df.observe(observation, *content.metrics(df.select(*data)))
    writer = df.write.format(args.fmt).option("compression", args.codec)
    if args.partition_column:
        writer = writer.partitionBy(args.partition_column)
    writer.save("file://" + args.out)
    res = {"copy_seconds": round(time.time() - t0, 2)}
    if observation is not None:  # the copy read back whole, its checksum compared: one job for every partition
        back = spark.read.schema(df.schema).format(args.fmt).load("file://" + args.out)
        expected = content.figures(observation.get)
        got = content.checksum(back.select(*data))
        if got != expected:
            raise SystemExit(f"the floor's copy does not read back as its input: {expected} != {got}")
        res.update(content=got["content"], verify_seconds=round(time.time() - t0 - res["copy_seconds"], 2))
    spark.stop()
    return res


def scale(args) -> dict:
    """A Parquet table with many partitions (two small files each), for the
    analysis at scale, partitions added 500 per statement. On the local
    filesystem the directories are made directly (hard links to two small
    files); on any other filesystem (``hdfs://`` on the test bed) the two
    files are copied into each partition directory (see ``_copy_seed``)."""
    spec = json.load(open(args.spec, encoding="utf-8"))
    spark = _session(args.master, args.state_dir, args.conf)
    t0 = time.time()
    root, n = spec["location"], spec["partitions"]
    if "://" not in root:
        uri = "file://" + root
        seed = os.path.join(os.path.dirname(root), "scale_seed")
        if not os.path.isdir(seed):
            _rows(spark, 200, 2).write.parquet("file://" + seed)
        seeds = [f for f in sorted(os.listdir(seed)) if f.endswith(".parquet")]
        for p in range(n):
            d = os.path.join(root, f"part={p:05d}")
            os.makedirs(d, exist_ok=True)
            for f in seeds:
                if not os.path.exists(os.path.join(d, f)):
                    os.link(os.path.join(seed, f), os.path.join(d, f))
    else:
        uri = root
        _copy_seed(spark, uri, n)
    files_s = time.time() - t0
    db, name = spec["table"].split(".")
    spark.sql(f"CREATE DATABASE IF NOT EXISTS `{db}`")
    spark.sql(f"DROP TABLE IF EXISTS `{db}`.`{name}`")
    spark.sql(f"CREATE EXTERNAL TABLE `{db}`.`{name}` ({COLUMNS}) PARTITIONED BY (part STRING) STORED AS PARQUET "
              f"LOCATION '{uri}'")
    for i in range(0, n, 500):
        clauses = " ".join(f"PARTITION (part='{p:05d}') LOCATION '{uri}/part={p:05d}'"
                           for p in range(i, min(n, i + 500)))
        spark.sql(f"ALTER TABLE `{db}`.`{name}` ADD {clauses}")
    res = {"files_seconds": round(files_s, 1), "metastore_seconds": round(time.time() - t0 - files_s, 1)}
    spark.stop()
    return res


def _copy_seed(spark, uri: str, n: int, threads: int = 32) -> None:
    """Two small Parquet files written once, then copied into each of the
    ``n`` partition directories through the Hadoop FileSystem API from many
    driver threads: one HDFS file write is latency-bound (NameNode calls and
    the DataNode pipeline), so a Spark write's two tasks would make 20,000
    files at about 9 a second."""
    from concurrent.futures import ThreadPoolExecutor

    jvm = spark._jvm
    conf = spark._jsc.hadoopConfiguration()
    seed = uri.rstrip("/") + "/_seed"
    _rows(spark, 200, 2).write.mode("overwrite").parquet(seed)
    fs = jvm.org.apache.hadoop.fs.Path(seed).getFileSystem(conf)
    seeds = [st.getPath() for st in fs.listStatus(jvm.org.apache.hadoop.fs.Path(seed))
             if st.getPath().getName().endswith(".parquet")]

    def make(p: int) -> None:
        d = jvm.org.apache.hadoop.fs.Path(f"{uri}/part={p:05d}")
        for src in seeds:
            dst = jvm.org.apache.hadoop.fs.Path(d, src.getName())
            if not fs.exists(dst):
                jvm.org.apache.hadoop.fs.FileUtil.copy(fs, src, fs, dst, False, conf)

    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(make, range(n)))
    fs.delete(jvm.org.apache.hadoop.fs.Path(seed), True)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("command", choices=["generate", "tables", "floor", "scale"])
    p.add_argument("--master", default="local[2]")
    p.add_argument("--state-dir")
    p.add_argument("--conf", action="append", default=[])
    p.add_argument("--out")
    p.add_argument("--spec")
    p.add_argument("--fmt")
    p.add_argument("--codec")
    p.add_argument("--input", action="append", default=[])
    p.add_argument("--split-bytes", type=int, default=0, help="floor: maxPartitionBytes (0: Spark's default)")
    p.add_argument("--partition-column", help="floor: write one directory per value of this column")
    p.add_argument("--base-path", help="floor: the table directory the inputs' partition directories are in")
    p.add_argument("--content", action="store_true",
                   help="floor: verify the copy's content as the engine does (checksum observed, copy read back)")
    p.add_argument("--flat-rows", type=int, default=4_000_000)
    p.add_argument("--flat-files", type=int, default=2000)
    p.add_argument("--orc-rows", type=int, default=2_000_000)
    p.add_argument("--orc-files", type=int, default=1000)
    args = p.parse_args()
    res = {"generate": generate, "tables": tables, "floor": floor, "scale": scale}[args.command](args)
    sys.stdout.write(json.dumps(res) + "\n")


if __name__ == "__main__":
    main()
