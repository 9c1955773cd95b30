"""Group commit: the same kind of write from threads running at once, done
as one call.

Units of a table run several at a time and each ends with the same
Metastore writes (its backup partition repointed, its statistics). One
``alterPartitions`` can carry many partitions, and every call pays a
fixed cost (Spark's Hive client looks the database and the table up
again, under the lock all units share), so a unit's write waits for no
one: the first thread to arrive writes what is queued, its own item
among them; threads that arrive while it writes queue theirs, and the
next one of them writes that whole group as soon as the first write has
ended. A thread returns once a write holding its item has ended, with
that item's own outcome: nothing is written later than it would have
been alone, and a step that is journaled before its write is still
journaled before it.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Generic, TypeVar

T = TypeVar("T")


class GroupCommit(Generic[T]):
    """``submit(item)`` returns once ``write_batch`` has written a batch
    holding ``item``, with the item's result, or raises its error.

    ``write_batch(items)`` returns one outcome per item, in order: a
    result, or the exception that item failed with (an exception raised
    by ``write_batch`` itself is every item's)."""

    def __init__(self, write_batch: Callable[[list[T]], list[Any]]):
        self._write_batch = write_batch
        self._cond = threading.Condition()
        self._queue: list[tuple[object, T]] = []
        self._outcomes: dict[object, Any] = {}
        self._writing = False
        self.batches = 0  # how many writes were made (the tests read it)

    def submit(self, item: T) -> Any:
        token = object()
        with self._cond:
            self._queue.append((token, item))
            while token not in self._outcomes and self._writing:
                self._cond.wait()
            if token in self._outcomes:  # written by another thread's batch
                return self._take(token)
            batch, self._queue = self._queue, []  # this thread writes: its own item and everything queued
            self._writing = True
        try:
            outcomes = self._write_batch([item for _t, item in batch])
            if len(outcomes) != len(batch):
                raise RuntimeError(f"group commit: {len(outcomes)} outcomes for {len(batch)} items")
        except BaseException as exc:  # noqa: BLE001 - every item of the batch fails with it
            outcomes = [exc] * len(batch)
        with self._cond:
            self.batches += 1
            for (t, _item), outcome in zip(batch, outcomes):
                self._outcomes[t] = outcome
            self._writing = False
            self._cond.notify_all()
            return self._take(token)

    def _take(self, token: object) -> Any:
        outcome = self._outcomes.pop(token)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome


class RecentCheck:
    """A yes/no check (``check()``, e.g. "the backup table exists") that
    many threads ask before acting: a passing check that began at most
    ``max_age`` seconds before a thread asked answers for it; otherwise the
    thread waits for a new check, shared with the threads that ask while it
    is made (``GroupCommit``). A failing check is never reused: the next
    thread checks again.

    The moment a thread asked is a lower bound of when the check that
    answered it began, so a reused answer is never older than ``max_age``."""

    def __init__(self, check: Callable[[], bool], max_age: float):
        self._commit: GroupCommit[None] = GroupCommit(lambda asks: [bool(check())] * len(asks))
        self.max_age = max_age
        self._lock = threading.Lock()
        self._passed_at: float | None = None

    @property
    def checks(self) -> int:
        """How many checks were made (the tests read it)."""
        return self._commit.batches

    def ask(self) -> bool:
        asked = time.monotonic()
        with self._lock:
            if self._passed_at is not None and asked - self._passed_at <= self.max_age:
                return True
        ok = bool(self._commit.submit(None))
        with self._lock:
            if ok:
                self._passed_at = asked if self._passed_at is None else max(self._passed_at, asked)
            else:  # nothing older answers for anyone any more
                self._passed_at = None
        return ok
