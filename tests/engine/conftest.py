"""Engine tests: one real SparkSession with Hive support for the whole pytest
session, tables created by the tests.

Backends (``LAKEKEEPER_ENGINE_BACKEND``):

- ``local`` (default): local Spark, embedded Derby Metastore, ``file://`` warehouse;
- ``testbed``: the test bed named by ``LAKEKEEPER_TESTBED_JSON`` (HDFS, the
  Hive Metastore service, Spark standalone with executors in a worker JVM).
  ``tests/testbed/test_engine_on_testbed.py`` runs this suite that way.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "spark_app"))
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
# The session takes the JVM options scripts/test gives every driver
# (SPARK_SUBMIT_OPTS: C1 only, one compiler thread, the serial GC): although
# it lives for the whole suite, it spends a quarter less CPU with them and no
# more time (test_merge.py + test_delete_ratio.py: 188 -> 139 CPU seconds,
# 107 -> 106 s), and the suite is CPU-bound (two cores, several sessions).
BACKEND = os.environ.get("LAKEKEEPER_ENGINE_BACKEND", "local")
# Spark's interpreted evaluation instead of generated code: the suite runs a
# few thousand queries over a few hundred rows each, where compiling the
# generated Java (Janino), not the data, is most of the work (test_merge.py +
# test_delete_ratio.py: 102 and 108 -> 81 CPU seconds of the JVM). Both modes
# give the same results (Spark checks that in its own suites); the drivers of
# the rest of the suite (playbooks, crash worlds, the test bed) and the
# benchmark run with generated code, as the engine does on a cluster.
INTERPRETED = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    from lakekeeper_spark.session import build_session

    if BACKEND == "testbed":
        sys.path.insert(0, str(ROOT / "tests" / "testbed"))
        from testbed.bed import Testbed

        bed = Testbed.load(os.environ["LAKEKEEPER_TESTBED_JSON"])
        confs = dict(bed.spark_confs(python=sys.executable))
        confs.update({"spark.executor.memory": "512m", "spark.sql.shuffle.partitions": "4", **INTERPRETED})
        s = build_session(bed.master_url, None, confs)
    else:
        # file:// with chmod in the JVM (tests/testbed/testbed/localfs.py: the engine suite's files and
        # directories cost a chmod process each with Hadoop's own class, about 16,000 a run)
        sys.path.insert(0, str(ROOT / "tests" / "testbed"))
        from testbed import localfs

        state = tmp_path_factory.mktemp("embedded")
        saved = os.environ.get("SPARK_DIST_CLASSPATH")
        os.environ.update(localfs.env())  # the class path of the session's JVM, launched here
        try:
            s = build_session("local[2]", str(state), {"spark.sql.shuffle.partitions": "4", **INTERPRETED,
                                                       **localfs.spark_confs()})
        finally:
            if saved is None:
                os.environ.pop("SPARK_DIST_CLASSPATH", None)
            else:
                os.environ["SPARK_DIST_CLASSPATH"] = saved
    s.sql("CREATE DATABASE IF NOT EXISTS lk")
    yield s
    s.stop()


@pytest.fixture(scope="session")
def warehouse(spark, tmp_path_factory) -> str:
    """Base URI for the tests' table directories."""
    if BACKEND == "testbed":
        return spark.conf.get("spark.hadoop.fs.defaultFS").rstrip("/") + f"/lk-engine-tests/{uuid.uuid4().hex[:8]}"
    return "file://" + str(tmp_path_factory.mktemp("data"))


@pytest.fixture(scope="session")
def files(spark):
    from engine_helpers import Files

    return Files(spark)


class Engine:
    """Runs engine commands in-process against the shared session, exactly
    as the CLI does (same handlers, same JSON shape)."""

    def __init__(self, spark):
        self.spark = spark

    def run(self, command: str, tables: list[str] | None = None, database: str | None = None, **settings: Any):
        from lakekeeper_spark.catalog.catalog import Catalog
        from lakekeeper_spark.cli import _run_tables
        from lakekeeper_spark.catalog.context import Context
        from lakekeeper_spark.policy.config import build_settings
        from lakekeeper_spark.storage.fs import HadoopFS
        from lakekeeper_spark.storage.layout import new_run_id

        ctx = Context(self.spark, HadoopFS(self.spark), Catalog(self.spark), build_settings({}, settings), new_run_id())
        results = _run_tables(ctx, command, tables or [], database)
        json.dumps(results)  # the contract: plain JSON
        return results

    def one(self, command: str, table: str, **settings: Any) -> dict[str, Any]:
        (res,) = self.run(command, [table], **settings)
        return res


@pytest.fixture(scope="session")
def engine(spark) -> Engine:
    return Engine(spark)
