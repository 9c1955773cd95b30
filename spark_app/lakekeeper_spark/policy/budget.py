"""A maintenance window's budget (``deadline`` of compact).

A nightly window ends at a fixed time. With a deadline the run

* works on the tables and, within a table, the units with the most benefit
  first: small files removed per byte rewritten (``benefit``,
  ``table_benefit``), so what is left for the next window is what matters
  least;
* estimates each unit's time from what the units finished so far in this
  run took (seconds per byte, never less than the quickest unit: a unit has
  a fixed cost of protocol however small it is);
* starts no unit that would not end before the deadline (the first unit of
  the run starts unless the deadline has already passed: nothing is known
  yet), and no table once the deadline has passed. A unit started always
  finishes: the deadline never cuts a unit in half. What is left is reported
  (partition ``skipped`` with code ``deadline``, the table's ``deferred``).

``parse_deadline`` and ``Budget`` with an injected clock are pure.
"""

from __future__ import annotations

import dataclasses
import math
import re
import threading
import time
from datetime import datetime, timedelta, timezone
from typing import Callable

from .config import parse_duration
from ..report.errors import UsageError

DEADLINE = "deadline"  # the code of what a deadline left for the next window

_CLOCK = re.compile(r"^\s*(\d{1,2}):(\d{2})(?::(\d{2}))?\s*$")


def parse_deadline(text: str, now: float) -> float:
    """``2h``/``90m`` (from ``now``), ``05:30`` (the next 05:30 UTC), or an
    ISO 8601 time (``2026-11-26T05:30:00Z``, ``...+01:00``; without a zone:
    UTC) -> seconds since the epoch."""
    value = str(text).strip()
    if not value:
        raise UsageError("deadline is empty")
    m = _CLOCK.match(value)
    if m:
        hour, minute, second = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
        if hour > 23 or minute > 59 or second > 59:
            raise UsageError(f"invalid deadline {text!r}: no such time of day")
        today = datetime.fromtimestamp(now, timezone.utc)
        at = today.replace(hour=hour, minute=minute, second=second, microsecond=0)
        if at.timestamp() <= now:
            at += timedelta(days=1)
        return at.timestamp()
    if re.match(r"^\d{4}-\d{2}-\d{2}", value):
        try:
            at = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError as exc:
            raise UsageError(f"invalid deadline {text!r}: {exc}") from exc
        if at.tzinfo is None:
            at = at.replace(tzinfo=timezone.utc)
        return at.timestamp()
    if value.isdigit():  # a bare number is no duration here: days would be a surprise
        raise UsageError(f"invalid deadline {text!r}: give a unit (90m, 2h), a time of day (05:30, UTC) "
                         f"or an ISO time (2026-11-26T05:30:00Z)")
    try:
        seconds = parse_duration(value)
    except UsageError as exc:
        raise UsageError(f"invalid deadline {text!r}: give a duration (90m, 2h), a time of day (05:30, UTC) "
                         f"or an ISO time (2026-11-26T05:30:00Z)") from exc
    return now + float(seconds or 0)


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def benefit(files: int, target_files: int, nbytes: int) -> float:
    """Small files removed per MB rewritten (pure): the order of work."""
    return max(0, files - max(1, target_files)) / max(nbytes / 1048576.0, 1e-6)


def table_benefit(files: int, nbytes: int, target_bytes: int) -> float:
    """The same for a whole table from its file count and size (one
    content summary: a cheap first look, hidden backup directories counted)."""
    return benefit(files, math.ceil(max(nbytes, 1) / max(target_bytes, 1)), nbytes)


@dataclasses.dataclass
class Budget:
    deadline: float
    clock: Callable[[], float] = time.time
    _bytes: int = 0
    _seconds: float = 0.0
    _quickest: float | None = None
    _lock: threading.Lock = dataclasses.field(default_factory=threading.Lock, repr=False)

    def passed(self) -> bool:
        return self.clock() >= self.deadline

    def record(self, nbytes: int, seconds: float) -> None:
        """A unit of ``nbytes`` took ``seconds`` (start to done)."""
        with self._lock:
            self._bytes += max(0, int(nbytes))
            self._seconds += max(0.0, float(seconds))
            self._quickest = seconds if self._quickest is None else min(self._quickest, seconds)

    def estimate(self, nbytes: int) -> float | None:
        """Seconds a unit of ``nbytes`` would take, from this run's units so
        far; None before any finished."""
        with self._lock:
            if self._quickest is None:
                return None
            per_byte = self._seconds / max(self._bytes, 1)
            return max(self._quickest, per_byte * max(0, int(nbytes)))

    def refusal(self, nbytes: int) -> str | None:
        """Why a unit of ``nbytes`` must not start now (None: it may)."""
        now = self.clock()
        if now >= self.deadline:
            return f"the deadline {iso(self.deadline)} has passed; left for the next window"
        est = self.estimate(nbytes)
        if est is not None and now + est > self.deadline:
            return (f"would take about {math.ceil(est)} s (as the units of this run so far) and end after the deadline "
                    f"{iso(self.deadline)} ({max(0, math.floor(self.deadline - now))} s left); left for the next window")
        return None
