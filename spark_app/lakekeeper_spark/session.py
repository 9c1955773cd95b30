"""The SparkSession: the cluster's when running under spark-submit, or the
embedded default (local Spark, Derby Metastore and warehouse under a state
directory) when run with plain ``python``."""

from __future__ import annotations

import logging
import os
from typing import Any

from .compat.jvm import BatchedReleases, java_class
from .storage.fs import HDFS_CLOSE_RETRY

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
    launched = launch_conf_keys() if under_spark_submit() else set()
    if not under_spark_submit():
        # under spark-submit the launch names the application (--name; the
        # modules give lakekeeper-<command>-<table>): a name set here would
        # replace it before a client-mode driver registers with YARN
        builder = builder.appName(app_name).master(master or "local[*]")
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        builder = builder.config("spark.ui.enabled", "false").config("spark.scheduler.mode", "FAIR")
    else:
        # units run as concurrent jobs in their own pools: FAIR, unless the
        # launch (spark-submit --conf, spark-defaults.conf) chose a mode
        if "spark.scheduler.mode" not in launched:
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
    for key, value in quick_file_close(launched | set(confs or {}), os.environ).items():
        builder = builder.config(f"spark.hadoop.{key}", value)
    spark = _start(builder.enableHiveSupport())
    BatchedReleases.install(spark)  # py4j's releases of JVM objects a batch at a time (compat/jvm.py)
    spark.sparkContext.setLogLevel("ERROR" if log_level == "ERROR" else "WARN")
    log.info("Spark %s, application %s, master %s, scheduler mode %s", spark.version, spark.sparkContext.appName,
             spark.sparkContext.master, spark.sparkContext.getConf().get("spark.scheduler.mode", "FIFO"))
    return spark


# The HDFS client's retry of a file's close in short steps (storage/fs.py, ``HDFS_CLOSE_RETRY``: 25 ms,
# doubling), given to the whole application - the Spark jobs' writes on the executors too, not only the
# adapter's own clients. Measured on the test bed during a compaction of 10,000 small partitions: 28 of 29
# samples of the write tasks' threads sleeping in DFSOutputStream.completeFile's 400 ms retry; a Spark job
# writing 2 x 80 small files took 19-20 s with the client's default and 4-5 s with this. Given when the
# session starts (a client reads it once, when its filesystem is first opened), unless the launch
# (spark.hadoop.*) or the edge node's Hadoop configuration (hdfs-site.xml, core-site.xml) sets it.
QUICK_FILE_CLOSE = HDFS_CLOSE_RETRY


# Where a context's start fails when its web UI's pages do not start: SparkContext attaches them
# (SparkUI.attachAllHandlers, Spark 3.3+) after the scheduler started, without the UI's lock, while in
# YARN client mode the ApplicationMaster's AddWebUIFilter message, which arrives once the AM has
# registered, adds the AM's filter to those same pages from another thread. Seen once on the test bed (a
# loaded machine): the context stopped, "the engine could not start". Nothing has been touched then, so
# the start is tried once more; a failure that is not this one is never retried.
UI_PAGES_FRAME = "org.apache.spark.ui.SparkUI.attachAllHandlers"


def ui_pages_failure(text: str) -> bool:
    """True when a failed start's Java stack trace (a Py4J error's text)
    shows the web UI's pages failing to start."""
    return UI_PAGES_FRAME in (text or "")


def _start(builder: Any) -> Any:
    """``getOrCreate``, once more when the UI's pages failed to start
    (``UI_PAGES_FRAME``); pyspark stops a context that failed to start, so a
    second one can be made in the same process."""
    try:
        return builder.getOrCreate()
    except Exception as exc:  # noqa: BLE001 - py4j's error, whatever the pyspark line calls it
        if not ui_pages_failure(str(exc)):
            raise
        from .report.errors import root_cause

        log.warning("the Spark context did not start: its web UI's pages failed to start (%s); in YARN client "
                    "mode that is Spark's UI set-up racing the ApplicationMaster's web filter: starting it once "
                    "more", root_cause(exc))
    return builder.getOrCreate()


def launch_conf_keys() -> set[str]:
    """The Spark properties the launch set (spark-submit --conf, its
    properties file, spark-defaults.conf), before the context starts. A
    ``SparkConf`` made before the gateway is up holds nothing (it is not
    the JVM's; under spark-submit the launch's properties are the driver
    JVM's system properties): the gateway, which spark-submit has started,
    is connected first (as the session's builder would) and the JVM's
    ``SparkConf`` read. Under spark-submit only (with plain ``python`` the
    builder starts the JVM, with the driver's options)."""
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()  # pylint: disable=protected-access
    return {k for k, _v in SparkConf().getAll()}


