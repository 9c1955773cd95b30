"""One run per table: the lease.

Every command that may change a table (compact, rollback, cleanup, recover;
not dry runs, not analyze) first takes the table's lease and holds it until
it is done with the table, its automatic recovery and its recovery after an
error included. The lease is one small JSON file in the table's journal
directory (``layout.journal_dir``: ``<table>/.lakekeeper/lease.json`` for a
partitioned table, ``<parent>/.<table dir>.lakekeeper/lease.json`` for a
non-partitioned one, next to its directory, since that directory itself is
renamed by the swap). Tables over the same location share the journal
directory and therefore the lease.

The file is created atomically (``HadoopFS.create_new``: HDFS
``create(overwrite=false)``; ``O_EXCL`` on a local path) and records the
holder: run id, table, command, host, process id (and the process's start
time, so a reused pid is not taken for the holder), start time. Its
modification time is the heartbeat: a thread touches it every
``timeout / 5`` (at most every minute) while the run works on the table.

A lease is *stale* when its holder ran on this host and that process is
gone (at once: a killed run), or when its heartbeat is older than the lease
timeout (``--lease-timeout``, default 30m; a holder on another host that
died). A stale lease is taken over by the next command (the result reports
it in ``lease_taken_over``), whose recovery then settles what the dead run
left. A live lease is never taken over, except by ``recover
--break-lease``, which an operator uses when they know the holder is gone
(e.g. its host is lost) and cannot wait for the timeout. Another command
finds the table ``locked`` and changes nothing.

Taking over is itself race-free: the stale file is renamed (no-overwrite)
to a name of the taker's own, and only the taker whose rename succeeded
creates the new lease.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from typing import Any

from ..report.errors import LakekeeperError, java_message
from ..storage.fs import HadoopFS

log = logging.getLogger(__name__)

LEASE_NAME = "lease.json"
DEFAULT_TIMEOUT_SECONDS = 30 * 60


class LeaseHeld(LakekeeperError):
    """Another live run holds the table's lease: nothing was done."""

    status = "locked"

    def __init__(self, message: str, holder: dict[str, Any]):
        super().__init__("locked", message)
        self.holder = holder


def host_name() -> str:
    return socket.gethostname()


def process_start(pid: int) -> str | None:
    """The start time of a process (Linux ``/proc``: clock ticks since
    boot), None where unknown."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
            return fh.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def process_alive(pid: int, start: str | None) -> bool:
    """Whether the process ``pid`` (started at ``start``) still runs on this host."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        pass
    now = process_start(pid)
    return start is None or now is None or now == start


def lease_path(journal_dir: str) -> str:
    return journal_dir.rstrip("/") + "/" + LEASE_NAME


def read_holder(fs: HadoopFS, path: str) -> dict[str, Any] | None:
    """The lease's record with its heartbeat (``heartbeat``: the file's
    modification time, s), or None when there is no lease. A file that does
    not parse (its holder is writing it, or died doing so) reads as a
    holder with ``run_id`` None."""
    mtime = fs.mtime(path)
    if mtime is None:
        return None
    try:
        doc = json.loads(fs.read_text(path))
        if not isinstance(doc, dict):
            doc = {}
    except Exception:  # noqa: BLE001 - torn, or gone meanwhile
        doc = {}
    doc.setdefault("run_id", None)
    doc["heartbeat"] = mtime / 1000.0
    return doc


def stale_reason(holder: dict[str, Any], timeout: float, now: float | None = None) -> str | None:
    """Why a lease is stale, or None when it is live (see the module doc)."""
    now = time.time() if now is None else now
    pid = holder.get("pid")
    if holder.get("host") == host_name() and isinstance(pid, int) and not process_alive(pid, holder.get("pid_start")):
        return f"its process {pid} on {holder['host']} is gone"
    age = now - float(holder.get("heartbeat") or 0)
    if age > timeout:
        return f"no heartbeat for {age:.0f}s (lease timeout {timeout:.0f}s)"
    return None


def describe(holder: dict[str, Any], now: float | None = None) -> str:
    now = time.time() if now is None else now
    started = holder.get("started")
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)) if isinstance(started, (int, float)) else "?"
    return (f"run {holder.get('run_id') or '?'} ({holder.get('command') or '?'} of {holder.get('table') or '?'}) "
            f"on {holder.get('host') or '?'} pid {holder.get('pid') or '?'} since {since}, last heartbeat "
            f"{max(0.0, now - float(holder.get('heartbeat') or now)):.0f}s ago")


