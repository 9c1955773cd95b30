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
holder: run id, table, command, host, process id, the process's start time,
the host's boot id and the process's PID namespace, start time. It is never
written again while held. The heartbeat is a file of the holder's own
beside it (``lease.beat-<run id>``), rewritten every ``timeout / 6`` (at
most every minute) while the run works on the table, so that its
modification time is the filesystem's clock (HDFS: the NameNode's), never a
host's. A failed heartbeat is retried with backoff and logged; it stops only
when the lease is gone or another run's.

A lease is *stale* when its heartbeat has not moved for longer than the
lease timeout (``--lease-timeout``, default 30m, at least 30s:
``config.MIN_LEASE_TIMEOUT_SECONDS``), both times read on the filesystem's clock (the
taker writes a probe file beside the lease to read that clock), so hosts
whose clocks disagree, or containers sharing a host name, judge alike. One
shortcut: a holder that recorded this very host, boot and PID namespace and
whose process is gone (a killed run) is stale at once; in another PID
namespace (a container, YARN's Docker runtime, ``hostNetwork`` pods) its
pid means nothing here and only the heartbeat counts. A stale lease is taken
over by the next command (the result reports it in ``lease_taken_over``),
whose recovery then settles what the dead run left. A live lease is never
taken over, except by ``recover --break-lease``, which an operator uses when
they know the holder is gone (e.g. its host is lost) and cannot wait for the
timeout. Another command finds the table ``locked`` and changes nothing.

The lease is a fencing token (``fence.py``): every step that changes the
table first calls ``Lease.check``, which fails with ``lease_lost`` once this
run cannot prove it still holds the table: its heartbeat has not been
written for longer than the timeout less one heartbeat (a taker needs the
whole timeout, on the filesystem's clock, which runs no slower than this
process's monotonic clock; so does a run that was stopped and resumed), or
the lease file, read at most once a second (and at most 0.2 s before a step
that moves what readers see: ``fence.VISIBLE_STEP_MAX_AGE``), is gone or
another run's.

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
BEAT_PREFIX = "lease.beat-"
PROBE_PREFIX = "lease.probe-"
DEFAULT_TIMEOUT_SECONDS = 30 * 60
VERIFY_EVERY_SECONDS = 1.0  # Lease.check reads the lease file at most this often


class LeaseHeld(LakekeeperError):
    """Another live run holds the table's lease: nothing was done."""

    status = "locked"

    def __init__(self, message: str, holder: dict[str, Any]):
        super().__init__("locked", message)
        self.holder = holder


def host_name() -> str:
    return socket.gethostname()


def _read_first_line(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.readline().strip() or None
    except OSError:
        return None


def boot_id() -> str | None:
    """This host's boot (Linux), None where unknown."""
    return _read_first_line("/proc/sys/kernel/random/boot_id")


def pid_namespace() -> str | None:
    """This process's PID namespace (Linux: ``pid:[4026531836]``), None where unknown."""
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return None


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


def beat_path(path: str, run_id: str) -> str:
    """The heartbeat file of run ``run_id`` beside the lease ``path``."""
    return f"{path.rsplit('/', 1)[0]}/{BEAT_PREFIX}{run_id}"


def read_holder(fs: HadoopFS, path: str) -> dict[str, Any] | None:
    """The lease's record with its heartbeat (``heartbeat``: the newer of
    the holder's heartbeat file's and the lease's modification times, s),
    or None when there is no lease. A file that does not parse (torn, or
    unreadable this once) reads as a holder with ``run_id`` None."""
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
    beat = fs.mtime(beat_path(path, doc["run_id"])) if doc["run_id"] else None
    doc["heartbeat"] = max(mtime, beat or 0) / 1000.0
    return doc


def read_holder_run_id(fs: HadoopFS, path: str) -> tuple[bool, str | None]:
    """(whether there is a lease, its holder's run id): what this run's own
    checks need (``Lease.check``, the heartbeat), in one read of the lease
    file. A file that does not parse reads as (True, None). Not
    ``read_holder``, which also reads both modification times for a run
    deciding whether a holder is stale: a run's own heartbeat file does
    not exist before its first beat, and a missing file costs a Java
    exception, which PySpark's error handler inspects through about 80
    gateway calls (measured: five checks a partition made that half of a
    compaction's gateway calls)."""
    try:
        doc = json.loads(fs.read_text(path))
    except Exception:  # noqa: BLE001 - gone (no lease), or torn / unreadable this once
        return fs.exists(path), None
    return True, (doc.get("run_id") if isinstance(doc, dict) else None)


def filesystem_now(fs: HadoopFS, journal_dir: str, run_id: str) -> float:
    """The filesystem's clock now (s): the modification time of a probe
    file written beside the lease (HDFS: the NameNode's clock), removed again."""
    probe = f"{journal_dir.rstrip('/')}/{PROBE_PREFIX}{run_id}"
    fs.replace_text(probe, "")
    try:
        return (fs.mtime(probe) or 0) / 1000.0
    finally:
        fs.delete(probe, recursive=False)


def stale_reason(holder: dict[str, Any], timeout: float, now: float) -> str | None:
    """Why a lease is stale, or None when it is live (see the module doc).
    ``now``: the filesystem's clock (``filesystem_now``)."""
    pid = holder.get("pid")
    if (holder.get("host") == host_name() and holder.get("boot_id") and holder.get("boot_id") == boot_id()
            and holder.get("pid_ns") and holder.get("pid_ns") == pid_namespace() and isinstance(pid, int)
            and not process_alive(pid, holder.get("pid_start"))):
        return f"its process {pid} on {holder['host']} is gone"
    age = now - float(holder.get("heartbeat") or 0)
    if age > timeout:
        return f"no heartbeat for {age:.0f}s by the filesystem's clock (lease timeout {timeout:.0f}s)"
    return None


def describe(holder: dict[str, Any], now: float | None = None) -> str:
    now = time.time() if now is None else now
    started = holder.get("started")
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)) if isinstance(started, (int, float)) else "?"
    return (f"run {holder.get('run_id') or '?'} ({holder.get('command') or '?'} of {holder.get('table') or '?'}) "
            f"on {holder.get('host') or '?'} pid {holder.get('pid') or '?'} since {since}, last heartbeat "
            f"{max(0.0, now - float(holder.get('heartbeat') or now)):.0f}s ago")


class Lease:
    """A lease this process holds; ``release`` when done with the table.
    ``beat_started``: this process's monotonic time right before the lease
    file was created (its first heartbeat)."""

    def __init__(self, fs: HadoopFS, path: str, doc: dict[str, Any], timeout: float, beat_started: float):
        self.fs = fs
        self.path = path
        self.doc = doc
        self.run_id = doc["run_id"]
        self.timeout = timeout
        self.beat_path = beat_path(path, self.run_id)
        self.taken_over: dict[str, Any] | None = None
        self.lost: str | None = None
        self._created = beat_started
        self._beat_ok = beat_started  # monotonic, before the last heartbeat that was written
        self._verified = beat_started  # monotonic, when the lease file last read as ours
        self._beats = 0
        self._stop = threading.Event()
        self._interval = max(1.0, min(60.0, timeout / 6.0))
        self._thread = threading.Thread(target=self._beat, name=f"lakekeeper-lease-{self.run_id}", daemon=True)
        self._thread.start()

    def _lose(self, why: str) -> None:
        if self.lost is None:
            self.lost = why
            log.error("lease %s lost: %s", self.path, why)

    def _beat(self) -> None:
        failures, delay = 0, self._interval
        while not self._stop.wait(delay):
            if heartbeat_stalled(self._created):  # test hook: the process is "stopped" (faults)
                continue
            started = time.monotonic()
            try:
                there, run_id = read_holder_run_id(self.fs, self.path)
                if not there:
                    self._lose(f"the lease {self.path} is gone (broken by an operator, or taken over and released)")
                    return
                if run_id is None:
                    raise LakekeeperError("lease_error", f"the lease {self.path} could not be read this time")
                if run_id != self.run_id:
                    self._lose(f"the lease {self.path} was taken by {self._taker()}")
                    return
                self._beats += 1
                self.fs.replace_text(self.beat_path, str(self._beats))
                self._beat_ok = self._verified = started
                failures, delay = 0, self._interval
            except Exception as exc:  # noqa: BLE001 - transient (a NameNode failover): retried with backoff
                failures += 1
                delay = min(self._interval, 0.25 * 2 ** failures)
                log.warning("lease heartbeat of %s failed (%d in a row; next try in %.1fs): %s", self.path,
                            failures, delay, java_message(exc))

    def check(self, max_age: float = VERIFY_EVERY_SECONDS) -> None:
        """Before every step that changes the table (``fence.py``): this run
        can still prove it holds the table's lease. Costs no call while the
        lease file was read as ours less than ``max_age`` seconds ago (0:
        read it now)."""
        now = time.monotonic()
        if self.lost is None and now - self._beat_ok > self.timeout - self._interval:
            self._lose(f"its heartbeat was last written {now - self._beat_ok:.0f}s ago, too long to be sure no "
                       f"other run has taken the table over (lease timeout {self.timeout:.0f}s)")
        if self.lost is None and now - self._verified >= max_age:
            there, run_id = read_holder_run_id(self.fs, self.path)
            if not there:
                self._lose(f"the lease {self.path} is gone (broken by an operator, or taken over and released)")
            elif run_id not in (None, self.run_id):
                self._lose(f"the lease {self.path} was taken by {self._taker()}")
            elif run_id == self.run_id:
                self._verified = now
        if self.lost is not None:
            raise LakekeeperError("lease_lost", f"this run no longer holds the table's lease ({self.lost}); "
                                                f"it changed nothing more, and its journal is left for the run "
                                                f"that holds the table now")

    def _taker(self) -> str:
        """Who holds the lease now, for the message of a lost lease (read once, then)."""
        try:
            holder = read_holder(self.fs, self.path)
        except Exception:  # noqa: BLE001 - the message says less; the lease is lost either way
            holder = None
        return describe(holder) if holder else "another run"

    def release(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        try:
            _there, run_id = read_holder_run_id(self.fs, self.path)
            if run_id == self.run_id:
                self.fs.delete(self.path, recursive=False)
            self.fs.delete(self.beat_path, recursive=False)
            self.fs.delete_if_empty(self.path.rsplit("/", 1)[0])
        except Exception as exc:  # noqa: BLE001 - a lease left behind is stale once its heartbeat stops
            log.warning("could not release the lease %s: %s", self.path, java_message(exc))


def heartbeat_stalled(created: float) -> bool:
    """Test hook (``=stall`` pause points, faults.py): the heartbeat of a
    lease taken before a stalled pause point began is held while it waits,
    as if the process were stopped."""
    from .faults import stalled_since

    since = stalled_since()
    return since is not None and created < since


def acquire(fs: HadoopFS, journal_dir: str, run_id: str, table: str, command: str, timeout: float,
            break_lease: bool = False) -> Lease:
    """Take the table's lease (see the module doc), or raise ``LeaseHeld``."""
    path = lease_path(journal_dir)
    pid = os.getpid()
    doc = {"run_id": run_id, "table": table, "command": command, "host": host_name(), "pid": pid,
           "pid_start": process_start(pid), "boot_id": boot_id(), "pid_ns": pid_namespace(), "started": time.time()}
    taken_over = None
    for _attempt in range(5):
        started = time.monotonic()
        if _create(fs, journal_dir, path, json.dumps(doc, sort_keys=True)):
            lease = Lease(fs, path, doc, timeout, started)
            lease.taken_over = taken_over
            _remove_old_beats(fs, journal_dir, run_id)
            return lease
        holder = read_holder(fs, path)
        if holder is None:  # released meanwhile: try again
            continue
        if holder.get("run_id") == run_id:
            raise LakekeeperError("lease_error", f"run {run_id} already holds {path}")
        why = None if break_lease else stale_reason(holder, timeout, filesystem_now(fs, journal_dir, run_id))
        if why is None and not break_lease:
            raise LeaseHeld(f"the table is being worked on by {describe(holder)}; nothing was done (a lease is "
                            f"stale after {timeout:.0f}s without heartbeat, or at once when its process on this "
                            f"host is gone; recover --break-lease releases a lease whose holder is known dead)",
                            {k: v for k, v in holder.items() if k not in ("pid_start", "boot_id", "pid_ns")})
        taken_over = _break(fs, path, holder, run_id, why or "broken by --break-lease")
    raise LakekeeperError("lease_error", f"could not take the lease {path}: it changed hands repeatedly")


def _remove_old_beats(fs: HadoopFS, journal_dir: str, run_id: str) -> None:
    """Heartbeat files of earlier holders (a killed run leaves its own)."""
    try:
        for name, _is_dir in fs.list_names(journal_dir):
            if name.startswith(BEAT_PREFIX) and name != BEAT_PREFIX + run_id:
                fs.delete(f"{journal_dir.rstrip('/')}/{name}", recursive=False)
    except Exception:  # noqa: BLE001 - a leftover heartbeat file is harmless: it names no holder
        log.warning("could not remove earlier heartbeat files in %s", journal_dir, exc_info=True)


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
    return dict({k: v for k, v in holder.items() if k not in ("pid_start", "boot_id", "pid_ns")}, reason=why)
