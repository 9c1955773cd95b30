"""The test bed: real HDFS and YARN (Hadoop 3.5: one JVM running a NameNode,
three DataNodes, a ResourceManager and a NodeManager; or, with
``hadoop="2.7"``, a Hadoop 2.7.3 NameNode + DataNode and no YARN), a Hive
Metastore service (Derby-backed, from pyspark's jars) and a Spark standalone
Master + Worker, each a separate JVM on 127.0.0.1 in its own process group.

    bed = Testbed.start("/tmp/bed")          # or Testbed.load(".../testbed.json")
    bed.spark_confs()                         # {"spark.hadoop.fs.defaultFS": ..., ...}
    bed.env()                                 # HADOOP_CONF_DIR, SPARK_CONF_DIR, ...
    bed.spark_submit_argv()                   # ["--master", "spark://...", "--conf", ...]
    bed.spark_submit("app.py", master="yarn", submit_args=["--deploy-mode", "cluster"])
    bed.stop()

Nothing here creates a SparkSession in the calling process: clients are
subprocesses (``bed.spark_submit(...)``, ``bed.run_python(...)``).
"""
from __future__ import annotations

import datetime as _dt
import grp
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import hadoop3, hadoop_jars, localfs
from . import hiveserver2 as hs2
from .confs import (DAEMON_JVM_OPTS, QUICK_JVM_OPTS, HADOOP_LOG4J, HADOOP3_LOG4J, HIVE_LOG4J2, JAVA17_OPENS,
                    write_properties, write_site)
from .procs import (Proc, TestbedError, free_ports, listening_ports, log_contains, log_tail, spawn,
                    stop_all, wait_all)

__all__ = ["Testbed", "TestbedError", "find_spark_home", "find_java", "DEFAULT_BLOCK_SIZE"]

JSON_NAME = "testbed.json"
DEFAULT_BLOCK_SIZE = 1024 * 1024  # 1 MiB: quota tests stay small
DEFAULT_TIMEOUT = float(os.environ.get("LAKEKEEPER_TESTBED_TIMEOUT", "120"))

# Order in which services appear in testbed.json and are reported. Hadoop 3.5: one JVM
# "hadoop" (NameNode, DataNodes, ResourceManager, NodeManagers); Hadoop 2.7: two.
SERVICES = ("hadoop", "namenode", "datanode", "metastore", "spark-master", "spark-worker", "hiveserver2")

# The Hadoop lines the bed runs: "3.5" (default; HDFS + YARN from Maven Central, see
# hadoop3.py) and "2.7" (HDFS only, jars from the pyspark 2.4.8 sdist, see hadoop_jars.py).
# LAKEKEEPER_TESTBED_HADOOP=2.7 makes every Testbed.start without hadoop= start the old one.
HADOOP_LINES = {"3.5": "3.5.0", "2.7": "2.7.3"}
DEFAULT_HADOOP = "3.5"


def hadoop_line(hadoop: str | None = None) -> str:
    """"3.5" or "2.7" from an argument, $LAKEKEEPER_TESTBED_HADOOP or the default."""
    line = hadoop or os.environ.get("LAKEKEEPER_TESTBED_HADOOP") or DEFAULT_HADOOP
    for key, full in HADOOP_LINES.items():
        if line in (key, full, key.split(".", maxsplit=1)[0]):
            return key
    raise TestbedError(f"unknown Hadoop line {line!r} (have: {', '.join(HADOOP_LINES)})")


# HDFS transparent encryption: a Java keystore key provider (jceks) with one key,
# made once per cache by Hadoop's KeyShell (KEY_NAME), read by the NameNode and,
# through the client configuration, by every HDFS client of the test bed (the
# keystore is a local file on this one host). On Java 17 the JCEKS filter must let
# Hadoop's key metadata class be deserialized (HADOOP-15473); Hadoop 2.7 reads the
# metadata with Gson, which is not among its 28 jars (taken from Spark's).
KEY_NAME = "lkkey"
JCEKS_FILTER = ("-Djceks.key.serialFilter=org.apache.hadoop.crypto.key.JavaKeyStoreProvider$KeyMetadata;"
                "java.lang.Enum;java.security.KeyRep;java.security.KeyRep$Type;javax.crypto.spec.SecretKeySpec;!*")

# Users of the NameNode's static group mapping (no such accounts on the host):
# ``ingest`` and ``etl`` share the group ``lakers``; neither is a superuser.
TEST_USERS = {"ingest": "lakers", "etl": "lakers"}

# Environment variables that would point a daemon at someone else's configuration.
_SCRUB = ("HADOOP_CONF_DIR", "YARN_CONF_DIR", "HIVE_CONF_DIR", "SPARK_CONF_DIR", "PYSPARK_SUBMIT_ARGS",
          "SPARK_HOME", "HADOOP_HOME", "HADOOP_USER_NAME", "CLASSPATH", "_JAVA_OPTIONS", "JAVA_TOOL_OPTIONS",
          "SPARK_DIST_CLASSPATH", "HADOOP_OPTS")


