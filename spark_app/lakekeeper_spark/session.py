"""The SparkSession: the cluster's when running under spark-submit, or the
embedded default (local Spark, Derby Metastore and warehouse under a state
directory) when run with plain ``python``."""

from __future__ import annotations

import logging
import os
from typing import Any

log = logging.getLogger(__name__)


def under_spark_submit() -> bool:
    return "PYSPARK_GATEWAY_PORT" in os.environ or "SPARK_SUBMIT_APP_NAME" in os.environ


def build_session(
    master: str | None = None,
    state_dir: str | None = None,
    confs: dict[str, str] | None = None,
    app_name: str = "lakekeeper",
    log_level: str = "INFO",
) -> Any:
    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    if not under_spark_submit():
        # under spark-submit the launch names the application (--name; the
        # modules give lakekeeper-<command>-<table>): a name set here would
        # replace it before a client-mode driver registers with YARN
        builder = builder.appName(app_name).master(master or "local[*]")
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        builder = builder.config("spark.ui.enabled", "false").config("spark.scheduler.mode", "FAIR")
    else:
        from pyspark import SparkConf

        # units run as concurrent jobs in their own pools: FAIR, unless the
        # launch (spark-submit --conf, spark-defaults.conf) chose a mode
        if not SparkConf().contains("spark.scheduler.mode"):
            builder = builder.config("spark.scheduler.mode", "FAIR")
    if state_dir:
        state = os.path.abspath(os.path.expanduser(state_dir))
        os.makedirs(state, exist_ok=True)
        builder = (
            builder.config("spark.sql.catalogImplementation", "hive")
            .config("spark.sql.warehouse.dir", "file://" + os.path.join(state, "warehouse"))
            .config(
                "spark.hadoop.javax.jdo.option.ConnectionURL",
                f"jdbc:derby:;databaseName={os.path.join(state, 'metastore_db')};create=true",
            )
            .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={state} "
                    f"-Dderby.stream.error.file={os.path.join(state, 'derby.log')}")
        )
    for key, value in (confs or {}).items():
        builder = builder.config(key, value)
    spark = builder.enableHiveSupport().getOrCreate()
    spark.sparkContext.setLogLevel("ERROR" if log_level == "ERROR" else "WARN")
    log.info("Spark %s, application %s, master %s, scheduler mode %s", spark.version, spark.sparkContext.appName,
             spark.sparkContext.master, spark.sparkContext.getConf().get("spark.scheduler.mode", "FIFO"))
    return spark
