"""HiveServer2 on the test bed: Hive as an independent reader of the bed's tables.

Hive 2.3 (``hive.version`` of tests/testbed/jvm/pom.xml, the line of pyspark's
Hive client jars and of the bed's Metastore service), its jars from the Maven
module ``tests/testbed/jvm/hive`` (``maven.ensure("hive")``: hive-service, two
LLAP jars and Calcite core) plus pyspark's ``jars/`` (hive-exec core, metastore,
serde, common, shims, jdbc, beeline, Thrift and the Hadoop 3 client), without
Spark's thrift server jar (its own copy of ``org.apache.hive.service``). Java 17
with the same ``--add-opens`` as the other daemons.

The server: binary Thrift transport on 127.0.0.1 (a free port), no SASL
(``auth=noSasl`` in the JDBC URL), ``doAs`` off, the bed's Metastore and HDFS,
``hive.fetch.task.conversion=more`` so a ``SELECT`` of columns and expressions
reads through Hive's SerDes and input formats in the server itself (no
MapReduce job), CBO off (Calcite is only loaded, never planned with), the JVM in time zone
``TIMEZONE`` (not UTC).

The client: ``batch(bed, statements)`` runs every statement of a batch in one
Beeline JVM (``--outputformat=tsv2``, ``--force``), each after a marker query, and
returns one ``HiveResult`` per statement (rows as tuples of strings, ``None``
for SQL NULL as Beeline prints it, or the error Beeline printed). Beeline prints
a NULL and the string ``NULL`` alike and cuts rows at newlines: queries whose
values must be exact encode them (see tests/testbed/test_hive_reader.py).
"""
from __future__ import annotations

import dataclasses
import os
import re
import secrets
import subprocess
import tempfile
import time
from pathlib import Path

from . import localfs, maven
from .confs import DAEMON_JVM_OPTS, HIVE_LOG4J2, JAVA17_OPENS, QUICK_JVM_OPTS, write_properties, write_site
from .procs import Proc, TestbedError, listening_ports, log_contains, spawn

MODULE = "hive"
MAIN = "org.apache.hive.service.server.HiveServer2"
BEELINE = "org.apache.hive.beeline.BeeLine"
READY_LINE = "Starting ThriftBinaryCLIService on port"
# The server's JVM time zone (Hive 2.3 reads and shows timestamps in it): not UTC, as on
# many clusters, so that a conversion Hive makes or skips (Parquet INT96 files written by
# parquet-mr or by others, ORC's writer time zone) shows in the values. +05:30, no DST.
TIMEZONE = "Asia/Kolkata"
# Spark's thrift server carries a modified copy of org.apache.hive.service: never beside hive-service.
_LEFT_OFF = re.compile(r"spark-hive-thriftserver.*\.jar$")
# how Beeline prints a failed statement, or an exception thrown while it fetched rows
_ERROR_STARTS = ("Error:", "org.apache.hive.service.cli.HiveSQLException", "java.", "\tat ", "Caused by:")


def jdbc_url(port: int) -> str:
    return f"jdbc:hive2://127.0.0.1:{port}/default;auth=noSasl"


def classpath(spark_home: Path) -> list[str]:
    """pyspark's jars (without its thrift server) first, then the module's jars.

    Checks that pyspark's Hive jars are the module's Hive version: the server
    runs their hive-exec, serde and metastore classes."""
    version = maven.version(MODULE)
    jars = sorted(p for p in (spark_home / "jars").glob("*.jar") if not _LEFT_OFF.search(p.name))
    execs = [p.name for p in jars if p.name.startswith("hive-exec-")]
    if not execs or not all(n.startswith(f"hive-exec-{version}") for n in execs):
        raise TestbedError(f"HiveServer2 {version} needs pyspark's Hive jars of the same version; "
                           f"{spark_home / 'jars'} has {execs or 'no hive-exec'}")
    return [*map(str, jars), *map(str, sorted(maven.ensure(MODULE).glob("*.jar")))]


def configure(conf: Path, run: Path, *, port: int, metastore_uri: str, hdfs_uri: str | None,
              warehouse: str, key_provider: str | None) -> None:
    """hive-site.xml, core-site.xml, hdfs-site.xml and the log4j2 settings in ``conf``."""
    scratch = run / "hiveserver2"
    core = {"fs.defaultFS": hdfs_uri} if hdfs_uri else {}
    if key_provider:
        core["hadoop.security.key.provider.path"] = key_provider
    if localfs.jar() is not None:  # each session's local scratch directories (spawn_server: the jar)
        core.update(localfs.hadoop_conf())
    write_site(conf / "core-site.xml", core)
    write_site(conf / "hdfs-site.xml", {"dfs.replication": 1})  # one DataNode (dfs -put through Hive)
    write_site(conf / "hive-site.xml", {
        "hive.metastore.uris": metastore_uri,
        "hive.metastore.warehouse.dir": warehouse,
        # the bed starts the Metastore and HDFS beside this server: wait for them
        "hive.metastore.connect.retries": 120,
        "hive.metastore.client.connect.retry.delay": "1s",
        "hive.server2.max.start.attempts": 30,
        "hive.server2.sleep.interval.between.start.attempts": "1s",
        "hive.server2.transport.mode": "binary",
        "hive.server2.thrift.bind.host": "127.0.0.1",
        "hive.server2.thrift.port": port,
        "hive.server2.authentication": "NOSASL",
        "hive.server2.enable.doAs": False,
        "hive.server2.webui.port": 0,  # no web UI (and no Jetty)
        "hive.server2.thrift.min.worker.threads": 2,
        "hive.server2.async.exec.threads": 4,
        "hive.server2.logging.operation.enabled": False,
        "hive.fetch.task.conversion": "more",
        "hive.fetch.task.conversion.threshold": -1,  # whatever the size: never a MapReduce job
        "hive.cbo.enable": False,
        "hive.stats.autogather": False,
        "hive.async.log.enabled": False,
        "hive.metastore.schema.verification": False,
        # scratch space: HDFS (fs.defaultFS) and the run dir
        "hive.exec.scratchdir": "/tmp/hiveserver2",
        "hive.exec.local.scratchdir": str(scratch / "local"),
        "hive.downloaded.resources.dir": str(scratch / "resources"),
        "hive.querylog.location": str(scratch / "querylog"),
        "hive.server2.logging.operation.log.location": str(scratch / "operation_logs"),
    })
    write_properties(conf / "hive-log4j2.properties", {**HIVE_LOG4J2, "name": "LakekeeperTestbedHiveServer2"},
                     sep=" = ")


