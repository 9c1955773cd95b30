"""The engine on the test bed: HDFS (3.5, or 2.7.3), the Hive Metastore service and
Spark standalone with executors in a separate worker JVM.

1. The engine integration tests whose work differs on HDFS and a Metastore
   service (tests/engine/test_engine.py, marker ``hdfs``: renames and
   hidden directories, partitions outside the root, listing, pieces joined
   through the filesystem, statistics and partitions through the Metastore's
   Thrift API, refusals read from it) run again with their session connected
   to the test bed (hdfs:// warehouse, Metastore service, standalone
   master), in a child pytest, with the HDFS-only ones
   (tests/engine/test_hdfs_attributes.py: open files, encryption zones,
   snapshots, storage policy, xattrs, replication, a run that is not the
   superuser). The others (codecs, dedupe, modes, database
   runs) exercise the same calls and run on the embedded default only.
2. The engine CLI runs under spark-submit on the standalone cluster against
   an HDFS table, and a second Spark process sees the compacted table and the
   same rows through the Metastore service: compact, rollback, compact,
   cleanup. On each older Spark lane (scripts/spark-lanes), with that
   Spark's spark-submit; on the main line one CLI compaction runs inside the
   playbook scenario on the test bed, which sets up the same world.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from engine_submit import check_cluster_run, submit_engine  # pylint: disable=import-error

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.testbed


def test_engine_suite_on_hdfs_metastore_service_and_standalone(testbed):
    env = dict(os.environ, LAKEKEEPER_ENGINE_BACKEND="testbed", LAKEKEEPER_TESTBED_JSON=str(testbed.json_path))
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "hdfs",
            str(ROOT / "tests" / "engine" / "test_engine.py"), str(ROOT / "tests" / "engine" / "test_hdfs_attributes.py")]
    collected = subprocess.run(argv + ["--collect-only"], cwd=ROOT, env=env, capture_output=True, text=True,
                               timeout=300, check=False)
    marked = [line for line in collected.stdout.splitlines() if "::test_" in line]
    assert len(marked) >= 13, collected.stdout[-3000:]  # the 11 marked hdfs in test_engine.py and the 2 HDFS-only ones
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800, check=False)
    tail = "\n".join(proc.stdout.splitlines()[-25:])
    print(tail)
    assert proc.returncode == 0, f"engine suite on the test bed failed:\n{tail}\n{proc.stderr[-3000:]}"
    assert " failed" not in proc.stdout and " skipped" not in proc.stdout, tail
    assert f"{len(marked)} passed" in proc.stdout, tail  # every test marked hdfs ran, none skipped


SETUP = textwrap.dedent(
    """
    import sys
    from pyspark.sql import SparkSession
    spark = SparkSession.builder.enableHiveSupport().getOrCreate()
    db, root = sys.argv[1], sys.argv[2]
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {db}")
    spark.sql(f"DROP TABLE IF EXISTS {db}.events")
    jvm = spark._jvm  # an external table's files outlive DROP TABLE: start clean
    jvm.org.apache.hadoop.fs.FileSystem.get(spark._jsc.hadoopConfiguration()).delete(
        jvm.org.apache.hadoop.fs.Path(root), True)
    spark.sql(f"CREATE EXTERNAL TABLE {db}.events (id BIGINT, v STRING) PARTITIONED BY (dt STRING) "
              f"STORED AS PARQUET LOCATION '{root}/events'")
    for i, dt in enumerate(["2024-01-01", "2024-01-02"]):
        spark.range(i * 5000, (i + 1) * 5000).selectExpr("id", "cast(id as string) v").repartition(60) \\
            .createOrReplaceTempView("src")
        spark.sql(f"INSERT INTO {db}.events PARTITION (dt='{dt}') SELECT * FROM src")
    """
)

READ = textwrap.dedent(
    """
    import json
    import sys
    from pyspark.sql import SparkSession
    spark = SparkSession.builder.enableHiveSupport().getOrCreate()
    table = sys.argv[1] + ".events"
    spark.sql(f"REFRESH TABLE {table}")
    row = spark.sql(f"SELECT count(*) AS n, sum(id) AS s, count(distinct v) AS d FROM {table}").first()
    parts = sorted(r[0] for r in spark.sql(f"SHOW PARTITIONS {table}").collect())
    print(json.dumps({"n": row.n, "s": row.s, "d": row.d, "parts": parts}))
    """
)


@pytest.mark.skipif(not os.environ.get("LAKEKEEPER_SPARK_LANE"),
                    reason="main line: the CLI under spark-submit runs inside tests/playbooks' test bed scenario "
                           "(test_playbooks_on_the_testbed); this whole sequence runs on each older Spark lane")
def test_cli_under_spark_submit_on_the_standalone_cluster(testbed, tmp_path):
    # each lane has its own database and directory: the lanes share the suite's one test bed
    lane = re.sub(r"\W", "_", os.environ.get("LAKEKEEPER_SPARK_LANE", "main"))
    db, root = f"cli_{lane}", f"/lk-cli-{lane}"
    setup = tmp_path / "setup.py"
    setup.write_text(SETUP)
    r = testbed.spark_submit(setup, db, root)
    assert r.returncode == 0, r.stderr[-3000:]

    def engine(command: str, *args: str) -> dict:
        doc, output = submit_engine(testbed, tmp_path, command, *args, "--table", f"{db}.events")
        outputs.append(output)
        return doc

    outputs = []
    reader = tmp_path / "read.py"
    reader.write_text(READ)

    def second_process() -> dict:
        p = testbed.run_python(reader, db)
        assert p.returncode == 0, p.stderr[-3000:]
        return json.loads(p.stdout.strip().splitlines()[-1])

    expected = {"n": 10000, "s": sum(range(10000)), "d": 10000, "parts": ["dt=2024-01-01", "dt=2024-01-02"]}
    doc = engine("compact")
    check_cluster_run(doc, outputs[-1])
    (t,) = doc["tables"]
    assert t["status"] == "compacted" and t["location"].startswith("hdfs://"), t
    assert [p["files_after"] for p in t["partitions"]] == [1, 1]
    assert second_process() == expected
    # (a second compaction finding nothing to do, and a read between the rollback and the next compaction, are
    # the main line's: neither differs between Spark lines; the read at the end sees what the three left)
    assert engine("rollback")["tables"][0]["status"] == "rolled_back"
    assert engine("compact")["tables"][0]["status"] == "compacted"
    doc = engine("cleanup", "--older-than", "all")
    assert doc["tables"][0]["status"] == "cleaned"
    assert second_process() == expected


def test_lease_liveness_on_the_namenodes_clock(testbed):
    """The lease's heartbeat is a file the holder rewrites, so its time is
    the NameNode's: a holder whose clock lags an hour is live, one whose
    heartbeat stopped is taken over after the timeout, and then fails its
    own check (lease_lost)."""
    p = testbed.run_python(ROOT / "tests" / "testbed" / "apps" / "lease_clock.py", str(ROOT / "spark_app"),
                           "/lk-lease-clock/.t.lakekeeper", timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    res = json.loads(p.stdout.strip().splitlines()[-1].split("RESULT ", 1)[1])
    assert res["beat_written"] and abs(res["beat_age_on_namenode_clock"]) < 30, res
    assert res["second_run"] == "locked", res
    assert "by the filesystem's clock" in res["taken_over"], res
    assert res["holder_check"] == "lease_lost", res
    assert res["left"] == [], res
