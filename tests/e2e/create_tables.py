# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Create the E2E test tables in an embedded Derby Metastore.

    python create_tables.py STATE_DIR DATA_DIR [DATABASE | fleet:DATABASE | mixed:DATABASE ...]
    python create_tables.py STATE_DIR DATA_DIR --read DB.TABLE ...

Uses the layout of the engine's embedded mode (docs/engine-contract.md,
``--state-dir``): Derby Metastore in STATE_DIR/metastore_db, warehouse in
STATE_DIR/warehouse. Creates, as Hive EXTERNAL parquet tables whose data lives
under DATA_DIR:

* ``e2e.events``: not partitioned, 60 small files;
* ``e2e.clicks``: partitioned by ``day``, 2 partitions of 30 small files, with the
  table property ``lakekeeper.sort_by=id`` (a per-table policy);

and the same two tables in each further DATABASE, under DATA_DIR/DATABASE
(one JVM sets up the worlds of several scenarios). ``fleet:DATABASE`` makes
the tables of the fleet scenario instead (``create_fleet``: a replica, a
compacted dedupe table with superseded versions, a table and a batch to
merge into it), ``mixed:DATABASE`` those of a mixed fleet (``create_mixed``:
tables Lakekeeper must leave alone beside one that needs nothing), ``pipeline:DATABASE`` a table as its
pipelines leave it beside a tidy one (``create_pipeline``: analyze's reconcile and sources). ``--read`` prints the rows of tables (id, v, ver, op and
the partition column, sorted), as a reader sees them.

