"""What lakekeeper 0.0.x left behind, handled by today's commands
(docs/upgrading-from-0.0.x.md): its backups reported by analyze with the
retention verdict a cleanup would give them, its ``__old_``/``__compact_tmp_``
directories that no backup accounts for reported as leftovers (never
touched), a table rolled back from its 0.0.x backup the way 0.0.6 did it,
and a 0.0.x backup deleted by cleanup the way 0.0.6 did it, under today's
retention policy. Here, below the commands, because analyze, rollback and
cleanup share it.

0.0.x kept no journal: a 0.0.x rollback or cleanup is not journaled either.
It moves the compacted directory aside (a hidden ``.lk_trash`` sibling)
before it puts the original back, so the original is never deleted, and it
moves or deletes only directories whose live sibling is the table's (or the
partition's) location today.
"""

from __future__ import annotations

import time
from typing import Any

from ..catalog.context import Context
from ..catalog.legacy import LegacyBackupRef, legacy_units
from ..policy.retention import backup_verdicts
from ..report.errors import LakekeeperError, Refused, java_message
from ..report.model import TableInfo, TablePlan
from ..report.results import table_result
from ..storage.layout import split_path, trash_path
from ..storage.legacy import LEGACY_VERSION, OLD_KIND, parse_legacy_leftover


def legacy_backup_facts(ctx: Context, info: TableInfo, backups: list[Any],
                        legacy: list[LegacyBackupRef]) -> list[dict[str, Any]]:
    """analyze: each 0.0.x backup, its original directories and the verdict
    of a cleanup with the run's options (counted with today's ``backups``:
    one policy over both)."""
    out = []
    for b, v in backup_verdicts(list(backups) + list(legacy), ctx.settings, time.time()):
        if not isinstance(b, LegacyBackupRef):
            continue
        entry = dict(v.to_dict(), version=LEGACY_VERSION, created_at=int(b.created_at))
        try:
            units = legacy_units(ctx.catalog, ctx.fs, info, b)
            present = [u["old"] for u in units if u["moved"] and ctx.fs.exists(u["old"])]
            summaries = [ctx.fs.content_summary(path) for path in present]
            entry.update(units=len(units), bytes=sum(x["length"] for x in summaries),
                         files=sum(x["file_count"] for x in summaries),
                         missing=sum(1 for u in units if u["moved"]) - len(present), directories=present)
        except Exception as exc:  # noqa: BLE001 - one odd backup must not hide the others
            entry.update(units=None, bytes=None, files=None, error=java_message(exc))
        out.append(entry)
    return out


def legacy_leftovers(ctx: Context, info: TableInfo, p: TablePlan, legacy: list[LegacyBackupRef]) -> list[dict[str, str]]:
    """analyze: ``<dir>__old_<ts>`` and ``<dir>__compact_tmp_<ts>`` next to
    the table's units that no 0.0.x backup points at (a 0.0.x run that
    crashed, or whose backup table was dropped by hand). Reported, never
    touched: 0.0.6 refused to start while one was there."""
    referenced = set()
    for b in legacy:
        try:
            referenced.update(u["old"] for u in legacy_units(ctx.catalog, ctx.fs, info, b))
        except Exception:  # noqa: BLE001 - then its directories are reported as leftovers
            pass
    lives = {u.location.rstrip("/") for u in p.units if u.location}
    found = []
    for parent in sorted({split_path(loc)[0] for loc in lives}):
        for name, is_dir in ctx.fs.list_names(parent):
            parsed = parse_legacy_leftover(name)
            path = f"{parent}/{name}"
            if not parsed or not is_dir or f"{parent}/{parsed[0]}" not in lives or path in referenced:
                continue
            what = ("the original files of a 0.0.x compaction" if parsed[1] == OLD_KIND
                    else "the copy a 0.0.x compaction was writing")
            found.append({"path": path, "kind": parsed[1], "version": LEGACY_VERSION, "timestamp": parsed[2],
                          "reason": f"{what}, in no 0.0.x backup; left untouched (inspect it, then delete it "
                                    f"or put it back by hand)"})
    return found


def _unit_result(ctx: Context, u: dict[str, Any], status: str) -> dict[str, Any]:
    now, orig = ctx.fs.list_dir(u["location"]), ctx.fs.list_dir(u["old"])
    return {"spec": u["spec"], "location": u["location"], "files_before": len(now.files),
            "files_after": len(orig.files), "bytes_before": now.total_bytes, "bytes_after": orig.total_bytes,
            "rows_before": None, "rows_after": None, "status": status, "reason": f"restore {u['old']}"}


