"""Fault injection for the crash tests (``tests/crash``): unset in
production, and without effect unless set. The journal calls
``fault_point`` at every step it records, the swap after each of its
renames.

``LAKEKEEPER_FAULT_AT=<spec>[;<spec>...]`` with
``<spec> = <step>[:after][@<db.table>][#<unit index>][=kill|=raise]``
    ``kill`` (default) ends the process with SIGKILL (the JVM first, then
    Python) at that point. With ``@<db.table>`` the run parks the table's
    thread at the point instead and goes on with the next table; once every
    table is parked or finished the process is killed (``run_parking``), so one
    process leaves several tables interrupted at chosen steps. ``raise``
    raises ``InjectedFault`` there (the error path instead of a crash).
    ``transient`` makes the driver's JVM connect to a closed local port
    there: a genuine ``java.net.ConnectException: Connection refused`` (a
    NameNode that is down or failing over, as the Hadoop client meets it)
    comes back through Py4J, which compact's retries (``policy/retries.py``)
    classify as transient (``raise_transient``).
``LAKEKEEPER_PAUSE_AT=<spec>[;...]`` with ``LAKEKEEPER_PAUSE_DIR=<dir>``
    creates ``<dir>/<tag>.paused`` and waits for ``<dir>/<tag>.resume``
    (``<tag>`` = ``<db.table>.<step>[_after]``), so a test can act (e.g.
    write files as a concurrent writer would) at an exact moment. With
    ``=stall`` the heartbeats of every lease the process took before it are
    held while it waits, as if the whole process had been stopped
    (``SIGSTOP``): those leases go stale after their timeout and another run
    (in this process too) may take them over.

Steps: every step of the journal, recorded or marked (``journal``: ``table:compacting``,
``verifying``, ...) and, right after the swap's renames,
``moving_aside:after``, ``moving_in:after``, ``moving_kept:after`` (minor
mode: once every kept file is moved into the staging), a batch's ``batch_writing``,
``batch_reading``, ``batch_renaming`` and ``batch_renaming:after`` (with the
index of the batch's first unit: ``rewrite/batch.py``),
``rollback_moved_compacted:after``, ``rollback_restored:after``; in merge
mode ``merge_recording``, right before the batch is recorded as applied
(after the swaps, and in a recovery, whose call names no table).

``LAKEKEEPER_FAULT_AT=tamper_staging`` (the whole value)
    a compaction duplicates a staged file before verification: a bad copy
    (``tamper_staging``).
``LAKEKEEPER_WRONG_STAGING_EC=<db.table>``
    a compaction of that table makes each unit's staging directory before
    the write (if not made yet) and gives it another erasure coding policy
    than the unit's (replication for an erasure coded unit, else
    XOR-2-1-1024k): verification must fail (``wrong_staging_ec``).
``LAKEKEEPER_FAULT_AT=alter_staged_value`` (the whole value)
    a compaction changes one value in its staged copy (same rows, schema and
    codec) before the copy is read back: only content verification sees it
    (``alter_staged_value``).
``LAKEKEEPER_FAULT_AT=alter_batch_value`` (the whole value)
    the same in each unit of a batch written in one job, before its
    read-back: the batch fails and its units are written one by one
    (``alter_batch_value``).
``LAKEKEEPER_FAULT_AT=table_descriptor`` (the whole value)
    text/Avro partitions are written with the table's storage descriptor
    instead of their own (``write_with_table_descriptor``): only a read-back
    through the partition's own descriptor sees it.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
import signal
import threading
import time
from typing import Any, Callable

from ..compat.jvm import java_class

log = logging.getLogger(__name__)

PARKING_TABLES = 4


class InjectedFault(Exception):
    """Raised by a ``=raise`` fault spec (tests only)."""


class InjectedConnectionRefused(Exception):
    """``=transient`` without a running Spark (pure tests): the text a refused
    connection renders as."""


@dataclasses.dataclass
class HookSpec:
    step: str
    phase: str = "before"
    table: str | None = None
    unit: int | None = None
    action: str = "kill"

    def matches(self, step: str, phase: str, table: str | None, unit: int | None) -> bool:
        if self.step != step or self.phase != phase:
            return False
        if self.table is not None and self.table != (table or "").lower():
            return False
        return self.unit is None or self.unit == unit


_SPEC = re.compile(
    r"^(?P<step>[a-z_:]+?)(?::(?P<phase>before|after))?(?:@(?P<table>[A-Za-z0-9_]+\.[A-Za-z0-9_]+))?"
    r"(?:#(?P<unit>\d+))?(?:=(?P<action>kill|raise|stall|transient))?$"
)


def parse_hook_specs(text: str | None) -> list[HookSpec]:
    """``moving_in:after@db.t#1=kill;verifying`` -> specs. Items that do not
    parse (e.g. other test switches) are ignored."""
    out = []
    for item in re.split(r"[;\s]+", text or ""):
        m = _SPEC.match(item.strip())
        if not m:
            continue
        out.append(HookSpec(step=m.group("step"), phase=m.group("phase") or "before",
                            table=(m.group("table") or "").lower() or None,
                            unit=int(m.group("unit")) if m.group("unit") else None,
                            action=m.group("action") or "kill"))
    return out


class _HookState:
    """What the hooks of this process did (shared by all threads)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.fired: set[int] = set()  # kill/raise specs fire once
        self.parked: dict[str, threading.Event] = {}  # table -> set when one of its threads parked

    def parked_event(self, table: str) -> threading.Event:
        with self.lock:
            return self.parked.setdefault(table.lower(), threading.Event())


