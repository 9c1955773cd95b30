"""Fetch the Hadoop 2.7.3 server jars the HDFS test bed runs on.

No Hadoop distribution is reachable from here (only PyPI and Debian apt), but
the pyspark 2.4.8 *sdist* on PyPI carries Hadoop 2.7.3's jars in
``deps/jars/``. We download that sdist once with ``pip download`` from a
throw-away virtualenv (pip has to run its ``setup.py`` to get the metadata,
which needs ``wheel`` and ``setuptools<70``), copy the 28 jars a NameNode and a
DataNode need into a cache directory and delete the sdist (about 220 MB).

Cache: ``${LAKEKEEPER_TESTBED_CACHE:-~/.cache/lakekeeper-testbed}/hadoop-2.7.3/``.
Idempotent and safe to call from several processes at once (file lock).

    python -m testbed.hadoop_jars          # fetch if missing, print the dir
"""
from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

SDIST_REQUIREMENT = "pyspark==2.4.8"

JARS = (
    "hadoop-hdfs-2.7.3.jar",
    "hadoop-common-2.7.3.jar",
    "hadoop-auth-2.7.3.jar",
    "hadoop-annotations-2.7.3.jar",
    "hadoop-mapreduce-client-core-2.7.3.jar",
    "guava-14.0.1.jar",
    "protobuf-java-2.5.0.jar",
    "htrace-core-3.1.0-incubating.jar",
    "jetty-6.1.26.jar",
    "jetty-util-6.1.26.jar",
    "javax.servlet-api-3.1.0.jar",
    "netty-all-4.1.47.Final.jar",
    "commons-collections-3.2.2.jar",
    "commons-configuration-1.6.jar",
    "commons-codec-1.10.jar",
    "commons-lang-2.6.jar",
    "commons-io-2.4.jar",
    "commons-logging-1.1.3.jar",
    "commons-cli-1.2.jar",
    "jackson-core-asl-1.9.13.jar",
    "jackson-mapper-asl-1.9.13.jar",
    "log4j-1.2.17.jar",
    "apache-log4j-extras-1.2.17.jar",
    "slf4j-api-1.7.16.jar",
    "slf4j-log4j12-1.7.16.jar",
    "jcl-over-slf4j-1.7.16.jar",
    "xercesImpl-2.9.1.jar",
    "javax.ws.rs-api-2.0.1.jar",
)
assert len(JARS) == 28


class JarFetchError(RuntimeError):
    pass


def cache_root() -> Path:
    env = os.environ.get("LAKEKEEPER_TESTBED_CACHE")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "lakekeeper-testbed"


def jars_dir() -> Path:
    return cache_root() / "hadoop-2.7.3"


def missing_jars(directory: Path | None = None) -> list[str]:
    d = directory or jars_dir()
    missing = []
    for name in JARS:
        p = d / name
        if not p.is_file() or not zipfile.is_zipfile(p):
            missing.append(name)
    return missing


def _log(msg: str) -> None:
    print(f"testbed.hadoop_jars: {msg}", file=sys.stderr, flush=True)


def _run(argv: list[str], what: str) -> None:
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    if proc.returncode != 0:
        raise JarFetchError(f"{what} failed (exit {proc.returncode}): {' '.join(argv)}\n{proc.stdout[-4000:]}")


def _download_sdist(work: Path) -> Path:
    venv = work / "venv"
    _log(f"creating a throw-away venv in {venv}")
    _run([sys.executable, "-m", "venv", str(venv)], "creating the throw-away venv")
    py = str(venv / "bin" / "python")
    pip = [py, "-m", "pip", "--disable-pip-version-check", "-q"]
    _run(pip + ["install", "wheel", "setuptools<70"], "installing wheel and setuptools<70")
    dl = work / "dl"
    _log(f"pip download {SDIST_REQUIREMENT} (about 220 MB, takes a while)")
    # --no-cache-dir: do not leave a second 220 MB copy in pip's cache
    _run(pip + ["download", "--no-deps", "--no-build-isolation", "--no-binary", ":all:", "--no-cache-dir",
                "-d", str(dl), SDIST_REQUIREMENT], f"pip download {SDIST_REQUIREMENT}")
    found = sorted(dl.glob("pyspark-2.4.8*.tar.gz"))
    if not found:
        raise JarFetchError(f"pip download left no pyspark-2.4.8 sdist in {dl}: {os.listdir(dl)}")
    return found[0]


def _extract(sdist: Path, target: Path) -> None:
    wanted = set(JARS)
    got = set()
    tmp_target = Path(tempfile.mkdtemp(prefix=".extract-", dir=target))
    try:
        with tarfile.open(sdist, "r:gz") as tar:
            for member in tar:
                parts = member.name.split("/")
                # pyspark-2.4.8/deps/jars/<name>
                if (len(parts) == 4 and parts[1] == "deps" and parts[2] == "jars"
                        and parts[3] in wanted and member.isfile()):
                    src = tar.extractfile(member)
                    assert src is not None
                    with src, open(tmp_target / parts[3], "wb") as out:
                        shutil.copyfileobj(src, out)
                    got.add(parts[3])
        missing = wanted - got
        if missing:
            raise JarFetchError(f"{sdist.name} lacks these jars in deps/jars/: {sorted(missing)}")
        for name in JARS:
            os.replace(tmp_target / name, target / name)
    finally:
        shutil.rmtree(tmp_target, ignore_errors=True)


def ensure_jars(quiet: bool = False) -> Path:
    """Return the directory holding the 28 jars, fetching them if needed."""
    target = jars_dir()
    if not missing_jars(target):
        return target
    target.mkdir(parents=True, exist_ok=True)
    with open(target.parent / ".hadoop-2.7.3.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not missing_jars(target):  # someone else fetched meanwhile
            return target
        work = Path(tempfile.mkdtemp(prefix="lakekeeper-sdist-"))
        try:
            sdist = _download_sdist(work)
            _log(f"extracting {len(JARS)} jars into {target}")
            _extract(sdist, target)
        finally:
            shutil.rmtree(work, ignore_errors=True)  # the sdist and the venv
    missing = missing_jars(target)
    if missing:
        raise JarFetchError(f"still missing after the fetch in {target}: {missing}")
    if not quiet:
        _log(f"{len(JARS)} jars ready in {target}")
    return target


def classpath(directory: Path | None = None) -> list[str]:
    d = directory or jars_dir()
    return [str(d / name) for name in JARS]


def main(argv: list[str] | None = None) -> int:
    import argparse
    ap = argparse.ArgumentParser(prog="python -m testbed.hadoop_jars", description=__doc__.split("\n\n", maxsplit=1)[0])
    ap.add_argument("--check", action="store_true", help="only check; exit 1 if jars are missing")
    args = ap.parse_args(argv)
    if args.check:
        missing = missing_jars()
        for m in missing:
            print(f"missing: {jars_dir() / m}")
        return 1 if missing else 0
    try:
        print(ensure_jars())
    except JarFetchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
