"""rollback: restore the most recent backup of a table exactly.

For each unit of the backup: compacted data aside (``.lk_trash``), original
back in place, files written into the live directory *after* the
compaction carried over (the compaction journaled the names of the files it
wrote; anything else is someone's new data), compacted data deleted; then
the backup table is dropped and the compaction's journal removed. Journaled
like a compaction, so an interrupted rollback is finished by ``recover``.

A rollback is refused when a compacted file is gone from the live
directory (someone rewrote it, e.g. ``INSERT OVERWRITE``): restoring the
originals then would bring back rows that were meant to be replaced.

With ``--run-id RUN`` the backup of that run is restored instead of the
newest one (an "undo run RUN" from an earlier job's artifact): refused
(``newer_run``) when a later run changed one of its units, whose own
backup holds that run's output; a table without a backup of RUN is
refused with ``not_found`` (passed over by a database run).

With ``--where FILTER`` only the partitions the filter selects are restored,
from the newest backup holding one of them (or from RUN's): a partial
rollback. The backup keeps its other partitions (their originals, its
journal) for a later rollback or cleanup; the restored ones leave it.

A unit whose partition was dropped after the compaction (``ALTER TABLE ...
DROP PARTITION``; its directory kept or deleted) is not restored: the
partition is not re-created, nothing of it is moved, and it is reported
``skipped`` with ``code: partition_dropped``. Its original files stay where
they are, and the backup table keeps exactly those units (the restored
ones leave it; their journal stays with it) so that a later cleanup finds
and frees them like any backup.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from ..catalog.backup import find_backups
from ..catalog.context import Context
from ..catalog.legacy import find_legacy_backups
from ..report.errors import LakekeeperError, Refused
from ..protocol.journal import Journal
from ..protocol.legacy import legacy_rollback
from ..storage.layout import journal_dir, trash_path
from ..protocol.recovery import PARTITION_DROPPED, backup_record, backup_units, finish_rollback, recover_table, update_statistics
from ..report.results import table_result
from ..catalog.tables import load_table, where_selection


def _selected(ctx: Context, info: Any, b: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(every unit of backup ``b``, the units the ``where`` filter selects)."""
    units = backup_units(ctx, info, b)
    if not ctx.settings.where:
        return units, units
    marks = [SimpleNamespace(spec=u["partition"] or {}) for u in units]
    picked = where_selection(ctx, info, marks)
    chosen = {id(p) for p in picked}
    return units, [u for u, m in zip(units, marks) if id(m) in chosen]


def _newest_backup(ctx: Context, info: Any, backups: list[Any]) -> tuple[Any, list[Any], list[Any]]:
    """The newest backup (with ``where``: the newest holding a selected
    partition): (backup, its units, the units to restore); no units to
    restore when no backup holds one."""
    for b in reversed(backups):
        units, selected = _selected(ctx, info, b)
        if selected:
            return b, units, selected
    return backups[-1], [], []


def _backup_of_run(ctx: Context, info: Any, full_name: str, backups: list[Any],
                   run: str) -> tuple[Any, list[Any], list[Any]]:
    """The backup of ``run`` (run id or backup table name), its units and the
    units to restore, refused when a later run changed one of those
    (restoring it would drop that run's result and leave its backup pointing
    at data that is gone). Units whose partition was dropped are not
    restored by either, so they do not count."""
    match = [i for i, b in enumerate(backups) if run in (b.run_id, b.name, b.full_name)]
    if not match:
        known = ", ".join(b.run_id for b in backups)
        raise Refused("not_found", f"{full_name} has no backup of run {run!r} to roll back to (backups: {known})")
    b = backups[match[0]]
    units, selected = _selected(ctx, info, b)
    mine = {u["location"] for u in selected if not u.get("partition_missing")}
    for later in backups[match[0] + 1:]:
        overlap = sorted(mine & {u["location"] for u in backup_units(ctx, info, later)
                                 if not u.get("partition_missing")})
        if overlap:
            raise Refused("newer_run", f"run {later.run_id} ({later.full_name}) changed {len(overlap)} unit(s) of run "
                                       f"{b.run_id} after it, e.g. {overlap[0]}; roll run {later.run_id} back first, "
                                       f"or roll back without run_id (the newest backup)")
    return b, units, selected


