"""recover: finish or undo whatever an interrupted run left, from its journal
and the filesystem's actual state. Runs automatically before every compact,
rollback and cleanup of a table, and as its own command; a failing unit of a
compaction is settled by the same code (``settle_unit``).

For a compaction unit (live L, staging S, moved-aside original O):

    L present, O absent   -> never swapped: delete S, drop it from the backup (back)
    L absent, O and S     -> between the renames; S was verified before O
                             was moved aside: move S in (forward)
    L absent, O only      -> move O back (back)
    L and O present       -> swapped: make sure the backup points at O (forward)
    L, O and S present    -> a writer re-created L between the renames: its
                             files join O, then as "L absent, O and S"

Every forward path moves files that are in O but were not planned (written
by someone else during the swap) into L. For a rollback unit (live L,
original O, trash T): finish the rollback (``rollback.finish_rollback``).
Runs whose records say they are complete and that keep nothing for later
(rollbacks, compactions whose backup was dropped) have their journal
removed. Recovering twice is a no-op: the second run reports no action.
"""

from __future__ import annotations

import logging
from typing import Any

from ..errors import LakekeeperError
from ..journal import Journal
from ..model import TableInfo
from ..layout import journal_dir
from ..swap import adopt_files, remove_empty_dir
from ..context import Context
from ..results import table_result
from ..tables import load_table

log = logging.getLogger(__name__)

_FINAL = {"done", "aborted", "rolled_back"}


def _finished(doc: dict[str, Any], units: dict[int, dict[str, Any]]) -> bool:
    return doc.get("step") in ("finished", "rolled_back") and all(u.get("step") in _FINAL for u in units.values())


def _closable(doc: dict[str, Any]) -> bool:
    """A complete run that keeps nothing: its journal can go."""
    if doc.get("command") == "rollback":
        return doc.get("step") == "rolled_back"
    return doc.get("step") == "finished" and not doc.get("backup_table")


def recover_table(ctx: Context, info: TableInfo) -> list[dict[str, Any]]:
    """Bring every interrupted run of ``info`` to a consistent state.
    Returns the actions taken (empty when there was nothing to do)."""
    fs = ctx.fs
    jdir = journal_dir(info)
    actions: list[dict[str, Any]] = []
    for run_id in Journal.run_ids(fs, jdir):
        doc, units = Journal.load(fs, jdir, run_id)
        journal = Journal(fs, jdir, run_id)
        if not doc:
            if Journal.is_empty(fs, jdir, run_id):  # crashed inside Journal.start: nothing was done
                journal.remove()
                actions.append({"run_id": run_id, "spec": None, "action": "removed_empty_journal"})
            continue
        journal.resume(doc, units)
        if _finished(doc, units):
            if _closable(doc):
                journal.remove()
                actions.append({"run_id": run_id, "spec": None, "action": "closed_run", "was_at": doc.get("step")})
            continue
        if doc.get("command") == "rollback":
            actions += _recover_rollback(ctx, info, journal, doc, units)
        else:
            actions += _recover_compact(ctx, info, journal, doc, units)
    if actions:
        ctx.catalog.refresh(info.db, info.name)
    return actions


def backup_of(ctx: Context, doc: dict[str, Any]) -> tuple[str, str, bool] | None:
    name = doc.get("backup_table")
    if not name:
        return None
    bdb, bname = name.split(".")
    return bdb, bname, ctx.catalog.table_exists(bdb, bname)


