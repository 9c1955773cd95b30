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
"""

from __future__ import annotations

import logging
from typing import Any

from ..backup import BackupRef, find_backups
from ..errors import LakekeeperError
from ..journal import Journal
from ..model import TableInfo
from ..layout import journal_dir, parse_hidden_name, split_path, trash_path
from ..swap import adopt_files, finish_trash, remove_empty_dir, swap_back
from ..context import Context
from ..results import table_result
from ..tables import load_table
from .recover import recover_table

log = logging.getLogger(__name__)


def backup_units(ctx: Context, info: TableInfo, b: BackupRef) -> list[dict[str, Any]]:
    """(spec, live location, original location) of every unit a backup holds,
    each checked to be a Lakekeeper original next to its live directory."""
    fs, cat = ctx.fs, ctx.catalog
    bkp = cat.get_table(b.db, b.name)
    out = []
    if not info.is_partitioned:
        out.append({"spec": "", "partition": None, "location": info.location,
                    "old": fs.qualify(bkp.location or "")})
    else:
        live = {p.spec_str: p for p in cat.list_partitions(info)}
        for bp in cat.list_partitions(bkp):
            old = fs.qualify(bp.location)
            lp = live.get(bp.spec_str)
            if lp is not None:
                loc = fs.qualify(lp.location)
            else:
                parsed = parse_hidden_name(split_path(old)[1])
                loc = split_path(old)[0] + "/" + parsed[0] if parsed else ""
            out.append({"spec": bp.spec_str, "partition": bp.spec, "location": loc, "old": old,
                        "partition_missing": lp is None})
    for u in out:
        parent_l, name_l = split_path(u["location"])
        parent_o, name_o = split_path(u["old"])
        parsed = parse_hidden_name(name_o)
        if parent_l != parent_o or not parsed or parsed[0] != name_l or parsed[1] != "lk_old" or parsed[2] != b.run_id:
            raise LakekeeperError(
                "backup_mismatch",
                f"backup {b.full_name} points at {u['old']}, which is not the Lakekeeper original of "
                f"{u['location']} for run {b.run_id}; not touching it",
            )
    return out


def compacted_files(ctx: Context, info: TableInfo, b: BackupRef) -> dict[str, list[str]]:
    """Location -> names of the files the backup's compaction wrote there
    (from its journal); locations without that record are absent."""
    jdir = b.journal_dir or journal_dir(info)
    doc, units = Journal.load(ctx.fs, jdir, b.run_id)
    out = {}
    for u in doc.get("units", []):
        names = units.get(u["index"], {}).get("compacted")
        if names is not None:
            out[ctx.fs.qualify(u["location"])] = list(names)
    return out


def compacted_rows(ctx: Context, info: TableInfo, b: BackupRef) -> dict[str, int]:
    """Location -> the row count the backup's compaction verified (the
    originals hold exactly these rows)."""
    doc, units = Journal.load(ctx.fs, b.journal_dir or journal_dir(info), b.run_id)
    out = {}
    for u in doc.get("units", []):
        rows = units.get(u["index"], {}).get("rows")
        if rows is not None:
            out[ctx.fs.qualify(u["location"])] = int(rows)
    return out


def rollback_table(ctx: Context, full_name: str) -> dict[str, Any]:
    info = load_table(ctx, full_name)
    recovered = [] if ctx.settings.dry_run else recover_table(ctx, info)
    backups = find_backups(ctx.catalog, info.db, info.name, ctx.settings.backup_prefix)
    if not backups:
        return table_result(full_name, "skipped", "no backup to roll back to", changed=bool(recovered),
                            run_id=ctx.run_id, recovered=recovered)
    b = backups[-1]
    units = backup_units(ctx, info, b)
    missing = [u["old"] for u in units if not ctx.fs.exists(u["old"])]
    if missing:
        raise LakekeeperError("backup_incomplete", f"original data of {b.full_name} is missing: {missing[:3]}")
    written = compacted_files(ctx, info, b)
    verified_rows = compacted_rows(ctx, info, b)
    for u in units:
        u["compacted"] = written.get(u["location"])
        if u["compacted"] is None:
            continue
        live = {f.name for f in ctx.fs.list_dir(u["location"]).files}
        gone = sorted(set(u["compacted"]) - live)
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
            "files_before": len(now.files), "files_after": len(orig.files),
            "bytes_before": now.total_bytes, "bytes_after": orig.total_bytes,
            "rows_before": verified_rows.get(u["location"]), "rows_after": verified_rows.get(u["location"]),
            "status": "planned" if ctx.settings.dry_run else "rolled_back",
            "reason": f"restore {u['old']}",
        })
    if ctx.settings.dry_run:
        return table_result(full_name, "planned", f"would restore {len(units)} unit(s) from {b.full_name}",
                            would_change=True, backup_table=b.full_name, run_id=ctx.run_id, partitions=parts)
    jdir = journal_dir(info)
    journal = Journal(ctx.fs, jdir, ctx.run_id)
    doc = {
        "command": "rollback",
        "table": info.full_name,
        "backup_table": b.full_name,
        "backup_run_id": b.run_id,
        "backup_journal_dir": b.journal_dir or jdir,
        "units": [dict(u, index=i, trash=trash_path(u["location"], ctx.run_id)) for i, u in enumerate(units)],
    }
    journal.start(doc)
    journal.table_step("rolling_back")
    done = finish_rollback(ctx, info, journal, journal._table, {})  # pylint: disable=protected-access
    ctx.catalog.refresh(info.db, info.name)
    by_spec = {a["spec"]: a for a in done}
    for part in parts:
        carried = by_spec.get(part["spec"], {}).get("carried_over")
        if carried:
            part["carried_over"] = carried
            part["reason"] += f"; kept {len(carried)} file(s) written after the compaction"
            part["files_after"] += len(carried)
    from .compact import update_statistics

    update_statistics(ctx, info, list(zip(units, parts)))
    return table_result(full_name, "rolled_back", f"restored {len(units)} unit(s) from {b.full_name}",
                        changed=True, backup_table=b.full_name, run_id=ctx.run_id, partitions=parts,
                        recovered=recovered)


def finish_rollback(ctx: Context, info: TableInfo, journal: Journal, doc: dict[str, Any],
                    units: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    """Drive every unit of a rollback journal to 'restored', whatever step it
    was interrupted at, then drop the backup and the journals."""
    fs, cat = ctx.fs, ctx.catalog
    actions = []
    for u in doc["units"]:
        idx, L, O, T = u["index"], u["location"], u["old"], u["trash"]
        step = units.get(idx, {}).get("step", "planned")
        if step == "rolled_back":
            continue
        compacted = u.get("compacted")
        has_l, has_o, has_t = fs.exists(L), fs.exists(O), fs.exists(T)
        journal.unit_step(idx, "rolling_back", location=L, old=O, trash=T)
        if has_o and has_l and has_t:
            # the compacted data was moved aside and a writer re-created L
            adopt_files(fs, L, T, set(), what="re-created live directory")
            if not remove_empty_dir(fs, L):
                raise LakekeeperError("rollback_failed", f"{L} was re-created during the rollback and is not empty")
            has_l = False
        if has_o and has_l:
            kept = swap_back(fs, L, O, T, compacted, journal, idx)
        elif has_o:
            fs.rename(O, L)
            kept = finish_trash(fs, L, T, compacted)
        elif has_l:
            kept = finish_trash(fs, L, T, compacted)  # original already back in place
        else:
            raise LakekeeperError("rollback_failed", f"cannot restore {L}: original {O} and live data both missing")
        if u.get("partition_missing") and u.get("partition"):
            cat.add_partitions(info.db, info.name, [(u["partition"], L)])
        journal.unit_step(idx, "rolled_back", **kept)
        actions.append({"spec": u["spec"], "action": "rolled_back", "was_at": step, **kept})
    bdb, bname = doc["backup_table"].split(".")
    cat.drop_table(bdb, bname)
    Journal(fs, doc.get("backup_journal_dir") or journal.dir, doc["backup_run_id"]).remove()
    journal.table_step("rolled_back")
    journal.remove()
    actions.append({"spec": None, "action": "finished_run", "was_at": doc.get("step")})
    return actions
