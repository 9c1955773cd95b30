"""The tables of tests/testbed/test_hive_reader.py, made as the engine tests make
them (tests/engine: engine_helpers.make_table, raw files of ingestion tools,
pyarrow files as Hive and Impala write them, Hive's own DDL), on the test
bed's HDFS through its Metastore service; then Spark's view of each.

A separate Spark process (local master) configured by the bed's conf dirs.

    python hive_reader_tables.py SPARK_APP TESTS_ENGINE BASE OUT_JSON LOCAL_DIR TIMEZONE

TIMEZONE: the HiveServer2's; this Spark's session and JVM run in it too, so both
show an instant as the same wall-clock time.

Every table is ``lk.hr_<shape>`` (make_table writes into ``lk``; the prefix keeps
them apart from the other tests' on a shared bed), located under BASE.

Writes OUT_JSON: per table its columns (name, type; partition columns last),
Spark's rows as canonical tokens (``token_sql``: the same encoding the test
asks Hive for) and notes; plus the tamper file (a local copy of one data file
and of that file with one value changed, both in LOCAL_DIR).
"""
from __future__ import annotations

import json
import sys
import traceback
from pathlib import Path

sys.path[:0] = [sys.argv[1], sys.argv[2]]

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from pyarrow import orc  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402

from engine_helpers import Files, make_table  # noqa: E402  pylint: disable=import-error

BASE, OUT, LOCAL, TZ = sys.argv[3].rstrip("/"), sys.argv[4], Path(sys.argv[5]), sys.argv[6]
DB, PREFIX = "lk", "hr_"
BASE_NS = 1577872800_000_000_000  # 2020-01-01 10:00:00 UTC


def hive(spark, statement: str) -> None:
    """A statement through Hive's own Driver inside Spark's Hive client (as
    tests/engine/test_schema_drift.py does: Spark refuses ``CHANGE a b``)."""
    system = spark._jvm.java.lang.System
    client = spark._jsparkSession.sharedState().externalCatalog().unwrapped().client()
    system.setProperty("spark.testing", "true")
    try:
        client.runSqlHive(statement)
    finally:
        system.clearProperty("spark.testing")


def lines(files, uri: str, rows: list[str], encoding: str = "utf-8") -> None:
    files.write_bytes(uri, "".join(r + "\n" for r in rows).encode(encoding))


def parquet_bytes(table, **kw) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, **kw)
    return sink.getvalue().to_pybytes()


def orc_bytes(table) -> bytes:
    sink = pa.BufferOutputStream()
    orc.write_table(table, sink)
    return sink.getvalue().to_pybytes()


def external(spark, name: str, ddl: str, tail: str) -> tuple[str, str]:
    name = PREFIX + name
    t, loc = f"{DB}.{name}", f"{BASE}/{name}"
    spark.sql(f"DROP TABLE IF EXISTS {t}")
    spark.sql(f"CREATE EXTERNAL TABLE {t} ({ddl}) {tail.replace('@LOC', repr(loc))}")
    return t, loc


# ---------------------------------------------------------------- the shapes

