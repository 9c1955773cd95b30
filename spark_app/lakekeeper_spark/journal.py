"""The run journal: one hidden directory per table run, on the table's own
filesystem, with one small JSON file for the table and one per unit.

A step is recorded *before* it is performed; recovery then looks at the
filesystem to see whether the step happened. Files are replaced so that a
reader finds the previous or the new record, never a torn one: the new
record is written to ``<file>.new.<time-ordered suffix>``, the old one
dropped, the new one renamed in place; a reader that finds no ``<file>``
takes the newest pending ``.new.`` file.

Test hooks (unset in production), evaluated at every journaled step:

``LAKEKEEPER_FAULT_AT=<spec>[;<spec>...]`` with
``<spec> = <step>[:after][@<db.table>][#<unit index>][=kill|=raise]``
    ``kill`` (default) ends the process with SIGKILL (the JVM first, then
    Python) at that point. With ``@<db.table>`` the run parks the table's
    thread at the point instead and goes on with the next table; once every
    table is parked or finished the process is killed (``cli``), so one
    process leaves several tables interrupted at chosen steps. ``raise``
    raises ``InjectedFault`` there (the error path instead of a crash).
``LAKEKEEPER_PAUSE_AT=<spec>[;...]`` with ``LAKEKEEPER_PAUSE_DIR=<dir>``
    creates ``<dir>/<tag>.paused`` and waits for ``<dir>/<tag>.resume``
    (``<tag>`` = ``<db.table>.<step>[_after]``), so a test can act (e.g.
    write files as a concurrent writer would) at an exact moment.

Steps: ``table:creating_backup``, ``table:compacting``, ``table:finished``,
``table:rolling_back``, ``table:rolled_back`` (table level); unit level
``writing_staging``, ``verifying``, ``moving_aside``, ``moving_in``,
``repointing_backup``, ``done``, ``rolling_back``, ``rolled_back``; after
the renames ``moving_aside:after``, ``moving_in:after``,
``rollback_moved_compacted:after``, ``rollback_restored:after``.
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
import uuid
from typing import Any

from .fs import HadoopFS
from .planner import is_run_id

log = logging.getLogger(__name__)

# Unit steps, in protocol order.
UNIT_STEPS = (
    "writing_staging",
    "verifying",
    "moving_aside",
    "moving_in",
    "repointing_backup",
    "done",
)
# Terminal unit states besides "done".
UNIT_ABORTED = "aborted"
UNIT_ROLLING_BACK = "rolling_back"
UNIT_ROLLED_BACK = "rolled_back"

TABLE_STEPS = ("planned", "creating_backup", "compacting", "finished")


# ---------------------------------------------------------------- test hooks


class InjectedFault(Exception):
    """Raised by a ``=raise`` fault spec (tests only)."""


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
    r"(?:#(?P<unit>\d+))?(?:=(?P<action>kill|raise))?$"
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
            pid = int(sc._jvm.java.lang.ProcessHandle.current().pid())  # pylint: disable=protected-access
            if pid != os.getpid():
                os.kill(pid, signal.SIGKILL)
    except Exception:  # noqa: BLE001 - best effort; the kill below is what matters
        pass
    os.kill(os.getpid(), signal.SIGKILL)


def _pause(spec_tag: str) -> None:
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
                _pause(tag.replace(":", "_").replace("/", "_"))
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
        if spec.table:
            log.warning("test hook: parking at %s", where)
            HOOKS.parked_event(spec.table).set()
            threading.Event().wait()  # forever: the CLI kills the process
        log.warning("test hook: killing the process at %s", where)
        hard_kill()


# ---------------------------------------------------------------- the journal


_PENDING = ".new."


class Journal:
    def __init__(self, fs: HadoopFS, journal_dir: str, run_id: str):
        self.fs = fs
        self.dir = journal_dir.rstrip("/")
        self.run_id = run_id
        self.run_dir = f"{self.dir}/{run_id}"
        self._table: dict[str, Any] = {}
        self._units: dict[int, dict[str, Any]] = {}
        # Records whose pending leftovers (of a crashed writer) are known to
        # be gone: every record of a run directory that was empty when this
        # process started the run, else each one once swept.
        self._all_clean = False
        self._swept: set[str] = set()

    @property
    def table_name(self) -> str | None:
        return self._table.get("table")

    def resume(self, doc: dict[str, Any], units: dict[int, dict[str, Any]]) -> "Journal":
        """Continue a loaded run (recovery): later records build on these."""
        self._table = dict(doc)
        self._units = {i: dict(u) for i, u in units.items()}
        self._all_clean = False  # a crashed process may have left pending records
        return self

    # ------------------------------------------------------------ writing
    def start(self, doc: dict[str, Any]) -> None:
        self.fs.mkdirs(self.run_dir)
        self._all_clean = not self.fs.list_names(self.run_dir)  # a new run: nothing to sweep, ever
        self._table = dict(doc, run_id=self.run_id, step="planned", updated=time.time())
        self.fs.write_text(f"{self.run_dir}/table.json", json.dumps(self._table, indent=1, sort_keys=True))

    def table_step(self, step: str, **extra: Any) -> None:
        self._table.update(extra, step=step, updated=time.time())
        self._replace("table.json", json.dumps(self._table, indent=1, sort_keys=True))
        fault_point(f"table:{step}", "before", self.table_name)

    def unit_step(self, idx: int, step: str, **extra: Any) -> None:
        """Record a unit's step. Records are cumulative: what an earlier step
        recorded (e.g. the names of the compacted files) stays."""
        doc = dict(self._units.get(idx, {}))
        doc.update(extra)
        doc.update(index=idx, step=step, updated=time.time())
        self._units[idx] = doc
        self._replace(f"unit-{idx:06d}.json", json.dumps(doc, sort_keys=True))
        fault_point(step, "before", self.table_name, idx)

    def _replace(self, name: str, text: str) -> None:
        sweep = not self._all_clean and name not in self._swept
        replace_record(self.fs, f"{self.run_dir}/{name}", text, sweep=sweep)
        if sweep:
            self._swept.add(name)

    def record(self, idx: int) -> dict[str, Any]:
        """The last record written for a unit by this process (or resumed)."""
        return dict(self._units.get(idx, {}))

    def fault(self, step: str, idx: int | None = None) -> None:
        """The ``:after`` hook of a step (called right after its rename)."""
        fault_point(step, "after", self.table_name, idx)

    # ------------------------------------------------------------ reading
    @staticmethod
    def run_ids(fs: HadoopFS, journal_dir: str) -> list[str]:
        return sorted(n for n, is_dir in fs.list_names(journal_dir) if is_dir and is_run_id(n))

    @staticmethod
    def load(fs: HadoopFS, journal_dir: str, run_id: str) -> tuple[dict[str, Any], dict[int, dict[str, Any]]]:
        run_dir = f"{journal_dir.rstrip('/')}/{run_id}"
        names = [n for n, is_dir in fs.list_names(run_dir) if not is_dir]
        raw = read_record(fs, run_dir, "table.json", names)
        table = json.loads(raw) if raw else {}
        units: dict[int, dict[str, Any]] = {}
        bases = {n.split(_PENDING)[0] for n in names if n.startswith("unit-")}
        for base in sorted(bases):
            if not re.match(r"^unit-\d{6}\.json$", base):
                continue
            text = read_record(fs, run_dir, base, names)
            if text:
                units[int(base[5:11])] = json.loads(text)
        return table, units

    @staticmethod
    def is_empty(fs: HadoopFS, journal_dir: str, run_id: str) -> bool:
        """A run directory without any record: a crash inside ``start``."""
        return not fs.list_names(f"{journal_dir.rstrip('/')}/{run_id}")

    def remove(self) -> None:
        """Drop this run's records, and the journal directory once empty."""
        self.fs.delete(self.run_dir)
        if self.fs.exists(self.dir) and not self.fs.list_names(self.dir):
            self.fs.delete(self.dir)


