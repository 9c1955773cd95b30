"""The Hadoop 3 test bed's HDFS + YARN: one JVM running
``jvm/hadoop/src/LakekeeperMiniCluster.java`` (MiniDFSCluster with several
DataNodes and MiniYARNCluster with a ResourceManager and NodeManagers, from
``hadoop-client-minicluster``; jars from Maven Central by ``maven.ensure``).

The source is compiled by ``javac`` once per source version into the cache
(``<cache>/hadoop-<version>-classes/<digest>/``). The JVM reads the
configuration this module writes (``core-site.xml``, ``hdfs-site.xml``,
``yarn-site.xml`` in the bed's ``conf/hadoop``), writes the effective
addresses to ``effective.properties`` and logs ``LAKEKEEPER-MINICLUSTER READY``.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

from . import localfs, maven
from .procs import TestbedError, log_tail

MODULE = "hadoop"
SOURCE = maven.JVM_DIR / MODULE / "src" / "LakekeeperMiniCluster.java"
MAIN = "LakekeeperMiniCluster"
READY = "LAKEKEEPER-MINICLUSTER READY"

# Erasure coding: XOR-2-1-1024k needs 3 DataNodes, RS-3-2-1024k 5 (RS-6-3-1024k, the
# NameNode's default policy, 9). DEFAULT_DATANODES / DEFAULT_EC_POLICIES: see the README
# for what 5 DataNodes cost.
DEFAULT_DATANODES = 3
EC_POLICY_DATANODES = {"XOR-2-1-1024k": 3, "RS-3-2-1024k": 5, "RS-6-3-1024k": 9, "RS-10-4-1024k": 14}


def ec_policies_for(datanodes: int) -> list[str]:
    """The built-in policies this many DataNodes can hold (the bed enables them)."""
    return [p for p, n in EC_POLICY_DATANODES.items() if n <= datanodes]


def jars() -> Path:
    return maven.ensure(MODULE)


def _javac(java: str) -> str:
    javac = Path(java).resolve().parent / "javac"
    if javac.exists():
        return str(javac)
    found = shutil.which("javac")
    if not found:
        raise TestbedError(f"javac not found next to {java} or on PATH (a JDK 17 is needed to build {SOURCE.name})")
    return found


def compiled(java: str, jar_dir: Path, log_dir: Path, timeout: float = 120) -> Path:
    """The directory with LakekeeperMiniCluster.class, compiled once per source and jar set."""
    digest = hashlib.sha256(SOURCE.read_bytes() + str(sorted(os.listdir(jar_dir))).encode()).hexdigest()[:16]
    out = jar_dir.parent / f"{jar_dir.name}-classes" / digest
    if (out / f"{MAIN}.class").exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (out / f"{MAIN}.class").exists():
            return out
        work = Path(tempfile.mkdtemp(prefix=".javac-", dir=out.parent))
        try:
            log = log_dir / "javac.log"
            log.parent.mkdir(parents=True, exist_ok=True)
            argv = [_javac(java), "-J-XX:TieredStopAtLevel=1", "-nowarn", "-d", str(work),
                    "-cp", str(jar_dir / "*"), str(SOURCE)]
            with open(log, "wb") as f:
                rc = subprocess.run(argv, stdout=f, stderr=subprocess.STDOUT, timeout=timeout,
                                    check=False).returncode
            if rc != 0 or not (work / f"{MAIN}.class").exists():
                raise TestbedError(f"javac {SOURCE.name} failed (exit {rc}); log: {log}\n{log_tail(log)}")
            os.replace(work, out)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return out


def webapps(jar_dir: Path) -> Path:
    """A directory holding ``webapps/`` of the minicluster jar (the NameNode's and DataNodes'
    web UIs), extracted once, first on the JVM's class path: found in the jar, Jetty unpacks
    each web app by reading the whole 56 MB jar through a JarInputStream, once per HTTP server
    (the NameNode and every DataNode): most of the JVM's start-up CPU."""
    jar = next(jar_dir.glob("hadoop-client-minicluster-*.jar"), None)
    if jar is None:
        raise TestbedError(f"no hadoop-client-minicluster jar in {jar_dir}")
    out = jar_dir.parent / f"{jar_dir.name}-webapps"
    if (out / "webapps" / ".complete").exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.parent / f".{out.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (out / "webapps" / ".complete").exists():
            return out
        work = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
        try:
            with zipfile.ZipFile(jar) as z:
                for name in z.namelist():
                    if name.startswith("webapps/") and not name.endswith("/"):
                        z.extract(name, work)
            (work / "webapps" / ".complete").write_text(jar.name + "\n")
            if out.exists():
                shutil.rmtree(out)
            os.replace(work, out)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return out


def java_home(java: str) -> str:
    """JAVA_HOME for the NodeManager's containers (their launch scripts run $JAVA_HOME/bin/java)."""
    return str(Path(java).resolve().parent.parent)


