"""Recovery: the journal-driven state machines that finish or undo whatever
an interrupted run left, from its journal and the filesystem's actual state
(``recover_table``; about 500 lines: every command's state machine is read
beside the others, since each must leave what the others can finish). Runs automatically before every compact, rollback and
cleanup of a table, and as the ``recover`` command; a failing unit of a
compaction is settled by the same code (``settle_unit``), an interrupted
rollback is finished by the code that runs it (``finish_rollback``).

For a compaction unit (live L, staging S, moved-aside original O):

    L present, O absent   -> never swapped: delete S, drop it from the backup (back)
    L absent, O and S     -> between the renames; S was verified before O
                             was moved aside: move S in (forward)
    L absent, O only      -> move O back (back)
    L and O present       -> swapped: make sure the backup points at O (forward)
    L, O and S present    -> a writer re-created L between the renames: its
                             files join O, then as "L absent, O and S"
    L and O absent        -> before the move aside: the source vanished (its
                             partition dropped during the run): delete S,
                             abort the unit (``source_vanished``); later:
                             ``recovery_failed``, nothing touched

Every forward path moves files that are in O but were not planned (written
by someone else during the swap) into L. For a rollback unit (live L,
original O, trash T): finish the rollback (``finish_rollback``).
Runs whose records say they are complete and that keep nothing for later
(rollbacks, compactions whose backup was dropped) have their journal
removed. Recovering twice is a no-op: the second run reports no action.

Also here, shared by the commands that work on a backup: the units a
backup holds (``backup_units``), what its compaction journaled
(``backup_record``, one read of its journal), and the Metastore statistics
written after a swap or a rollback (``update_statistics``).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from typing import Any

from ..catalog.backup import BackupRef
from ..catalog.context import Context
from ..report.errors import LakekeeperError, java_message
from .journal import Journal
from ..storage.layout import journal_dir, parse_hidden_name, split_path
from ..report.model import TableInfo
from .swap import adopt_files, finish_trash, move_back_kept, remove_empty_dir, swap_back

log = logging.getLogger(__name__)

_FINAL = {"done", "aborted", "rolled_back"}
# A rollback unit whose partition was dropped after the compaction: not restored (commands/rollback.py).
PARTITION_DROPPED = "partition_dropped"
# Unit steps recorded before the live directory is moved aside (``moving_aside`` is recorded just before that rename).
_BEFORE_MOVE_ASIDE = {"planned", "writing_staging", "verifying"}


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
            if not fs.exists(journal.run_dir):
                # removed by a run settled before it here: a rollback removes its compaction's journal, and two
                # runs of one second sort by their random suffix, not by when they started
                continue
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
        with journal:  # the records this recovery appends: one file, closed when the run is settled
            if doc.get("command") == "rollback":
                actions += _recover_rollback(ctx, info, journal, doc, units)
            else:
                actions += _recover_compact(ctx, info, journal, doc, units)
    if actions:
        ctx.catalog.refresh(info.db, info.name)
    return actions


def orphaned_data(ctx: Context, info: TableInfo) -> list[dict[str, str]]:
    """Live directories that are missing while a hidden directory of ours
    beside them, that no journal accounts for, holds their data (a run that
    moved data after another run had finished and removed its journal).
    Never "nothing to recover": ``recover`` reports them and moves nothing,
    since without a journal nothing says which copy is the table's."""
    known = set(Journal.run_ids(ctx.fs, journal_dir(info)))
    if info.is_partitioned:
        lives = [p.location.rstrip("/") for p in ctx.catalog.list_partitions(info) if p.location]
    else:
        lives = [(info.location or "").rstrip("/")]
    by_parent: dict[str, set[str]] = {}
    for live in lives:
        parent, name = live.rsplit("/", 1)
        by_parent.setdefault(parent, set()).add(name)
    found = []
    for parent, names in sorted(by_parent.items()):
        entries = dict(ctx.fs.list_names(parent))
        for hidden, is_dir in sorted(entries.items()):
            parsed = parse_hidden_name(hidden)
            if not parsed or not is_dir:
                continue
            live, tag, run = parsed
            if live in names and live not in entries and run not in known:
                found.append({"location": f"{parent}/{live}", "path": f"{parent}/{hidden}", "kind": tag,
                              "run_id": run})
    return found


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
    idx, L, S, O = u["index"], u["location"], u["staging"], u["old"]  # noqa: E741 - L, S, O: location, staging, old (journal keys)
    step = record.get("step", "planned")
    part = u.get("partition")
    planned = {f[0] for f in u.get("files") or []}
    compacted = record.get("compacted")
    moves = record.get("kept_moves") or []  # minor mode: kept files moved into the staging (``moving_kept``)
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
        moved_back = move_back_kept(fs, L, S, moves) if moves and step not in _FINAL else []
        if has_s:
            fs.delete(S)
        drop_from_backup()
        if step in _FINAL and not has_s:
            return None, False
        journal.unit_step(idx, "aborted", code=code, reason=why)
        return act("rolled_back_unswapped", **({"kept_moved_back": moved_back} if moves else {})), False
    if not has_l and has_o and has_s:
        if compacted is None:
            kept = {m["name"] for m in moves}
            compacted = sorted(f.name for f in fs.list_dir(S).files if f.name not in kept)
        fs.rename(S, L)
        # without the planned list every original would look "late": adopt nothing then
        late = adopt_files(fs, O, L, planned, what="files written during the swap") if planned else []
        repoint()
        journal.unit_step(idx, "done", recovered=True, compacted=compacted, late_files=late)
        return act("completed_swap", late_files=late), True
    if not has_l and has_o:
        fs.rename(O, L)
        if moves:  # the staging that held the kept files is gone: each must be back live, else reported
            move_back_kept(fs, L, S, moves)
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
    if moves and has_s and any(f.name in {m["name"] for m in moves} for f in fs.list_dir(S).files):
        raise LakekeeperError(
            "recovery_failed",
            f"{L} and its moved-aside original {O} are both missing and the staging {S} holds kept files moved "
            f"there; not touching anything")
    if step in _BEFORE_MOVE_ASIDE or (step == "moving_kept" and moves):
        # The source went away before this run moved anything (a partition dropped and its directory
        # deleted during the run): the staged copy of data nobody wants any more goes, the unit is
        # aborted. (At ``moving_aside`` or later the staging may be the only copy left: untouched.)
        if has_s:
            fs.delete(S)
        drop_from_backup()
        journal.unit_step(idx, "aborted", code="source_vanished",
                          reason=f"{L} disappeared before it was moved aside")
        return act("source_vanished"), False
    raise LakekeeperError(
        "recovery_failed",
        f"{L} and its moved-aside original {O} are both missing (staging {S} "
        f"{'present' if has_s else 'absent'}); not touching anything",
    )


