"""Fetch a test bed service's jars from Maven Central.

Each service the test bed runs from Maven Central is a module of the pinned
parent pom ``tests/testbed/jvm/pom.xml`` (``jvm/<module>/pom.xml``). ``ensure``
copies the module's dependencies with

    mvn -q -B -f jvm/<module>/pom.xml dependency:copy-dependencies -DoutputDirectory=<dir>

(Maven verifies the checksums; ``~/.m2`` is Maven's own cache) into
``${LAKEKEEPER_TESTBED_CACHE:-~/.cache/lakekeeper-testbed}/<module>-<version>/``
and returns that directory. ``<version>`` is the module's ``testbed.version``
property (e.g. ``${hadoop.version}``, resolved against the parent's
properties), else the module's own version. A marker file records a digest
of the module's pom and the parent's properties: a changed pin fetches again. Idempotent and safe to call from
several processes at once (a file lock per module); the test session calls it
once (no network at test time once cached).

    from testbed import maven
    jars = maven.ensure("hadoop")           # Path to the jar directory

    python -m testbed.maven hadoop          # fetch if missing, print the dir
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

__all__ = ["ensure", "MavenError", "JVM_DIR", "cache_root", "module_dir", "modules"]

JVM_DIR = Path(__file__).resolve().parents[1] / "jvm"
_MARKER = ".testbed-fetched"
_NS = "{http://maven.apache.org/POM/4.0.0}"


class MavenError(RuntimeError):
    pass


def cache_root() -> Path:
    env = os.environ.get("LAKEKEEPER_TESTBED_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "lakekeeper-testbed"


def modules() -> list[str]:
    """The modules of the parent pom (``jvm/*/pom.xml``)."""
    return sorted(p.parent.name for p in JVM_DIR.glob("*/pom.xml"))


def _pom(module: str) -> Path:
    pom = JVM_DIR / module / "pom.xml"
    if not pom.is_file():
        raise MavenError(f"no module {module!r}: {pom} does not exist (have: {', '.join(modules()) or 'none'})")
    return pom


def _properties(root: ET.Element) -> dict[str, str]:
    props = root.find(f"{_NS}properties")
    return {} if props is None else {p.tag[len(_NS):]: (p.text or "").strip() for p in props}


def _version(module: str) -> str:
    parent = ET.parse(JVM_DIR / "pom.xml").getroot()
    root = ET.parse(_pom(module)).getroot()
    props = {**_properties(parent), **_properties(root)}
    raw = props.get("testbed.version") or root.findtext(f"{_NS}version") or parent.findtext(f"{_NS}version") or "0"
    for _i in range(5):  # ${a} -> ${b} -> value
        raw = re.sub(r"\$\{([^}]+)\}", lambda m: props.get(m.group(1), m.group(0)), raw)
    if "${" in raw:
        raise MavenError(f"cannot resolve the version of module {module!r}: {raw}")
    return raw


def _digest(module: str) -> str:
    """The module's pom and the parent's properties (the pins): another module
    added to the parent does not make this one fetch again."""
    h = hashlib.sha256(_pom(module).read_bytes())
    for k, v in sorted(_properties(ET.parse(JVM_DIR / "pom.xml").getroot()).items()):
        h.update(f"\0{k}={v}".encode())
    return h.hexdigest()


def module_dir(module: str) -> Path:
    """Where ``ensure(module)`` puts the jars (whether or not they are there yet)."""
    return cache_root() / f"{module}-{_version(module)}"


def _fetched(target: Path, digest: str) -> bool:
    try:
        return (target / _MARKER).read_text().strip() == digest
    except FileNotFoundError:
        return False


def _log(msg: str) -> None:
    print(f"testbed.maven: {msg}", file=sys.stderr, flush=True)


def ensure(module: str) -> Path:
    """The directory holding the jars of ``jvm/<module>/pom.xml``, fetched if missing or stale."""
    target = module_dir(module)
    digest = _digest(module)
    if _fetched(target, digest):
        return target
    mvn = shutil.which("mvn")
    if not mvn:
        raise MavenError("mvn not found (install Maven 3, e.g. apt-get install maven): "
                         f"needed once to fetch the test bed's {module} jars into {target}")
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _fetched(target, digest):  # another process fetched meanwhile
            return target
        work = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
        try:
            _log(f"fetching the {module} jars from Maven into {target}")
            argv = [mvn, "-q", "-B", "-f", str(_pom(module)), "dependency:copy-dependencies",
                    f"-DoutputDirectory={work / 'jars'}"]
            proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  cwd=str(JVM_DIR), check=False)
            if proc.returncode != 0 or not any((work / "jars").glob("*.jar")):
                raise MavenError(f"{' '.join(argv)} failed (exit {proc.returncode}):\n{proc.stdout[-4000:]}")
            (work / "jars" / _MARKER).write_text(digest + "\n")
            if target.exists():
                shutil.rmtree(target)
            os.replace(work / "jars", target)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return target


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if args else 2
    try:
        for module in args:
            print(ensure(module))
    except MavenError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