Embedded Derby allows one JVM at a time: nothing else may use STATE_DIR while
this runs. Prints a JSON summary on stdout.
"""

from __future__ import annotations

import json
import os
import shutil
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


VERSIONED = "id BIGINT, v STRING, ver INT, op STRING"


def versioned_rows(dt, ids, ver=1, op="I"):
    return [(i, "%s%d-%d" % (dt, i, ver), ver, op) for i in ids]


def create_fleet(spark, database, data):
    """The fleet scenario's tables, as an ingestion job and a replication left them:

    * ``replica``: not partitioned, 20 small files, ``repl.last.id`` set (REPL LOAD keeps it);
    * ``versions``: partitioned by dt, one file per partition (compacted before): dt=a holds 1000
      keys plus a later version of 50 of them (4.8 % of its rows superseded), dt=b 1000 keys;
    * ``orders``: partitioned by dt (a, b, c), 300 keys and 10 small files per partition, and
      ``DATA/batch-1``, a batch for it (Parquet with dt): 10 inserts and 20 updates for dt=a,
      10 updates and 5 delete markers (op = 'D') for dt=b, nothing for dt=c.
    """
    spark.sql("CREATE DATABASE IF NOT EXISTS %s" % database)
    out = {}
    replica = os.path.join(data, "replica")
    spark.range(0, 2000).selectExpr("id", "CONCAT('r', CAST(id AS STRING)) AS v").repartition(20) \
        .write.mode("overwrite").parquet("file://" + replica)
    spark.sql("CREATE EXTERNAL TABLE %s.replica (id BIGINT, v STRING) STORED AS PARQUET LOCATION 'file://%s' "
              "TBLPROPERTIES ('repl.last.id'='4711')" % (database, replica))
    for name, parts in (
            ("versions", {"a": (versioned_rows("a", range(0, 1000)) + versioned_rows("a", range(0, 50), 2), 1),
                          "b": (versioned_rows("b", range(1000, 2000)), 1)}),
            ("orders", {dt: (versioned_rows(dt, range(start, start + 300)), 10)
                        for dt, start in (("a", 0), ("b", 1000), ("c", 2000))})):
        loc = os.path.join(data, name)
        spark.sql("CREATE EXTERNAL TABLE %s.%s (%s) PARTITIONED BY (dt STRING) STORED AS PARQUET "
                  "LOCATION 'file://%s'" % (database, name, VERSIONED, loc))
        for dt, (rows, files) in sorted(parts.items()):
            spark.createDataFrame(rows, VERSIONED).repartition(files).createOrReplaceTempView("lk_src")
            spark.sql("INSERT INTO %s.%s PARTITION (dt='%s') SELECT * FROM lk_src" % (database, name, dt))
        out[name] = {"location": loc, "rows": spark.table("%s.%s" % (database, name)).count()}
    batch = [r + ("a",) for r in versioned_rows("a", range(300, 310)) + versioned_rows("a", range(0, 20), 2)]
    batch += [r + ("b",) for r in versioned_rows("b", range(1000, 1010), 2)
              + versioned_rows("b", range(1010, 1015), 2, "D")]
    spark.createDataFrame(batch, VERSIONED + ", dt STRING").repartition(2).write.mode("overwrite") \
        .parquet("file://" + os.path.join(data, "batch-1"))
    out["batch"] = {"location": os.path.join(data, "batch-1"), "rows": len(batch)}
    out["replica"] = {"location": replica, "rows": 2000}
    return out


def create_mixed(spark, database, data):
    """A mixed fleet (docs/statuses.md), as Hive, Spark and a replication tool leave its tables:

    * ``single``: EXTERNAL, one file (nothing to compact: not_needed);
    * ``excluded``: EXTERNAL, 20 small files, its owner's ``lakekeeper.exclude=true`` (refused, excluded);
    * ``replica``: EXTERNAL, 20 small files, ``repl.last.id`` as REPL LOAD leaves it (refused, replicated);
    * ``managed``: MANAGED (Spark's and Hive's CREATE TABLE), two inserts (refused, managed_table);
    * ``acid``: MANAGED transactional (Hive ACID: bucketed ORC, ``transactional=true``; refused,
      transactional_table);
    * ``zorder``: EXTERNAL Parquet, 30 small part- files of a Spark job (every file spans the whole range of
      ``a`` and ``b``, uncorrelated), its owner's ``lakekeeper.sort_by=zorder(a, b)`` and a small
      ``lakekeeper.target_file_size_mb`` (compacted into a few Z-ordered files); tuned for Apache Amoro too,
      its optimizer group ``self-optimizing.group=nightly`` and ``self-optimizing.quota=0.4`` (issue 50 item 5:
      compacted in the application of that group's YARN queue; the quota not read);
    * ``zavro``: EXTERNAL Avro, 5 files, ``lakekeeper.sort_by=zorder(id, v)`` (refused, unsupported_format);
    * ``bigfile``: EXTERNAL Parquet partitioned by ``dt``, as Spark jobs appending to partition directories leave
      it: ``dt=mixed`` 12 fragments, 2 files of about the target and one large file of several row groups,
      ``dt=single`` one large file; its owner's ``lakekeeper.mode=minor``, target 64 KB and split bound 192 KB
      (``lakekeeper.max_file_size_mb``, issue 50 item 1): the large files split, the two in the band kept.
    """
    spark.sql("CREATE DATABASE IF NOT EXISTS %s" % database)
    out = {}
    for name, files, props in (("single", 1, ""), ("excluded", 20, "TBLPROPERTIES ('lakekeeper.exclude'='true')"),
                               ("replica", 20, "TBLPROPERTIES ('repl.last.id'='4711')")):
        loc = os.path.join(data, name)
        spark.range(0, 500).selectExpr("id", "CONCAT('m', CAST(id AS STRING)) AS v").repartition(files) \
            .write.mode("overwrite").parquet("file://" + loc)
        spark.sql("CREATE EXTERNAL TABLE %s.%s (id BIGINT, v STRING) STORED AS PARQUET LOCATION 'file://%s' %s"
                  % (database, name, loc, props))
        out[name] = {"location": loc, "rows": 500}
    spark.sql("CREATE TABLE %s.managed (id BIGINT) STORED AS PARQUET" % database)
    spark.sql("INSERT INTO %s.managed VALUES (1), (2)" % database)
    spark.sql("INSERT INTO %s.managed VALUES (3)" % database)
    spark.sql("CREATE TABLE %s.acid (id INT) CLUSTERED BY (id) INTO 2 BUCKETS STORED AS ORC "
              "TBLPROPERTIES ('transactional'='true')" % database)
    out["managed"] = {"rows": spark.table("%s.managed" % database).count()}
    loc = os.path.join(data, "zorder")
    spark.range(0, 20000).selectExpr("id", "pmod(xxhash64(id, 1), 100000) AS a", "pmod(xxhash64(id, 2), 100000) AS b",
                                     "sha2(CAST(id AS STRING), 256) AS pad") \
        .repartition(30).write.mode("overwrite").parquet("file://" + loc)
    spark.sql("CREATE EXTERNAL TABLE %s.zorder (id BIGINT, a BIGINT, b BIGINT, pad STRING) STORED AS PARQUET "
              "LOCATION 'file://%s' TBLPROPERTIES ('lakekeeper.sort_by'='zorder(a, b)', "
              "'lakekeeper.target_file_size_mb'='0.15', 'self-optimizing.group'='nightly', "
              "'self-optimizing.quota'='0.4')" % (database, loc))
    out["zorder"] = {"location": loc, "rows": 20000}
    loc = os.path.join(data, "zavro")
    spark.sql("CREATE EXTERNAL TABLE %s.zavro (id BIGINT, v STRING) STORED AS AVRO LOCATION 'file://%s' "
              "TBLPROPERTIES ('lakekeeper.sort_by'='zorder(id, v)')" % (database, loc))
    spark.range(0, 100).selectExpr("id", "CAST(id AS STRING) AS v").repartition(5).createOrReplaceTempView("zsrc")
    spark.sql("INSERT INTO %s.zavro SELECT * FROM zsrc" % database)
    out["zavro"] = {"location": loc, "rows": 100}
    loc = os.path.join(data, "bigfile")
    for dt, start, rows, files, block in (("mixed", 0, 144, 12, None), ("mixed", 1000, 1400, 2, None),
                                          ("mixed", 10000, 4000, 1, 32768), ("single", 20000, 4000, 1, 32768)):
        df = spark.range(start, start + rows, numPartitions=files).selectExpr(
            "id", "concat(sha2(cast(id AS STRING), 256), sha2(cast(-id AS STRING), 256)) AS payload")
        w = df.write.mode("append")
        if block:  # a writer with a smaller parquet.block.size: a large file of several row groups
            w = w.option("parquet.block.size", block)
        w.parquet("file://%s/dt=%s" % (loc, dt))
    spark.sql("CREATE EXTERNAL TABLE %s.bigfile (id BIGINT, payload STRING) PARTITIONED BY (dt STRING) STORED AS "
              "PARQUET LOCATION 'file://%s' TBLPROPERTIES ('lakekeeper.mode'='minor', "
              "'lakekeeper.target_file_size_mb'='0.0625', 'lakekeeper.max_file_size_mb'='0.1875')" % (database, loc))
    spark.sql("MSCK REPAIR TABLE %s.bigfile" % database)
    out["bigfile"] = {"location": loc, "rows": 144 + 1400 + 4000 + 4000}
    return out


KILLED_RUN = "20261101T000000-abcdef"
T0 = 1793491200  # 2026-11-01T00:00:00Z


def create_pipeline(spark, database, data):
    """A table as its pipelines leave it (analyze's reconcile and sources, docs/reconcile.md), and a tidy one:

    * ``messy``, partitioned by dt: in dt=2026-11-01 three Spark appends (INSERT INTO, 4 files each, one job
      uuid each; their modification times set 5 minutes apart from 2026-11-01T00:00Z, the rhythm of an hourly
      job's sub-batches) and ``events_export.parquet``, a file copied in as ``hdfs dfs -put`` does; in
      dt=2026-11-02 three Hive ``INSERT INTO``s (files named as Hive names them: ``000000_0``,
      ``000000_0_copy_1``, ``000000_0_copy_2``); ``dt=2026-11-03``, a partition directory written by hand
      without ADD PARTITION; ``dt=2026-10-31``, a partition whose directory was deleted; ``000000_0`` in the
      table root; and ``.dt=2026-11-01.lk_staging_<run>``, the staging copy of a killed run whose journal
      is gone;
    * ``tidy``, partitioned by dt, one file per partition, every directory a partition's.
    """
    spark.sql("CREATE DATABASE IF NOT EXISTS %s" % database)
    out = {}
    for name in ("messy", "tidy"):
        loc = os.path.join(data, name)
        spark.sql("CREATE EXTERNAL TABLE %s.%s (%s) PARTITIONED BY (dt STRING) STORED AS PARQUET "
                  "LOCATION 'file://%s'" % (database, name, VERSIONED, loc))
        out[name] = {"location": loc}
    for dt in ("2026-11-01", "2026-11-02"):
        spark.createDataFrame(versioned_rows(dt, range(0, 100)), VERSIONED).repartition(1).createOrReplaceTempView("lk_src")
        spark.sql("INSERT INTO %s.tidy PARTITION (dt='%s') SELECT * FROM lk_src" % (database, dt))
    loc = out["messy"]["location"]
    day1, day2 = os.path.join(loc, "dt=2026-11-01"), os.path.join(loc, "dt=2026-11-02")
    seen = set()
    for k in range(3):  # Spark appends: one job (uuid) each
        spark.createDataFrame(versioned_rows("a", range(k * 100, k * 100 + 100)), VERSIONED).repartition(4) \
            .createOrReplaceTempView("lk_src")
        spark.sql("INSERT INTO %s.messy PARTITION (dt='2026-11-01') SELECT * FROM lk_src" % database)
        new = sorted(n for n in os.listdir(day1) if n.startswith("part-") and n not in seen)
        for n in new:
            os.utime(os.path.join(day1, n), (T0 + k * 300, T0 + k * 300))
        seen.update(new)
    for k in range(3):  # Hive INSERT INTOs: 000000_0, then 000000_0_copy_1, ...
        spark.createDataFrame(versioned_rows("b", range(k * 100, k * 100 + 100)), VERSIONED).repartition(1) \
            .createOrReplaceTempView("lk_src")
        spark.sql("INSERT INTO %s.messy PARTITION (dt='2026-11-02') SELECT * FROM lk_src" % database)
        (spark_name,) = [n for n in os.listdir(day2) if n.startswith("part-")]
        os.rename(os.path.join(day2, spark_name), os.path.join(day2, "000000_0" + ("_copy_%d" % k if k else "")))
    sample = os.path.join(day1, sorted(seen)[0])
    shutil.copyfile(sample, os.path.join(day1, "events_export.parquet"))  # hdfs dfs -put
    os.makedirs(os.path.join(loc, "dt=2026-11-03"))  # written by hand, no ADD PARTITION
    shutil.copyfile(sample, os.path.join(loc, "dt=2026-11-03", "000000_0"))
    shutil.copyfile(sample, os.path.join(loc, "000000_0"))  # in the root, outside every partition
    spark.sql("ALTER TABLE %s.messy ADD PARTITION (dt='2026-10-31')" % database)
    shutil.rmtree(os.path.join(loc, "dt=2026-10-31"), ignore_errors=True)  # its directory deleted since
    staging = os.path.join(loc, ".dt=2026-11-01.lk_staging_%s" % KILLED_RUN)  # a killed run's copy
    os.makedirs(staging)
    shutil.copyfile(sample, os.path.join(staging, "part-00000-x.snappy.parquet"))
    out["messy"].update(staging=staging, sample_bytes=os.path.getsize(sample), killed_run=KILLED_RUN,
                        rows=spark.table("%s.messy" % database).count())
    out["tidy"]["rows"] = spark.table("%s.tidy" % database).count()
    return out


def read(spark, tables):
    """{table: sorted rows} of tables as a reader sees them (the partition column last)."""
    out = {}
    for t in tables:
        spark.sql("REFRESH TABLE %s" % t)
        out[t] = sorted([list(r) for r in spark.table(t).collect()], key=lambda r: [str(x) for x in r])
    return out


def main(state_dir, data_dir, more=()):
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession  # pylint: disable=import-outside-toplevel

    state = os.path.abspath(state_dir)
    data = os.path.abspath(data_dir)
    os.makedirs(state, exist_ok=True)
    os.makedirs(data, exist_ok=True)
    # the test data's file://: chmod in the JVM (tests/testbed/testbed/localfs.py); the modules' runs keep Hadoop's
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testbed"))
    from testbed import localfs  # pylint: disable=import-outside-toplevel,import-error

    builder = SparkSession.builder
    for key, value in localfs.in_this_process().items():
        builder = builder.config(key, value)
    spark = (
        builder.appName("lakekeeper-e2e-setup").master("local[2]")
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
        if more and more[0] == "--read":
            summary = read(spark, more[1:])
        else:
            summary = create(spark, "e2e", data)
            makers = {"fleet": create_fleet, "mixed": create_mixed, "pipeline": create_pipeline}
            summary["more"] = {db.split(":")[-1]: makers.get(db.split(":")[0] if ":" in db else "", create)(
                spark, db.split(":")[-1], os.path.join(data, db.split(":")[-1])) for db in more}
    finally:
        spark.stop()
    print(json.dumps(summary))


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.stderr.write(__doc__)
        sys.exit(2)
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
