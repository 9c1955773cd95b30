"""Engine tests: one real local SparkSession with Hive support and an
embedded Derby Metastore for the whole pytest session, tables created by
the tests in a temporary warehouse."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "spark_app"))
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    from lakekeeper_spark.session import build_session

    state = tmp_path_factory.mktemp("embedded")
    s = build_session("local[2]", str(state), {"spark.sql.shuffle.partitions": "4"})
    s.sql("CREATE DATABASE IF NOT EXISTS lk")
    yield s
    s.stop()


@pytest.fixture(scope="session")
def warehouse(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("data")


class Engine:
    """Runs engine commands in-process against the shared session, exactly
    as the CLI does (same handlers, same JSON shape)."""

    def __init__(self, spark):
        self.spark = spark

    def run(self, command: str, tables: list[str] | None = None, database: str | None = None, **settings: Any):
        from lakekeeper_spark.catalog import Catalog
        from lakekeeper_spark.cli import _run_tables
        from lakekeeper_spark.commands.common import Context
        from lakekeeper_spark.config import build_settings
        from lakekeeper_spark.fs import HadoopFS
        from lakekeeper_spark.planner import new_run_id

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