def _recover_compact(ctx: Context, info: TableInfo, journal: Journal, doc: dict[str, Any],
                     units: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    backup = backup_of(ctx, doc)
    actions = []
    for root in doc.get("batch_roots") or []:  # a batch's root: never the only copy of anything (rewrite/batch.py)
        if ctx.fs.exists(root):
            ctx.fs.delete(root)
            actions.append({"run_id": journal.run_id, "spec": None, "action": "removed_batch_root", "path": root})
    swapped = 0
    merged = []
    done = []  # swapped units the journal records as done: their backup partitions are checked below
    for u in doc.get("units", []):
        action, is_swapped = settle_unit(ctx, journal, u, units.get(u["index"], {}), backup)
        if action:
            actions.append(action)
        elif is_swapped:
            done.append(u)
        swapped += int(is_swapped)
        if is_swapped:
            merged.append(u["spec"])
    if done and backup and backup[2] and info.is_partitioned:
        actions += repoint_swapped(ctx, journal, backup, done)
    if doc.get("merge") and merged:
        # a merge run: the partitions that end swapped hold the batch; recorded (again) before the run is closed,
        # so that the batch never goes into them a second time
        from .merge_record import record_applied

        record_applied(ctx.fs, doc["merge"], merged, journal.run_id)
        actions.append({"run_id": journal.run_id, "spec": None, "action": "recorded_merged_batch",
                        "identity": doc["merge"].get("identity"), "partitions": sorted(merged)})
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


def repoint_swapped(ctx: Context, journal: Journal, backup: tuple[str, str, bool],
                    done: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The backup partitions of swapped units (their journal entries,
    recorded ``done``) that do not point at their originals, repointed
    together: a partitioned table's backup partitions are repointed in
    groups after their units' ``done`` records (``backup.PendingRepoints``),
    so a run that stopped in between left some at the live directory. One
    listing of the backup's partitions; a partition missing from the backup
    is left as it is (dropped by hand; rollback then reports the unit)."""
    cat, fs = ctx.catalog, ctx.fs
    at = {p.spec_str: fs.qualify(p.location) for p in cat.list_partitions(cat.get_table(backup[0], backup[1]))}
    wrong = [u for u in done if u.get("partition") and u["spec"] in at and at[u["spec"]] != fs.qualify(u["old"])]
    if not wrong:
        return []
    outcomes = cat.set_locations(backup[0], backup[1], [(u["partition"], u["old"]) for u in wrong])
    errors = [(u, exc) for u, exc in zip(wrong, outcomes) if exc is not None]
    if errors:
        u, exc = errors[0]
        raise LakekeeperError("recovery_failed", f"the backup partitions of {len(errors)} swapped unit(s) could not "
                                                 f"be repointed at their originals (first: {u['spec']} at {u['old']}: "
                                                 f"{java_message(exc)}); try again")
    return [{"run_id": journal.run_id, "spec": u["spec"], "action": "repointed_backup", "was_at": "done"}
            for u in wrong]


def _recover_rollback(ctx: Context, info: TableInfo, journal: Journal, doc: dict[str, Any],
                      units: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    actions = finish_rollback(ctx, info, journal, doc, units)
    for a in actions:
        a["run_id"] = journal.run_id
    return actions


def pending_runs(ctx: Context, info: TableInfo) -> list[str]:
    """The runs ``recover_table`` would act on (a dry run of it)."""
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


def finish_rollback(ctx: Context, info: TableInfo, journal: Journal, doc: dict[str, Any],
                    units: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    """Drive every unit of a rollback journal to 'restored', whatever step it
    was interrupted at, then drop the backup and the journals. A partial
    rollback (``partial``: some partitions, ``--where``) or one that skipped
    units whose partition was dropped (``skipped``) keeps the backup with
    exactly the other units instead (and its journal): only the restored
    partitions leave it. A partition is never re-created here."""
    fs, cat = ctx.fs, ctx.catalog
    actions = []
    for u in doc["units"]:
        idx, L, O, T = u["index"], u["location"], u["old"], u["trash"]  # noqa: E741 - L, O, T: location, old, trash (journal keys)
        step = units.get(idx, {}).get("step", "planned")
        if step == "rolled_back":
            continue
        compacted, kept = u.get("compacted"), u.get("kept")
        has_l, has_o, has_t = fs.exists(L), fs.exists(O), fs.exists(T)
        journal.unit_step(idx, "rolling_back", location=L, old=O, trash=T)
        if has_o and has_l and has_t:
            # the compacted data was moved aside and a writer re-created L
            adopt_files(fs, L, T, set(), what="re-created live directory")
            if not remove_empty_dir(fs, L):
                raise LakekeeperError("rollback_failed", f"{L} was re-created during the rollback and is not empty")
            has_l = False
        if has_o and has_l:
            done = swap_back(fs, L, O, T, compacted, journal, idx, kept=kept)
        elif has_o:
            fs.rename(O, L)
            done = finish_trash(fs, L, T, compacted, kept)
        elif has_l:
            done = finish_trash(fs, L, T, compacted, kept)  # original already back in place
        else:
            raise LakekeeperError("rollback_failed", f"cannot restore {L}: original {O} and live data both missing")
        journal.unit_step(idx, "rolled_back", **done)
        actions.append({"spec": u["spec"], "action": "rolled_back", "was_at": step, **done})
    bdb, bname = doc["backup_table"].split(".")
    if doc.get("partial") or doc.get("skipped"):
        # The backup keeps the units not restored here (not selected by where, or whose partition was dropped:
        # cleanup finds and frees their originals like any backup's), and its journal; the restored ones leave it.
        for u in doc["units"]:
            if u.get("partition"):
                cat.drop_partition(bdb, bname, u["partition"])
        if doc.get("skipped"):
            actions.append({"spec": None, "action": "kept_backup", "backup_table": doc["backup_table"],
                            "units": [d["spec"] for d in doc["skipped"]]})
    else:
        cat.drop_table(bdb, bname)
        Journal(fs, doc.get("backup_journal_dir") or journal.dir, doc["backup_run_id"]).remove()
    journal.table_step("rolled_back")
    journal.remove()
    actions.append({"spec": None, "action": "finished_run", "was_at": doc.get("step")})
    return actions


# ---------------------------------------------------------------- backups


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


@dataclasses.dataclass
class BackupRecord:
    """What the compaction of a backup journaled, by live location: the
    names of the files it wrote there (``compacted``), the row count it
    verified (``rows``: the originals hold exactly these rows) and the names
    of the original files it planned (``planned``). Locations without such
    a record are absent."""

    compacted: dict[str, list[str]]
    rows: dict[str, int]
    planned: dict[str, set[str]]
    # minor mode: the files the unit kept, moved by rename into the live directory (name -> length); the
    # original directory lacks them, a rollback brings them back from the live directory (``finish_trash``)
    kept: dict[str, dict[str, int]] = dataclasses.field(default_factory=dict)
    # the rows of each unit's original (what a rollback restores; None: unknown, e.g. a merge's)
    original_rows: dict[str, int | None] = dataclasses.field(default_factory=dict)


def backup_record(ctx: Context, info: TableInfo, b: BackupRef) -> BackupRecord:
    """The backup's compaction journal, read once."""
    doc, units = Journal.load(ctx.fs, b.journal_dir or journal_dir(info), b.run_id)
    record = BackupRecord(compacted={}, rows={}, planned={})
    for u in doc.get("units", []):
        location = ctx.fs.qualify(u["location"])
        unit = units.get(u["index"], {})
        if unit.get("compacted") is not None:
            record.compacted[location] = list(unit["compacted"])
        if unit.get("rows") is not None:
            record.rows[location] = int(unit["rows"])
        if "rows_original" in unit:  # the original's rows (None: unknown); older journals: ``rows`` stands for it
            record.original_rows[location] = unit["rows_original"]
        if u.get("files"):
            record.planned[location] = {f[0] for f in u["files"]}
        if unit.get("kept_moves") and unit.get("step") == "done":
            record.kept[location] = {m["name"]: int(m["length"]) for m in unit["kept_moves"]}
    return record


# ---------------------------------------------------------------- statistics


def update_statistics(ctx: Context, info: TableInfo, units: list[tuple[Any, dict[str, Any]]]) -> None:
    """Refresh numFiles/totalSize/numRows of each changed partition (or of
    the table) in the Metastore, so planners and replicated targets see the
    new figures; each unit's result gets what the Metastore holds after
    (``statistics``) or why it could not be written (``statistics_error``).
    Never undoes the data change. The row count is the verified one, or -1
    (unknown) when files written by others were carried along."""
    items = []
    for u, r in units:
        rows = r.get("rows_after") if not r.get("late_files") and not r.get("carried_over") else None
        if rows is not None and "rows_kept" in r:  # minor mode: the partition also holds the files it kept
            rows = None if r["rows_kept"] is None else rows + r["rows_kept"]
        spec = u["partition"] if isinstance(u, dict) else u.partition
        items.append((spec if info.is_partitioned else None, r["files_after"], r["bytes_after"], rows))
    outcomes: list[Any] | None = None
    if info.is_partitioned and len(items) > 1:  # read, written and read back together
        try:
            outcomes = ctx.catalog.set_statistics_many(info, items)
        except Exception:  # noqa: BLE001 - the listing failed, say: each partition on its own, with its own error
            log.warning("%s: statistics of %d partitions not written together; one at a time", info.full_name,
                        len(items), exc_info=True)
    if outcomes is None:
        outcomes = []
        for spec, files, size, rows in items:
            try:
                outcomes.append(ctx.catalog.set_statistics(info.db, info.name, spec, files, size, rows))
            except Exception as exc:  # noqa: BLE001 - the data is in place; only the figures are stale
                outcomes.append(exc)
    for (_u, r), outcome in zip(units, outcomes):
        if isinstance(outcome, Exception):
            log.warning("%s %s: statistics not updated: %s", info.full_name, r.get("spec"), java_message(outcome))
            r["statistics_error"] = java_message(outcome)
        else:
            r["statistics"] = outcome


# Swapped units whose statistics wait to be written together (``PendingStatistics``).
STATISTICS_FLUSH_UNITS = 256


class PendingStatistics:
    """The statistics of a table's swapped units, written in groups
    (``update_statistics``: a few Metastore calls a group instead of five a
    partition, all behind the Hive client lock the units share) whenever
    ``flush_units`` are waiting, and at the end of the table's units
    (``flush``). A run that stops in between leaves at most that many
    swapped partitions with their old figures: the data is right, only
    planners' estimates are stale until the next write of them."""

    def __init__(self, ctx: Context, info: TableInfo, flush_units: int = STATISTICS_FLUSH_UNITS):
        self.ctx, self.info, self.flush_units = ctx, info, max(1, flush_units)
        self._lock = threading.Lock()
        self._pending: list[tuple[Any, dict[str, Any]]] = []
        self.groups = 0  # how many groups were written (the tests read it)

    def add(self, unit: Any, result: dict[str, Any]) -> None:
        """A unit swapped: its figures (``result``) are written with the group it joins."""
        with self._lock:
            self._pending.append((unit, result))
            if len(self._pending) < self.flush_units:
                return
            group, self._pending = self._pending, []
        self._write(group)

    def flush(self) -> None:
        """Write what is waiting; each result gets ``statistics`` or ``statistics_error``."""
        with self._lock:
            group, self._pending = self._pending, []
        if group:
            self._write(group)

    def _write(self, group: list[tuple[Any, dict[str, Any]]]) -> None:
        update_statistics(self.ctx, self.info, group)
        with self._lock:
            self.groups += 1
