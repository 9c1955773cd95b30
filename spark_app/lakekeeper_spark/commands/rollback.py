"""rollback: restore the most recent backup of a table exactly.

For each unit of the backup: compacted data aside (``.lk_trash``), original
back in place, compacted data deleted; then the backup table is dropped and
the compaction's journal removed. Journaled like a compaction, so an
interrupted rollback is finished by ``recover``.
"""

from __future__ import annotations

import logging
from typing import Any

from ..backup import BackupRef, find_backups
from ..errors import LakekeeperError
from ..journal import Journal
from ..model import TableInfo
from ..planner import journal_dir, parse_hidden_name, split_path, trash_path
from ..swap import swap_back
from .common import Context, load_table, table_result
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
    parts = [{"spec": u["spec"], "location": u["location"], "status": "planned" if ctx.settings.dry_run else "rolled_back",
              "reason": f"restore {u['old']}"} for u in units]
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
    finish_rollback(ctx, info, journal, journal._table, {})
    ctx.catalog.refresh(info.db, info.name)
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
        if units.get(idx, {}).get("step") == "rolled_back":
            continue
        has_l, has_o, has_t = fs.exists(L), fs.exists(O), fs.exists(T)
        journal.unit_step(idx, "rolling_back", location=L, old=O, trash=T)
        if has_o and has_l and not has_t:
            swap_back(fs, L, O, T)
        elif has_o and not has_l:
            fs.rename(O, L)
            fs.delete(T)
        elif has_l and not has_o:
            fs.delete(T)  # original already back in place
        else:
            raise LakekeeperError("rollback_failed", f"cannot restore {L}: original {O} and live data both missing")
        if u.get("partition_missing") and u.get("partition"):
            cat.add_partitions(info.db, info.name, [(u["partition"], L)])
        journal.unit_step(idx, "rolled_back")
        actions.append({"spec": u["spec"], "action": "rolled_back"})
    bdb, bname = doc["backup_table"].split(".")
    cat.drop_table(bdb, bname)
    Journal(fs, doc.get("backup_journal_dir") or journal.dir, doc["backup_run_id"]).remove()
    journal.table_step("rolled_back")
    journal.remove()
    return actions
