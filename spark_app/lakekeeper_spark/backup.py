"""The backup table: a DDL clone of the source (``CREATE TABLE ... LIKE``)
with ``external.table.purge=false``, in the same database.

While a compaction runs it points at the live data; after each unit's swap
it is repointed at the moved-aside original (``.lk_old``), so when the run
ends it is a readable table of exactly the original files of what was
compacted. Its properties tie it to the run and its journal.
"""

from __future__ import annotations

import dataclasses
import logging
import time

from .catalog import Catalog
from .model import TableInfo, TablePlan, Unit
from .planner import backup_table_pattern, run_id_time

log = logging.getLogger(__name__)

PROP_OF = "lakekeeper.backup_of"
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
            PROP_CREATED: str(int(time.time())),
            PROP_JOURNAL: plan.journal_dir,
        },
    )
    if table.is_partitioned:
        catalog.add_partitions(db, name, [(u.partition or {}, u.location) for u in units])


def repoint(catalog: Catalog, table: TableInfo, plan: TablePlan, unit: Unit) -> None:
    db, name = plan.backup_table.split(".")
    catalog.set_location(db, name, unit.old, unit.partition if table.is_partitioned else None)


def forget_unit(catalog: Catalog, table: TableInfo, plan: TablePlan, unit: Unit) -> None:
    """A unit that was not swapped has no place in the backup."""
    if table.is_partitioned:
        db, name = plan.backup_table.split(".")
        catalog.drop_partition(db, name, unit.partition or {})


def set_pinned(catalog: Catalog, b: BackupRef, pinned: bool) -> None:
    """Pin (or unpin) a backup: cleanup never deletes a pinned backup."""
    catalog.set_properties(b.db, b.name, {PROP_PINNED: "true" if pinned else "false"})
    b.pinned = pinned


def find_backups(catalog: Catalog, db: str, table: str, prefix: str) -> list[BackupRef]:
    """Backups of ``db.table``, oldest first."""
    pattern = backup_table_pattern(prefix, table)
    out = []
    for name in catalog.list_tables(db):
        m = pattern.match(name)
        if not m:
            continue
        info = catalog.get_table(db, name)
        if info.properties.get(PROP_OF) != f"{db}.{table}":
            continue
        run_id = info.properties.get(PROP_RUN, "")
        created = info.properties.get(PROP_CREATED)
        out.append(
            BackupRef(
                db=db,
                name=name,
                run_id=run_id,
                created_at=float(created) if created else run_id_time(run_id).timestamp(),
                journal_dir=info.properties.get(PROP_JOURNAL, ""),
                pinned=info.properties.get(PROP_PINNED, "false").lower() == "true",
            )
        )
    out.sort(key=lambda b: (b.created_at, b.run_id))
    return out
