# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Create the E2E test tables in an embedded Derby Metastore.

    python create_tables.py STATE_DIR DATA_DIR [DATABASE ...]

Uses the layout of the engine's embedded mode (docs/engine-contract.md,
``--state-dir``): Derby Metastore in STATE_DIR/metastore_db, warehouse in
STATE_DIR/warehouse. Creates, as Hive EXTERNAL parquet tables whose data lives
under DATA_DIR:

* ``e2e.events``: not partitioned, 60 small files;
* ``e2e.clicks``: partitioned by ``day``, 2 partitions of 30 small files, with the
  table property ``lakekeeper.sort_by=id`` (a per-table policy);

and the same two tables in each further DATABASE, under DATA_DIR/DATABASE
(one JVM sets up the worlds of several scenarios).

Embedded Derby allows one JVM at a time: nothing else may use STATE_DIR while
this runs. Prints a JSON summary on stdout.
"""

from __future__ import annotations

import json
import os
import sys


def create(spark, database, data):
    """events and clicks of DATABASE under DATA; returns their summary."""
    spark.sql("CREATE DATABASE IF NOT EXISTS %s" % database)
    events = os.path.join(data, "events")
    (spark.range(0, 6000).selectExpr("id", "CAST(id % 7 AS INT) AS k", "CONCAT('v', CAST(id AS STRING)) AS v")
     .repartition(60).write.mode("overwrite").parquet("file://" + events))
    spark.sql("CREATE EXTERNAL TABLE %s.events (id BIGINT, k INT, v STRING) STORED AS PARQUET "
              "LOCATION 'file://%s'" % (database, events))

    clicks = os.path.join(data, "clicks")
    (spark.range(0, 3000).selectExpr("id", "IF(id % 2 = 0, '2024-01-01', '2024-01-02') AS day")
     .repartition(30).write.mode("overwrite").partitionBy("day").parquet("file://" + clicks))
    # its owner's policy (a table property): files sorted by id (policy.py)
    spark.sql("CREATE EXTERNAL TABLE %s.clicks (id BIGINT) PARTITIONED BY (day STRING) STORED AS PARQUET "
              "LOCATION 'file://%s' TBLPROPERTIES ('lakekeeper.sort_by'='id')" % (database, clicks))
    spark.sql("MSCK REPAIR TABLE %s.clicks" % database)
    return {
        "events": {"location": events, "rows": spark.table("%s.events" % database).count()},
        "clicks": {"location": clicks, "rows": spark.table("%s.clicks" % database).count(),
                   "partitions": sorted(r[0] for r in spark.sql("SHOW PARTITIONS %s.clicks" % database).collect())},
    }


def main(state_dir, data_dir, more=()):
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession  # pylint: disable=import-outside-toplevel

    state = os.path.abspath(state_dir)
    data = os.path.abspath(data_dir)
    os.makedirs(state, exist_ok=True)
    os.makedirs(data, exist_ok=True)
    spark = (
        SparkSession.builder.appName("lakekeeper-e2e-setup").master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.catalogImplementation", "hive")
        .config("spark.sql.warehouse.dir", "file://" + os.path.join(state, "warehouse"))
        .config("spark.hadoop.javax.jdo.option.ConnectionURL",
                "jdbc:derby:;databaseName=%s;create=true" % os.path.join(state, "metastore_db"))
        .config("spark.driver.extraJavaOptions",
                "-Dderby.system.home=%s -Dderby.stream.error.file=%s" % (state, os.path.join(state, "derby.log")))
        .enableHiveSupport().getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        summary = create(spark, "e2e", data)
        summary["more"] = {db: create(spark, db, os.path.join(data, db)) for db in more}
    finally:
        spark.stop()
    print(json.dumps(summary))


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.stderr.write(__doc__)
        sys.exit(2)
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