HOOKS = _HookState()


def fault_specs() -> list[HookSpec]:
    return parse_hook_specs(os.environ.get("LAKEKEEPER_FAULT_AT"))


def parking_enabled() -> bool:
    """True when a kill spec names a table: the CLI then runs each table in
    its own thread so that one process can park several of them."""
    return any(s.table and s.action == "kill" for s in fault_specs())


def hard_kill() -> None:
    """SIGKILL the Spark driver JVM (when it is our child, plain-python mode)
    and then this process: nothing runs after this, no shutdown hook, no
    finally block, like a machine that loses power."""
    try:
        from pyspark import SparkContext

        sc = SparkContext._active_spark_context  # pylint: disable=protected-access
        if sc is not None and os.environ.get("PYSPARK_GATEWAY_PORT") is None:
            pid = int(java_class(sc._jvm, "java.lang.ProcessHandle").current().pid())  # pylint: disable=protected-access
            if pid != os.getpid():
                os.kill(pid, signal.SIGKILL)
    except Exception:  # noqa: BLE001 - best effort; the kill below is what matters
        pass
    os.kill(os.getpid(), signal.SIGKILL)


_STALLS: list[float] = []  # monotonic times at which the waiting ``=stall`` pauses began
_STALLS_LOCK = threading.Lock()


def stalled_since() -> float | None:
    """When the ``=stall`` pause points waiting in this process began (the
    earliest), None when none waits: leases taken before then are "stopped"."""
    with _STALLS_LOCK:
        return min(_STALLS) if _STALLS else None


def _pause(spec_tag: str, stall: bool = False) -> None:
    if not stall:
        _wait_paused(spec_tag)
        return
    began = time.monotonic()
    with _STALLS_LOCK:
        _STALLS.append(began)
    try:
        _wait_paused(spec_tag)
    finally:
        with _STALLS_LOCK:
            _STALLS.remove(began)


def _wait_paused(spec_tag: str) -> None:
    folder = os.environ.get("LAKEKEEPER_PAUSE_DIR") or "."
    timeout = float(os.environ.get("LAKEKEEPER_PAUSE_TIMEOUT", "600"))
    paused = os.path.join(folder, spec_tag + ".paused")
    resume = os.path.join(folder, spec_tag + ".resume")
    with open(paused + ".tmp", "w", encoding="utf-8") as fh:
        fh.write(json.dumps({"pid": os.getpid(), "at": time.time()}))
    os.replace(paused + ".tmp", paused)
    log.warning("test hook: paused at %s until %s exists", spec_tag, resume)
    deadline = time.time() + timeout
    while not os.path.exists(resume):
        if time.time() > deadline:
            log.warning("test hook: pause at %s timed out; going on", spec_tag)
            return
        time.sleep(0.05)