def replace_record(fs: HadoopFS, uri: str, text: str, sweep: bool = True) -> None:
    """Write ``uri.new.<ns>``, drop ``uri``, rename: a reader finds the old or
    the new record. Suffixes sort by time, so after crashes at different
    moments the newest pending record wins; with ``sweep`` stale ones (left
    by a crashed writer) are removed - a listing of the directory, which a
    journal skips where it knows there are none."""
    parent, _sep, name = uri.rpartition("/")
    tmp = f"{uri}{_PENDING}{time.time_ns():020d}-{uuid.uuid4().hex[:6]}"
    fs.write_text(tmp, text)
    fs.delete(uri, recursive=False)
    fs.rename(tmp, uri)
    if not sweep:
        return
    stale = [n for n, is_dir in fs.list_names(parent) if not is_dir and n.startswith(name + _PENDING)]
    for n in stale:
        fs.delete(f"{parent}/{n}", recursive=False)


def read_record(fs: HadoopFS, folder: str, name: str, names: list[str] | None = None) -> str | None:
    """The record ``folder/name``: the file itself, else (a crash between
    dropping it and renaming its replacement) the newest pending one."""
    if names is None:
        names = [n for n, is_dir in fs.list_names(folder) if not is_dir]
    if name in names:
        return fs.read_text(f"{folder}/{name}")
    pending = sorted(n for n in names if n.startswith(name + _PENDING))
    for n in reversed(pending):
        text = fs.read_text(f"{folder}/{n}")
        try:
            json.loads(text)
            return text
        except ValueError:  # torn: written when the process died
            continue
    return None