def _newest_legacy(ctx: Context, info: Any, backups: list[Any]) -> Any:
    """The table's newest backup if lakekeeper 0.0.x made it (with ``--run-id``:
    the 0.0.x backup of that name, refused unless it is the newest), else None."""
    legacy = find_legacy_backups(ctx.catalog, info.db, info.name, ctx.settings.backup_prefix)
    every = sorted(list(backups) + legacy, key=lambda b: (b.created_at, b.run_id))
    run = ctx.settings.rollback_run
    if run and legacy:
        match = [b for b in legacy if run in (b.name, b.full_name)]
        if match and match[0] is not every[-1]:
            raise Refused("newer_run", f"{every[-1].full_name} was made after {match[0].full_name}; roll it back "
                                       f"first, or roll back without run_id (the newest backup)")
        return match[0] if match else None
    return every[-1] if every and every[-1] in legacy else None


def rollback_table(ctx: Context, full_name: str) -> dict[str, Any]:
    info = load_table(ctx, full_name)
    recovered = [] if ctx.settings.dry_run else recover_table(ctx, info)
    backups = find_backups(ctx.catalog, info.db, info.name, ctx.settings.backup_prefix)
    legacy = _newest_legacy(ctx, info, backups)
    if legacy is not None:  # lakekeeper 0.0.x's backup is the newest: restored as 0.0.x did
        return legacy_rollback(ctx, info, legacy, recovered)
    if not backups:
        return table_result(full_name, "skipped", "no backup to roll back to", changed=bool(recovered),
                            run_id=ctx.run_id, recovered=recovered)
    if ctx.settings.rollback_run:
        b, every, units = _backup_of_run(ctx, info, full_name, backups, ctx.settings.rollback_run)
    else:
        b, every, units = _newest_backup(ctx, info, backups)
    if not units:  # where: nothing of it in this backup (or in any); else a backup that holds no partition
        of = f"the backup of run {b.run_id}" if ctx.settings.rollback_run else "any backup"
        reason = (f"no partition of {of} matches the where filter" if ctx.settings.where
                  else f"{b.full_name} holds no partition to restore")
        return table_result(full_name, "skipped", reason, changed=bool(recovered), run_id=ctx.run_id,
                            recovered=recovered, **({"where": ctx.settings.where} if ctx.settings.where else {}))
    partial = len(units) < len(every)  # where: the backup keeps the units it did not select
    dropped = [_dropped_result(ctx, b, u) for u in units if u.get("partition_missing")]
    units = [u for u in units if not u.get("partition_missing")]
    if not units:  # every partition of this backup (that the filter selects) was dropped since: nothing moved
        return table_result(full_name, "skipped", f"nothing restored from {b.full_name}: {dropped[0]['reason']}",
                            changed=bool(recovered), code=PARTITION_DROPPED, backup_table=b.full_name,
                            run_id=ctx.run_id, partitions=dropped, recovered=recovered,
                            notes=[_kept_note(b, dropped)])
    missing = [u["old"] for u in units if not ctx.fs.exists(u["old"])]
    if missing:
        raise LakekeeperError("backup_incomplete", f"original data of {b.full_name} is missing: {missing[:3]}")
    record = backup_record(ctx, info, b)
    for u in units:
        u["compacted"] = record.compacted.get(u["location"])
        kept = record.kept.get(u["location"]) or {}
        if kept:  # minor mode: the files it kept were moved into the live directory (not in the original)
            u["kept"] = sorted(kept)
        if u["compacted"] is None:
            continue
        live = {f.name for f in ctx.fs.list_dir(u["location"]).files}
        gone = sorted((set(u["compacted"]) | set(kept)) - live)
        if gone:
            raise LakekeeperError(
                "live_changed",
                f"{u['location']} no longer holds the compacted files {gone[:3]} (rewritten since the "
                f"compaction?); restoring {b.full_name} would bring back replaced rows; not rolling back")
    listings = ctx.fs.list_dirs([u["location"] for u in units] + [u["old"] for u in units])
    parts = []
    for u in units:
        now, orig = listings[u["location"]], listings[u["old"]]
        parts.append({
            "spec": u["spec"], "location": u["location"],
            "files_before": len(now.files), "files_after": len(orig.files) + len(u.get("kept") or []),
            "bytes_before": now.total_bytes,
            "bytes_after": orig.total_bytes + sum((record.kept.get(u["location"]) or {}).values()),
            "rows_before": record.rows.get(u["location"]),
            "rows_after": record.original_rows.get(u["location"], record.rows.get(u["location"])),
            "status": "planned" if ctx.settings.dry_run else "rolled_back",
            "reason": f"restore {u['old']}",
        })
    extra: dict[str, Any] = {"where": ctx.settings.where} if ctx.settings.where else {}
    if dropped:
        extra["notes"] = [_kept_note(b, dropped)]
    what = f"{len(units)} unit(s) from {b.full_name}"
    if partial:
        what = f"{len(units)} of the {len(every)} units of {b.full_name} (it keeps the other {len(every) - len(units)})"
    what += f"; {len(dropped)} skipped ({PARTITION_DROPPED})" if dropped else ""
    if ctx.settings.dry_run:
        return table_result(full_name, "planned", f"would restore {what}", would_change=True,
                            backup_table=b.full_name, run_id=ctx.run_id, partitions=parts + dropped, **extra)
    jdir = journal_dir(info)
    journal = Journal(ctx.fs, jdir, ctx.run_id)
    doc = {
        "command": "rollback",
        "table": info.full_name,
        "backup_table": b.full_name,
        "backup_run_id": b.run_id,
        "backup_journal_dir": b.journal_dir or jdir,
        "partial": partial,  # the backup keeps its other units: only these leave it
        "units": [dict(u, index=i, trash=trash_path(u["location"], ctx.run_id)) for i, u in enumerate(units)],
        # units whose partition was dropped: not restored, left in the backup (finish_rollback keeps it)
        "skipped": [{"spec": d["spec"], "location": d["location"], "old": d["original"]} for d in dropped],
    }
    with journal:  # its record file closed once the units are restored
        journal.start(doc)
        journal.table_step("rolling_back")
        done = finish_rollback(ctx, info, journal, journal.table_record(), {})
    ctx.catalog.refresh(info.db, info.name)
    by_spec = {a["spec"]: a for a in done}
    for part in parts:
        carried = by_spec.get(part["spec"], {}).get("carried_over")
        if carried:
            part["carried_over"] = carried
            dirs = [c for c in carried if c.endswith("/")]  # e.g. HIVE_UNION_SUBDIR_1/ (Hive on Tez)
            part["reason"] += f"; kept {len(carried) - len(dirs)} file(s)" + (
                f" and {len(dirs)} subdirectory(ies) ({', '.join(dirs[:3])})" if dirs else "") + \
                " written after the compaction"
            part["files_after"] += len(carried) - len(dirs)
            for d in dirs:
                inside = ctx.fs.content_summary(f"{part['location'].rstrip('/')}/{d.rstrip('/')}")
                part["files_after"] += inside["file_count"]
                part["bytes_after"] += inside["length"]
    update_statistics(ctx, info, list(zip(units, parts)))
    return table_result(full_name, "rolled_back", f"restored {what}", changed=True, backup_table=b.full_name,
                        run_id=ctx.run_id, partitions=parts + dropped, recovered=recovered, **extra)