def spawn_server(java: str, conf: Path, run: Path, spark_home: Path, log: Path, env: dict[str, str],
                 port: int, timezone: str = TIMEZONE) -> tuple[Proc, object]:
    """Start HiveServer2; returns the process and its readiness check."""
    local_fs = localfs.jar()  # tests/testbed/testbed/localfs.py (configure: the server's core-site.xml)
    cp = os.pathsep.join([str(conf), *classpath(spark_home), *([str(local_fs)] if local_fs else [])])
    tmp = run / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    argv = [java, *JAVA17_OPENS, *DAEMON_JVM_OPTS, "-Xmx512m", f"-Djava.io.tmpdir={tmp}",
            f"-Duser.timezone={timezone}", "-cp", cp, MAIN]
    proc = spawn("hiveserver2", argv, log, env, run)
    return proc, (proc, lambda: port in listening_ports(proc.pid) and log_contains(proc.log, READY_LINE))


# ------------------------------------------------------------------ the client

@dataclasses.dataclass
class HiveResult:
    statement: str
    columns: list[str]
    rows: list[tuple]
    error: str | None = None

    def check(self) -> "HiveResult":
        if self.error is not None:
            raise TestbedError(f"HiveServer2 failed {self.statement!r}: {self.error}")
        return self


def batch(bed, statements: list[str], timeout: float = 600, user: str | None = None) -> list[HiveResult]:
    """Run the statements in one Beeline JVM, in order, going on after errors.

    Each statement must be one line (no newline); a trailing ``;`` is added."""
    info = bed.info.get("hiveserver2")
    if not info:
        raise TestbedError("this test bed has no HiveServer2 (start it with hiveserver2=True)")
    marker = f"lk_marker_{secrets.token_hex(4)}"
    lines = []
    for i, s in enumerate(statements):
        s = s.strip().rstrip(";")
        if "\n" in s or "\r" in s:
            raise ValueError(f"one line per statement: {s!r}")
        lines += [f"SELECT {i} AS {marker};", s + ";"]
    java = bed.info.get("java") or "java"
    cp = os.pathsep.join(classpath(Path(bed.info["spark_home"])))
    with tempfile.NamedTemporaryFile("w", suffix=".sql", dir=bed.run_dir / "tmp", delete=False) as f:
        f.write("\n".join(lines) + "\n")
        script = f.name
    argv = [java, *JAVA17_OPENS, *QUICK_JVM_OPTS, "-Xmx256m", f"-Djava.io.tmpdir={bed.run_dir / 'tmp'}",
            "-cp", cp, BEELINE, "-u", info["url"], "-n", user or os.environ.get("USER", "root"),
            "--outputformat=tsv2", "--showHeader=true", "--silent=true", "--force=true", "-f", script]
    t0 = time.monotonic()
    try:
        # stderr into stdout: an error is printed between its statement's marker and the next
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout,
                           check=False, env={k: v for k, v in os.environ.items() if k not in ("CLASSPATH",)})
    finally:
        os.unlink(script)
    bed.info.setdefault("hiveserver2_client", {})["last_batch_s"] = round(time.monotonic() - t0, 1)
    return _parse(p.stdout, statements, marker, p.returncode)


def _parse(out: str, statements: list[str], marker: str, rc: int) -> list[HiveResult]:
    chunks: dict[int, list[str]] = {}
    current = None
    lines = out.splitlines()
    k = 0
    while k < len(lines):
        line = lines[k]
        if line == marker and k + 1 < len(lines) and lines[k + 1].isdigit():
            current = int(lines[k + 1])
            chunks[current] = []
            k += 2
            continue
        if current is not None and line.strip():
            chunks[current].append(line)
        k += 1
    results = []
    for i, s in enumerate(statements):
        body = chunks.get(i)
        if body is None:
            results.append(HiveResult(s, [], [], f"not run (beeline exit {rc}): {out[-2000:]}"))
            continue
        if not body:  # a statement without a result set
            results.append(HiveResult(s, [], []))
            continue
        header, rows = body[0].split("\t"), body[1:]
        # an error: Beeline's "Error: ..." instead of a result, or an exception while fetching rows
        errors = [ln for ln in body if ln.startswith(_ERROR_STARTS)]
        errors += [ln for ln in rows if ln.count("\t") != len(header) - 1 and ln not in errors]
        if errors:
            results.append(HiveResult(s, [], [], "\n".join(errors)[:3000]))
            continue
        results.append(HiveResult(s, header, [tuple(None if v == "NULL" else v for v in r.split("\t"))
                                              for r in rows]))
    return results