def build(spark, files, tamper: dict) -> dict[str, dict]:
    """table name (in DB) -> {"notes": ...}."""
    out: dict[str, dict] = {}

    def made(name, note, hive_skip=()):
        """hive_skip: columns Hive 2.3 cannot read in some file of the table (its view without them is
        compared too)."""
        out[PREFIX + name] = {"notes": note, "hive_skip": list(hive_skip)}

    def with_conf(conf: dict, fn):
        for k, v in conf.items():
            spark.conf.set(k, v)
        try:
            return fn()
        finally:
            for k in conf:
                spark.conf.unset(k)

    # -- engine_helpers.make_table as test_engine.py uses it (Spark's writers)
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {DB}")
    if files.exists(BASE):  # an external table's files outlive DROP TABLE: start clean
        files.rmtree(BASE)

    def helper_table(name, note, hive_skip=(), **kw):
        make_table(spark, BASE, PREFIX + name, **kw)
        made(name, note, hive_skip)

    helper_table("pq_snappy", "parquet, Spark's writer (snappy; decimals as INT64, timestamps INT96)",
                 rows=120, files=6, hive_skip=["amount"])
    helper_table("pq_zstd_parts", "parquet ZSTD, two partitions", rows=60, partitions={"2024-01-01": 4, "2024-01-02": 3},
                 props={"parquet.compression": "ZSTD"}, hive_skip=["amount"])
    with_conf({"spark.sql.parquet.writeLegacyFormat": "true"},
              lambda: helper_table("pq_legacy_gzip", "parquet GZIP in the legacy layout (as Hive writes decimals)",
                                   rows=120, files=5, props={"parquet.compression": "GZIP"}))
    helper_table("orc_zlib", "ORC ZLIB, two partitions", fmt="orc", rows=60,
                 partitions={"2024-01-01": 4, "2024-01-02": 4}, props={"orc.compress": "ZLIB"})
    with_conf({"hive.exec.compress.output": "true", "avro.output.codec": "snappy"},
              lambda: helper_table("avro_snappy", "Avro snappy through the Hive SerDe", fmt="avro", rows=120, files=5))
    with_conf({"hive.exec.compress.output": "true",
               "mapreduce.output.fileoutputformat.compress.codec": "org.apache.hadoop.io.compress.GzipCodec"},
              lambda: helper_table("text_gzip", "text '|' gzip, Spark's Hive writer", fmt="textfile", rows=120,
                                   files=5, row_format="ROW FORMAT DELIMITED FIELDS TERMINATED BY '|'"))

    # -- text as ingestion tools leave it (tests/engine/test_fidelity.py)
    t, loc = external(spark, "ctrl_text", "id BIGINT, name STRING, note STRING",
                      "ROW FORMAT DELIMITED FIELDS TERMINATED BY '\\001' LINES TERMINATED BY '\\n' "
                      "STORED AS TEXTFILE LOCATION @LOC")
    for f in range(8):
        chunk = []
        for i in range(f * 10, f * 10 + 10):
            note = "\\N" if i % 7 == 0 else ("" if i % 5 == 0 else f"note {i}, with | and ;")
            chunk.append(f"{i}\x01name-{i}\x01{note}")
        lines(files, f"{loc}/part-{f:05d}", chunk)
        if f == 3:  # the file the test changes one value of, and puts back
            original = "".join(r + "\n" for r in chunk)
            changed = original.replace("name-31\x01", "name-X\x01")
            assert changed != original
            (LOCAL / "tamper-original").write_text(original)
            (LOCAL / "tamper-changed").write_text(changed)
            tamper.update(table=t, file=f"{loc}/part-{f:05d}", original=str(LOCAL / "tamper-original"),
                          changed=str(LOCAL / "tamper-changed"))
    made("ctrl_text", "text \\001 fields, \\N for NULL and empty strings (Sqoop/Flume style files)")

    t, loc = external(spark, "tblprops_text", "id BIGINT, name STRING, tags ARRAY<STRING>, "
                      "attrs MAP<STRING,STRING>, note STRING",
                      "ROW FORMAT DELIMITED FIELDS TERMINATED BY '|' ESCAPED BY '\\\\' "
                      "COLLECTION ITEMS TERMINATED BY ',' MAP KEYS TERMINATED BY ':' NULL DEFINED AS 'SV' "
                      "STORED AS TEXTFILE LOCATION @LOC "
                      "TBLPROPERTIES ('serialization.null.format'='', 'serialization.encoding'='ISO-8859-1')")
    for f in range(6):
        chunk = []
        for i in range(f * 12, f * 12 + 12):
            note = "" if i % 7 == 0 else ("SV" if i % 5 == 0 else (f"a\\|b {i}" if i % 3 == 0 else f"note {i}"))
            chunk.append(f"{i}|caf\u00e9 {i}|t{i},u|k:{i},l:x|{note}")
        lines(files, f"{loc}/part-m-{f:05d}", chunk, "latin-1")
    made("tblprops_text", "text '|' escaped, arrays and maps, serialization.null.format='' and "
                          "ISO-8859-1 as table properties")

    t, loc = external(spark, "own_descriptor", "id BIGINT, v STRING",
                      "PARTITIONED BY (dt STRING) ROW FORMAT DELIMITED FIELDS TERMINATED BY ',' "
                      "STORED AS TEXTFILE LOCATION @LOC")
    spark.sql(f"ALTER TABLE {t} ADD PARTITION (dt='old')")
    spark.sql(f"ALTER TABLE {t} SET SERDEPROPERTIES ('field.delim'='|', 'serialization.format'='|')")
    spark.sql(f"ALTER TABLE {t} ADD PARTITION (dt='new')")
    for f in range(6):
        lines(files, f"{loc}/dt=old/part-{f}",
              [f"{i},{'v-%d' % i if i % 4 else chr(92) + 'N'}" for i in range(f * 10, f * 10 + 10)])
        lines(files, f"{loc}/dt=new/part-{f}", [f"{i}|w-{i}, with a comma" for i in range(f * 10, f * 10 + 10)])
    made("own_descriptor", "text partitions with their own field delimiter (SET SERDEPROPERTIES without CASCADE)")

    for case, props in (("header", {"skip.header.line.count": "1"}), ("footer", {"skip.footer.line.count": "1"})):
        tbl = ", ".join(f"'{k}'='{v}'" for k, v in props.items())
        t, loc = external(spark, f"text_{case}", "id STRING, ts TIMESTAMP",
                          "ROW FORMAT DELIMITED FIELDS TERMINATED BY ',' STORED AS TEXTFILE LOCATION @LOC "
                          f"TBLPROPERTIES ({tbl})")
        for f in range(4):
            body = [f"{f * 10 + i},2024-01-0{1 + i % 9} 10:00:00" for i in range(10)]
            lines(files, f"{loc}/data-{f}.csv", ["id,ts"] + body + (["total,"] if case == "footer" else []))
        made(f"text_{case}", f"text with {next(iter(props))} (Hive skips those lines in every file)")

    t, loc = external(spark, "text_types", "c CHAR(6), vc VARCHAR(4), d DATE, b BOOLEAN, f FLOAT, x DOUBLE, "
                      "ti TINYINT, ts TIMESTAMP, dec DECIMAL(5,2)",
                      "ROW FORMAT DELIMITED FIELDS TERMINATED BY ',' STORED AS TEXTFILE LOCATION @LOC")
    for f in range(4):
        rows = []
        for i in range(f * 6, f * 6 + 6):
            rows.append(",".join([
                f"ab{i}" if i % 5 else f"ab{i}   ",  # padded or not in the file
                f"v{i}long" if i % 3 == 0 else f"v{i}",  # longer than VARCHAR(4) in the file
                f"2024-02-{1 + i % 28:02d}" if i % 7 else "2024-02-30",  # an invalid date
                ["true", "false", "TRUE", "yes"][i % 4],
                f"{i}.1", f"{i}.25e-3" if i % 2 else f"{i * 1000000}.5",
                str(i * 10) if i % 6 else "300",  # out of TINYINT's range
                f"2024-03-01 10:00:{i:02d}" + (".5" if i % 2 else ""),
                f"{i}.125" if i % 4 else "123456.7",  # more scale than DECIMAL(5,2), and out of its range
            ]))
        lines(files, f"{loc}/part-{f}", rows)
    made("text_types", "text CHAR/VARCHAR/DATE/BOOLEAN/FLOAT/DOUBLE/TINYINT/TIMESTAMP/DECIMAL, values their "
                       "types pad, truncate or reject")

    # -- schema drift by Hive's DDL (tests/engine/test_schema_drift.py)
    for fmt in ("parquet", "orc"):
        t, loc = external(spark, f"drift_{fmt}", "id BIGINT, a STRING, c INT", f"STORED AS {fmt} LOCATION @LOC")
        spark.range(120).selectExpr("id", "concat('a-', id) AS a", "CAST(id % 7 AS INT) AS c") \
            .repartition(6).createOrReplaceTempView("hv_drift_src")
        spark.sql(f"INSERT INTO {t} SELECT * FROM hv_drift_src")
        hive(spark, f"ALTER TABLE {t} CHANGE a b STRING")
        made(f"drift_{fmt}", f"{fmt}, column a renamed b by Hive's DDL after the files were written")

    # -- files written as Hive and Impala write them (tests/engine/test_spark_dropped_values.py)
    for name, kw, parts in (
            ("pq_arrow_int96", {"use_deprecated_int96_timestamps": True},
             (("micro", [0, 123456000]), ("nanos", [0, 123456789]))),
            ("pq_arrow_int64", {"coerce_timestamps": "us"}, (("micro", [0, 123456000]),))):
        t, loc = external(spark, name, "id INT, ts TIMESTAMP", "PARTITIONED BY (dt STRING) STORED AS PARQUET "
                          "LOCATION @LOC")
        for dt, offsets in parts:
            where = f"{loc}/dt={dt}"
            for i in range(3):
                tbl = pa.table({"id": pa.array([i * 2, i * 2 + 1], pa.int32()),
                                "ts": pa.array([BASE_NS + i * 1000_000_000 + o for o in offsets],
                                               pa.timestamp("ns", tz="UTC" if "int64" in name else None))})
                files.write_bytes(f"{where}/{i:06d}_0", parquet_bytes(tbl, **kw))
            spark.sql(f"ALTER TABLE {t} ADD PARTITION (dt='{dt}') LOCATION '{where}'")
    made("pq_arrow_int96", "parquet INT96 by pyarrow (created_by parquet-cpp, as Impala's files): a partition "
                           "of whole microseconds, one with nanoseconds")
    made("pq_arrow_int64", "parquet INT64 TIMESTAMP_MICROS (UTC-adjusted) by pyarrow", hive_skip=["ts"])

    t, loc = external(spark, "orc_arrow_ts", "id INT, ts TIMESTAMP",
                      "PARTITIONED BY (dt STRING) STORED AS ORC LOCATION @LOC")
    for dt, offsets in (("micro", [0, 123456000]), ("nanos", [0, 123456789])):
        where = f"{loc}/dt={dt}"
        for i in range(3):
            tbl = pa.table({"id": pa.array([i * 2, i * 2 + 1], pa.int32()),
                            "ts": pa.array([BASE_NS + i * 1000_000_000 + o for o in offsets], pa.timestamp("ns"))})
            files.write_bytes(f"{where}/{i:06d}_0", orc_bytes(tbl))
        spark.sql(f"ALTER TABLE {t} ADD PARTITION (dt='{dt}') LOCATION '{where}'")
    made("orc_arrow_ts", "ORC by pyarrow (as Hive writes timestamps): micro and nanosecond partitions")

    # -- a file Hive reads and Spark skips (tests/engine/test_unreadable_files.py)
    t, loc = external(spark, "copying", "id BIGINT, v STRING", "PARTITIONED BY (dt STRING) STORED AS PARQUET "
                      "LOCATION @LOC")
    for dt in ("a", "b"):
        spark.range(40).selectExpr("id", "concat('v-', id) AS v").repartition(4).createOrReplaceTempView("hv_src")
        spark.sql(f"INSERT INTO {t} PARTITION (dt='{dt}') SELECT * FROM hv_src")
    scratch = f"{BASE}/_scratch_{PREFIX}copying"
    spark.range(100, 110).selectExpr("id", "concat('late-', id) AS v").coalesce(1).write.mode("overwrite") \
        .parquet(scratch)
    (src,) = files.data_files(scratch)
    files.fs.rename(src, f"{loc}/dt=a/{src.rsplit('/', 1)[1]}._COPYING_")
    files.rmtree(scratch)
    made("copying", "parquet partition holding a closed part-....parquet._COPYING_ (a killed hdfs dfs -put)")
    return out