def settle_unit(ctx: Context, journal: Journal, u: dict[str, Any], record: dict[str, Any],
                backup: tuple[str, str, bool] | None, code: str = "recovered",
                reason: str | None = None) -> tuple[dict[str, Any] | None, bool]:
    """Drive one compaction unit (``u``: its entry in the run's journal
    document, ``record``: its last journaled step) to a consistent state.
    Returns (the action taken or None, whether the unit ends swapped)."""
    fs, cat = ctx.fs, ctx.catalog
    idx, L, S, O = u["index"], u["location"], u["staging"], u["old"]
    step = record.get("step", "planned")
    part = u.get("partition")
    planned = {f[0] for f in u.get("files") or []}
    compacted = record.get("compacted")
    has_l, has_s, has_o = fs.exists(L), fs.exists(S), fs.exists(O)
    why = reason or f"interrupted at {step}"

    def act(action: str, **extra: Any) -> dict[str, Any]:
        return dict({"run_id": journal.run_id, "spec": u["spec"], "action": action, "was_at": step}, **extra)

    def drop_from_backup() -> None:
        if backup and backup[2] and part:
            cat.drop_partition(backup[0], backup[1], part)

    def repoint() -> None:
        if backup and backup[2]:
            cat.set_location(backup[0], backup[1], O, part)

    if has_l and has_o and has_s:
        # A writer re-created the live directory between the two renames.
        moved = adopt_files(fs, L, O, set(), what="re-created live directory")
        if not remove_empty_dir(fs, L):
            raise LakekeeperError("recovery_failed", f"{L} was re-created during the swap and is not empty "
                                                     f"after moving {len(moved)} file(s) aside; try again")
        has_l = False
    if has_l and not has_o:
        if has_s:
            fs.delete(S)
        drop_from_backup()
        if step in _FINAL and not has_s:
            return None, False
        journal.unit_step(idx, "aborted", code=code, reason=why)
        return act("rolled_back_unswapped"), False
    if not has_l and has_o and has_s:
        if compacted is None:
            compacted = sorted(f.name for f in fs.list_dir(S).files)
        fs.rename(S, L)
        # without the planned list every original would look "late": adopt nothing then
        late = adopt_files(fs, O, L, planned, what="files written during the swap") if planned else []
        repoint()
        journal.unit_step(idx, "done", recovered=True, compacted=compacted, late_files=late)
        return act("completed_swap", late_files=late), True
    if not has_l and has_o:
        fs.rename(O, L)
        drop_from_backup()
        journal.unit_step(idx, "aborted", code=code, reason=why)
        return act("restored_original"), False
    if has_l and has_o:
        late = adopt_files(fs, O, L, planned, what="files written during the swap") if planned else []
        if step == "done" and not late:
            return None, True
        repoint()
        journal.unit_step(idx, "done", recovered=True, compacted=compacted, late_files=late)
        return act("completed_backup", late_files=late), True
    raise LakekeeperError(
        "recovery_failed",
        f"{L} and its moved-aside original {O} are both missing (staging {S} "
        f"{'present' if has_s else 'absent'}); not touching anything",
    )


def _recover_compact(ctx: Context, info: TableInfo, journal: Journal, doc: dict[str, Any],
                     units: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    backup = backup_of(ctx, doc)
    actions = []
    swapped = 0
    for u in doc.get("units", []):
        action, is_swapped = settle_unit(ctx, journal, u, units.get(u["index"], {}), backup)
        if action:
            actions.append(action)
        swapped += int(is_swapped)
    if swapped == 0:
        if backup and backup[2]:
            ctx.catalog.drop_table(backup[0], backup[1])
        journal.table_step("finished", backup_table=None)
        journal.remove()
        actions.append({"run_id": journal.run_id, "spec": None, "action": "closed_run", "was_at": doc.get("step"),
                        "backup_dropped": bool(backup and backup[2])})
    elif not (backup and backup[2]):
        # The backup table is created before any unit is swapped; it was dropped by hand.
        raise LakekeeperError("recovery_failed", f"backup table {doc.get('backup_table')} is missing for run "
                                                 f"{journal.run_id}, which swapped {swapped} unit(s); originals "
                                                 f"are kept in the .lk_old_{journal.run_id} directories")
    elif doc.get("step") != "finished":
        journal.table_step("finished")
        actions.append({"run_id": journal.run_id, "spec": None, "action": "finished_run", "was_at": doc.get("step")})
    return actions


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
        return table_result(full_name, "skipped", "nothing to recover", run_id=ctx.run_id, actions=[])
    units = [a for a in actions if a.get("spec") is not None]
    return table_result(full_name, "recovered",
                        f"{len(units)} unit(s) and {len(actions) - len(units)} run record(s) brought to a "
                        f"consistent state", changed=True, run_id=ctx.run_id, actions=actions)


def _pending_runs(ctx: Context, info: TableInfo) -> list[str]:
    jdir = journal_dir(info)
    out = []
    for run_id in Journal.run_ids(ctx.fs, jdir):
        doc, units = Journal.load(ctx.fs, jdir, run_id)
        if not doc:
            if Journal.is_empty(ctx.fs, jdir, run_id):
                out.append(run_id)
        elif not _finished(doc, units) or _closable(doc):
            out.append(run_id)
    return out