def fault_point(step: str, when: str, table: str | None = None, unit: int | None = None) -> None:
    """Test hooks (see the module docstring); a no-op in production."""
    pause = os.environ.get("LAKEKEEPER_PAUSE_AT")
    if pause:
        for spec in parse_hook_specs(pause):
            if spec.matches(step, when, table, unit):
                tag = f"{(table or 'any').lower()}.{step}{'_after' if when == 'after' else ''}"
                _pause(tag.replace(":", "_").replace("/", "_"), stall=spec.action == "stall")
                break
    if not os.environ.get("LAKEKEEPER_FAULT_AT"):
        return
    for i, spec in enumerate(fault_specs()):
        if not spec.matches(step, when, table, unit):
            continue
        with HOOKS.lock:
            if i in HOOKS.fired:
                continue
            HOOKS.fired.add(i)
        where = f"{step}{':after' if when == 'after' else ''} of {table or '?'}" + (
            f" unit {unit}" if unit is not None else "")
        if spec.action == "raise":
            raise InjectedFault(f"injected fault at {where}")
        if spec.action == "transient":
            raise_transient(where)
        if spec.table:
            log.warning("test hook: parking at %s", where)
            HOOKS.parked_event(spec.table).set()
            threading.Event().wait()  # forever: the CLI kills the process
        log.warning("test hook: killing the process at %s", where)
        hard_kill()


def _closed_port() -> int:
    """A local TCP port nobody listens on (bound by the OS, then closed)."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def raise_transient(where: str) -> None:
    """``=transient``: a real refused connection from the driver's JVM (the
    Py4J error carries ``java.net.ConnectException``), else its text."""
    log.warning("test hook: a refused connection at %s", where)
    try:
        from pyspark import SparkContext

        sc = SparkContext._active_spark_context  # pylint: disable=protected-access
    except ImportError:  # pragma: no cover - the engine always has pyspark
        sc = None
    if sc is not None:
        sc._jvm.java.net.Socket("127.0.0.1", _closed_port())  # pylint: disable=protected-access
    raise InjectedConnectionRefused(f"java.net.ConnectException: Connection refused (at {where})")


def tamper_staging(fs: Any, staging: str) -> None:
    """``LAKEKEEPER_FAULT_AT=tamper_staging``: duplicate the first staged
    file, so that verification must fail."""
    if os.environ.get("LAKEKEEPER_FAULT_AT") == "tamper_staging":
        fs.duplicate_file(f"{staging}/{fs.list_dir(staging).files[0].name}", f"{staging}/part-dup")


def wrong_staging_ec(fs: Any, table: str, staging: str) -> bool:
    """``LAKEKEEPER_WRONG_STAGING_EC=<db.table>``: the staging of
    that table's units made now and given the wrong erasure coding policy
    (see the module). True when it was (the copy is then written into it)."""
    if os.environ.get("LAKEKEEPER_WRONG_STAGING_EC", "").lower() != table.lower():
        return False
    if not fs.exists(staging):
        fs.mkdirs(staging)
    wrong = None if fs.erasure_coding_policy(staging) else "XOR-2-1-1024k"
    log.warning("test hook: giving %s the erasure coding policy %s", staging, wrong or "replication")
    fs.set_erasure_coding_policy(staging, wrong)
    return True


def write_with_table_descriptor() -> bool:
    """``LAKEKEEPER_FAULT_AT=table_descriptor``: text/Avro units are written
    with the table's storage descriptor instead of their partition's own
    (what the engine did before), so that content verification, which reads
    the staged copy back through the partition's own, must catch it."""
    return os.environ.get("LAKEKEEPER_FAULT_AT") == "table_descriptor"