def hdfs_site(block_size: int, superuser_group: str, key_provider: str) -> dict[str, object]:
    """What the bed asks of the NameNode and DataNodes (the minicluster sets every address to
    127.0.0.1 itself; the NameNode's RPC port is an argument)."""
    return {
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
        # idle CPU (the bed idles through most of a suite run): each DataNode's heartbeat every 3 s,
        # Hadoop's default (1 s cost 3 heartbeats a second; block reports and the incremental reports
        # of written blocks do not wait for a heartbeat); the NameNode's scrubber of deleted blocks
        # polls its queue every 100 ms, not every 10 ms (the default: 15 % of the idle JVM's CPU)
        "dfs.heartbeat.interval": 3,
        "dfs.namenode.block.deletion.unlock.interval.ms": 100,
        # each RPC handler thread wakes every second to poll its queue: 3 per DataNode, not 10
        # (clients talk to a DataNode's RPC server for block recovery only; the NameNode keeps 10)
        "dfs.datanode.handler.count": 3,
        "dfs.datanode.data.dir.perm": "700",
        "dfs.client.block.write.replace-datanode-on-failure.enable": False,
        "hadoop.security.key.provider.path": key_provider,
    }


def yarn_site(nm_memory_mb: int, nm_vcores: int, node_attribute_dir: Path) -> dict[str, object]:
    """A small YARN on a shared 2-core machine."""
    return {
        # containers: the NodeManager's checks would kill or refuse them on a small, full disk
        "yarn.nodemanager.vmem-check-enabled": False,
        "yarn.nodemanager.pmem-check-enabled": False,
        "yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage": 100,
        "yarn.nodemanager.disk-health-checker.min-free-space-per-disk-mb": 0,
        # what the NodeManager offers (the minicluster reads its own key for the memory)
        "yarn.minicluster.yarn.nodemanager.resource.memory-mb": nm_memory_mb,
        "yarn.nodemanager.resource.memory-mb": nm_memory_mb,
        "yarn.nodemanager.resource.cpu-vcores": nm_vcores,
        "yarn.scheduler.minimum-allocation-mb": 128,
        "yarn.scheduler.maximum-allocation-mb": nm_memory_mb,
        "yarn.scheduler.maximum-allocation-vcores": nm_vcores,
        # the capacity scheduler's queues (capacity-scheduler.xml is not in the shaded jar)
        "yarn.scheduler.capacity.root.queues": "default",
        "yarn.scheduler.capacity.root.default.capacity": 100,
        "yarn.scheduler.capacity.root.default.maximum-capacity": 100,
        "yarn.scheduler.capacity.root.default.user-limit-factor": 1,
        # application masters may take the whole (small) cluster: a cluster-mode driver is one
        "yarn.scheduler.capacity.maximum-am-resource-percent": 1.0,
        # Hadoop 3.5 schedules asynchronously by default, a thread looping every 5 ms even with nothing
        # to place: 40 % of the idle JVM's CPU. Every 100 ms: a request waits at most 0.1 s longer
        "yarn.scheduler.capacity.schedule-asynchronously.scheduling-interval-ms": 100,
        # RPC handler threads (each wakes every second to poll its queue: 216 idle wake-ups a second
        # with the defaults): a handful for this bed's one NodeManager and few applications at a time
        "yarn.resourcemanager.client.thread-count": 4,
        "yarn.resourcemanager.scheduler.client.thread-count": 4,
        "yarn.resourcemanager.resource-tracker.client.thread-count": 2,
        "yarn.nodemanager.container-manager.thread-count": 4,
        # the ResourceManager's node attributes store: on the local disk, not on HDFS
        "yarn.node-attribute.fs-store.root-dir": f"file://{node_attribute_dir}",
        # container logs stay in the NodeManager's log dir (no aggregation), 1 h after the app ends
        "yarn.log-aggregation-enable": False,
        "yarn.nodemanager.log.retain-seconds": 3600,
    }


def argv(java: str, jvm_opts: list[str], classes: Path, jar_dir: Path, conf_dir: Path, *, nn_port: int,
         base: Path, out: Path, datanodes: int, nodemanagers: int, ec_policies: list[str], key: str,
         xmx: str = "768m", local_fs: Path | None = None) -> list[str]:
    """``local_fs``: localfs.directory() (its jar and configuration resource after the Hadoop jars), or None."""
    extra = [str(local_fs / localfs.JAR), str(local_fs)] if local_fs else []
    cp = os.pathsep.join([str(conf_dir), str(webapps(jar_dir)), str(classes), str(jar_dir / "*"), *extra])
    return [java, *jvm_opts, f"-Xmx{xmx}", "-cp", cp, MAIN, f"nn-port={nn_port}", f"base={base}",
            f"datanodes={datanodes}", f"nodemanagers={nodemanagers}", f"ec={','.join(ec_policies)}",
            f"key={key}", f"out={out}"]


def read_effective(out: Path) -> dict[str, str]:
    props = {}
    for line in (out / "effective.properties").read_text().splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            props[k] = v
    return props


def log_timings(log: str | Path) -> dict[str, float]:
    """Seconds after the JVM's start at which HDFS and YARN were up (from its log)."""
    out = {}
    try:
        text = Path(log).read_text(errors="replace")
    except FileNotFoundError:
        return out
    for key, word in (("hdfs", "HDFS up"), ("yarn", "YARN up"), ("ready", "READY")):
        m = re.search(rf"LAKEKEEPER-MINICLUSTER {word}\b.*\(([0-9.]+) s\)", text)
        if m:
            out[key] = float(m.group(1))
    return out
