"""The engine on the test bed: HDFS 2.7.3, the Hive Metastore service and
Spark standalone with executors in a separate worker JVM.

1. The whole engine integration suite (tests/engine/test_engine.py) runs
   again with its session connected to the test bed (hdfs:// warehouse,
   Metastore service, standalone master), in a child pytest.
2. The engine CLI runs under spark-submit on the standalone cluster against
   an HDFS table, and a second Spark process sees the compacted table and the
   same rows through the Metastore service.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "spark_app" / "run_lakekeeper.py"

pytestmark = pytest.mark.testbed


def test_engine_suite_on_hdfs_metastore_service_and_standalone(testbed):
    env = dict(os.environ, LAKEKEEPER_ENGINE_BACKEND="testbed", LAKEKEEPER_TESTBED_JSON=str(testbed.json_path))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(ROOT / "tests" / "engine" / "test_engine.py")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800, check=False
    )
    tail = "\n".join(proc.stdout.splitlines()[-25:])
    print(tail)
    assert proc.returncode == 0, f"engine suite on the test bed failed:\n{tail}\n{proc.stderr[-3000:]}"
    assert " passed" in proc.stdout and " failed" not in proc.stdout


SETUP = textwrap.dedent(
    """
    import sys
    from pyspark.sql import SparkSession
    spark = SparkSession.builder.enableHiveSupport().getOrCreate()
    spark.sql("CREATE DATABASE IF NOT EXISTS cli")
    spark.sql("DROP TABLE IF EXISTS cli.events")
    jvm = spark._jvm  # an external table's files outlive DROP TABLE: start clean
    jvm.org.apache.hadoop.fs.FileSystem.get(spark._jsc.hadoopConfiguration()).delete(
        jvm.org.apache.hadoop.fs.Path("/lk-cli"), True)
    spark.sql("CREATE EXTERNAL TABLE cli.events (id BIGINT, v STRING) PARTITIONED BY (dt STRING) "
              "STORED AS PARQUET LOCATION '/lk-cli/events'")
    for i, dt in enumerate(["2024-01-01", "2024-01-02"]):
        spark.range(i * 5000, (i + 1) * 5000).selectExpr("id", "cast(id as string) v").repartition(60) \\
            .createOrReplaceTempView("src")
        spark.sql(f"INSERT INTO cli.events PARTITION (dt='{dt}') SELECT * FROM src")
    """
)

READ = textwrap.dedent(
    """
    import json
    from pyspark.sql import SparkSession
    spark = SparkSession.builder.enableHiveSupport().getOrCreate()
    spark.sql("REFRESH TABLE cli.events")
    row = spark.sql("SELECT count(*) AS n, sum(id) AS s, count(distinct v) AS d FROM cli.events").first()
    parts = sorted(r[0] for r in spark.sql("SHOW PARTITIONS cli.events").collect())
    print(json.dumps({"n": row.n, "s": row.s, "d": row.d, "parts": parts}))
    """
)


def test_cli_under_spark_submit_on_the_standalone_cluster(testbed, tmp_path):
    setup = tmp_path / "setup.py"
    setup.write_text(SETUP)
    r = testbed.spark_submit(setup)
    assert r.returncode == 0, r.stderr[-3000:]

    outputs = []
    # On a Spark lane the application runs on the lane's Python packed by
    # the python_env role (scripts/spark_lanes.py), as on a cluster.
    app_python = os.environ.get("LAKEKEEPER_APP_PYTHON", sys.executable)

    def engine(*args: str) -> dict:
        result = tmp_path / f"{args[0]}.json"
        p = testbed.spark_submit(APP, *args, "--table", "cli.events", "--result-file", str(result),
                                 confs={"spark.pyspark.python": app_python})
        assert p.returncode == 0, p.stderr[-3000:]
        outputs.append(p.stdout + p.stderr)
        doc = json.loads(result.read_text())
        # spark-submit's PythonRunner merges the driver's stderr into stdout:
        # the document is still the last thing printed, from a line "{".
        lines = p.stdout.rstrip().splitlines()
        start = max(i for i, line in enumerate(lines) if line == "{")
        try:
            printed = json.loads("\n".join(lines[start:]))
        except ValueError as exc:
            raise AssertionError(f"stdout does not end with the JSON document ({exc}):\n"
                                 + "\n".join(lines[start:])[-3000:]) from exc
        assert printed == doc
        return doc

    reader = tmp_path / "read.py"
    reader.write_text(READ)

    def second_process() -> dict:
        p = testbed.run_python(reader)
        assert p.returncode == 0, p.stderr[-3000:]
        return json.loads(p.stdout.strip().splitlines()[-1])

    expected = {"n": 10000, "s": sum(range(10000)), "d": 10000, "parts": ["dt=2024-01-01", "dt=2024-01-02"]}
    doc = engine("compact")
    import pyspark  # the cluster's Spark (this test's, on each Spark lane) is what the result reports

    assert doc["runtime"]["spark"] == pyspark.__version__, doc["runtime"]
    assert doc["runtime"]["python"] == ".".join(map(str, sys.version_info[:3])), doc["runtime"]
    assert Path(doc["runtime"]["python_prefix"]).resolve() == Path(app_python).parent.parent.resolve(), doc["runtime"]
    # units are concurrent jobs in FAIR pools under spark-submit too
    assert "master spark://" in outputs[-1] and "scheduler mode FAIR" in outputs[-1], outputs[-1][-3000:]
    (t,) = doc["tables"]
    assert t["status"] == "compacted" and t["location"].startswith("hdfs://"), t
    assert [p["files_after"] for p in t["partitions"]] == [1, 1]
    assert second_process() == expected
    assert engine("compact")["changed"] is False
    assert engine("rollback")["tables"][0]["status"] == "rolled_back"
    assert second_process() == expected
    engine("compact")
    doc = engine("cleanup", "--older-than", "all")
    assert doc["tables"][0]["status"] == "cleaned"
    assert second_process() == expected
