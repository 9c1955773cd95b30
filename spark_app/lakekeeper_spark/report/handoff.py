"""compact's "analyze first, then wait for the go" (``--analysis-file``,
``--go-file``, ``--go-timeout``): one Spark application for a maintenance
window instead of two (issue 49).

The driver analyzes the selected tables exactly as the ``analyze`` command
would (same selectors, same options, the same result document), writes that
document atomically to the analysis file, and waits for the go file, which
whoever started it (the maintenance role) writes atomically once it has
decided - after its pre-flight and pausing the ingestion:

``{"tables": ["db.t1", "db.t2"]}``  compact these (a subset of the analyzed
                                    tables; ``[]``: nothing)
``{"stop": "why"}``                 compact nothing, end now

No go file within ``--go-timeout`` seconds ends the run the same way (the
play that started it is gone): nothing compacted, and the document's
``handoff`` says why. The pure part (``parse_go``, ``Go``) is apart from the
files (``write_atomic``, ``wait_for_go``).

Either file may be a local path of the driver's host or a URI of the
cluster's filesystem (``hdfs://...``; ``HadoopFiles``, through the run's
Hadoop FileSystem adapter): a driver in a YARN container (``spark-submit
--deploy-mode cluster``) has no file of the launcher's host, so there the
launcher names files on HDFS. A URI's file is made under a temporary name
and renamed (the rename checked, ``HadoopFS.rename``); the directory's
permissions are the launcher's to set (for its user alone: the analysis
names tables and their locations). Each poll of a URI is two NameNode
calls (exists, read), four a second at most. A cluster-mode driver
(``--result-uri`` given) takes every name as one of the cluster's
filesystem, a name without a scheme in the user's home there, as the
result's (``files_for(..., cluster=True)``): the launcher need not know the
default filesystem's URI.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable

POLL_SECONDS = 0.5


@dataclass(frozen=True)
class Go:
    """What the go file said: the tables to compact (``stop`` empty), or why
    nothing is compacted (``stop``: the launcher's reason, or the timeout's)."""

    tables: list[str] = field(default_factory=list)
    stop: str = ""
    outcome: str = "go"  # go | stop | timeout | invalid

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"outcome": self.outcome, "tables": list(self.tables)}
        if self.stop:
            out["reason"] = self.stop
        return out


def parse_go(text: str, analyzed: list[str]) -> Go:
    """The go file's text, judged against the tables the analysis named:
    a list of some of them, or a stop with its reason. Anything else is an
    ``invalid`` go (nothing compacted, the run fails and says why)."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        return Go(stop=f"the go file is not JSON: {exc}", outcome="invalid")
    if not isinstance(doc, dict) or ("tables" in doc) == ("stop" in doc):
        return Go(stop="the go file must be an object with either tables (a list) or stop (a reason)",
                  outcome="invalid")
    if "stop" in doc:
        return Go(stop=str(doc["stop"] or "stopped by the launcher"), outcome="stop")
    tables = doc["tables"]
    if not isinstance(tables, list) or not all(isinstance(t, str) for t in tables):
        return Go(stop="the go file's tables must be a list of names", outcome="invalid")
    unknown = [t for t in tables if t not in analyzed]
    if unknown:
        return Go(stop=f"the go file names tables this run did not analyze: {', '.join(unknown)}",
                  outcome="invalid")
    if not tables:
        return Go(outcome="stop", stop="no table to compact")
    return Go(tables=list(dict.fromkeys(tables)))


def timed_out(seconds: float) -> Go:
    return Go(stop=f"no go file within {seconds:g} s: the launcher that started this run did not say which "
                   f"tables to compact (gone?)", outcome="timeout")


_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:/")  # hdfs://nn/x, viewfs://c/x, file:///x, file:/x


def is_uri(path: str) -> bool:
    """A filesystem URI (``scheme:/...``), not a local path of this host."""
    return bool(_URI.match(path))


def write_atomic(path: str, text: str) -> None:
    """``text`` to the local ``path`` by a rename: a reader sees the whole file or none."""
    tmp = f"{path}.tmp-{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)


def read_local(path: str) -> str | None:
    """The local file's text, or None while there is none."""
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except FileNotFoundError:
        return None


class HadoopFiles:
    """The hand-over's files as URIs, through the run's ``HadoopFS``."""

    def __init__(self, fs: Any):
        self.fs = fs

    def write_atomic(self, uri: str, text: str) -> None:
        """``text`` to ``uri`` as the result is written: under a temporary
        name renamed onto it (a reader sees the whole file or none; an
        earlier file of the name replaced), mode 0600 in a parent made 0700
        when missing (``HadoopFS.write_private``)."""
        self.fs.write_private(uri, text)

    def read(self, uri: str) -> str | None:
        """The file's text, or None while there is none."""
        if not self.fs.exists(uri):
            return None
        try:
            return self.fs.read_text(uri)
        except Exception:  # noqa: BLE001 - removed between the two calls (FileNotFoundException): not there yet
            if self.fs.exists(uri):
                raise
            return None


class LocalFiles:
    """The hand-over's files as local paths of the driver's host."""

    write_atomic = staticmethod(write_atomic)
    read = staticmethod(read_local)


def files_for(path: str, fs: Any, cluster: bool = False) -> LocalFiles | HadoopFiles:
    """How to write and read ``path``: through ``fs`` (the run's
    ``HadoopFS``) for a URI or any name of a cluster-mode driver
    (``cluster``), else as a local file."""
    return HadoopFiles(fs) if cluster or is_uri(path) else LocalFiles()


def handoff_names(analysis: str, go: str, fs: Any, cluster: bool) -> tuple[str, str]:
    """The two files' names as the run uses them: a cluster-mode driver's
    qualified on the cluster's filesystem (``fs.qualify``: a relative name in
    the user's home, as ``--result-uri``'s), others as given."""
    if not cluster:
        return analysis, go
    return fs.qualify(analysis), fs.qualify(go)


def wait_for_go(path: str, timeout: float, analyzed: list[str], clock: Callable[[], float] = time.monotonic,
                sleep: Callable[[float], None] = time.sleep,
                read: Callable[[str], str | None] = read_local) -> Go:
    """Poll for the go file until ``timeout`` seconds have passed
    (``read``: its text, or None while there is none)."""
    end = clock() + timeout
    while True:
        text = read(path)
        if text is not None:
            return parse_go(text, analyzed)
        if clock() >= end:
            return timed_out(timeout)
        sleep(POLL_SECONDS)
