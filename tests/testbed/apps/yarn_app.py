"""YARN smoke app: run by spark-submit --master yarn, in client or cluster
deploy mode (tests/testbed/test_yarn.py).

    spark-submit --master yarn --deploy-mode MODE yarn_app.py MODE DB LOCATION ROWS

client: creates the EXTERNAL parquet table DB.events at LOCATION on HDFS through the
Metastore service and writes ROWS rows into it.
cluster: reads DB.events back through the Metastore (written by the client-mode run),
writes its rows into a partitioned EXTERNAL table DB.by_bucket next to it, reads that.

Either way it reports where the driver and the tasks ran: the CONTAINER_ID YARN gives
each container's processes, the application id, and the ancestors of each process.
Prints one line "RESULT {json}" (in cluster mode: to the driver container's stdout).
"""
import json
import os
import sys

from pyspark.sql import SparkSession


def ancestors(pid):
    out = []
    while pid > 1:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
        pid = int(stat[stat.rindex(")") + 2:].split()[1])
        out.append(pid)
    return out


def where(_rows):
    yield {"container": os.environ.get("CONTAINER_ID"), "pid": os.getpid(), "ancestors": ancestors(os.getpid()),
           "cwd": os.getcwd()}


def main():
    mode, db, location, rows = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    spark = SparkSession.builder.appName(f"testbed-yarn-{mode}").enableHiveSupport().getOrCreate()
    sc = spark.sparkContext
    events, by_bucket = f"{db}.events", f"{db}.by_bucket"
    out = {"mode": mode, "master": sc.master, "deploy_mode": sc.getConf().get("spark.submit.deployMode"),
           "app_id": sc.applicationId, "driver": next(where(None)),
           "tasks": sc.parallelize(range(4), 4).mapPartitions(where).collect()}
    if mode == "client":
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {db}")
        spark.sql(f"CREATE EXTERNAL TABLE {events} (id BIGINT, name STRING) STORED AS PARQUET "
                  f"LOCATION '{location}'")
        spark.range(0, rows, numPartitions=4).selectExpr("id", "concat('row-', id) AS name").write.insertInto(events)
    else:
        spark.sql(f"CREATE EXTERNAL TABLE {by_bucket} (id BIGINT, name STRING) PARTITIONED BY (bucket INT) "
                  f"STORED AS PARQUET LOCATION '{location}_by_bucket'")
        spark.conf.set("hive.exec.dynamic.partition.mode", "nonstrict")
        spark.table(events).selectExpr("id", "name", "CAST(id % 3 AS INT) AS bucket").write.insertInto(by_bucket)
        got = spark.sql(f"SELECT bucket, count(*) AS n, sum(id) AS s FROM {by_bucket} GROUP BY bucket").collect()
        out["by_bucket"] = {str(r["bucket"]): [r["n"], r["s"]] for r in got}
        out["by_bucket_type"] = spark.catalog.getTable(by_bucket).tableType
    row = spark.sql(f"SELECT count(*) AS n, sum(id) AS s FROM {events}").collect()[0]
    out.update({"count": row["n"], "sum": row["s"], "table_type": spark.catalog.getTable(events).tableType,
                "location": [r["data_type"] for r in spark.sql(f"DESCRIBE FORMATTED {events}").collect()
                             if r["col_name"] == "Location"][0],
                "default_fs": sc._jsc.hadoopConfiguration().get("fs.defaultFS")})
    spark.stop()
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
