"""The swap: two directory renames per unit, so the Metastore location of
the table and of every partition never changes.

    live   -> .live.lk_old_<run>      (move aside; kept for rollback)
    .live.lk_staging_<run> -> live     (move in)

Between the two renames the location is missing for the time of one
rename. Writers are not stopped, so three things can happen around a swap,
and none of them may lose a row:

* a file added after planning and before the move aside: ``check_unchanged``
  sees it before anything is moved (``concurrent_write``; nothing changes);
* a file added between that check and the move aside follows the directory
  into ``.lk_old``: ``adopt_late_files`` moves it into the live directory;
* a writer re-creates the live directory between the two renames (Hive and
  Spark create a missing partition directory): ``move_in`` moves what it
  wrote into ``.lk_old`` (to be adopted like the previous case), removes the
  empty directory and then moves the staging in.

Before the move aside the names of the compacted files are journaled, so a
rollback can tell them from files written after the compaction and keep
the latter (``swap_back``).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from ..report.errors import LakekeeperError
from ..storage.fs import HadoopFS
from .faults import fault_point
from .journal import Journal
from ..report.model import Listing, Unit

log = logging.getLogger(__name__)

MOVE_IN_ATTEMPTS = 5


def check_unchanged(fs: HadoopFS, unit: Unit) -> None:
    """Concurrent-write guard: the live directory must still hold exactly the
    files that were planned (names, sizes, modification times), and on HDFS
    none of its files may be open for write (an append, or a hidden file a
    writer renames into place when done, changes no listing until closed)."""
    now = fs.list_dir(unit.location)
    if not now.exists:
        raise LakekeeperError("source_vanished", f"{unit.location} disappeared during compaction (its partition "
                                                 f"dropped or its directory deleted); nothing to swap")
    if now.fingerprint() != unit.listing.fingerprint() or now.subdirs != unit.listing.subdirs:
        before = {f.name for f in unit.listing.files}
        after = {f.name for f in now.files}
        added, removed = sorted(after - before), sorted(before - after)
        raise LakekeeperError(
            "concurrent_write",
            f"{unit.location} changed during compaction (added {added[:3]}, removed {removed[:3]}, "
            f"{len(now.files)} files now vs {len(unit.listing.files)} planned)",
        )
    if fs.is_hdfs(unit.location):  # appended to, or a hidden file being written: the listing does not show it
        held = fs.open_files({unit.location: [f.name for f in now.files] + list(now.hidden_files)})[unit.location]
        if held:
            raise LakekeeperError("concurrent_write", f"{unit.location} has {len(held)} file(s) open for write "
                                                      f"({', '.join(held[:3])}): a writer is still writing there")


def swap_in(fs: HadoopFS, journal: Journal, idx: int, unit: Unit, staged: Listing) -> list[str]:
    """Move the original aside and the verified staging in. ``staged``: the
    staging's listing the verification checked (nothing is written there
    after it). Returns the names of the compacted files (journaled before
    anything moves)."""
    compacted = sorted(f.name for f in staged.files)
    journal.unit_step(idx, "moving_aside", old=unit.old, staging=unit.staging, location=unit.location,
                      compacted=compacted)
    if not fs.exists(unit.staging):  # never move a live directory aside without what replaces it
        raise LakekeeperError("staging_missing", f"the verified copy {unit.staging} is gone (removed by another "
                                                 f"run?); {unit.location} was not moved")
    fs.rename(unit.location, unit.old)
    journal.fault("moving_aside", idx)
    journal.unit_mark(idx, "moving_in")  # recovered from which directories exist, as moving_aside: no record needed
    try:
        move_in(fs, unit.staging, unit.location, unit.old)
    except LakekeeperError:
        if fs.exists(unit.location) or not fs.exists(unit.old):
            raise
        log.error("moving %s in failed; putting the original back", unit.staging)
        fs.rename(unit.old, unit.location)
        raise
    journal.fault("moving_in", idx)
    return compacted


def move_in(fs: HadoopFS, staging: str, live: str, old: str) -> list[str]:
    """``staging -> live``. If a writer re-created ``live`` after it was moved
    aside, its files go into ``old`` first (``adopt_late_files`` brings them
    back after the rename) and the emptied directory is removed; a writer
    that keeps re-creating it makes this fail with ``concurrent_write``
    (recovery then finishes the job). Returns the names moved into ``old``.

    The rename is tried first: ``HadoopFS.rename`` refuses an existing
    target (on HDFS inside the NameNode's rename), so the directory is
    looked for only when the rename was refused, not before every swap."""
    moved: list[str] = []
    for attempt in range(MOVE_IN_ATTEMPTS):
        try:
            fs.rename(staging, live)
            return moved
        except LakekeeperError:
            if not (fs.exists(live) and fs.exists(staging)):
                raise
        if attempt == MOVE_IN_ATTEMPTS - 1:  # no rename follows: the directory stays for recovery to adopt
            break
        listing = fs.list_dir(live)  # re-created meanwhile
        moved += adopt_files(fs, live, old, set(), what="re-created live directory")
        if listing.subdirs:
            raise LakekeeperError(
                "concurrent_write",
                f"{live} was re-created during the swap with subdirectories {listing.subdirs[:3]}; "
                f"compacted data kept at {staging}, original at {old}; run recover")
        remove_empty_dir(fs, live)
        if fs.exists(live):
            time.sleep(0.1)
    raise LakekeeperError("concurrent_write", f"{live} keeps being re-created during the swap; "
                                              f"compacted data kept at {staging}, original at {old}; run recover")


def remove_empty_dir(fs: HadoopFS, uri: str) -> bool:
    """Delete a directory only if it is empty: not even a writer's hidden
    temporary file (which it would rename into place later) is deleted. A
    file that arrives meanwhile makes the non-recursive delete fail, and
    nothing is lost."""
    if fs.list_names(uri):
        return False
    try:
        return fs.delete(uri, recursive=False)
    except Exception:  # noqa: BLE001 - not empty any more: keep it
        return False


def adopt_files(fs: HadoopFS, src: str, dst: str, skip: set[str], what: str = "") -> list[str]:
    """Move the visible files of ``src`` that are not in ``skip`` into
    ``dst`` (renamed ``late-<n>-<name>`` when the name is taken), and its
    visible subdirectories with them (Hive on Tez writes a ``UNION ALL`` as
    ``HIVE_UNION_SUBDIR_<n>/``, which Hive reads with recursive input
    directories): someone's data, never left behind to be deleted with
    ``src``. A subdirectory is named with a trailing ``/`` in the result."""
    moved = []
    if not fs.exists(src):
        return moved
    listing = fs.list_dir(src)
    entries = [(f.name, f.name) for f in listing.files] + [(d, d + "/") for d in listing.subdirs]
    for name, label in entries:
        if name in skip:
            continue
        target = f"{dst.rstrip('/')}/{name}"
        n = 0
        while fs.exists(target):
            n += 1
            target = f"{dst.rstrip('/')}/late-{n}-{name}"
        fs.rename(f"{src.rstrip('/')}/{name}", target)
        moved.append(label)
    if moved:
        log.warning("%s: %d file(s) of the %s moved into %s", dst, len(moved), what or src, dst)
    return moved


def adopt_late_files(fs: HadoopFS, unit: Unit, planned: Listing) -> list[str]:
    """Files a writer created in the original directory between the last
    check and the move aside followed it into ``.lk_old``; move them into the
    live directory so no row is lost. Returns their names."""
    return adopt_files(fs, unit.old, unit.location, {f.name for f in planned.files},
                       what="files written during the swap")


def swap_back(fs: HadoopFS, live: str, old: str, trash: str, compacted: list[str] | None = None,
              journal: Journal | None = None, idx: int | None = None,
              kept: list[str] | None = None) -> dict[str, Any]:
    """Rollback of one unit: compacted data aside, original back in place,
    files written after the compaction carried over (and the files minor
    mode kept, ``kept``, moved back), compacted data deleted."""
    table = journal.table_name if journal else None
    if not fs.exists(old):  # never move a live directory aside without what replaces it
        raise LakekeeperError("rollback_failed", f"the original {old} is gone (restored or removed by another "
                                                 f"run?); {live} was not moved")
    if fs.exists(live):
        fs.rename(live, trash)
    fault_point("rollback_moved_compacted", "after", table, idx)
    if fs.exists(live):  # re-created by a writer between the renames
        adopt_files(fs, live, trash, set(), what="re-created live directory")
        remove_empty_dir(fs, live)
    try:
        fs.rename(old, live)
    except LakekeeperError as exc:
        if exc.code != "lease_lost" and not fs.exists(live) and fs.exists(trash):
            log.error("restoring %s failed (%s); moving the compacted data back", old, exc.message)
            fs.rename(trash, live)  # the first rename undone: the table as it was before this unit
        raise
    fault_point("rollback_restored", "after", table, idx)
    return finish_trash(fs, live, trash, compacted, kept)


def finish_trash(fs: HadoopFS, live: str, trash: str, compacted: list[str] | None,
                 kept: list[str] | None = None) -> dict[str, Any]:
    """Once the original is back: files of the trash that the compaction did
    not write (appended afterwards, and the files minor mode kept and moved
    there by rename, ``kept``: part of the original) go back into the live
    directory, then the trash is deleted. Without the list of compacted
    files the trash is kept, never deleted blind. The kept files moved back
    are reported in ``kept_restored``, not as carried over."""
    kept_set = set(kept or [])
    if not fs.exists(trash):
        return {"carried_over": [], "trash_kept": None, **({"kept_restored": []} if kept_set else {})}
    if compacted is None:
        log.warning("%s: the compacted files of this unit are not journaled; %s kept", live, trash)
        return {"carried_over": [], "trash_kept": trash}
    moved = adopt_files(fs, trash, live, set(compacted), what="files written after the compaction")
    fs.delete(trash)
    out: dict[str, Any] = {"carried_over": [m for m in moved if m not in kept_set], "trash_kept": None}
    if kept_set:
        out["kept_restored"] = [m for m in moved if m in kept_set]
    return out


def move_kept(fs: HadoopFS, journal: Journal, idx: int, unit: Unit, staged: Listing) -> list[dict[str, Any]]:
    """Minor mode and a split: the files the unit keeps (``unit.kept_files``)
    are moved by rename from the live directory into the verified staging,
    right before the swap (after the last check of the live directory), so
    that the swap brings in a complete partition without a byte copied. The
    moves (name, from, to, length) are journaled first (``moving_kept``);
    each is then checked, never trusting a rename: the planned length at the
    destination, nothing left at the source. Recovery moves them back into
    the live directory of a unit that was not swapped (``move_back_kept``).
    Returns the moves."""
    moves = [{"name": f.name, "from": f"{unit.location.rstrip('/')}/{f.name}",
              "to": f"{unit.staging.rstrip('/')}/{f.name}", "length": f.size} for f in unit.kept_files]
    if not moves:
        return []
    clash = sorted({m["name"] for m in moves} & {f.name for f in staged.files})
    if clash:
        raise LakekeeperError("write_failed", f"{unit.staging}/{clash[0]} already exists: a compacted file has "
                                              f"the name of a file to keep; nothing was moved or swapped")
    journal.unit_step(idx, "moving_kept", kept_moves=moves)
    for m in moves:
        fs.rename(m["from"], m["to"])
    check_moved(fs, unit.location, unit.staging, moves)
    journal.fault("moving_kept", idx)
    log.info("%s: moved %d kept file(s) (%d bytes) into %s", unit.spec or unit.location, len(moves),
             sum(m["length"] for m in moves), unit.staging)
    return moves


def check_moved(fs: HadoopFS, src_dir: str, dst_dir: str, moves: list[dict[str, Any]], back: bool = False) -> None:
    """Each moved file is in ``dst_dir`` with its journaled length (moved
    back: of any length, a writer may have appended to it meanwhile) and no
    longer in ``src_dir`` (two listings), or raises."""
    there = {f.name: f.size for f in fs.list_dir(dst_dir).files}
    left = {f.name for f in fs.list_dir(src_dir).files}
    for m in moves:
        if m["name"] not in there or (not back and there[m["name"]] != m["length"]) or m["name"] in left:
            raise LakekeeperError("fs_error", f"moving {m['name']} {'back ' if back else ''}into {dst_dir}: "
                                              f"{there.get(m['name'])} bytes there, {m['length']} expected, "
                                              f"{'still' if m['name'] in left else 'not'} in {src_dir}")


def move_back_kept(fs: HadoopFS, live: str, staging: str, moves: list[dict[str, Any]]) -> list[str]:
    """Recovery of a unit that was not swapped after ``moving_kept``: every
    kept file found in the staging (and not in the live directory) is moved
    back into the live directory, before the staging may be deleted. A file
    found in both places or in neither: nothing is moved (``recovery_failed``,
    everything kept as it is). Returns the names moved back."""
    at_live = {f.name for f in fs.list_dir(live).files} if fs.exists(live) else set()
    at_staging = {f.name for f in fs.list_dir(staging).files} if fs.exists(staging) else set()
    back, wrong = [], []
    for m in moves:
        name = m["name"]
        if name in at_staging and name not in at_live:
            back.append(m)
        elif name not in at_live or name in at_staging:
            wrong.append(f"{name} ({'in both' if name in at_live else 'in neither'} {live} and {staging})")
    if wrong:
        raise LakekeeperError("recovery_failed", f"the kept files moved into {staging} cannot be put back into "
                                                 f"{live}: {', '.join(wrong[:3])}; nothing moved or deleted")
    for m in back:
        fs.rename(m["to"], m["from"])
    check_moved(fs, staging, live, back, back=True)
    if back:
        log.warning("%s: %d kept file(s) moved back from %s", live, len(back), staging)
    return [m["name"] for m in back]
