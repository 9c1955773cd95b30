"""The test processes' ``file://``: Hadoop's LocalFileSystem with permissions
set and read in the JVM (``jvm/localfs/src/lakekeeper/testfs/PosixLocalFileSystem.java``).

Without Hadoop's native library, every file and directory Hadoop creates on
``file://`` runs ``chmod`` in a child process (about 7 ms of CPU each; a run of
the suite made about 66,000, most of them in the engine suite's shared
session, the older lane's session and the test bed's NodeManager localizing
containers), and a status's permission, owner and group run ``ls -ld`` (about
9,400). The class does the same ``chmod`` through java.nio and reads the same
attributes by ``stat(2)``; it is otherwise Hadoop's own LocalFileSystem.

It is used only where a test process makes or checks data, never for what is
tested end to end: the engine suite's in-process session (``tests/engine/conftest.py``,
which already evaluates without generated code), the crash worlds' set-up and
verify apps, the playbook tests' table creation, the bed's NodeManager and HiveServer2. Every
``spark-submit`` the modules, the roles or the CLI start keeps Hadoop's classes.

``LAKEKEEPER_TEST_LOCALFS=0`` turns it off (Hadoop's LocalFileSystem everywhere).
The jar is compiled once per source and Hadoop client jar (``javac --release 8``
against the running pyspark's Hadoop client, so one class serves Hadoop 3.3 to 3.5)
into ``<cache>/localfs/<digest>/``; without ``javac`` the tests run with
Hadoop's class and say so once.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from . import maven

SOURCE = maven.JVM_DIR / "localfs" / "src" / "lakekeeper" / "testfs" / "PosixLocalFileSystem.java"
FS_CLASS = "lakekeeper.testfs.PosixLocalFileSystem"
AFS_CLASS = "lakekeeper.testfs.PosixLocalFileSystem$Fs"
JAR = "posix-localfs.jar"
# a Hadoop configuration resource next to the jar, for JVMs that are not Spark drivers
# (the bed's minicluster adds it as a default resource when it is on its class path)
RESOURCE = "lakekeeper-localfs.xml"

_warned = False


def enabled() -> bool:
    return os.environ.get("LAKEKEEPER_TEST_LOCALFS", "1") != "0"


def _hadoop_client_jar() -> Path | None:
    try:
        import pyspark  # pylint: disable=import-outside-toplevel
    except ImportError:
        return None
    found = sorted((Path(pyspark.__file__).parent / "jars").glob("hadoop-client-api-*.jar"))
    return found[-1] if found else None


def _javac() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "javac").exists():
        return str(Path(home) / "bin" / "javac")
    java = shutil.which("java")
    if java and (Path(java).resolve().parent / "javac").exists():
        return str(Path(java).resolve().parent / "javac")
    return shutil.which("javac")


def _say(text: str) -> None:
    global _warned  # pylint: disable=global-statement
    if not _warned:
        _warned = True
        print(f"localfs: {text}", file=sys.stderr, flush=True)


def directory() -> Path | None:
    """The directory holding the jar and the configuration resource, built
    once; None when turned off or not buildable (Hadoop's class is used)."""
    if not enabled():
        return None
    client = _hadoop_client_jar()
    javac = _javac()
    if client is None or javac is None:
        _say(f"Hadoop's LocalFileSystem (no {'pyspark Hadoop client jar' if client is None else 'javac'})")
        return None
    digest = hashlib.sha256(SOURCE.read_bytes() + client.name.encode()).hexdigest()[:16]
    out = maven.cache_root() / "localfs" / digest
    if (out / JAR).exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (out / JAR).exists():
            return out
        work = Path(tempfile.mkdtemp(prefix=".build-", dir=out.parent))
        try:
            classes = work / "classes"
            build = subprocess.run([javac, "-J-XX:TieredStopAtLevel=1", "--release", "8", "-nowarn", "-d", str(classes),
                                    "-cp", str(client), str(SOURCE)], capture_output=True, text=True, check=False)
            if build.returncode != 0:
                _say(f"Hadoop's LocalFileSystem (javac failed, exit {build.returncode}): {build.stderr[-2000:]}")
                return None
            jar = shutil.which("jar", path=str(Path(javac).parent)) or shutil.which("jar")
            if jar:
                subprocess.run([jar, "cf", str(work / JAR), "-C", str(classes), "."], check=True, capture_output=True)
            else:  # a jar is a zip file
                shutil.make_archive(str(work / "tmp"), "zip", classes)
                os.replace(work / "tmp.zip", work / JAR)
            shutil.rmtree(classes)
            (work / RESOURCE).write_text(
                '<?xml version="1.0"?>\n<configuration>\n'
                + "".join(f"  <property><name>{k}</name><value>{v}</value></property>\n"
                          for k, v in hadoop_conf().items())
                + "</configuration>\n")
            os.replace(work, out)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return out


def jar() -> Path | None:
    d = directory()
    return d / JAR if d else None


def hadoop_conf() -> dict[str, str]:
    return {"fs.file.impl": FS_CLASS, "fs.AbstractFileSystem.file.impl": AFS_CLASS}


def spark_confs() -> dict[str, str]:
    """The session's ``spark.hadoop.*`` properties naming the class ({} when not used)."""
    if jar() is None:
        return {}
    return {f"spark.hadoop.{k}": v for k, v in hadoop_conf().items()}


def env(base: dict[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) with the jar appended
    to the class path of the Spark JVMs started with it (SPARK_DIST_CLASSPATH:
    after Spark's jars, so that the drivers' class-data archive still maps).
    Only the class path: what uses the class is the session's properties
    (``spark_confs``)."""
    out = dict(os.environ if base is None else base)
    j = jar()
    if j is not None:
        out["SPARK_DIST_CLASSPATH"] = os.pathsep.join(p for p in (out.get("SPARK_DIST_CLASSPATH"), str(j)) if p)
    return out


def in_this_process() -> dict[str, str]:
    """For a process about to launch its Spark session's JVM: the jar on that
    JVM's class path (this process's environment, ``env``) and the session's
    properties to pass (``spark_confs``)."""
    os.environ.update(env())
    return spark_confs()