# ---------------------------------------------------------------- Spark's view

def columns(spark, t: str) -> list[dict]:
    """Data columns, then partition columns, with the Metastore's type (CHAR and
    VARCHAR too, which Spark's schema reads as STRING)."""
    parts = {c.name for c in spark.catalog.listColumns(t) if c.isPartition}
    out = [{"name": f.name, "type": f.metadata.get("__CHAR_VARCHAR_TYPE_STRING") or f.dataType.simpleString(),
            "partition": f.name in parts} for f in spark.table(t).schema.fields]
    return [c for c in out if not c["partition"]] + [c for c in out if c["partition"]]


def spark_token(name: str, typ: str) -> str:
    """Spark SQL for the canonical token of a column (test_hive_reader.hive_token's twin)."""
    c = f"`{name}`"
    if typ == "string" or typ.startswith(("varchar", "char")):
        v = f"rtrim({c})" if typ.startswith("char") else c
        return f"concat('s', base64(encode({v}, 'UTF-8')))"
    if typ.startswith(("array", "map", "struct")):
        return f"concat('j', to_json({c}))"
    return f"concat('v', CAST({c} AS STRING))"


def spark_view(spark, t: str, cols: list[dict]) -> dict:
    spark.sql(f"REFRESH TABLE {t}")
    sel = ", ".join(f"coalesce({spark_token(c['name'], c['type'])}, 'n')" for c in cols)
    try:
        return {"rows": [list(r) for r in spark.sql(f"SELECT {sel} FROM {t}").collect()]}
    except Exception as exc:  # noqa: BLE001 - reported per table
        return {"error": f"{type(exc).__name__}: {str(exc)[:1500]}"}