def _dropped_result(ctx: Context, b: Any, u: dict[str, Any]) -> dict[str, Any]:
    """The result of a unit whose partition was dropped after the compaction."""
    live = ctx.fs.exists(u["location"])
    where = (f"its directory {u['location']} still holds the compacted files" if live
             else f"its directory {u['location']} is gone")
    orig = ctx.fs.list_dir(u["old"])
    kept = (f"its {len(orig.files)} original file(s) stay in {u['old']}, kept with the backup {b.full_name} until a "
            f"cleanup removes them" if orig.exists else f"its original directory {u['old']} is gone too")
    return {
        "spec": u["spec"], "location": u["location"], "status": "skipped", "code": PARTITION_DROPPED,
        "files_before": None, "files_after": None, "bytes_before": None, "bytes_after": None,
        "rows_before": None, "rows_after": None, "original": u["old"],
        "reason": (f"partition {u['spec']} was dropped after the compaction ({where}): not re-created and not "
                   f"restored; {kept}"),
    }


def _kept_note(b: Any, dropped: list[dict[str, Any]]) -> str:
    return (f"{len(dropped)} partition(s) dropped since the compaction not restored "
            f"({', '.join(d['spec'] for d in dropped[:5])}{', ...' if len(dropped) > 5 else ''}); the backup "
            f"{b.full_name} keeps their original files until a cleanup removes them")
