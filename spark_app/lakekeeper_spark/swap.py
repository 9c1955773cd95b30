"""The swap: two directory renames per unit, so the Metastore location of
the table and of every partition never changes.

    live   -> .live.lk_old_<run>      (move aside; kept for rollback)
    .live.lk_staging_<run> -> live     (move in)

Between the two renames the location is missing for the time of one
rename. If moving in fails, the original is moved back at once.
"""

from __future__ import annotations

import logging

from .errors import LakekeeperError
from .fs import HadoopFS
from .journal import Journal, fault_point
from .model import Listing, Unit

log = logging.getLogger(__name__)


def check_unchanged(fs: HadoopFS, unit: Unit) -> None:
    """Concurrent-write guard: the live directory must still hold exactly the
    files that were planned (names, sizes, modification times)."""
    now = fs.list_dir(unit.location)
    if not now.exists:
        raise LakekeeperError("concurrent_write", f"{unit.location} disappeared during compaction")
    if now.fingerprint() != unit.listing.fingerprint() or now.subdirs != unit.listing.subdirs:
        before = {f.name for f in unit.listing.files}
        after = {f.name for f in now.files}
        added, removed = sorted(after - before), sorted(before - after)
        raise LakekeeperError(
            "concurrent_write",
            f"{unit.location} changed during compaction (added {added[:3]}, removed {removed[:3]}, "
            f"{len(now.files)} files now vs {len(unit.listing.files)} planned)",
        )


def swap_in(fs: HadoopFS, journal: Journal, idx: int, unit: Unit) -> None:
    journal.unit_step(idx, "moving_aside", old=unit.old, staging=unit.staging, location=unit.location)
    fs.rename(unit.location, unit.old)
    fault_point("moving_aside", "after")
    journal.unit_step(idx, "moving_in", old=unit.old, staging=unit.staging, location=unit.location)
    try:
        fs.rename(unit.staging, unit.location)
    except LakekeeperError:
        log.error("moving %s in failed; putting the original back", unit.staging)
        fs.rename(unit.old, unit.location)
        raise
    fault_point("moving_in", "after")


def adopt_late_files(fs: HadoopFS, unit: Unit, planned: Listing) -> list[str]:
    """Files a writer created in the original directory between the last
    check and the move aside followed it into ``.lk_old``; move them into the
    live directory so no row is lost. Returns their names."""
    moved = []
    planned_names = {f.name for f in planned.files}
    for f in fs.list_dir(unit.old).files:
        if f.name in planned_names:
            continue
        target = f"{unit.location}/{f.name}"
        if fs.exists(target):
            target = f"{unit.location}/late-{f.name}"
        fs.rename(f"{unit.old}/{f.name}", target)
        moved.append(f.name)
    if moved:
        log.warning("%s: %d file(s) written during the swap were moved into the live directory", unit.location, len(moved))
    return moved


def swap_back(fs: HadoopFS, live: str, old: str, trash: str) -> None:
    """Rollback of one unit: compacted data aside, original back, compacted
    data deleted."""
    if fs.exists(live):
        fs.rename(live, trash)
    fault_point("rollback_moved_compacted", "after")
    fs.rename(old, live)
    fault_point("rollback_restored", "after")
    fs.delete(trash)