def quick_file_close(launch_keys: set[str], environ: Any) -> dict[str, str]:
    """The ``QUICK_FILE_CLOSE`` entries neither the launch
    (``spark.hadoop.<key>`` in ``launch_keys``) nor the Hadoop
    configuration files of ``HADOOP_CONF_DIR``, ``YARN_CONF_DIR`` or
    ``$HADOOP_HOME/etc/hadoop`` set."""
    configured = _hadoop_file_keys(environ)
    return {k: v for k, v in QUICK_FILE_CLOSE.items() if f"spark.hadoop.{k}" not in launch_keys and k not in configured}


def _hadoop_file_keys(environ: Any) -> set[str]:
    """Property names set in the edge node's hdfs-site.xml and core-site.xml."""
    import xml.etree.ElementTree as ET  # noqa: S405 - the node's own Hadoop configuration files

    dirs = [environ.get("HADOOP_CONF_DIR"), environ.get("YARN_CONF_DIR")]
    if environ.get("HADOOP_HOME"):
        dirs.append(os.path.join(environ["HADOOP_HOME"], "etc", "hadoop"))
    keys: set[str] = set()
    for d in [d for d in dirs if d]:
        for name in ("hdfs-site.xml", "core-site.xml"):
            try:
                root = ET.parse(os.path.join(d, name)).getroot()  # noqa: S314
            except (OSError, ET.ParseError):
                continue
            keys.update((p.findtext("name") or "").strip() for p in root.iter("property"))
    return keys


def metastore_in_use(spark: Any) -> dict[str, Any]:
    """Which Hive catalog this driver will talk to, read before the catalog
    is first touched (nothing is created): ``kind`` ``metastore`` (a
    ``hive.metastore.uris`` service), ``database`` (a Metastore database
    reached directly through ``javax.jdo.option.ConnectionURL``) or
    ``embedded`` (Derby: a private catalog that knows none of the cluster's
    tables); ``source`` says where the setting came from.

    Spark takes these from its own ``spark.hadoop.*`` properties first, then
    from the ``hive-site.xml`` on the driver's class path (``SPARK_CONF_DIR``
    or ``HADOOP_CONF_DIR``; ``--files`` does not reach a client-mode driver)."""
    conf = spark.sparkContext.getConf()
    found: dict[str, tuple[str, str]] = {}
    for key in ("hive.metastore.uris", "javax.jdo.option.ConnectionURL"):
        value = conf.get(f"spark.hadoop.{key}", "") or ""
        if value.strip():
            found[key] = (value.strip(), f"spark.hadoop.{key}")
    jvm = spark.sparkContext._jvm
    site = java_class(jvm, "java.lang.Thread").currentThread().getContextClassLoader().getResource("hive-site.xml")
    hive_site = str(site.toString()) if site is not None else None
    if site is not None:
        xml = java_class(jvm, "org.apache.hadoop.conf.Configuration")(False)
        xml.addResource(site)
        for key in ("hive.metastore.uris", "javax.jdo.option.ConnectionURL"):
            value = xml.get(key)
            if key not in found and value and str(value).strip():
                found[key] = (str(value).strip(), hive_site)
    if "hive.metastore.uris" in found:
        value, source = found["hive.metastore.uris"]
        return {"kind": "metastore", "uris": value, "source": source, "hive_site": hive_site}
    url = found.get("javax.jdo.option.ConnectionURL")
    if url and not url[0].startswith("jdbc:derby:"):
        return {"kind": "database", "url": url[0].split(";")[0].split("?")[0], "source": url[1],
                "hive_site": hive_site}
    return {"kind": "embedded", "url": url[0].split(";create")[0] if url else None,
            "source": url[1] if url else None, "hive_site": hive_site}


def no_metastore_message(found: dict[str, Any]) -> str:
    where = (f"the hive-site.xml on its class path ({found['hive_site']}) sets neither hive.metastore.uris nor "
             "a Metastore database" if found.get("hive_site") else "no hive-site.xml is on its class path")
    return ("no Hive Metastore is configured for this driver, so it would use a private embedded Derby catalog "
            f"that knows none of the cluster's tables: {where}, and spark.hadoop.hive.metastore.uris is not set. "
            "Put the cluster's hive-site.xml in SPARK_CONF_DIR (or HADOOP_CONF_DIR) on the host that runs the "
            "driver, or pass --conf spark.hadoop.hive.metastore.uris=thrift://HOST:9083 "
            "(--files hive-site.xml does not reach a client-mode driver)")
