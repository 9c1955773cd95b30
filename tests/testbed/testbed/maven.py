"""Fetch a test bed service's jars from Maven Central, once.

Each service the test bed runs from Maven Central is a module of the parent
pom ``tests/testbed/jvm/pom.xml`` (the one place for the JVM pins):
``tests/testbed/jvm/<module>/pom.xml``. ``ensure(module)`` copies the module's
dependencies into ``<cache>/<module>-<version>/`` with

    mvn -q -B -f <module pom> dependency:copy-dependencies -DoutputDirectory=<dir>

(Maven verifies the checksums) and returns that directory. ``<version>`` is the
parent pom's ``<module>.version`` property. Idempotent, under a file lock (several
test processes may start beds at once); the directory is complete once its
``.complete`` stamp holds the digest of the two poms, so a changed pom fetches
again. Nothing fetched is committed.

Cache: ``${LAKEKEEPER_TESTBED_CACHE:-~/.cache/lakekeeper-testbed}``.

    python -m testbed.maven hive           # fetch if missing, print the dir
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

JVM_DIR = Path(__file__).resolve().parent.parent / "jvm"
_NS = {"m": "http://maven.apache.org/POM/4.0.0"}


class MavenError(RuntimeError):
    pass


def cache_root() -> Path:
    return Path(os.environ.get("LAKEKEEPER_TESTBED_CACHE") or Path.home() / ".cache" / "lakekeeper-testbed")


def version(module: str) -> str:
    """The parent pom's ``<module>.version`` property."""
    root = ET.parse(JVM_DIR / "pom.xml").getroot()
    node = root.find(f"m:properties/m:{module}.version", _NS)
    if node is None or not (node.text or "").strip():
        raise MavenError(f"{JVM_DIR / 'pom.xml'} has no property {module}.version")
    return node.text.strip()


def _digest(module: str) -> str:
    h = hashlib.sha256()
    for pom in (JVM_DIR / "pom.xml", JVM_DIR / module / "pom.xml"):
        h.update(pom.read_bytes())
    return h.hexdigest()


def ensure(module: str) -> Path:
    """The directory holding the module's jars, fetched if missing or stale."""
    pom = JVM_DIR / module / "pom.xml"
    if not pom.exists():
        raise MavenError(f"no Maven module {module} ({pom})")
    out = cache_root() / f"{module}-{version(module)}"
    digest = _digest(module)
    stamp = out / ".complete"
    if stamp.exists() and stamp.read_text() == digest:
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.parent / f".{module}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.exists() and stamp.read_text() == digest:
            return out
        work = Path(tempfile.mkdtemp(prefix=f".{module}-", dir=out.parent))
        work.chmod(0o755)
        try:
            argv = ["mvn", "-q", "-B", "-f", str(pom), "dependency:copy-dependencies",
                    f"-DoutputDirectory={work}"]
            try:
                p = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=1800)
            except FileNotFoundError:
                raise MavenError("mvn not found (apt-get install maven)") from None
            if p.returncode != 0 or not any(work.glob("*.jar")):
                raise MavenError(f"{' '.join(argv)} failed (exit {p.returncode}):\n{(p.stdout + p.stderr)[-3000:]}")
            (work / ".complete").write_text(digest)
            shutil.rmtree(out, ignore_errors=True)
            os.replace(work, out)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return out


if __name__ == "__main__":
    for name in sys.argv[1:] or ["hive"]:
        print(ensure(name))