def alter_batch_value(spark: Any, fs: Any, table: Any, unit_dir: str, codec_name: str | None) -> None:
    """``LAKEKEEPER_FAULT_AT=alter_batch_value``: as ``alter_staged_value``, in
    each unit's directory of a batch written in one job (``rewrite/batch.py``)
    before its read-back; the units written one by one afterwards are not
    altered."""
    if os.environ.get("LAKEKEEPER_FAULT_AT") == "alter_batch_value":
        alter_staged_value(spark, fs, table, unit_dir, codec_name, hook="alter_batch_value")


def alter_staged_value(spark: Any, fs: Any, table: Any, staging: str, codec_name: str | None,
                       hook: str = "alter_staged_value") -> None:
    """``LAKEKEEPER_FAULT_AT=alter_staged_value``: one value of the first
    staged file changed, nothing else (text: one character of the first
    line; Parquet/ORC: the first string column of one row, the file
    rewritten with the same codec)."""
    if os.environ.get("LAKEKEEPER_FAULT_AT") != hook:
        return
    first = f"{staging}/{fs.list_dir(staging).files[0].name}"
    if table.format == "text":
        text = fs.read_text(first)
        i = next(i for i, c in enumerate(text) if c.isalpha())
        fs.delete(first, recursive=False)
        fs.write_text(first, text[:i] + ("x" if text[i] != "x" else "y") + text[i + 1:])
        return
    from pyspark.sql import Row

    df = spark.read.format(table.format).load(first)
    rows = [r.asDict() for r in df.collect()]
    col = next(f.name for f in df.schema.fields if f.dataType.typeName() == "string")
    rows[0][col] = f"{rows[0][col]}!"
    tmp = f"{staging}/_lk_altered"
    writer = spark.createDataFrame([Row(**r) for r in rows], df.schema).repartition(1).write.format(table.format)
    writer.option("compression", codec_name).save(tmp) if codec_name else writer.save(tmp)
    (written,) = fs.list_dir(tmp).files
    fs.delete(first, recursive=False)
    fs.rename(f"{tmp}/{written.name}", first)
    fs.delete(tmp)


def run_parking(ctx: Any, tables: list[str], run_one: Callable[[str], dict[str, Any]]) -> list[dict[str, Any]]:
    """Fault-injection mode (``LAKEKEEPER_FAULT_AT=<step>@<db.table>``, tests
    only): each table runs in its own thread (up to PARKING_TABLES at a time,
    its units one at a time); a table that reaches its fault point parks
    there. When every table is finished or parked, the process is killed:
    one process leaves many tables interrupted at chosen steps, each exactly
    as a crash at that step would (tables are independent)."""
    if getattr(ctx.settings, "parallelism", 1) != 1:  # units one at a time: deterministic parking
        ctx.settings = dataclasses.replace(ctx.settings, parallelism=1)
    # One unit job per table: a parked table keeps its slot until the kill,
    # so the budget must cover every table (PARKING_TABLES bounds the threads).
    slots = ctx.job_slots()
    for i in range(1, max(PARKING_TABLES, len(tables))):
        slots.put(i)
    boxes: dict[str, dict[str, Any]] = {}
    done: dict[str, threading.Event] = {}
    pending, active, parked = list(tables), [], []

    def work(name: str) -> None:
        try:
            boxes[name]["res"] = run_one(name)
        finally:
            done[name].set()

    while pending or active:
        while pending and len(active) < PARKING_TABLES:
            name = pending.pop(0)
            boxes[name], done[name] = {}, threading.Event()
            threading.Thread(target=work, args=(name,), name=f"lakekeeper-{name}", daemon=True).start()
            active.append(name)
        time.sleep(0.05)
        for name in list(active):
            if done[name].is_set():
                active.remove(name)
            elif HOOKS.parked_event(name).is_set():
                active.remove(name)
                parked.append(name)
    finished = [boxes[n]["res"] for n in tables if "res" in boxes.get(n, {})]
    if parked:
        log.warning("test hook: %d table(s) parked (%s); killing the process", len(parked), ", ".join(parked))
        partial = os.environ.get("LAKEKEEPER_FAULT_RESULTS")
        if partial:  # the results of the tables that finished before the kill
            with open(partial, "w", encoding="utf-8") as fh:
                json.dump(finished, fh, default=str)
        hard_kill()
    return finished