def find_spark_home() -> Path:
    """The pyspark package directory (it carries bin/spark-class and jars/)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.origin:
        raise TestbedError(f"pyspark is not importable from {sys.executable}; "
                           "run scripts/bootstrap and use the project venv (.venv/bin/python)")
    home = Path(spec.origin).parent
    if not (home / "bin" / "spark-class").exists():
        raise TestbedError(f"{home} has no bin/spark-class")
    return home


def find_java() -> str:
    jh = os.environ.get("JAVA_HOME")
    if jh and (Path(jh) / "bin" / "java").exists():
        return str(Path(jh) / "bin" / "java")
    java = shutil.which("java")
    if not java:
        raise TestbedError("java not found (install a JDK 17 or set JAVA_HOME)")
    return java


def _default_superuser_group() -> str:
    try:
        grp.getgrnam("root")
        return "root"
    except KeyError:
        return grp.getgrgid(os.getgid()).gr_name


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in _SCRUB}


def _namenode_template(java: str, jars: Path, log_dir: Path, timeout: float) -> Path:
    """A freshly formatted, empty NameNode directory, made once and cached.

    Formatting costs a JVM start (3-5 s); every run copies this instead.
    """
    import fcntl
    cache = hadoop_jars.cache_root()
    template = cache / "hadoop-2.7.3-namenode-template"
    if (template / "current" / "VERSION").exists():
        return template
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".namenode-template.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (template / "current" / "VERSION").exists():
            return template
        work = Path(tempfile.mkdtemp(prefix=".format-", dir=cache))
        try:
            conf = work / "conf"
            name = work / "name"
            write_site(conf / "core-site.xml", {"fs.defaultFS": "hdfs://127.0.0.1:8020"})
            write_site(conf / "hdfs-site.xml", {"dfs.namenode.name.dir": f"file://{name}"})
            write_properties(conf / "log4j.properties", HADOOP_LOG4J)
            log = log_dir / "namenode-format.log"
            argv = [java, *JAVA17_OPENS, *DAEMON_JVM_OPTS, "-Xmx128m", f"-Djava.io.tmpdir={work}",
                    f"-Dhadoop.home.dir={jars}", "-cp",
                    os.pathsep.join([str(conf), *hadoop_jars.classpath(jars)]),
                    "org.apache.hadoop.hdfs.server.namenode.NameNode",
                    "-format", "-clusterid", "lakekeeper-testbed", "-force", "-nonInteractive"]
            log.parent.mkdir(parents=True, exist_ok=True)
            with open(log, "wb") as out:
                rc = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, env=_clean_env(),
                                    cwd=work, timeout=timeout, check=False).returncode
            if rc != 0 or not (name / "current" / "VERSION").exists():
                raise TestbedError(f"namenode -format failed (exit {rc}); log: {log}\n{log_tail(log)}")
            os.replace(name, template)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return template


def _gson_jar(spark_home: Path) -> Path:
    found = sorted((spark_home / "jars").glob("gson-*.jar"))
    if not found:
        raise TestbedError(f"no gson jar in {spark_home / 'jars'} (the NameNode's key provider needs one)")
    return found[-1]


def _key_store_template(java: str, jars: Path, spark_home: Path, log_dir: Path, timeout: float) -> Path:
    """A Java keystore holding the key ``KEY_NAME``, made once and cached
    (KeyShell costs a JVM start); each run copies it."""
    import fcntl
    cache = hadoop_jars.cache_root()
    template = cache / "hadoop-2.7.3-kms-template" / "kms.jceks"
    if template.exists():
        return template
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".kms-template.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if template.exists():
            return template
        work = Path(tempfile.mkdtemp(prefix=".kms-", dir=cache))
        try:
            log = log_dir / "keyshell.log"
            argv = [java, *DAEMON_JVM_OPTS, JCEKS_FILTER, "-cp",
                    os.pathsep.join([*hadoop_jars.classpath(jars), str(_gson_jar(spark_home))]),
                    "org.apache.hadoop.crypto.key.KeyShell", "create", KEY_NAME,
                    "-provider", f"jceks://file{work / 'kms.jceks'}"]
            log.parent.mkdir(parents=True, exist_ok=True)
            with open(log, "wb") as out:
                rc = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, env=_clean_env(), cwd=work,
                                    timeout=timeout, check=False).returncode
            if rc != 0 or not (work / "kms.jceks").exists():
                raise TestbedError(f"KeyShell create {KEY_NAME} failed (exit {rc}); log: {log}\n{log_tail(log)}")
            template.parent.mkdir(parents=True, exist_ok=True)
            os.replace(work / "kms.jceks", template)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return template


class Testbed:
    """A running (or stopped) test bed, described by its testbed.json."""

    __test__ = False

    def __init__(self, info: dict, json_path: Path):
        self.info = info
        self.json_path = Path(json_path)
        self.procs = {name: Proc.from_json(d) for name, d in info.get("processes", {}).items()}
        self._reaper: subprocess.Popen | None = None

    # ------------------------------------------------------------ accessors
    run_dir = property(lambda self: Path(self.info["run_dir"]))
    conf_dir = property(lambda self: Path(self.info["conf_dir"]), doc="client conf dir (HADOOP/SPARK_CONF_DIR)")
    log_dir = property(lambda self: Path(self.info["log_dir"]))
    spark_home = property(lambda self: Path(self.info["spark_home"]))
    python = property(lambda self: self.info["python"], doc="interpreter with pyspark (executors use it)")
    hdfs_uri = property(lambda self: self.info["hdfs"]["uri"] if self.info.get("hdfs") else None)
    metastore_uri = property(lambda self: self.info["metastore"]["uri"] if self.info.get("metastore") else None)
    master_url = property(lambda self: self.info["spark"]["master_url"] if self.info.get("spark") else None)
    warehouse_dir = property(lambda self: self.info["warehouse_dir"])
    block_size = property(lambda self: self.info.get("block_size", DEFAULT_BLOCK_SIZE))
    key_provider = property(lambda self: (self.info.get("hdfs") or {}).get("key_provider"),
                            doc="jceks:// URI of the key provider (HDFS encryption zones; key KEY_NAME)")
    hadoop_version = property(lambda self: self.info.get("hadoop_version") or "2.7.3",
                              doc="the HDFS (and YARN) version: 3.5.0 or 2.7.3 (beds from before 3.5: 2.7.3)")
    yarn = property(lambda self: self.info.get("yarn"), doc="ResourceManager addresses etc., None without YARN")
    yarn_rm = property(lambda self: self.info["yarn"]["rm_address"] if self.info.get("yarn") else None,
                       doc="host:port of the ResourceManager (None without YARN)")
    datanodes = property(lambda self: (self.info.get("hdfs") or {}).get("datanodes", 1 if self.hdfs_uri else 0))
    ec_policies = property(lambda self: list((self.info.get("hdfs") or {}).get("ec_policies", [])),
                           doc="erasure coding policies enabled on the NameNode (none on Hadoop 2.7)")

    @property
    def hadoop3(self) -> bool:
        return int(self.hadoop_version.split(".", maxsplit=1)[0]) >= 3

    def hadoop_classpath(self) -> list[str]:
        """Class path of a Hadoop client (and tool: FsShell, DFSAdmin, ECAdmin) of the bed's own
        version, its client conf dir first: ``java -cp ':'.join(...) org.apache.hadoop.fs.FsShell``."""
        jars = self.info.get("hadoop_jars")
        if not jars:
            raise TestbedError("this test bed has no HDFS (started with --no-hdfs)")
        if self.hadoop3:
            return [str(self.conf_dir), str(Path(jars) / "*")]
        return [str(self.conf_dir), *hadoop_jars.classpath(Path(jars))]
    hiveserver2_url = property(lambda self: (self.info.get("hiveserver2") or {}).get("url"),
                               doc="jdbc:hive2:// URL of the HiveServer2 (hiveserver2=True)")

    def __repr__(self) -> str:
        return f"Testbed({self.json_path})"

    # ------------------------------------------------------------ start / load / stop
    @classmethod
    def load(cls, json_path: str | os.PathLike) -> "Testbed":
        p = Path(json_path)
        if p.is_dir():
            p = p / JSON_NAME
        try:
            info = json.loads(p.read_text())
        except FileNotFoundError:
            raise TestbedError(f"no test bed description at {p} (start one with: scripts/testbed up)") from None
        return cls(info, p)

    @classmethod
    def start(cls, run_dir: str | os.PathLike, *, hdfs: bool = True, metastore: bool = True,
              spark: bool = True, block_size: int = DEFAULT_BLOCK_SIZE, worker_cores: int = 2,
              worker_memory: str = "1g", superuser_group: str | None = None,
              timeout: float = DEFAULT_TIMEOUT, watchdog: bool = False,
              extra_core_site: dict | None = None, extra_hdfs_site: dict | None = None,
              extra_hive_site: dict | None = None, attach: "Testbed | None" = None,
              hadoop: str | None = None, yarn: bool | None = None, datanodes: int | None = None,
              nodemanagers: int = 1, nm_memory_mb: int = 3072, nm_vcores: int = 8,
              extra_yarn_site: dict | None = None, hiveserver2: bool = False) -> "Testbed":
        """Start the services in run_dir (created; a previous test bed's files there are wiped).

        hadoop="3.5" (default, or $LAKEKEEPER_TESTBED_HADOOP): HDFS with ``datanodes``
        DataNodes (3: erasure coding with XOR-2-1-1024k; 5 adds RS-3-2-1024k) and, unless
        yarn=False, YARN (a ResourceManager and ``nodemanagers`` NodeManagers offering
        nm_memory_mb and nm_vcores each), all in one JVM. hadoop="2.7": a Hadoop 2.7.3
        NameNode and one DataNode, no YARN.

        watchdog=True starts a small reaper process that kills every service group
        as soon as the calling process dies, however it dies (for pytest).

        attach=another running test bed: start only a Spark master and worker (of
        the calling interpreter's pyspark) and use that bed's HDFS, YARN and Metastore,
        which this one never stops (an older-Spark lane on the suite's one bed).

        hiveserver2=True also starts a HiveServer2 on the bed's Metastore and HDFS
        (testbed/hiveserver2.py), in parallel with the others.
        """
        t0 = time.monotonic()
        line = hadoop_line(hadoop)
        if attach is not None:
            attach.check_alive()
            hdfs = metastore = False
            yarn = False
        if yarn is None:
            yarn = hdfs and line != "2.7"
        if yarn and line == "2.7":
            raise TestbedError("YARN runs on the Hadoop 3.5 test bed only (hadoop='3.5')")
        if yarn and not hdfs:
            raise TestbedError("YARN runs beside HDFS in the test bed's Hadoop JVM (hdfs=True)")
        if datanodes is None:
            datanodes = hadoop3.DEFAULT_DATANODES if line == "3.5" else 1
        if line == "2.7" and datanodes != 1:
            raise TestbedError("the Hadoop 2.7 test bed runs one DataNode")
        run = Path(run_dir).resolve()
        _prepare_run_dir(run)
        java = find_java()
        spark_home = find_spark_home()
        jars = None
        if hdfs:  # fetched (once, cached) before anything starts
            jars = hadoop3.jars() if line == "3.5" else hadoop_jars.ensure_jars(quiet=True)

        logs, conf, tmp = run / "logs", run / "conf", run / "tmp"
        for d in (logs, conf, tmp):
            d.mkdir(parents=True, exist_ok=True)
        nn_port, hms_port, master_port, hs2_port = free_ports(4)
        hdfs_uri = f"hdfs://127.0.0.1:{nn_port}" if hdfs else None
        warehouse = f"{hdfs_uri}/warehouse" if hdfs else f"file://{run / 'warehouse'}"
        ec_policies = hadoop3.ec_policies_for(datanodes) if hdfs and line == "3.5" else []
        info: dict = {
            "version": 1,
            "state": "starting",
            "run_dir": str(run),
            "conf_dir": str(conf / "client"),
            "log_dir": str(logs),
            "json": str(run / JSON_NAME),
            "started_at": _dt.datetime.now().isoformat(timespec="seconds"),
            "spark_home": str(spark_home),
            "python": sys.executable,
            "java": java,
            "hadoop_version": HADOOP_LINES[line] if hdfs else None,
            "hadoop_jars": str(jars) if jars else None,
            "warehouse_dir": warehouse,
            "block_size": block_size,
            "hdfs": {"uri": hdfs_uri, "namenode_port": nn_port, "key_provider": f"jceks://file{run / 'kms' / 'kms.jceks'}",
                     "key": KEY_NAME, "users": TEST_USERS, "datanodes": datanodes,
                     "ec_policies": ec_policies} if hdfs else None,
            # filled in once the ResourceManager is up (its ports are bound as port 0)
            "yarn": {"rm_address": None, "nodemanagers": nodemanagers, "nm_memory_mb": nm_memory_mb,
                     "nm_vcores": nm_vcores} if yarn else None,
            "metastore": {"uri": f"thrift://127.0.0.1:{hms_port}", "port": hms_port} if metastore else None,
            "spark": {"master_url": f"spark://127.0.0.1:{master_port}", "master_port": master_port,
                      "worker_cores": worker_cores, "worker_memory": worker_memory} if spark else None,
            "hiveserver2": {"url": hs2.jdbc_url(hs2_port), "port": hs2_port, "timezone": hs2.TIMEZONE}
            if hiveserver2 else None,
            "processes": {},
        }
        if attach is not None:
            for key in ("hdfs", "yarn", "metastore", "warehouse_dir", "block_size", "hadoop_jars", "hadoop_version"):
                info[key] = attach.info.get(key)
            info["attached_to"] = str(attach.json_path)
        bed = cls(info, run / JSON_NAME)
        superuser_group = superuser_group or _default_superuser_group()

        # ---- configuration files
        hconf = conf / "hadoop"
        if hdfs:
            write_site(hconf / "core-site.xml", {
                "fs.defaultFS": hdfs_uri,
                "hadoop.tmp.dir": str(tmp / "hadoop"),
                "hadoop.security.authentication": "simple",
                "hadoop.security.key.provider.path": info["hdfs"]["key_provider"],
                "hadoop.user.group.static.mapping.overrides": ";".join(f"{u}={g}" for u, g in TEST_USERS.items()),
                **(extra_core_site or {}),
            })
        if hdfs and line == "2.7":
            _write_hadoop27_site(hconf, run, nn_port, block_size, superuser_group, info["hdfs"]["key_provider"],
                                 extra_hdfs_site)
        if hdfs and line == "3.5":
            write_site(hconf / "hdfs-site.xml", {
                **hadoop3.hdfs_site(block_size, superuser_group, info["hdfs"]["key_provider"]),
                **(extra_hdfs_site or {})})
            write_site(hconf / "yarn-site.xml", {**hadoop3.yarn_site(nm_memory_mb, nm_vcores, run / "hadoop" / "node-attributes"),
                                                 **(extra_yarn_site or {})} if yarn else {})
            write_properties(hconf / "log4j.properties", HADOOP3_LOG4J)
        if metastore:
            mconf = conf / "metastore"
            site = {
                "javax.jdo.option.ConnectionURL":
                    f"jdbc:derby:;databaseName={run / 'metastore' / 'metastore_db'};create=true",
                "javax.jdo.option.ConnectionDriverName": "org.apache.derby.jdbc.EmbeddedDriver",
                "datanucleus.schema.autoCreateAll": True,
                "hive.metastore.schema.verification": False,
                "hive.async.log.enabled": False,
                "hive.metastore.warehouse.dir": warehouse,
                "datanucleus.connectionPoolingType": "DBCP",
                # The Metastore reads many partitions with one SQL query over all their ids. A
                # production Metastore's database (MySQL, PostgreSQL) takes that in one piece; Derby
                # refuses it past a few thousand ids ("Statement too complex") and the Metastore falls
                # back to DataNucleus objects: a listing of 100,000 partitions went from 26 s to over 9
                # minutes. Batches of 1,000 ids, as Hive does by default on Oracle and SQL Server.
                "hive.metastore.direct.sql.batch.size": 1000,
                **(extra_hive_site or {}),
            }
            if hdfs:
                site["fs.defaultFS"] = hdfs_uri
            write_site(mconf / "hive-site.xml", site)
            write_site(mconf / "core-site.xml", {"fs.defaultFS": hdfs_uri} if hdfs else {})
            write_properties(mconf / "hive-log4j2.properties", HIVE_LOG4J2, sep=" = ")
            (run / "metastore").mkdir(exist_ok=True)
        if hiveserver2:
            if not info["metastore"]:
                raise TestbedError("HiveServer2 needs the bed's Metastore")
            hs2.configure(conf / "hiveserver2", run, port=hs2_port, metastore_uri=info["metastore"]["uri"],
                          hdfs_uri=(info["hdfs"] or {}).get("uri"), warehouse=info["warehouse_dir"],
                          key_provider=(info["hdfs"] or {}).get("key_provider"))

        # ---- spawn everything at once (the JVMs start in parallel)
        procs: dict[str, Proc] = {}
        checks = {}
        try:
            if hdfs and line == "2.7":
                procs.update(_spawn_hadoop27(java, jars, spark_home, run, timeout))
            if hdfs and line == "3.5":
                classes = hadoop3.compiled(java, jars, logs, timeout)
                (run / "kms").mkdir()  # the JVM makes the key in a new keystore there
                env = _clean_env()
                env["JAVA_HOME"] = hadoop3.java_home(java)  # the NodeManager's containers run $JAVA_HOME/bin/java
                procs["hadoop"] = spawn("hadoop", hadoop3.argv(
                    java, [*JAVA17_OPENS, *DAEMON_JVM_OPTS, f"-Djava.io.tmpdir={tmp}", f"-Dhadoop.log.dir={logs}"],
                    classes, jars, hconf, nn_port=nn_port, base=run / "hadoop", out=conf / "hadoop-effective",
                    datanodes=datanodes, nodemanagers=nodemanagers if yarn else 0, ec_policies=ec_policies,
                    key=KEY_NAME, local_fs=localfs.directory()), logs / "hadoop.log", env, run)
            if metastore:
                mconf = conf / "metastore"
                argv = [java, *JAVA17_OPENS, *DAEMON_JVM_OPTS, "-Xmx512m", f"-Djava.io.tmpdir={tmp}",
                        f"-Dderby.system.home={run / 'metastore'}",
                        f"-Dderby.stream.error.file={logs / 'derby.log'}",
                        "-cp", os.pathsep.join([str(mconf), str(spark_home / "jars" / "*")]),
                        "org.apache.hadoop.hive.metastore.HiveMetaStore", "-p", str(hms_port)]
                procs["metastore"] = spawn("metastore", argv, logs / "metastore.log", _clean_env(), run)
            if spark:
                senv = _spark_daemon_env(run, spark_home)
                sc = str(spark_home / "bin" / "spark-class")
                procs["spark-master"] = spawn("spark-master", [
                    sc, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                    "--port", str(master_port), "--webui-port", "0"], logs / "spark-master.log", senv, run)
                procs["spark-worker"] = spawn("spark-worker", [
                    sc, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--port", "0",
                    "--webui-port", "0", "--cores", str(worker_cores), "--memory", worker_memory,
                    "--work-dir", str(run / "spark" / "work"), info["spark"]["master_url"]],
                    logs / "spark-worker.log", senv, run)

            def spawn_hiveserver2() -> None:
                procs["hiveserver2"], checks["hiveserver2"] = hs2.spawn_server(
                    java, conf / "hiveserver2", run, spark_home, logs / "hiveserver2.log", _clean_env(), hs2_port)
                bed.procs = procs
                bed._save_procs()
                bed._reaper_add(procs["hiveserver2"])
                bed._write_json()

            if hiveserver2 and not hdfs:
                spawn_hiveserver2()
            bed.procs = procs
            bed._save_procs()
            if watchdog:
                bed._start_reaper()
            bed._write_json()

            # ---- readiness
            if hdfs and line == "2.7":
                nn, dn = procs["namenode"], procs["datanode"]
                checks["namenode"] = (nn, lambda: nn_port in listening_ports(nn.pid))
                checks["datanode"] = (dn, lambda: log_contains(dn.log, "Successfully sent block report"))
            if hdfs and line == "3.5":
                hp = procs["hadoop"]
                checks["hadoop"] = (hp, lambda: log_contains(hp.log, hadoop3.READY)
                                    and nn_port in listening_ports(hp.pid))
            if metastore:
                ms = procs["metastore"]
                checks["metastore"] = (ms, lambda: hms_port in listening_ports(ms.pid)
                                       and log_contains(ms.log, "Started the new metaserver"))
            if spark:
                m, w = procs["spark-master"], procs["spark-worker"]
                checks["spark-master"] = (m, lambda: master_port in listening_ports(m.pid))
                checks["spark-worker"] = (w, lambda: log_contains(w.log, "Successfully registered with master"))
            ready, waited = {}, time.monotonic()
            if hiveserver2 and hdfs:
                # HiveServer2 reads HDFS as it starts (its authorization policy) and exits when the NameNode
                # is not listening yet (on a machine at load 27 it was not, 60 s in): it starts once HDFS is
                # ready, the other services going on starting meanwhile
                first = {k: v for k, v in checks.items() if k in ("hadoop", "namenode", "datanode")}
                ready.update(wait_all(first, timeout))
                for k in first:
                    del checks[k]
                spawn_hiveserver2()
            offset = time.monotonic() - waited  # the seconds are since the services were spawned
            ready.update({k: round(v + offset, 1) for k, v in wait_all(checks, timeout).items()})
            if hdfs and line == "3.5":
                eff = hadoop3.read_effective(conf / "hadoop-effective")
                if eff.get("fs.defaultFS") != hdfs_uri:
                    raise TestbedError(f"the NameNode says {eff.get('fs.defaultFS')}, expected {hdfs_uri}")
                phases = hadoop3.log_timings(procs["hadoop"].log)  # seconds after the JVM started
                ready["hdfs (in hadoop)"] = phases.get("hdfs")
                if yarn:
                    ready["yarn (in hadoop)"] = phases.get("yarn")
                    info["yarn"].update({
                        "rm_address": _loopback(eff["yarn.resourcemanager.address"]),
                        "rm_scheduler_address": _loopback(eff["yarn.resourcemanager.scheduler.address"]),
                        "rm_admin_address": _loopback(eff["yarn.resourcemanager.admin.address"]),
                        "rm_resource_tracker_address": _loopback(eff["yarn.resourcemanager.resource-tracker.address"]),
                        "rm_webapp_address": _loopback(eff["yarn.resourcemanager.webapp.address"]),
                        "nm_addresses": [_loopback(eff[f"nodemanager.{i}.address"]) for i in range(nodemanagers)],
                        "nm_log_dirs": [eff[f"nodemanager.{i}.log-dirs"] for i in range(nodemanagers)],
                        "nm_local_dirs": [eff[f"nodemanager.{i}.local-dirs"] for i in range(nodemanagers)],
                    })
        except BaseException:
            notes = stop_all(procs.values())
            bed._stop_reaper()
            info["state"] = "failed"
            info["stop_notes"] = notes
            bed._save_procs()
            bed._write_json()
            raise
        _write_client_conf(bed, conf / "client")
        for p in procs.values():
            p.ports = {str(port): port for port in sorted(listening_ports(p.pid))}
        info["timings"] = {"ready_after_s": ready, "total_start_s": round(time.monotonic() - t0, 1)}
        info["state"] = "running"
        bed._save_procs()
        bed._write_json()
        return bed

    def stop(self, timeout: float = 15.0) -> list[str]:
        """Stop every service group (SIGTERM, then SIGKILL). Returns notes about stragglers."""
        t0 = time.monotonic()
        notes = stop_all(self.procs.values(), timeout=timeout)
        self._stop_reaper()
        self.info["state"] = "stopped"
        self.info["stop_notes"] = notes
        self.info.setdefault("timings", {})["stop_s"] = round(time.monotonic() - t0, 1)
        if self.json_path.parent.exists():
            self._write_json()
        return notes

    def status(self) -> dict[str, dict]:
        """Per service: pid, alive, listening ports, processes in its group, log file."""
        out = {}
        for name, p in self.procs.items():
            alive = p.alive()
            out[name] = {"pid": p.pid, "alive": alive, "group": p.members(),
                         "listening": sorted(listening_ports(p.pid)) if alive else [], "log": p.log}
        return out

    def alive(self) -> bool:
        return bool(self.procs) and all(p.alive() for p in self.procs.values())

    def check_alive(self) -> None:
        dead = [p for p in self.procs.values() if not p.alive()]
        if dead:
            raise TestbedError("test bed services not running: " + ", ".join(
                f"{p.name} (pid {p.pid}, log {p.log})" for p in dead))

    # ------------------------------------------------------------ client helpers
    def spark_confs(self, python: str | None = None, master: str | None = None) -> dict[str, str]:
        """Spark confs that point any Spark client at the test bed (with master="yarn" also
        ``yarn_confs()``)."""
        c: dict[str, str] = {}
        if self.hdfs_uri:
            c["spark.hadoop.fs.defaultFS"] = self.hdfs_uri
            c["spark.hadoop.dfs.blocksize"] = str(self.block_size)
            c["spark.hadoop.dfs.replication"] = "1"
            if self.key_provider:  # clients read and write files in encryption zones
                c["spark.hadoop.hadoop.security.key.provider.path"] = self.key_provider
        if self.metastore_uri:
            c["spark.hadoop.hive.metastore.uris"] = self.metastore_uri
            c["spark.sql.catalogImplementation"] = "hive"
        c["spark.sql.warehouse.dir"] = self.warehouse_dir
        c["spark.driver.host"] = "127.0.0.1"
        c["spark.driver.bindAddress"] = "127.0.0.1"
        c["spark.pyspark.python"] = python or self.python
        # the executors' and a driver's that SPARK_SUBMIT_OPTS does not reach (YARN cluster mode:
        # in its container it ran with C2 and G1, 116 s of compiling in two minutes)
        c["spark.executor.extraJavaOptions"] = " ".join(QUICK_JVM_OPTS)
        c["spark.driver.extraJavaOptions"] = " ".join(QUICK_JVM_OPTS)
        archive = self._jvm_archive()
        if archive:
            # the jars ahead of the conf dir on the class path, where the archive maps them
            # (a standalone executor's too: the worker puts its extraClassPath first)
            for role in ("driver", "executor"):
                c[f"spark.{role}.extraClassPath"] = f"{self.spark_home / 'jars'}/*"
            c["spark.driver.extraJavaOptions"] += f" -XX:SharedArchiveFile={archive}"
            c["spark.executor.extraJavaOptions"] += f" -XX:SharedArchiveFile={archive}"
        if master and master.startswith("yarn"):
            c.update(self.yarn_confs(python=python))
        return c

    def quick_confs(self) -> dict[str, str]:
        """Faster client JVMs on a busy 2-core machine (no UI, quick JIT, and the suite's archive
        where there is one) for a spark-submit whose driver may run outside this host's
        ``SPARK_SUBMIT_OPTS`` (YARN cluster mode); not needed for correctness."""
        c = self.spark_confs()
        return {"spark.ui.enabled": "false",
                "spark.driver.extraJavaOptions": c["spark.driver.extraJavaOptions"],
                "spark.executor.extraJavaOptions": c["spark.executor.extraJavaOptions"]}

    def _jvm_archive(self) -> str:
        """The suite's class-data-sharing archive for the bed's JVMs (scripts/jvm_archive.py
        --bed, named by ``LAKEKEEPER_JVM_BED_ARCHIVE``), or "" outside the suite and when it was
        trained on other jars than this bed's Spark (an older-Spark lane's bed)."""
        archive = os.environ.get("LAKEKEEPER_JVM_BED_ARCHIVE", "")
        try:
            trained_on = Path(f"{archive}.jars").read_text(encoding="utf-8").strip() if archive else ""
        except OSError:
            return ""
        return archive if trained_on == str(self.spark_home / "jars") and Path(archive).is_file() else ""

    def yarn_confs(self, python: str | None = None) -> dict[str, str]:
        """Spark confs for ``--master yarn`` on the bed's YARN (client or cluster deploy mode).

        Spark's jars are read from this host's pyspark (``spark.yarn.jars=local:...``), not
        uploaded; the application master, driver (cluster mode) and executors run the bed's
        interpreter (same host). Containers: one executor of 2 cores and 512m, a 512m driver
        or AM, each with YARN's 384m overhead; the NodeManager offers ``nm_memory_mb``.
        A spark-submit also needs HADOOP_CONF_DIR or YARN_CONF_DIR (``env()``; ``spark_submit``
        sets both).
        """
        y = self.yarn
        if not y or not y.get("rm_address"):
            raise TestbedError("this test bed has no YARN (Hadoop 3.5 bed started with YARN: "
                               "Testbed.start(..., hadoop='3.5'), scripts/testbed up)")
        py = python or self.python
        quick = " ".join(QUICK_JVM_OPTS)
        return {
            "spark.hadoop.yarn.resourcemanager.address": y["rm_address"],
            "spark.hadoop.yarn.resourcemanager.scheduler.address": y["rm_scheduler_address"],
            "spark.yarn.jars": f"local:{self.spark_home / 'jars'}/*",
            "spark.yarn.queue": "default",
            "spark.yarn.maxAppAttempts": "1",
            "spark.yarn.am.memory": "512m",
            "spark.yarn.am.extraJavaOptions": quick,
            "spark.driver.memory": "512m",
            "spark.executor.instances": "1",
            "spark.executor.cores": "2",
            "spark.executor.memory": "512m",
            "spark.pyspark.python": py,
            "spark.pyspark.driver.python": py,
            "spark.yarn.appMasterEnv.PYSPARK_PYTHON": py,
            "spark.executorEnv.PYSPARK_PYTHON": py,
            # a cluster-mode driver (in the AM container) names its host itself: without this,
            # the machine's external address, where nothing listens (bindAddress is 127.0.0.1)
            "spark.yarn.appMasterEnv.SPARK_LOCAL_IP": "127.0.0.1",
            "spark.executorEnv.SPARK_LOCAL_IP": "127.0.0.1",
        }

    def env(self, base: dict[str, str] | None = None, python: str | None = None) -> dict[str, str]:
        """Environment for a client process: conf dirs, SPARK_LOCAL_IP, and where the bed is.

        With base (e.g. os.environ) the result is a full environment; otherwise only the additions.
        """
        e = dict(base) if base is not None else {}
        for k in ("PYSPARK_SUBMIT_ARGS",):
            e.pop(k, None)
        e.update({
            "HADOOP_CONF_DIR": str(self.conf_dir),
            "SPARK_CONF_DIR": str(self.conf_dir),
            "HIVE_CONF_DIR": str(self.conf_dir),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "PYSPARK_PYTHON": python or self.python,
            "LAKEKEEPER_TESTBED_JSON": str(self.json_path),
        })
        if self.master_url:
            e["LAKEKEEPER_TESTBED_MASTER"] = self.master_url
        if self.hdfs_uri:
            e["LAKEKEEPER_TESTBED_HDFS"] = self.hdfs_uri
        if self.metastore_uri:
            e["LAKEKEEPER_TESTBED_METASTORE"] = self.metastore_uri
        if self.yarn_rm:
            e["YARN_CONF_DIR"] = str(self.conf_dir)
            e["LAKEKEEPER_TESTBED_YARN_RM"] = self.yarn_rm
        return e

    def spark_submit_argv(self, master: str | None = None, confs: dict[str, str] | None = None,
                          python: str | None = None, executor_memory: str = "512m") -> list[str]:
        """``--master spark://… --conf k=v …`` for spark-submit (caller's confs win);
        master="yarn": the bed's YARN (``yarn_confs()``)."""
        m = master or self.master_url
        if not m:
            raise TestbedError("this test bed has no Spark master (started with --no-spark)")
        c = self.spark_confs(python=python, master=m)
        if m.startswith("spark://"):
            c["spark.executor.memory"] = executor_memory
        c.update(confs or {})
        argv = ["--master", m]
        for k, v in c.items():
            argv += ["--conf", f"{k}={v}"]
        return argv

    def spark_submit_cmd(self, app: str | os.PathLike, *args: str, master: str | None = None,
                         confs: dict[str, str] | None = None, submit_args: list[str] | None = None) -> list[str]:
        return [str(self.spark_home / "bin" / "spark-submit"),
                *self.spark_submit_argv(master=master, confs=confs), *(submit_args or []), str(app),
                *map(str, args)]

    def spark_submit(self, app: str | os.PathLike, *args: str, master: str | None = None,
                     confs: dict[str, str] | None = None, submit_args: list[str] | None = None,
                     timeout: float = 600, check: bool = False, cwd: str | None = None,
                     env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        """Run spark-submit against the standalone master (or `master`, e.g. "yarn" with
        submit_args=["--deploy-mode", "cluster"]); output captured."""
        full_env = self.env(base=_clean_env())
        # conf-dir route is not needed here: everything is on the command line; only
        # spark-submit to YARN insists on HADOOP_CONF_DIR or YARN_CONF_DIR (yarn-site.xml)
        yarn = (master or "").startswith("yarn")
        for k in ("HADOOP_CONF_DIR", "SPARK_CONF_DIR", "HIVE_CONF_DIR", "YARN_CONF_DIR"):
            if not (yarn and k in ("HADOOP_CONF_DIR", "YARN_CONF_DIR")):
                full_env.pop(k, None)
        full_env.update(env or {})
        return subprocess.run(self.spark_submit_cmd(app, *args, master=master, confs=confs,
                                                    submit_args=submit_args),
                              env=full_env, cwd=cwd, capture_output=True, text=True,
                              timeout=timeout, check=check)

    def run_python(self, script: str | os.PathLike, *args: str, timeout: float = 600,
                   check: bool = False, cwd: str | None = None,
                   env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        """Run ``python script args`` with the conf-dir environment (HADOOP_CONF_DIR/SPARK_CONF_DIR)."""
        full_env = self.env(base=_clean_env())
        full_env.update(env or {})
        return subprocess.run([self.python, str(script), *map(str, args)], env=full_env, cwd=cwd,
                              capture_output=True, text=True, timeout=timeout, check=check)

    def start_python(self, script: str | os.PathLike, *args: str, stdout=None, stderr=None,
                     env: dict[str, str] | None = None) -> subprocess.Popen:
        """``run_python`` without waiting: the process, to run alongside the caller's own work."""
        full_env = self.env(base=_clean_env())
        full_env.update(env or {})
        return subprocess.Popen([self.python, str(script), *map(str, args)], env=full_env, stdout=stdout,
                                stderr=stderr, text=True)

    def hive_batch(self, statements: list[str], timeout: float = 600) -> list["hs2.HiveResult"]:
        """Run the statements on the bed's HiveServer2, all in one Beeline JVM (see hiveserver2.batch)."""
        return hs2.batch(self, statements, timeout=timeout)

    def hive_query(self, sql: str, timeout: float = 600) -> list[tuple]:
        """One statement on the bed's HiveServer2 (a Beeline JVM of its own): its rows."""
        return hs2.batch(self, [sql], timeout=timeout)[0].check().rows

    def export_lines(self) -> str:
        import shlex
        return "".join(f"export {k}={shlex.quote(v)}\n" for k, v in self.env().items())

    # ------------------------------------------------------------ internals
    def _save_procs(self) -> None:
        self.info["processes"] = {n: p.to_json() for n, p in self.procs.items()}

    def _write_json(self) -> None:
        tmp = self.json_path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.info, indent=2) + "\n")
        os.replace(tmp, self.json_path)

    def _start_reaper(self) -> None:
        pkg_parent = str(Path(__file__).resolve().parent.parent)
        env = _clean_env()
        env["PYTHONPATH"] = pkg_parent
        log = open(self.log_dir / "reaper.log", "ab")
        self._reaper = subprocess.Popen(
            [sys.executable, "-m", "testbed.reaper"], stdin=subprocess.PIPE, stdout=log,
            stderr=subprocess.STDOUT, env=env, start_new_session=True, close_fds=True)
        log.close()
        for p in self.procs.values():
            self._reaper_add(p)
        self.info["reaper_pid"] = self._reaper.pid

    def _reaper_add(self, p) -> None:
        """The watchdog watches this service too (also one spawned after the watchdog started)."""
        if self._reaper is not None:
            self._reaper.stdin.write(f"{p.pgid} {p.ticks or 0} {p.name}\n".encode())
            self._reaper.stdin.flush()

    def _stop_reaper(self) -> None:
        r = self._reaper
        if r is None:
            return
        try:
            r.stdin.write(b"done\n")
            r.stdin.close()
        except (BrokenPipeError, OSError):
            pass
        try:
            r.wait(timeout=10)
        except subprocess.TimeoutExpired:
            r.kill()
            r.wait()
        self._reaper = None


# ---------------------------------------------------------------- Hadoop 2.7.3 (NameNode + DataNode JVMs)

def _write_hadoop27_site(hconf: Path, run: Path, nn_port: int, block_size: int, superuser_group: str,
                         key_provider: str, extra_hdfs_site: dict | None) -> None:
    # NameNode/DataNode http servers look up webapps/<name> on the classpath.
    for w in ("hdfs", "datanode", "secondary"):
        (hconf / "webapps" / w).mkdir(parents=True, exist_ok=True)
    write_site(hconf / "hdfs-site.xml", {
        "dfs.namenode.name.dir": f"file://{run / 'dfs' / 'name'}",
        "dfs.datanode.data.dir": f"file://{run / 'dfs' / 'data'}",
        "dfs.namenode.rpc-address": f"127.0.0.1:{nn_port}",
        "dfs.namenode.http-address": "127.0.0.1:0",
        "dfs.namenode.https-address": "127.0.0.1:0",
        "dfs.namenode.secondary.http-address": "127.0.0.1:0",
        "dfs.namenode.secondary.https-address": "127.0.0.1:0",
        "dfs.datanode.address": "127.0.0.1:0",
        "dfs.datanode.ipc.address": "127.0.0.1:0",
        "dfs.datanode.http.address": "127.0.0.1:0",
        "dfs.datanode.https.address": "127.0.0.1:0",
        "dfs.datanode.hostname": "127.0.0.1",
        "dfs.namenode.datanode.registration.ip-hostname-check": False,
        "dfs.webhdfs.enabled": False,
        "dfs.replication": 1,
        "dfs.blocksize": block_size,
        "dfs.namenode.fs-limits.min-block-size": min(block_size, 4096),
        "dfs.namenode.safemode.threshold-pct": 0,
        "dfs.namenode.safemode.extension": 0,
        "dfs.namenode.safemode.min.datanodes": 0,
        "dfs.namenode.acls.enabled": True,
        "dfs.permissions.enabled": True,
        "dfs.permissions.superusergroup": superuser_group,
        "dfs.namenode.resource.du.reserved": 16 * 1024 * 1024,
        "dfs.heartbeat.interval": 1,
        "dfs.datanode.data.dir.perm": "700",
        "dfs.client.block.write.replace-datanode-on-failure.enable": False,
        "dfs.encryption.key.provider.uri": key_provider,  # the name Hadoop 2.7 reads
        **(extra_hdfs_site or {}),
    })
    write_properties(hconf / "log4j.properties", HADOOP_LOG4J)


def _spawn_hadoop27(java: str, jars: Path, spark_home: Path, run: Path, timeout: float) -> dict[str, Proc]:
    logs, tmp, hconf = run / "logs", run / "tmp", run / "conf" / "hadoop"
    template = _namenode_template(java, jars, logs, timeout)
    shutil.copytree(template, run / "dfs" / "name")
    (run / "kms").mkdir()
    shutil.copy(_key_store_template(java, jars, spark_home, logs, timeout), run / "kms" / "kms.jceks")
    cp = os.pathsep.join([str(hconf), *hadoop_jars.classpath(jars), str(_gson_jar(spark_home))])

    def hadoop_argv(cls_name: str, xmx: str) -> list[str]:
        return [java, *JAVA17_OPENS, *DAEMON_JVM_OPTS, JCEKS_FILTER, f"-Xmx{xmx}",
                f"-Djava.io.tmpdir={tmp}", f"-Dhadoop.log.dir={logs}",
                f"-Dhadoop.home.dir={jars}", "-Dhadoop.root.logger=INFO,console",
                "-cp", cp, cls_name]
    env = _clean_env()
    return {
        "namenode": spawn("namenode", hadoop_argv(
            "org.apache.hadoop.hdfs.server.namenode.NameNode", "256m"), logs / "namenode.log", env, run),
        "datanode": spawn("datanode", hadoop_argv(
            "org.apache.hadoop.hdfs.server.datanode.DataNode", "256m"), logs / "datanode.log", env, run),
    }


def _loopback(address: str) -> str:
    """localhost:P -> 127.0.0.1:P (the minicluster names its YARN services "localhost")."""
    host, port = address.rpartition(":")[::2]
    return f"127.0.0.1:{port}" if host in ("localhost", "127.0.0.1", "0.0.0.0") else address


def _spark_daemon_env(run: Path, spark_home: Path) -> dict[str, str]:
    env = _clean_env()
    daemon_conf = run / "conf" / "spark-daemons"
    # no REST submission server: it would take the fixed port 6066
    write_properties(daemon_conf / "spark-defaults.conf", {"spark.master.rest.enabled": "false"}, sep=" ")
    for d in ("spark/work", "spark/local", "spark/logs"):
        (run / d).mkdir(parents=True, exist_ok=True)
    env.update({
        "SPARK_HOME": str(spark_home),
        "SPARK_CONF_DIR": str(daemon_conf),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOG_DIR": str(run / "spark" / "logs"),
        "SPARK_WORKER_DIR": str(run / "spark" / "work"),
        "SPARK_LOCAL_DIRS": str(run / "spark" / "local"),
        "SPARK_DAEMON_MEMORY": "256m",
        "SPARK_DAEMON_JAVA_OPTS": " ".join([*DAEMON_JVM_OPTS, f"-Djava.io.tmpdir={run / 'tmp'}"]),
        "SPARK_NO_DAEMONIZE": "1",
    })
    return env


def _write_client_conf(bed: Testbed, d: Path) -> None:
    d.mkdir(parents=True, exist_ok=True)
    core = {}
    if bed.hdfs_uri:
        core["fs.defaultFS"] = bed.hdfs_uri
    if bed.key_provider:
        core["hadoop.security.key.provider.path"] = bed.key_provider
    write_site(d / "core-site.xml", core)
    hdfs = {}
    if bed.hdfs_uri:
        hdfs = {"dfs.replication": 1, "dfs.blocksize": bed.block_size,
                "dfs.client.block.write.replace-datanode-on-failure.enable": False}
    write_site(d / "hdfs-site.xml", hdfs)
    y = bed.yarn
    if y and y.get("rm_address"):
        write_site(d / "yarn-site.xml", {
            "yarn.resourcemanager.address": y["rm_address"],
            "yarn.resourcemanager.scheduler.address": y["rm_scheduler_address"],
            "yarn.resourcemanager.admin.address": y["rm_admin_address"],
            "yarn.resourcemanager.resource-tracker.address": y["rm_resource_tracker_address"],
            "yarn.resourcemanager.webapp.address": y["rm_webapp_address"],
        })
    hive = {"hive.metastore.warehouse.dir": bed.warehouse_dir}
    if bed.metastore_uri:
        hive["hive.metastore.uris"] = bed.metastore_uri
    write_site(d / "hive-site.xml", hive)
    write_properties(d / "spark-defaults.conf", bed.spark_confs(), sep=" ")


def _prepare_run_dir(run: Path) -> None:
    """Create run; if it holds an earlier test bed, refuse while it runs, else wipe it."""
    js = run / JSON_NAME
    if js.exists():
        try:
            old = Testbed.load(js)
        except (ValueError, TestbedError):
            old = None
        if old is not None and any(p.alive() for p in old.procs.values()):
            raise TestbedError(f"a test bed is already running in {run} (stop it: scripts/testbed down --dir {run})")
        for child in run.iterdir():
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
    elif run.exists() and any(run.iterdir()):
        raise TestbedError(f"{run} exists, is not empty and holds no {JSON_NAME}; choose another --dir")
    run.mkdir(parents=True, exist_ok=True)