def _jvm_cpu_seconds(spark) -> float:
    """CPU seconds of this Spark JVM (pyspark's gateway, which the python process never waits for, so its
    CPU reaches no parent's account)."""
    import os

    pid = spark._jvm.java.lang.ProcessHandle.current().pid()
    stat = Path(f"/proc/{pid}/stat").read_text()
    return sum(int(x) for x in stat[stat.rindex(")") + 2:].split()[11:15]) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    # interpreted evaluation, as the engine suite's session (tests/engine/conftest.py): a few hundred rows
    builder = SparkSession.builder.master("local[2]").enableHiveSupport()
    for k, v in {"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false",
                 "spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN",
                 "spark.sql.session.timeZone": TZ, "spark.driver.extraJavaOptions": f"-Duser.timezone={TZ}"}.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    files = Files(spark)
    result: dict = {"tables": {}, "tamper": {}}
    try:
        tables = build(spark, files, result["tamper"])
        for name, meta in tables.items():
            t = f"{DB}.{name}"
            cols = columns(spark, t)
            result["tables"][t] = {**meta, "columns": cols, "location": f"{BASE}/{name}",
                                   "spark": spark_view(spark, t, cols)}
    except Exception:  # noqa: BLE001
        result["error"] = traceback.format_exc()
    result["jvm_cpu_seconds"] = _jvm_cpu_seconds(spark)
    Path(OUT).write_text(json.dumps(result, indent=1))
    spark.stop()


if __name__ == "__main__":
    main()
