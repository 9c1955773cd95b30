"""Smoke app (a): run by spark-submit against the standalone master.

Creates an EXTERNAL parquet table on HDFS through the Metastore service, writes
rows with tasks that run in executors under the Worker, and prints one JSON
line with what it saw. Exits non-zero (with a message) when a check fails.

    spark-submit --master spark://... write_table.py DB TABLE LOCATION ROWS
"""
import json
import os
import sys

from pyspark.sql import SparkSession


def ancestors(pid):
    """Parent, grandparent, ... of pid (from /proc)."""
    out = []
    while pid > 1:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
        pid = int(stat[stat.rindex(")") + 2:].split()[1])
        out.append(pid)
    return out


def main():
    db, table, location, rows = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    spark = SparkSession.builder.appName("testbed-smoke-write").enableHiveSupport().getOrCreate()
    sc = spark.sparkContext
    name = f"{db}.{table}"
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {db}")
    spark.sql(f"CREATE EXTERNAL TABLE {name} (id BIGINT, name STRING) STORED AS PARQUET LOCATION '{location}'")
    df = spark.range(0, rows, numPartitions=4).selectExpr("id", "concat('row-', id) AS name")
    df.write.insertInto(name)

    # Where did the tasks run? Python workers descend from an executor JVM that
    # the Worker JVM started; the test looks for the Worker's pid among the ancestors.
    def where(_rows):
        yield ancestors(os.getpid())
    task_ancestors = sc.parallelize(range(4), 4).mapPartitions(where).collect()

    jvm = sc._jvm
    hconf = sc._jsc.hadoopConfiguration()
    path = jvm.org.apache.hadoop.fs.Path(location)
    fs = path.getFileSystem(hconf)
    files = [s.getPath().getName() for s in fs.listStatus(path)]
    out = {
        "master": sc.master,
        "driver_ancestors": ancestors(os.getpid()),
        "task_ancestors": task_ancestors,
        "executors": sc._jsc.sc().getExecutorMemoryStatus().size() - 1,
        "table_type": spark.catalog.getTable(name).tableType,
        "count": spark.table(name).count(),
        "fs_scheme": fs.getUri().toString(),
        "data_files": sorted(f for f in files if not f.startswith((".", "_"))),
        "db_location": spark.sql(f"DESCRIBE DATABASE {db}").where("info_name = 'Location'")
                       .collect()[0]["info_value"],
    }
    spark.stop()
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
