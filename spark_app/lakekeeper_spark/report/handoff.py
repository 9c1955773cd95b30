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
"""

from __future__ import annotations

import json
import os
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


def write_atomic(path: str, text: str) -> None:
    """``text`` to ``path`` by a rename: a reader sees the whole file or none."""
    tmp = f"{path}.tmp-{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)


def wait_for_go(path: str, timeout: float, analyzed: list[str], clock: Callable[[], float] = time.monotonic,
                sleep: Callable[[float], None] = time.sleep) -> Go:
    """Poll for the go file until ``timeout`` seconds have passed."""
    end = clock() + timeout
    while True:
        try:
            with open(path, encoding="utf-8") as fh:
                return parse_go(fh.read(), analyzed)
        except FileNotFoundError:
            pass
        if clock() >= end:
            return timed_out(timeout)
        sleep(POLL_SECONDS)
