"""recover: finish or undo whatever an interrupted run left, from its journal
and the filesystem's actual state. Runs automatically before every compact,
rollback and cleanup of a table, and as its own command.

For a compaction unit (live L, staging S, moved-aside original O):

    L present, O absent   -> never swapped: delete S, drop it from the backup
    L absent, O and S     -> crashed between the renames; S was verified
                             before O was moved aside: move S in (forward)
    L absent, O only      -> move O back (back)
    L and O present       -> swapped: make sure the backup points at O

For a rollback unit (live L, original O, trash T): finish the rollback.
Recovering twice is a no-op.
"""

from __future__ import annotations

import logging
from typing import Any

from ..errors import LakekeeperError
from ..journal import Journal
from ..model import TableInfo
from ..planner import journal_dir
from ..swap import swap_back
from .common import Context, load_table, table_result

log = logging.getLogger(__name__)

_FINAL = {"done", "aborted", "rolled_back"}


def recover_table(ctx: Context, info: TableInfo) -> list[dict[str, Any]]:
    """Bring every interrupted run of ``info`` to a consistent state.
    Returns the actions taken (empty when there was nothing to do)."""
    fs = ctx.fs
    jdir = journal_dir(info)
    actions: list[dict[str, Any]] = []
    for run_id in Journal.run_ids(fs, jdir):
        doc, units = Journal.load(fs, jdir, run_id)
        if not doc:
            continue
        finished = doc.get("step") in ("finished", "rolled_back")
        if finished and all(u.get("step") in _FINAL for u in units.values()):
            continue
        journal = Journal(fs, jdir, run_id)
        journal._table = doc
        if doc.get("command") == "rollback":
            actions += _recover_rollback(ctx, info, journal, doc, units)
        else:
            actions += _recover_compact(ctx, info, journal, doc, units)
    if actions:
        ctx.catalog.refresh(info.db, info.name)
    return actions


def _recover_compact(ctx: Context, info: TableInfo, journal: Journal, doc: dict[str, Any],
                     units: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    fs, cat = ctx.fs, ctx.catalog
    bdb, bname = doc["backup_table"].split(".")
    backup_exists = cat.table_exists(bdb, bname)
    actions = []
    swapped = 0
    for u in doc.get("units", []):
        idx, L, S, O = u["index"], u["location"], u["staging"], u["old"]
        step = units.get(idx, {}).get("step", "planned")
        has_l, has_s, has_o = fs.exists(L), fs.exists(S), fs.exists(O)
        part = u.get("partition")
        if has_l and not has_o:
            if has_s:
                fs.delete(S)
            if backup_exists and part:
                cat.drop_partition(bdb, bname, part)
            if step not in _FINAL or has_s:
                actions.append({"run_id": journal.run_id, "spec": u["spec"], "action": "rolled_back_unswapped",
                                "was_at": step})
                journal.unit_step(idx, "aborted", code="recovered", reason=f"interrupted at {step}")
        elif not has_l and has_o and has_s:
            fs.rename(S, L)
            _repoint(cat, backup_exists, bdb, bname, part, O)
            journal.unit_step(idx, "done", recovered=True)
            actions.append({"run_id": journal.run_id, "spec": u["spec"], "action": "completed_swap", "was_at": step})
            swapped += 1
        elif not has_l and has_o:
            fs.rename(O, L)
            if backup_exists and part:
                cat.drop_partition(bdb, bname, part)
            journal.unit_step(idx, "aborted", code="recovered", reason=f"interrupted at {step}")
            actions.append({"run_id": journal.run_id, "spec": u["spec"], "action": "restored_original", "was_at": step})
        elif has_l and has_o:
            if has_s:
                fs.delete(S)
            if step != "done":
                _repoint(cat, backup_exists, bdb, bname, part, O)
                journal.unit_step(idx, "done", recovered=True)
                actions.append({"run_id": journal.run_id, "spec": u["spec"], "action": "completed_backup", "was_at": step})
            swapped += 1
        else:
            raise LakekeeperError(
                "recovery_failed",
                f"{L} and its moved-aside original {O} are both missing (staging {S} "
                f"{'present' if has_s else 'absent'}); not touching anything",
            )
    if swapped == 0:
        if backup_exists:
            cat.drop_table(bdb, bname)
        journal.table_step("finished", backup_table=None)
        journal.remove()
    elif not backup_exists:
        # Crash before the backup table existed cannot leave a swapped unit,
        # but never lose track of originals: recreate it from the journal.
        raise LakekeeperError("recovery_failed", f"backup table {doc['backup_table']} is missing for run {journal.run_id}")
    else:
        journal.table_step("finished")
    return actions


def _repoint(cat: Any, backup_exists: bool, db: str, name: str, part: dict[str, str] | None, old: str) -> None:
    if backup_exists:
        cat.set_location(db, name, old, part)


def _recover_rollback(ctx: Context, info: TableInfo, journal: Journal, doc: dict[str, Any],
                      units: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    from .rollback import finish_rollback

    actions = finish_rollback(ctx, info, journal, doc, units)
    for a in actions:
        a["run_id"] = journal.run_id
    return actions


def recover_command(ctx: Context, full_name: str) -> dict[str, Any]:
    info = load_table(ctx, full_name)
    if ctx.settings.dry_run:
        pending = _pending_runs(ctx, info)
        return table_result(full_name, "planned" if pending else "skipped",
                            f"{len(pending)} interrupted run(s) to recover" if pending else "nothing to recover",
                            would_change=bool(pending), run_id=ctx.run_id, pending_runs=pending)
    actions = recover_table(ctx, info)
    if not actions:
        return table_result(full_name, "skipped", "nothing to recover", run_id=ctx.run_id)
    return table_result(full_name, "recovered", f"{len(actions)} unit(s) brought to a consistent state",
                        changed=True, run_id=ctx.run_id, actions=actions)


def _pending_runs(ctx: Context, info: TableInfo) -> list[str]:
    jdir = journal_dir(info)
    out = []
    for run_id in Journal.run_ids(ctx.fs, jdir):
        doc, units = Journal.load(ctx.fs, jdir, run_id)
        if doc and not (doc.get("step") in ("finished", "rolled_back") and all(u.get("step") in _FINAL for u in units.values())):
            out.append(run_id)
    return out
