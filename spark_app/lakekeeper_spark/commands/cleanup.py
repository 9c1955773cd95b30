"""cleanup: delete backups (original files and backup table) of a table
under the retention policies (``retention.py``: pinned, grace period,
``--keep-last``, ``--older-than``; ``--older-than all`` for every backup
that is neither pinned nor within the grace period). Without ``--keep-last``
or ``--older-than`` it refuses (``no_retention_policy``), deleting nothing.
Irreversible. With ``--pin RUN_ID`` / ``--unpin RUN_ID`` it only pins or
unpins that backup. Only directories that are provably Lakekeeper
originals next to a live directory are deleted (see recovery.backup_units),
and only the files the compaction planned: anything else found there is
moved into the live directory first (``moved_to_live``).

With ``--orphans`` it also removes the staging copies of killed runs that
no journal and no live run accounts for, whose live directory is there
(protocol/orphans.py, policy/reconcile.py: the only findings of analyze's
``reconcile`` that are provably ours and orphaned): ``orphans_removed``, and
the other findings it leaves in ``orphans_kept``. With ``--orphans`` and no
retention policy, the backups are left alone.

``--keep-last`` counts per partition (retention.py): a backup that is still
one of the N newest rollback points of any of its partitions is kept, whole.
A table dropped since its compactions (``DB.TABLE`` given, or found by a
database run through its backups' ``lakekeeper.backup_of`` property) has
its backups cleaned under the same policy except keep_last (there is no
table to roll back into); its result says ``table_dropped``.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from ..catalog.backup import BackupRef, backup_partitions, find_backups, set_pinned
from ..catalog.context import Context
from ..catalog.legacy import LegacyBackupRef, find_legacy_backups
from ..report.errors import LakekeeperError, Refused
from ..protocol.journal import Journal
from ..protocol.legacy import legacy_cleanup
from ..storage.layout import journal_dir, parse_hidden_name, split_path
from ..protocol.recovery import backup_record, backup_units, recover_table
from ..report.results import table_result
from ..policy.retention import backup_verdicts, missing_policy, policy_of
from ..protocol.swap import adopt_files
from ..catalog.tables import load_table, plan, with_policy
from ..protocol.orphans import remove_orphans


def pin_table(ctx: Context, full_name: str, backups: list[BackupRef], run: str, pinned: bool) -> dict[str, Any]:
    """Pin or unpin the backup of one run (given by run id or backup table name)."""
    verb = "pin" if pinned else "unpin"
    match = [b for b in backups if run in (b.run_id, b.name, b.full_name)]
    if not match:
        # refused, not failed: a database run pins the tables that have it and passes over the others
        known = ", ".join(b.run_id for b in backups) or "none"
        raise Refused("not_found", f"{full_name} has no backup of run {run!r} to {verb} (backups: {known})")
    b = match[0]
    entry = {"backup_table": b.full_name, "run_id": b.run_id, "pinned": pinned}
    if b.pinned == pinned:
        return table_result(full_name, "skipped", f"{b.full_name} is already {verb}ned", run_id=ctx.run_id,
                            backup_table=b.full_name, pinned=[entry] if pinned else [], unpinned=[] if pinned else [entry])
    if not ctx.settings.dry_run:
        set_pinned(ctx.catalog, b, pinned)
    status = "planned" if ctx.settings.dry_run else f"{verb}ned"
    return table_result(full_name, status, f"{'would ' if ctx.settings.dry_run else ''}{verb} {b.full_name}",
                        changed=not ctx.settings.dry_run, would_change=True, run_id=ctx.run_id,
                        backup_table=b.full_name, pinned=[entry] if pinned else [],
                        unpinned=[] if pinned else [entry])


def _stranded(ctx: Context, units: list[dict[str, Any]], planned: dict[str, set[str]]) -> str | None:
    """Why a backup cannot be deleted: among the originals of a unit whose
    live directory is gone (its partition dropped and its directory deleted)
    are files the compaction did not plan (someone's data, which cleanup
    moves into the live directory, and there is none). None: it can be."""
    for u in units:
        names = planned.get(u["location"])
        if names is None or ctx.fs.exists(u["location"]) or not ctx.fs.exists(u["old"]):
            continue
        listing = ctx.fs.list_dir(u["old"])
        strays = [f.name for f in listing.files if f.name not in names] + [d + "/" for d in listing.subdirs]
        if strays:
            return (f"{u['old']} holds {len(strays)} file(s) the compaction did not write there "
                    f"({', '.join(strays[:3])}) and the live directory {u['location']} is gone")
    return None


def _dropped_units(ctx: Context, b: BackupRef) -> list[dict[str, Any]]:
    """``backup_units`` of a backup whose table was dropped: its original
    directories, each checked to be the Lakekeeper original of run
    ``b.run_id`` (named after the live directory beside it, which may be
    gone with the table's data)."""
    bkp = ctx.catalog.get_table(b.db, b.name)
    if bkp.is_partitioned:
        found = [(p.spec_str, ctx.fs.qualify(p.location)) for p in ctx.catalog.list_partitions(bkp)]
    else:
        found = [("", ctx.fs.qualify(bkp.location or ""))]
    out = []
    for spec, old in found:
        parent, name = split_path(old)
        parsed = parse_hidden_name(name)
        if not parsed or parsed[1] != "lk_old" or parsed[2] != b.run_id:
            raise LakekeeperError("backup_mismatch", f"backup {b.full_name} points at {old}, which is not a "
                                                     f"Lakekeeper original of run {b.run_id}; not touching it")
        out.append({"spec": spec, "location": f"{parent}/{parsed[0]}", "old": old})
    return out


def _planned(ctx: Context, b: BackupRef) -> dict[str, set[str]]:
    """The original files a dropped table's backup run planned, by live
    location (its journal, when it is still there)."""
    if not b.journal_dir or not ctx.fs.exists(f"{b.journal_dir.rstrip('/')}/{b.run_id}"):
        return {}
    doc, _units = Journal.load(ctx.fs, b.journal_dir, b.run_id)
    return {ctx.fs.qualify(u["location"]): {f[0] for f in u["files"]} for u in doc.get("units", []) if u.get("files")}


def dropped_journal_dir(ctx: Context, full_name: str) -> str | None:
    """Where the lease of a dropped table's cleanup is taken: the journal
    directory its backups name (the one its compactions used), when it is
    still there; None when there is no such backup or directory."""
    db, name = full_name.split(".")
    for b in find_backups(ctx.catalog, db, name, ctx.settings.backup_prefix):
        if b.journal_dir and ctx.fs.exists(b.journal_dir):
            return b.journal_dir
    return None


def cleanup_table(ctx: Context, full_name: str) -> dict[str, Any]:
    if not (ctx.settings.pin or ctx.settings.unpin):
        missing = missing_policy(policy_of(ctx.settings))
        if missing and not ctx.settings.orphans:  # the command line refuses this first; here for every other caller
            raise Refused("no_retention_policy", missing)
    db, name = full_name.split(".")
    if not ctx.catalog.table_exists(db, name):
        backups = find_backups(ctx.catalog, db, name, ctx.settings.backup_prefix)
        if not backups:
            raise LakekeeperError("not_found", f"table {full_name} does not exist")
        if ctx.settings.pin or ctx.settings.unpin:
            res = pin_table(ctx, full_name, backups, ctx.settings.pin or ctx.settings.unpin, bool(ctx.settings.pin))
            return dict(res, table_dropped=True)
        verdicts = backup_verdicts(backups, ctx.settings, time.time(), dropped=True)
        res = _clean(ctx, full_name, backups, verdicts, lambda b: _dropped_units(ctx, b), lambda b: _planned(ctx, b),
                     lambda b: b.journal_dir, [])
        res["reason"] = f"table {full_name} was dropped; {res['reason']}"
        res["table_dropped"] = True
        for entry in res["backups_removed"] + res["kept"]:
            entry["table_dropped"] = True
        return res
    info = load_table(ctx, full_name)
    ctx, _policy = with_policy(ctx, info)  # lakekeeper.retention.* of the table over the run's policy
    recovered = [] if ctx.settings.dry_run else recover_table(ctx, info)
    backups = find_backups(ctx.catalog, info.db, info.name, ctx.settings.backup_prefix)
    # lakekeeper 0.0.x's backups: found, and under the same policy (protocol/legacy.py)
    backups = sorted(backups + find_legacy_backups(ctx.catalog, info.db, info.name, ctx.settings.backup_prefix),
                     key=lambda b: (b.created_at, b.run_id))
    if ctx.settings.pin or ctx.settings.unpin:
        res = pin_table(ctx, full_name, backups, ctx.settings.pin or ctx.settings.unpin, bool(ctx.settings.pin))
        res["recovered"] = recovered
        res["changed"] = res["changed"] or bool(recovered)
        return res
    if missing_policy(policy_of(ctx.settings)):  # orphans only: the backups are left alone
        res = table_result(full_name, "skipped", "no retention policy given: backups left alone", changed=bool(recovered),
                           run_id=ctx.run_id, kept=[], freed_bytes=0, backups_removed=[], recovered=recovered)
    else:
        verdicts = backup_verdicts(backups, ctx.settings, time.time(), lambda b: backup_partitions(ctx.catalog, b))
        res = _clean(ctx, full_name, backups, verdicts, lambda b: backup_units(ctx, info, b),
                     lambda b: backup_record(ctx, info, b).planned, lambda b: b.journal_dir or journal_dir(info),
                     recovered, info)
    return with_orphans(ctx, info, res) if ctx.settings.orphans else res


def with_orphans(ctx: Context, info: Any, res: dict[str, Any]) -> dict[str, Any]:
    """``res`` with the orphaned staging copies removed (``--orphans``): in
    ``orphans_removed`` (a dry run: would be), the findings left in
    ``orphans_kept``, their bytes added to ``freed_bytes``."""
    left = find_backups(ctx.catalog, info.db, info.name, ctx.settings.backup_prefix)
    found = remove_orphans(ctx, info, plan(ctx, info), {b.run_id for b in left})
    res.update(found)
    n = len(found["orphans_removed"])
    if not n:
        return res
    res["freed_bytes"] = (res.get("freed_bytes") or 0) + found["orphan_bytes"]
    what = f"{n} orphaned staging cop{'y' if n == 1 else 'ies'} ({found['orphan_bytes']} bytes)"
    if ctx.settings.dry_run:
        res.update(status="planned", would_change=True, reason=f"{res['reason']}; would remove {what}")
    else:
        status = res["status"] if res["status"] == "cleaned" else "cleaned"
        res.update(status=status, changed=True, would_change=True, reason=f"{res['reason']}; removed {what}")
    return res


def _clean(ctx: Context, full_name: str, backups: list[BackupRef], verdicts: list[tuple[BackupRef, Any]],
           units_of: Callable[[BackupRef], list[dict[str, Any]]], planned_of: Callable[[BackupRef], dict[str, set[str]]],
           journal_of: Callable[[BackupRef], str], recovered: list[Any], info: Any = None) -> dict[str, Any]:
    """Delete the backups the verdicts let go: originals, backup table, journal
    (``info``: the live table's, which lakekeeper 0.0.x's backups need)."""
    chosen, kept = [], []
    for b, v in verdicts:
        if v.delete:
            chosen.append((b, v))
        else:
            kept.append(v.to_dict())
    if not chosen:
        reason = "no backups" if not backups else f"{len(kept)} backup(s) kept, none to clean"
        return table_result(full_name, "skipped", reason, changed=bool(recovered), run_id=ctx.run_id,
                            kept=kept, freed_bytes=0, backups_removed=[], recovered=recovered)
    removed, freed = [], 0
    for b, v in chosen:
        if isinstance(b, LegacyBackupRef):  # deleted as 0.0.x did (its __old_ directories, then its table)
            entry, keep = legacy_cleanup(ctx, info, b, v)
            if entry is None:
                kept.append(keep)
                continue
            removed.append(entry)
            freed += entry["bytes"]
            continue
        units = units_of(b)
        size = sum(ctx.fs.content_summary(u["old"])["length"] for u in units if ctx.fs.exists(u["old"]))
        entry = {"backup_table": b.full_name, "run_id": b.run_id, "bytes": size, "units": len(units),
                 "age_seconds": v.age_seconds, "pinned": False, "verdict": "delete", "reason": v.reason,
                 "rule": v.rule}
        dropped = [u["spec"] for u in units if u.get("partition_missing")]
        if dropped:  # e.g. left by a rollback that could not restore them
            entry["dropped_partitions"] = dropped
        planned = planned_of(b)
        stranded = _stranded(ctx, units, planned)
        if stranded:  # someone's files among the originals, and no live directory to move them into
            kept.append({"backup_table": b.full_name, "run_id": b.run_id, "age_seconds": v.age_seconds,
                         "pinned": False, "verdict": "keep", "rule": "stranded",
                         "reason": f"{stranded}; not deleted (move them where they belong, then clean up again)"})
            continue
        if not ctx.settings.dry_run:
            for u in units:
                names = planned.get(u["location"])
                if names is not None and ctx.fs.exists(u["old"]) and ctx.fs.exists(u["location"]):
                    # a file that is not one of the originals (a writer closed it there after the
                    # move aside) is someone's data: into the live directory, not deleted
                    late = adopt_files(ctx.fs, u["old"], u["location"], names, what="files found among the originals")
                    if late:
                        entry.setdefault("moved_to_live", []).extend(late)
                ctx.fs.delete(u["old"])
            ctx.catalog.drop_table(b.db, b.name)
            if journal_of(b):
                Journal(ctx.fs, journal_of(b), b.run_id).remove()
        removed.append(entry)
        freed += size
    if not removed:  # every backup chosen had to be kept
        return table_result(full_name, "skipped", f"{len(kept)} backup(s) kept, none could be cleaned",
                            changed=bool(recovered), run_id=ctx.run_id, kept=kept, freed_bytes=0, backups_removed=[],
                            recovered=recovered)
    if ctx.settings.dry_run:
        return table_result(full_name, "planned", f"would remove {len(removed)} backup(s), {freed} bytes",
                            would_change=True, run_id=ctx.run_id, backups_removed=removed, freed_bytes=freed, kept=kept)
    return table_result(full_name, "cleaned", f"removed {len(removed)} backup(s), freed {freed} bytes",
                        changed=True, run_id=ctx.run_id, backups_removed=removed, freed_bytes=freed, kept=kept,
                        recovered=recovered)
