"""The distcp test's database before any lakekeeper run (tests/testbed/test_distcp.py).

A plain Spark process (local master) configured by the test bed's conf dir, with the
engine on its path (argv[1]: spark_app). Removes the directories argv[4:] (the
replicas of an earlier run) and makes database argv[2] at argv[3] on HDFS with
small-file EXTERNAL parquet tables, each file a task's output:

- ``events`` (partitioned by dt, two partitions) and ``plain`` (not partitioned):
  the engine compacts them; ``stuck`` (not partitioned): the engine is killed with
  it parked before its verification; ``later`` (not partitioned): compacted
  between two distcp runs;
- beside ``events/dt=2024-01-01`` the trash directory of a rollback that died
  after moving the compacted files aside, named by the engine's ``trash_path``
  (a run id of ``new_run_id``), holding a copy of a data file;
- two hidden paths that are not lakekeeper's (near misses of its names), which
  a copy must keep: ``.lakekeeper-notes/readme`` and ``.plain.lk_old_manual/readme``.

Prints one line "RESULT {json}": the tables' locations and what it made.
"""
import json
import sys

sys.path.insert(0, sys.argv[1])

from pyspark.sql import SparkSession  # noqa: E402

from lakekeeper_spark.storage.layout import new_run_id, trash_path  # noqa: E402  pylint: disable=wrong-import-position

FILES = 4  # files per unit: more than one, small: the engine's default rule compacts them (few: DistCp copies each in ~0.2 s)


def main() -> None:
    db, root = sys.argv[2], sys.argv[3].rstrip("/")
    spark = SparkSession.builder.master("local[2]").appName("distcp-world").enableHiveSupport().getOrCreate()
    jvm = spark._jvm  # pylint: disable=protected-access
    conf = spark._jsc.hadoopConfiguration()  # pylint: disable=protected-access
    fs = jvm.org.apache.hadoop.fs.Path(root).getFileSystem(conf)
    path = jvm.org.apache.hadoop.fs.Path
    for old in [root, *sys.argv[4:]]:  # external tables' files outlive DROP: start clean
        fs.delete(path(old), True)
    spark.sql(f"DROP DATABASE IF EXISTS {db} CASCADE")
    spark.sql(f"CREATE DATABASE {db} LOCATION '{root}'")
    out = {"root": fs.makeQualified(path(root)).toString(), "tables": {}, "files_per_unit": FILES}
    for i, (name, partitioned) in enumerate((("events", True), ("plain", False), ("stuck", False), ("later", False))):
        loc = f"{root}/{name}"
        cols = "(id BIGINT, v STRING)" + (" PARTITIONED BY (dt STRING)" if partitioned else "")
        spark.sql(f"CREATE EXTERNAL TABLE {db}.{name} {cols} STORED AS PARQUET LOCATION '{loc}'")
        for j, dt in enumerate(("2024-01-01", "2024-01-02") if partitioned else (None,)):
            lo = (i * 10 + j) * 1000
            spark.range(lo, lo + 1000).selectExpr("id", "cast(id * 7 as string) v").repartition(FILES) \
                .createOrReplaceTempView("src")
            spark.sql(f"INSERT INTO {db}.{name}" + (f" PARTITION (dt='{dt}')" if dt else "") + " SELECT * FROM src")
        out["tables"][name] = fs.makeQualified(path(loc)).toString()

    # a rollback's trash, as one that died after moving the compacted files aside leaves it
    unit = f"{root}/events/dt=2024-01-01"
    trash = trash_path(unit, new_run_id())
    first = sorted(s.getPath().getName() for s in fs.listStatus(path(unit)))[0]
    jvm.org.apache.hadoop.fs.FileUtil.copy(fs, path(f"{unit}/{first}"), fs, path(f"{trash}/{first}"), False, conf)
    out["trash"] = fs.makeQualified(path(trash)).toString()
    # hidden, but not lakekeeper's: kept by the filters
    out["foreign"] = []
    for rel in (".lakekeeper-notes/readme", ".plain.lk_old_manual/readme"):
        stream = fs.create(path(f"{root}/{rel}"), False)
        stream.write(bytearray(f"not lakekeeper's: {rel}\n", "utf-8"))
        stream.close()
        out["foreign"].append(rel)
    spark.stop()
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