def legacy_rollback(ctx: Context, info: TableInfo, b: LegacyBackupRef, recovered: list[Any]) -> dict[str, Any]:
    """Restore a table from its 0.0.x backup as 0.0.6's ``rollback`` did:
    each ``__old_<ts>`` directory back to its live path (the compacted
    directory aside, then deleted), a backup pointing elsewhere set back as
    the table's (partition's) location, then the backup table dropped."""
    full = info.full_name
    if ctx.settings.where:
        raise Refused("legacy_backup", f"{b.full_name} is a lakekeeper {LEGACY_VERSION} backup: it is restored "
                                       f"whole, as 0.0.x did; roll back without where")
    units = legacy_units(ctx.catalog, ctx.fs, info, b)
    for u in units:
        if u["moved"] and not u["live_ok"]:
            raise LakekeeperError("backup_mismatch", f"{b.full_name} points at {u['old']}, whose live directory "
                                                     f"{u['location']} is not a location of {full} now; not "
                                                     f"touching it")
        if u["moved"] and not ctx.fs.exists(u["old"]):
            raise LakekeeperError("backup_incomplete", f"the original directory {u['old']} of {b.full_name} is "
                                                       f"gone; not rolling back")
    status = "planned" if ctx.settings.dry_run else "rolled_back"
    parts = [_unit_result(ctx, u, status) for u in units]
    what = f"{len(units)} unit(s) from the lakekeeper {LEGACY_VERSION} backup {b.full_name}"
    extra = {"backup_table": b.full_name, "run_id": ctx.run_id, "legacy": LEGACY_VERSION, "partitions": parts}
    if ctx.settings.dry_run:
        return table_result(full, "planned", f"would restore {what}", would_change=True, **extra)
    for u in units:
        if u["moved"]:
            trash = trash_path(u["location"], ctx.run_id)
            if ctx.fs.exists(u["location"]):
                ctx.fs.rename(u["location"], trash)
            ctx.fs.rename(u["old"], u["location"])
            if ctx.fs.exists(trash):
                ctx.fs.delete(trash)
        elif u["old"] and not u["live_ok"]:  # 0.0.6's fallback: ALTER TABLE ... SET LOCATION to the backup's
            ctx.catalog.set_location(info.db, info.name, u["old"], u["partition"])
    ctx.catalog.drop_table(b.db, b.name)
    ctx.catalog.refresh(info.db, info.name)
    return table_result(full, "rolled_back", f"restored {what}", changed=True, recovered=recovered, **extra)


def legacy_cleanup(ctx: Context, info: TableInfo, b: LegacyBackupRef,
                   v: Any) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """Delete a 0.0.x backup that the retention policy chose, as 0.0.6's
    ``cleanup`` did (its ``__old_`` directories, then the backup table):
    (the removed entry, None), or (None, the kept entry) when an original
    directory's live sibling is gone (then they are the only copy)."""
    units = legacy_units(ctx.catalog, ctx.fs, info, b)
    doomed = [u for u in units if u["moved"] and ctx.fs.exists(u["old"])]
    stranded = [u for u in doomed if not u["live_ok"] or not ctx.fs.exists(u["location"])]
    if stranded:
        return None, {"backup_table": b.full_name, "run_id": b.run_id, "age_seconds": v.age_seconds,
                      "pinned": False, "verdict": "keep", "rule": "stranded", "version": LEGACY_VERSION,
                      "reason": f"{stranded[0]['old']} holds original files and its live directory "
                                f"{stranded[0]['location']} is not a location of {info.full_name}; not deleted "
                                f"(move them where they belong, then clean up again)"}
    size = sum(ctx.fs.content_summary(u["old"])["length"] for u in doomed)
    entry = {"backup_table": b.full_name, "run_id": b.run_id, "bytes": size, "units": len(units),
             "age_seconds": v.age_seconds, "pinned": False, "verdict": "delete", "reason": v.reason,
             "rule": v.rule, "version": LEGACY_VERSION, "directories": [u["old"] for u in doomed]}
    if not ctx.settings.dry_run:
        for u in doomed:
            ctx.fs.delete(u["old"])
        ctx.catalog.drop_table(b.db, b.name)
    return entry, None
