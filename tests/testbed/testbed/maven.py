"""The jars of a Maven module of the test bed (``tests/testbed/jvm/<module>/pom.xml``,
versions pinned in the parent ``tests/testbed/jvm/pom.xml``), fetched once into the cache.

    ensure("distcp")  # -> ~/.cache/lakekeeper-testbed/distcp-3.5.0/ holding the module's jars

``mvn -q -B -f <module pom> dependency:copy-dependencies`` into a temporary directory that
is renamed into place, under a file lock: idempotent and safe from several processes at
once (Maven verifies the checksums). ``<version>`` is the version of the module's first
dependency (``${...}`` resolved from the module's and the parent's properties): a changed
pin gets a directory of its own. Cache: ``${LAKEKEEPER_TESTBED_CACHE:-~/.cache/lakekeeper-testbed}``.

    python -m testbed.maven distcp      # fetch if missing, print the directory
"""
from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

JVM = Path(__file__).resolve().parents[1] / "jvm"
_NS = {"m": "http://maven.apache.org/POM/4.0.0"}


def _cache() -> Path:
    return Path(os.environ.get("LAKEKEEPER_TESTBED_CACHE") or Path.home() / ".cache" / "lakekeeper-testbed").expanduser()


def _version(pom: Path) -> str:
    props = {}
    for p in (JVM / "pom.xml", pom):
        for e in ET.parse(p).getroot().findall("m:properties/*", _NS):
            props[e.tag.split("}")[1]] = (e.text or "").strip()
    v = ET.parse(pom).getroot().find("m:dependencies/m:dependency/m:version", _NS)
    if v is None or not v.text:
        raise ValueError(f"{pom}: its first dependency has no version")
    return re.sub(r"\$\{([^}]+)\}", lambda m: props[m.group(1)], v.text.strip())


def ensure(module: str) -> Path:
    """The directory of ``module``'s jars, fetched with Maven if missing."""
    pom = JVM / module / "pom.xml"
    target = _cache() / f"{module}-{_version(pom)}"
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{target.name}.lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.is_dir():  # fetched by another process meanwhile
            return target
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
        try:
            p = subprocess.run(["mvn", "-q", "-B", "-f", str(pom), "dependency:copy-dependencies",
                                f"-DoutputDirectory={tmp}"], capture_output=True, text=True, check=False)
            if p.returncode != 0 or not any(tmp.glob("*.jar")):
                raise RuntimeError(f"mvn copy-dependencies of {pom} failed (exit {p.returncode}):\n"
                                   f"{(p.stdout + p.stderr)[-4000:]}")
            tmp.chmod(0o755)  # mkdtemp's 0700: the cache is shared
            os.rename(tmp, target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return target


if __name__ == "__main__":
    print(ensure(sys.argv[1]))
