"""Configuration files the test bed writes: Hadoop/Hive ``*-site.xml``,
log4j settings for the daemons and ``spark-defaults.conf`` for clients."""
from __future__ import annotations

from pathlib import Path
from xml.sax.saxutils import escape

# Java 17 needs these for Hadoop 2.7 and Hive 2.3 (reflection into java.base);
# the same set Spark's launcher adds for its own JVMs.
JAVA17_OPENS = [
    "-XX:+IgnoreUnrecognizedVMOptions",
    *(f"--add-opens=java.base/{pkg}=ALL-UNNAMED" for pkg in (
        "java.lang", "java.lang.invoke", "java.lang.reflect", "java.io", "java.net", "java.nio",
        "java.util", "java.util.concurrent", "java.util.concurrent.atomic", "jdk.internal.ref",
        "jdk.internal.misc", "sun.nio.ch", "sun.nio.cs", "sun.security.action", "sun.util.calendar")),
    "--add-opens=java.security.jgss/sun.security.krb5=ALL-UNNAMED",
    "-Djdk.reflect.useDirectMethodHandle=false",
    "-Dio.netty.tryReflectionSetAccessible=true",
]

# The daemons (long-lived but small), the executors the worker starts and the
# suite's client JVMs: C1 only, one compiler thread and the serial GC start
# faster and use less CPU on a shared, CPU-bound 2-core machine.
QUICK_JVM_OPTS = ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:CICompilerCount=1",
                  "-XX:ReservedCodeCacheSize=240m"]  # C1 alone: 48 MB, too few for a long life (scripts/test)
# -XX:-UsePerfData: no hsperfdata file and no sampling thread waking 20 times a second (about
# half an idle JVM's CPU; jps and jstat do not see the daemons, jcmd <pid> and jstack still work).
DAEMON_JVM_OPTS = [*QUICK_JVM_OPTS, "-XX:-UsePerfData", "-Djava.net.preferIPv4Stack=true"]


def write_site(path: Path, props: dict[str, object]) -> Path:
    lines = ['<?xml version="1.0"?>', "<!-- written by the lakekeeper test bed -->", "<configuration>"]
    for k, v in props.items():
        if isinstance(v, bool):
            v = "true" if v else "false"
        lines.append(f"  <property><name>{escape(str(k))}</name><value>{escape(str(v))}</value></property>")
    lines.append("</configuration>")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def write_properties(path: Path, props: dict[str, object], sep: str = "=") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{k}{sep}{v}\n" for k, v in props.items()))
    return path


HADOOP_LOG4J = {
    "log4j.rootLogger": "INFO,console",
    "log4j.appender.console": "org.apache.log4j.ConsoleAppender",
    "log4j.appender.console.target": "System.err",
    "log4j.appender.console.layout": "org.apache.log4j.PatternLayout",
    "log4j.appender.console.layout.ConversionPattern": "%d{ISO8601} %p %c{2}: %m%n",
    # no audit/metrics files next to the logs
    "log4j.logger.org.apache.hadoop.hdfs.server.namenode.FSNamesystem.audit": "INFO",
    "log4j.logger.org.apache.hadoop.metrics2": "WARN",
}

# The Hadoop 3 JVM runs a NameNode, DataNodes, a ResourceManager and NodeManagers:
# at INFO their start alone is thousands of lines. Warnings, plus the lines that say
# what happened to an application and its containers.
HADOOP3_LOG4J = {
    **HADOOP_LOG4J,
    "log4j.logger.org.apache.hadoop": "WARN",
    "log4j.logger.BlockStateChange": "WARN",
    "log4j.logger.org.apache.hadoop.hdfs.server.namenode.FSNamesystem.audit": "WARN",
    "log4j.logger.org.apache.hadoop.yarn.server.resourcemanager.RMAuditLogger": "INFO",
    "log4j.logger.org.apache.hadoop.yarn.server.resourcemanager.rmapp.RMAppImpl": "INFO",
    "log4j.logger.org.apache.hadoop.yarn.server.nodemanager.containermanager.container.ContainerImpl": "INFO",
    # a DataNode's heartbeat thread reports the NameNode's shutdown with a stack trace
    "log4j.logger.org.apache.hadoop.hdfs.server.datanode.DataNode": "ERROR",
    "log4j.logger.org.apache.hadoop.http.server.AuthenticationFilter": "ERROR",
    "log4j.logger.org.apache.hadoop.security.authentication.server.AuthenticationFilter": "ERROR",
    "log4j.logger.org.apache.hadoop.util.NativeCodeLoader": "ERROR",
}

# Hive 2.3 looks up hive-log4j2.properties on the classpath; without ours it
# would log to /tmp/<user>/hive.log.
HIVE_LOG4J2 = {
    "status": "WARN",
    "name": "LakekeeperTestbedMetastore",
    "appender.console.type": "Console",
    "appender.console.name": "console",
    "appender.console.target": "SYSTEM_ERR",
    "appender.console.layout.type": "PatternLayout",
    "appender.console.layout.pattern": "%d{ISO8601} %p %c{2}: %m%n",
    "rootLogger.level": "INFO",
    "rootLogger.appenderRef.console.ref": "console",
    "logger.dn.name": "DataNucleus",
    "logger.dn.level": "WARN",
    "logger.datanucleus.name": "Datastore",
    "logger.datanucleus.level": "WARN",
}
