"""The run journal: one hidden directory per table run, on the table's own
filesystem, with one small JSON file for the table and one per unit.

A step is recorded *before* it is performed; recovery then looks at the
filesystem to see whether the step happened. Files are replaced so that a
reader finds the previous or the new record, never a torn one: the new
record is written to ``<file>.new.<time-ordered suffix>``, the old one
dropped, the new one renamed in place; a reader that finds no ``<file>``
takes the newest pending ``.new.`` file.

The run's plan (``units``: each unit's paths and the names, sizes and
times of the files it planned, which for a large table is most of the
journal) is written once, before ``table.json``, as ``plan-<n>.json``
records of up to ``PLAN_RECORD_UNITS`` units each, and never rewritten:
``table.json`` names how many there are, and each table step replaces a
record of the table's own fields only (a whole-table blob rewritten at
every step grows with the number of files). ``load`` puts the plan back
into the document; journals of earlier versions, whose ``table.json``
holds the units itself, load as they are.

Steps: ``table:creating_backup``, ``table:compacting``, ``table:finished``,
``table:rolling_back``, ``table:rolled_back`` (table level); unit level
``writing_staging``, ``verifying``, ``moving_kept``, ``moving_aside``, ``moving_in``,
``repointing_backup``, ``done``, ``rolling_back``, ``rolled_back``. Every
step is also a fault point of the crash tests' hooks (``faults``).
A compaction unit records two steps: ``moving_aside`` (from there on its
staged copy may be the only copy of its data, never deleted by recovery)
and ``done``; in minor mode (and a split) a third before them,
``moving_kept``: the files the unit keeps (name, from, to, length), moved by
rename into the staging next; recovery of a unit not swapped moves them back
before the staging is deleted. ``writing_staging``, ``verifying``, ``moving_in`` and
``repointing_backup`` are marked, not recorded (``unit_mark``): recovery
decides them from the filesystem exactly as the step recorded before each
(the plan names the staging directory: a staged copy and nothing moved is
undone; after the move aside, which of the live, original and staging
directories exist says how far the swap got, and a swapped unit is
completed, its backup partition repointed), so their records, a synced
file each, bought nothing. Journals of earlier versions hold them.

Unit records are appended, never replaced, to one file a process keeps
open for the run, ``units-<n>.jsonl`` (one JSON record a line; ``n``
counts up within the run: a resumed run, recovery say, opens the next
one). A record is whole (cumulative: it holds what the unit's earlier
steps recorded); for a unit, the last line of the highest-numbered file
wins. Units run several at a time: the first to record a step writes, the
units that record meanwhile go into the next write together
(``group_commit.GroupCommit``), and each returns once a sync (``hsync``
on HDFS, ``fsync`` on ``file://``) holds its record. No file is created,
renamed or deleted per record, and a run adds one file to the namespace
however many units it compacts. A killed writer may leave a last line
torn: nobody was told it was written, so no step it records began, and
it is skipped; a file it left open on HDFS is read as far as it was
synced (its lease recovered first if it cannot be read). On a filesystem
whose streams cannot be synced every write is a file of its own. Journals
of earlier versions, one ``unit-<index>.json`` per unit replaced in
place, load as before, under any appended record.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
import uuid
from typing import Any

from ..report.errors import LakekeeperError
from .faults import fault_point
from ..storage.append_log import AppendLog
from ..storage.fs import HadoopFS
from ..storage.group_commit import GroupCommit
from ..storage.layout import is_run_id

log = logging.getLogger(__name__)

# Unit steps, in protocol order.
UNIT_STEPS = (
    "writing_staging",
    "verifying",
    "moving_kept",
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

_PENDING = ".new."
PLAN_RECORD_UNITS = 1000


class Journal:
    def __init__(self, fs: HadoopFS, journal_dir: str, run_id: str):
        self.fs = fs
        self.dir = journal_dir.rstrip("/")
        self.run_id = run_id
        self.run_dir = f"{self.dir}/{run_id}"
        self._table: dict[str, Any] = {}  # table.json: the run's own fields (the plan's units apart)
        self._plan: list[dict[str, Any]] | None = None  # the plan's units (the plan records)
        self._units: dict[int, dict[str, Any]] = {}
        # Records whose pending leftovers (of a crashed writer) are known to
        # be gone: every record of a run directory that was empty when this
        # process started the run, else each one once swept.
        self._all_clean = False
        self._swept: set[str] = set()
        # unit records: lines appended to the open units-<n>.jsonl, one synced write per group of units recording at once
        self._unit_log: GroupCommit[dict[str, Any]] = GroupCommit(self._append_units)
        self._log: AppendLog | None = None  # the open units-<n>.jsonl
        self._unsyncable = False  # the filesystem's streams cannot be synced: every write a file of its own
        self._next_log: int | None = None  # the next file's number; None: after the highest in the run directory
        self._table_lock = threading.Lock()  # table.json: replaced by the table's thread and the units' (batches)

    @property
    def table_name(self) -> str | None:
        return self._table.get("table")

    def resume(self, doc: dict[str, Any], units: dict[int, dict[str, Any]]) -> "Journal":
        """Continue a loaded run (recovery): later records build on these."""
        if "plan_records" in doc:
            self._table = {k: v for k, v in doc.items() if k != "units"}
            self._plan = doc.get("units")
        else:  # an earlier version's journal: its plan stays inside table.json
            self._table, self._plan = dict(doc), None
        self._units = {i: dict(u) for i, u in units.items()}
        self._all_clean = False  # a crashed process may have left pending records
        return self

    # ------------------------------------------------------------ writing
    def start(self, doc: dict[str, Any]) -> None:
        """The run's first records: its plan (``doc["units"]``), then
        ``table.json`` (step ``planned``). A run directory without
        ``table.json`` is a run that crashed in here (``is_empty``)."""
        self.fs.mkdirs(self.run_dir)
        self._replicated_records()
        self._all_clean = not self.fs.list_names(self.run_dir)  # a new run: nothing to sweep, ever
        if self._all_clean:
            self._next_log = 0
        self._table = {k: v for k, v in doc.items() if k != "units"}
        self._plan = doc.get("units")
        if self._plan is not None:
            chunks = [self._plan[i:i + PLAN_RECORD_UNITS] for i in range(0, len(self._plan), PLAN_RECORD_UNITS)]
            for n, chunk in enumerate(chunks):
                self.fs.write_text(f"{self.run_dir}/{plan_record_name(n)}", json.dumps(chunk, sort_keys=True))
            self._table["plan_records"] = len(chunks)
        self._table.update(run_id=self.run_id, step="planned", updated=time.time())
        self.fs.write_text(f"{self.run_dir}/table.json", json.dumps(self._table, indent=1, sort_keys=True))

    def _replicated_records(self) -> None:
        """HDFS: the journal's directory under an erasure coded table
        directory inherits its policy, and an erasure coded file cannot be
        synced (``hsync`` does nothing; a reader sees nothing before
        ``close``): the records would be files written whole, durable only
        once closed. The directory is given the replication policy instead,
        so they are appended and synced as anywhere else (the lease and
        the heartbeats too, from the next file on). A refusal (a NameNode
        that does not allow it) leaves records written whole: a warning."""
        try:
            if self.fs.replicate_new_files(self.dir):
                log.info("%s: erasure coded; its records are replicated files from now on (synced appends)",
                         self.dir)
        except Exception:  # noqa: BLE001 - Py4JJavaError: the NameNode's refusal
            log.warning("%s is erasure coded and could not be given the replication policy: its records are "
                        "files written whole (durable once closed)", self.dir, exc_info=True)

    def table_step(self, step: str, **extra: Any) -> None:
        with self._table_lock:
            self._table.update(extra, step=step, updated=time.time())
            self._replace("table.json", json.dumps(self._table, indent=1, sort_keys=True))
        fault_point(f"table:{step}", "before", self.table_name)

    def add_batch_root(self, root: str) -> None:
        """Record (in ``table.json``, before anything is written there) a
        directory a batch of units is written into (``rewrite/batch.py``):
        recovery removes it; nothing in it is ever the only copy of data."""
        with self._table_lock:
            roots = list(self._table.get("batch_roots") or [])
            if root in roots:
                return
            self._table.update(batch_roots=roots + [root], updated=time.time())
            self._replace("table.json", json.dumps(self._table, indent=1, sort_keys=True))

    def unit_step(self, idx: int, step: str, **extra: Any) -> None:
        """Record a unit's step. Records are cumulative within an attempt:
        what an earlier step recorded (e.g. the names of the compacted
        files) stays. A step after ``aborted`` is a new attempt (a retry):
        it starts a fresh record, so nothing of the settled attempt (its
        code and reason, its kept files' moves) is read as the new one's."""
        prev = self._units.get(idx, {})
        doc = {} if prev.get("step") == "aborted" else dict(prev)
        doc.update(extra)
        doc.update(index=idx, step=step, updated=time.time())
        self._units[idx] = doc
        self._unit_log.submit(doc)  # returns once a sync holds its line (with other units' records, maybe)
        fault_point(step, "before", self.table_name, idx)

    def unit_mark(self, idx: int, step: str) -> None:
        """A unit step that recovery needs no record of (see the module's
        notes): its fault point only, at the moment its record would have
        been written, so the crash tests stop there as before."""
        fault_point(step, "before", self.table_name, idx)

    def _append_units(self, docs: list[dict[str, Any]]) -> list[None]:
        """Append ``docs`` to the run's open record file, synced
        (``GroupCommit``: one writer at a time)."""
        text = "".join(json.dumps(d, sort_keys=True) + "\n" for d in docs)
        if self._log is None:
            uri = f"{self.run_dir}/{unit_log_name(self._take_log_number())}"
            self._log = None if self._unsyncable else self.fs.open_log(uri)
            if self._log is None:  # streams cannot be synced here: a file a write
                self._unsyncable = True  # (asked once: open_log's answer made and removed a file)
                self.fs.write_text(uri, text)
                return [None] * len(docs)
        try:
            self._log.append(text)
        except BaseException:
            self._drop_log()  # the next write opens a new file; this one may end with a torn line
            raise
        return [None] * len(docs)

    def _take_log_number(self) -> int:
        if self._next_log is None:
            names = [n for n, is_dir in self.fs.list_names(self.run_dir) if not is_dir]
            self._next_log = 1 + max((i for i in map(unit_log_index, names) if i is not None), default=-1)
        n, self._next_log = self._next_log, self._next_log + 1
        return n

    def _drop_log(self) -> None:
        log_file, self._log = self._log, None
        if log_file is not None:
            try:
                log_file.close()
            except Exception:  # noqa: BLE001 - its records were synced one by one; nothing waits on the close
                log.warning("%s: closing the unit record file failed", self.run_dir, exc_info=True)

    def close(self) -> None:
        """Close the run's record file (a later record opens the next one)."""
        self._drop_log()

    def __enter__(self) -> "Journal":
        return self

    def __exit__(self, *_exc: Any) -> None:
        self.close()

    @property
    def unit_log_writes(self) -> int:
        """How many synced writes of unit records this process made (the tests read it)."""
        return self._unit_log.batches

    def _replace(self, name: str, text: str) -> None:
        sweep = not self._all_clean and name not in self._swept
        replace_record(self.fs, f"{self.run_dir}/{name}", text, sweep=sweep)
        if sweep:
            self._swept.add(name)

    def record(self, idx: int) -> dict[str, Any]:
        """The last record written for a unit by this process (or resumed)."""
        return dict(self._units.get(idx, {}))

    def table_record(self) -> dict[str, Any]:
        """The run's document as last written by this process (or resumed):
        the table record with the plan's units, as ``load`` returns it."""
        doc = dict(self._table)
        if self._plan is not None:
            doc["units"] = self._plan
        return doc

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
        if table and "plan_records" in table:  # the plan, written once before table.json
            plan: list[dict[str, Any]] = []
            for n in range(int(table["plan_records"])):
                name = plan_record_name(n)
                if name not in names:
                    raise LakekeeperError("journal_incomplete", f"{run_dir}/{name} is missing: the run's plan "
                                                                f"({table['plan_records']} records, written before "
                                                                f"table.json) cannot be read; not touching the run")
                plan += json.loads(fs.read_text(f"{run_dir}/{name}"))
            table["units"] = plan
        units: dict[int, dict[str, Any]] = {}
        bases = {n.split(_PENDING)[0] for n in names if n.startswith("unit-")}
        for base in sorted(bases):  # an earlier version's records, one file per unit
            idx = unit_index(base)
            if idx is None:
                continue
            text = read_record(fs, run_dir, base, names)
            if text:
                units[idx] = json.loads(text)
        logs = sorted((i, n) for i, n in ((unit_log_index(n), n) for n in names) if i is not None)
        for _i, name in logs:  # appended records, in the order they were written
            for doc in _read_unit_log(fs, f"{run_dir}/{name}"):
                units[int(doc["index"])] = doc
        return table, units

    @staticmethod
    def is_empty(fs: HadoopFS, journal_dir: str, run_id: str) -> bool:
        """A run directory with no record but (some of) its plan: a crash
        inside ``start``, before anything was done."""
        return all(plan_record_index(n) is not None for n, _is_dir in fs.list_names(f"{journal_dir.rstrip('/')}/{run_id}"))

    def remove(self) -> None:
        """Drop this run's records, and the journal directory once empty."""
        self.close()
        self.fs.delete(self.run_dir)
        self.fs.delete_if_empty(self.dir)  # never recursively: the table's lease may be in it


_UNIT_RECORD = re.compile(r"^unit-(\d{6,})\.json$")
_UNIT_LOG = re.compile(r"^units-(\d{6,})\.jsonl$")
_PLAN_RECORD = re.compile(r"^plan-(\d{6,})\.json(\.crc)?$")


def plan_record_name(n: int) -> str:
    """``plan-000000.json``: the n-th record of a run's plan."""
    return f"plan-{n:06d}.json"


def plan_record_index(name: str) -> int | None:
    """The index of a plan record's name (its checksum file's too), else None."""
    m = _PLAN_RECORD.match(name.lstrip("."))
    return int(m.group(1)) if m else None


def unit_index(name: str) -> int | None:
    """The unit index of an earlier version's record name (``unit-000042.json``,
    six digits at least), else None (pending copies, other files)."""
    m = _UNIT_RECORD.match(name)
    return int(m.group(1)) if m else None


def unit_log_name(n: int) -> str:
    """``units-000001.jsonl``: the n-th file of a run's appended unit records
    (six digits at least, more as needed: read back by number, not by name)."""
    return f"units-{n:06d}.jsonl"


def unit_log_index(name: str) -> int | None:
    """The number of a ``unit_log_name``, else None."""
    m = _UNIT_LOG.match(name)
    return int(m.group(1)) if m else None


def _read_unit_log(fs: HadoopFS, uri: str) -> list[dict[str, Any]]:
    """The records of one appended file, in order. A last line without its
    newline is a write its writer did not finish (killed): no unit was
    told it was written, so none went on to the step it records; skipped.
    An HDFS file its writer left open that cannot be read (the length of
    its last block unknown) is read again once its lease is recovered."""
    try:
        text = fs.read_text(uri)
    except Exception:  # noqa: BLE001
        try:
            recovered = fs.recover_lease(uri)
        except Exception:  # noqa: BLE001 - not HDFS underneath (viewfs, say): the read's own error says more
            recovered = False
        if not recovered:
            raise
        log.warning("%s: left open by a writer that stopped; read after recovering its lease", uri)
        text = fs.read_text(uri)
    lines = text.split("\n")
    if lines[-1]:
        log.warning("%s: its last record is torn (its writer stopped while writing it); skipped", uri)
    docs = []
    for n, line in enumerate(lines[:-1], start=1):
        try:
            doc = json.loads(line)
        except ValueError:
            doc = None
        if not isinstance(doc, dict) or "index" not in doc:
            raise LakekeeperError("journal_incomplete", f"{uri}: line {n} is not a unit record; not touching the run")
        docs.append(doc)
    return docs


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
