"""The backup table: a DDL clone of the source (``CREATE TABLE ... LIKE``)
with ``external.table.purge=false``, in the same database.

While a compaction runs it points at the live data; after a unit's swap it
is repointed at the moved-aside original (``.lk_old``): a table at once, a
partitioned table's partitions in groups (``PendingRepoints``). When the run
ends it is a readable table of exactly the original files of what was
compacted. Its properties tie it to the run and its journal.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import threading
import time
from typing import Callable

from .catalog import Catalog
from ..report.errors import LakekeeperError, java_message
from ..storage.layout import BACKUP_OF_PROPERTY, backup_table_pattern, maybe_backup_of, run_id_time
from ..report.model import TableInfo, TablePlan, Unit

log = logging.getLogger(__name__)

PROP_OF = BACKUP_OF_PROPERTY
PROP_RUN = "lakekeeper.run_id"
PROP_CREATED = "lakekeeper.created_at"
PROP_JOURNAL = "lakekeeper.journal_dir"
PROP_PINNED = "lakekeeper.pinned"


@dataclasses.dataclass
class BackupRef:
    db: str
    name: str
    run_id: str
    created_at: float
    journal_dir: str
    pinned: bool

    @property
    def full_name(self) -> str:
        return f"{self.db}.{self.name}"


def create_backup(catalog: Catalog, table: TableInfo, plan: TablePlan, units: list[Unit]) -> None:
    db, name = plan.backup_table.split(".")
    catalog.create_clone(
        table,
        db,
        name,
        table.location or "",
        {
            PROP_OF: table.full_name,
            PROP_RUN: plan.run_id,
            # to the millisecond: backups are ordered by it ("newest", keep_last), and two runs a second apart
            # or less happen (their run ids' random suffixes do not say which came first)
            PROP_CREATED: f"{time.time():.3f}",
            PROP_JOURNAL: plan.journal_dir,
        },
    )
    if table.is_partitioned:
        catalog.add_partitions(db, name, [(u.partition or {}, u.location) for u in units])
        # each unit repoints its backup partition after its swap: read now, all in one listing
        try:
            catalog.prefetch_partitions(table, db, name)
        except Exception:  # noqa: BLE001 - only a saving: each partition is then read when it is repointed
            log.warning("%s: the backup's partitions could not be listed ahead; read one at a time", plan.backup_table,
                        exc_info=True)


class BackupInProgress:
    """``create`` (the backup table's Metastore work) on its own thread, so it
    overlaps the units' Spark writes instead of delaying the first of them.
    The backup is first needed at a unit's swap: each unit calls ``wait``
    before it moves anything (and a failing unit ``settle`` before it undoes
    itself, so the two never edit the backup table at the same time)."""

    def __init__(self, create: Callable[[], None]):
        self._error: BaseException | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(create,), name="lakekeeper-backup", daemon=True)
        self._thread.start()

    def _run(self, create: Callable[[], None]) -> None:
        try:
            create()
        except BaseException as exc:  # noqa: BLE001 - handed to every waiting unit and to the table
            log.error("creating the backup table failed: %s", exc)
            self._error = exc
        finally:
            self._done.set()

    def failed(self) -> bool:
        """True once the creation has failed (without waiting): a unit that
        has not started writing yet does not start."""
        return self._done.is_set() and self._error is not None

    def settle(self) -> BaseException | None:
        """Wait until the creation has ended; its error, if it failed."""
        self._done.wait()
        return self._error

    def wait(self) -> None:
        """Wait for the backup table; raise if it could not be created (the
        unit then stops before its swap, the original untouched)."""
        if self.settle() is not None:
            raise LakekeeperError("error", f"the backup table could not be created ({self._error}); "
                                           f"nothing was swapped")


def repoint(catalog: Catalog, table: TableInfo, plan: TablePlan, unit: Unit) -> None:
    db, name = plan.backup_table.split(".")
    catalog.set_location(db, name, unit.old, unit.partition if table.is_partitioned else None)


# Swapped units whose backup partitions wait to be repointed together (``PendingRepoints``).
REPOINT_FLUSH_UNITS = 256


class PendingRepoints:
    """The backup partitions of a partitioned table's swapped units,
    repointed at their moved-aside originals in groups: one
    ``alterPartitions`` for up to ``flush_units`` partitions (whenever that
    many wait, and at the end of the table's units: ``flush``) instead of
    one Metastore write a partition, each behind the Hive client lock the
    units share.

    Until its group is written, a swapped unit's backup partition points at
    the live directory, whose rows are the original ones (the compacted copy
    was verified before the swap). A run that stops in between is finished
    by recovery, which repoints every swapped unit's backup partition that
    does not point at its original (``recovery.repoint_swapped``), so the
    unit's ``done`` record is written before its group."""

    def __init__(self, catalog: Catalog, plan: TablePlan, flush_units: int = REPOINT_FLUSH_UNITS):
        self.catalog, self.plan, self.flush_units = catalog, plan, max(1, flush_units)
        self._lock = threading.Lock()
        self._pending: list[Unit] = []
        self._failed: list[tuple[Unit, str]] = []
        self.groups = 0  # how many groups were written (the tests read it)

    def add(self, unit: Unit) -> None:
        """A unit swapped (and recorded done): repointed with the group it joins."""
        with self._lock:
            self._pending.append(unit)
            if len(self._pending) < self.flush_units:
                return
            group, self._pending = self._pending, []
        self._write(group)

    def flush(self) -> list[tuple[Unit, str]]:
        """Repoint what is waiting. Returns every unit of the table whose
        backup partition could not be repointed, with the error: recovery
        must finish them (the run's journal is then not closed)."""
        with self._lock:
            group, self._pending = self._pending, []
        if group:
            self._write(group)
        with self._lock:
            return list(self._failed)

    def _write(self, group: list[Unit]) -> None:
        db, name = self.plan.backup_table.split(".")
        try:
            outcomes: list[Exception | None] = self.catalog.set_locations(
                db, name, [(u.partition or {}, u.old) for u in group])
        except Exception as exc:  # noqa: BLE001 - every unit of the group waits for recovery
            outcomes = [exc] * len(group)
        failed = [(u, java_message(exc)) for u, exc in zip(group, outcomes) if exc is not None]
        for u, message in failed:
            log.error("%s: the backup partition of %s could not be repointed at %s: %s", self.plan.backup_table,
                      u.spec, u.old, message)
        with self._lock:
            self.groups += 1
            self._failed.extend(failed)


def set_pinned(catalog: Catalog, b: BackupRef, pinned: bool) -> None:
    """Pin (or unpin) a backup: cleanup never deletes a pinned backup."""
    catalog.set_properties(b.db, b.name, {PROP_PINNED: "true" if pinned else "false"})
    b.pinned = pinned


def find_backups(catalog: Catalog, db: str, table: str, prefix: str) -> list[BackupRef]:
    """Backups of ``db.table``, oldest first: those named with ``prefix``
    and those made under an earlier prefix (recognised by their property)."""
    pattern, other = backup_table_pattern(prefix, table), maybe_backup_of(table)
    out = []
    for name in catalog.list_tables(db):
        if not (pattern.match(name) or other.match(name)):
            continue
        info = catalog.get_table(db, name)
        if info.properties.get(PROP_OF) != f"{db}.{table}":
            continue
        out.append(_ref(db, name, info.properties))
    out.sort(key=lambda b: (b.created_at, b.run_id))
    return out


def _ref(db: str, name: str, props: dict[str, str]) -> BackupRef:
    run_id = props.get(PROP_RUN, "")
    created = props.get(PROP_CREATED)
    return BackupRef(
        db=db,
        name=name,
        run_id=run_id,
        created_at=float(created) if created else run_id_time(run_id).timestamp(),
        journal_dir=props.get(PROP_JOURNAL, ""),
        pinned=props.get(PROP_PINNED, "false").lower() == "true",
    )


# The tail every backup table name ends with, whatever its prefix (layout.backup_table_name).
_RUN_TAIL = re.compile(r"_(\d{8})_(\d{6})_([0-9a-f]{6})$")


def dropped_tables(catalog: Catalog, db: str) -> list[str]:
    """The tables of ``db`` dropped since a compaction whose backups are
    still there (``DB.TABLE``, sorted): found by the ``lakekeeper.backup_of``
    property of the tables whose name ends like a backup's (any prefix),
    naming a table of ``db`` that no longer exists."""
    names = catalog.list_tables(db)
    existing = {n.lower() for n in names}
    out = set()
    for name in names:
        if not _RUN_TAIL.search(name):
            continue
        try:
            source = catalog.get_table(db, name).properties.get(PROP_OF) or ""
        except Exception:  # noqa: BLE001 - dropped meanwhile, or unreadable: not ours to judge
            log.warning("%s.%s could not be read while looking for backups of dropped tables", db, name,
                        exc_info=True)
            continue
        sdb, _sep, stable = source.partition(".")
        if stable and sdb.lower() == db.lower() and stable.lower() not in existing:
            out.add(f"{db}.{stable}")
    return sorted(out)


def backup_partitions(catalog: Catalog, b: BackupRef) -> list[str]:
    """The partitions a backup holds the originals of (spec strings), or
    ``[""]`` for a non-partitioned table's."""
    info = catalog.get_table(b.db, b.name)
    if not info.is_partitioned:
        return [""]
    return [p.spec_str for p in catalog.list_partitions(info)]
