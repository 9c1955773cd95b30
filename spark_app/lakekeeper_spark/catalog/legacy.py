"""The backups lakekeeper 0.0.x left in the Metastore (storage/legacy.py has
its names): found next to today's (``find_legacy_backups``), told apart from
tables (``is_legacy_backup``: never compacted), and read as units (live
directory, original directory) the way 0.0.6's rollback and cleanup read
them (docs/upgrading-from-0.0.x.md)."""

from __future__ import annotations

import dataclasses
from typing import Any

from .backup import PROP_PINNED, BackupRef
from .catalog import Catalog
from ..report.model import TableInfo
from ..storage.layout import BACKUP_OF_PROPERTY
from ..storage.legacy import LEGACY_VERSION, is_legacy_old, legacy_backup_time, legacy_live_of


@dataclasses.dataclass
class LegacyBackupRef(BackupRef):
    """A 0.0.x backup: no run, no journal; its ``run_id`` is its name (what
    ``--pin``, ``--run-id`` and the results show)."""

    legacy: str = LEGACY_VERSION


def is_legacy_backup(info: TableInfo, prefix: str) -> bool:
    """A table named as 0.0.x named its backups (and not one of today's)."""
    return not info.properties.get(BACKUP_OF_PROPERTY) and legacy_backup_time(info.name, prefix) is not None


def find_legacy_backups(catalog: Catalog, db: str, table: str, prefix: str) -> list[LegacyBackupRef]:
    """The 0.0.x backups of ``db.table``, oldest first (as 0.0.6's
    ``list_backups``: by name, ``<prefix>_<table>_<stamp>``)."""
    out = []
    for name in catalog.list_tables(db):
        created = legacy_backup_time(name, prefix, table)
        if created is None:
            continue
        props = catalog.get_table(db, name).properties
        if props.get(BACKUP_OF_PROPERTY):
            continue
        out.append(LegacyBackupRef(db=db, name=name, run_id=name, created_at=created, journal_dir="",
                                   pinned=props.get(PROP_PINNED, "false").lower() == "true"))
    out.sort(key=lambda b: (b.created_at, b.name))
    return out


def legacy_units(catalog: Catalog, fs: Any, info: TableInfo, b: BackupRef) -> list[dict[str, Any]]:
    """What a 0.0.x backup points at, as 0.0.6 read it: the table's location
    (not partitioned) or each partition it holds. ``old`` is the original
    directory; ``location`` its live directory: ``old`` without its
    ``__old_<ts>`` (``moved``: True), or, when the backup points at no
    ``__old_`` directory (its run stopped before the swap, or a backup of a
    0.0.x version before the rename swap), the backup's location itself.
    ``live_ok`` says whether the live
    directory is the table's (or the partition's) location today: what is
    not is never moved or deleted."""
    bkp = catalog.get_table(b.db, b.name)
    if not info.is_partitioned:
        where = [("", None, bkp.location or "")]
        lives = {"": fs.qualify(info.location or "").rstrip("/")}
    else:
        where = [(p.spec_str, p.spec, p.location) for p in catalog.list_partitions(bkp)]
        lives = {p.spec_str: fs.qualify(p.location).rstrip("/") for p in catalog.list_partitions(info)}
    out = []
    for spec, partition, loc in where:
        old = fs.qualify(loc).rstrip("/") if loc else ""
        moved = bool(old) and is_legacy_old(old)
        live = legacy_live_of(old) if moved else old
        out.append({"spec": spec, "partition": partition, "old": old, "location": live, "moved": moved,
                    "live_ok": bool(live) and lives.get(spec) == live})
    return out