class Lease:
    """A lease this process holds; ``release`` when done with the table."""

    def __init__(self, fs: HadoopFS, path: str, doc: dict[str, Any], timeout: float):
        self.fs = fs
        self.path = path
        self.doc = doc
        self.run_id = doc["run_id"]
        self.taken_over: dict[str, Any] | None = None
        self.lost: str | None = None
        self._stop = threading.Event()
        self._interval = max(1.0, min(60.0, timeout / 5.0))
        self._thread = threading.Thread(target=self._beat, name=f"lakekeeper-lease-{self.run_id}", daemon=True)
        self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                holder = read_holder(self.fs, self.path)
                if holder is None or holder.get("run_id") != self.run_id:
                    self.lost = f"the lease {self.path} is gone or was taken by {describe(holder or {})}"
                    log.error("%s", self.lost)
                    return
                self.fs.touch(self.path, int(time.time() * 1000))
            except Exception as exc:  # noqa: BLE001 - the next beat tries again; check() tells the run
                log.warning("lease heartbeat of %s failed: %s", self.path, java_message(exc))

    def check(self) -> None:
        """Before a swap: the lease is still this run's (it was not broken
        by ``recover --break-lease`` or taken over after a stalled heartbeat)."""
        holder = read_holder(self.fs, self.path)
        if self.lost or holder is None or holder.get("run_id") != self.run_id:
            raise LakekeeperError("lease_lost", f"this run no longer holds the table's lease {self.path} "
                                                f"({self.lost or describe(holder or {})}); nothing more is swapped")

    def release(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        try:
            holder = read_holder(self.fs, self.path)
            if holder is not None and holder.get("run_id") == self.run_id:
                self.fs.delete(self.path, recursive=False)
            self.fs.delete_if_empty(self.path.rsplit("/", 1)[0])
        except Exception as exc:  # noqa: BLE001 - a lease left behind is stale once this process ends
            log.warning("could not release the lease %s: %s", self.path, java_message(exc))


def acquire(fs: HadoopFS, journal_dir: str, run_id: str, table: str, command: str, timeout: float,
            break_lease: bool = False) -> Lease:
    """Take the table's lease (see the module doc), or raise ``LeaseHeld``."""
    path = lease_path(journal_dir)
    pid = os.getpid()
    doc = {"run_id": run_id, "table": table, "command": command, "host": host_name(), "pid": pid,
           "pid_start": process_start(pid), "started": time.time()}
    taken_over = None
    for _attempt in range(5):
        if _create(fs, journal_dir, path, json.dumps(doc, sort_keys=True)):
            lease = Lease(fs, path, doc, timeout)
            lease.taken_over = taken_over
            return lease
        holder = read_holder(fs, path)
        if holder is None:  # released meanwhile: try again
            continue
        if holder.get("run_id") == run_id:
            raise LakekeeperError("lease_error", f"run {run_id} already holds {path}")
        why = stale_reason(holder, timeout)
        if why is None and not break_lease:
            raise LeaseHeld(f"the table is being worked on by {describe(holder)}; nothing was done (a lease is "
                            f"stale after {timeout:.0f}s without heartbeat, or at once when its process on this "
                            f"host is gone; recover --break-lease releases a lease whose holder is known dead)",
                            {k: v for k, v in holder.items() if k != "pid_start"})
        taken_over = _break(fs, path, holder, run_id, why or "broken by --break-lease")
    raise LakekeeperError("lease_error", f"could not take the lease {path}: it changed hands repeatedly")


def _create(fs: HadoopFS, journal_dir: str, path: str, text: str) -> bool:
    """``create_new``; a lease that a quota keeps from being written is
    refused as ``insufficient_space`` (nothing was written: the empty file
    and the journal directory, when nothing else is in it, are removed again)."""
    try:
        return fs.create_new(path, text)
    except Exception as exc:  # noqa: BLE001 - Py4JJavaError carries the Java exception
        from ..storage.space import quota_refusal

        why = quota_refusal(fs, path, java_message(exc) + " " + str(exc)[:2000])
        if why is None:
            raise
        try:  # a quota exception comes after create() succeeded: the file is this run's
            fs.delete(path, recursive=False)
            fs.delete_if_empty(journal_dir)  # as a released lease leaves it
        except Exception:  # noqa: BLE001
            log.warning("could not remove the lease %s that a quota kept from being written", path, exc_info=True)
        raise LakekeeperError("insufficient_space", f"the table's lease {path} could not be written: {why}; "
                                                    "nothing was written") from exc


def _break(fs: HadoopFS, path: str, holder: dict[str, Any], run_id: str, why: str) -> dict[str, Any] | None:
    """Move the judged lease out of the way under a name of our own; only
    the run whose rename succeeded goes on to create a new lease. If what
    was moved is not the lease judged (someone took it over meanwhile), it
    is put back."""
    aside = f"{path}.broken-{run_id}"
    try:
        fs.rename(path, aside)
    except LakekeeperError:  # another run broke it first (or it was released): try again
        return None
    moved = read_holder(fs, aside) or {}
    if moved.get("run_id") != holder.get("run_id") or moved.get("started") != holder.get("started"):
        try:
            fs.rename(aside, path)
        except LakekeeperError:
            log.error("lease %s: a fresh lease was moved to %s while breaking a stale one and could not be put "
                      "back", path, aside)
        raise LeaseHeld(f"the lease changed hands while being taken over: {describe(moved)}", moved)
    fs.delete(aside, recursive=False)
    log.warning("took over the lease of %s: %s", describe(holder), why)
    return dict({k: v for k, v in holder.items() if k != "pid_start"}, reason=why)
