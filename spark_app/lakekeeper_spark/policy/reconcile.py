"""The Metastore against the filesystem (analyze's ``reconcile``), and what
``cleanup --orphans`` may remove. Pure: what the Metastore says (the
partitions' locations), what the listings analyze makes already found
(the table root's and the partitions' parents' entries), the table's
journal runs, backups and lease in; the findings out:

* ``unregistered_dirs``: visible directories under a partitioned table's
  root that no Metastore partition points at (a partition directory written
  or copied in without ``ADD PARTITION`` / ``MSCK REPAIR``): readers do not
  see their files;
* ``missing_dirs``: partitions whose directory is gone (readers get no
  rows, some engines an error);
* ``root_files``: data files directly in a partitioned table's root, outside
  every partition directory (no reader reads them);
* ``stale``: hidden directories of ours (``.<dir>.lk_staging_<run>``,
  ``lk_old``, ``lk_trash``), journal runs and a lease that no live run
  holds: each with its ``state``, whether ``cleanup --orphans`` may remove it
  (``removable``) and what to do (``remedy``).

Only one kind is ever ``removable``: a staging copy (``lk_staging``, the
compacted copy a run writes before its swap; the swap renames it, so one
still under that name was never swapped in) whose live directory is there
and is a location of the table, whose run no live lease holds, and whose
run is in no journal of the table (a journal of an interrupted run is
recovery's to settle) or finished. An original (``lk_old``) or a
rollback's trash (``lk_trash``) without a journal may hold the only copy of
someone's rows: reported, never removed; the user's own directories and
files (the first three kinds) are reported, never touched.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..report.model import FileEntry
from ..storage.layout import OLD_TAG, STAGING_TAG, TRASH_TAG, parse_hidden_name
from ..storage.legacy import parse_legacy_leftover

NAMES_SHOWN = 10
KINDS = {STAGING_TAG: "staging", OLD_TAG: "original", TRASH_TAG: "trash"}


@dataclass
class TableFacts:
    """What analyze knows of a table, for the reconciliation."""

    root: str  # the table's location, qualified, no trailing "/"
    partitioned: bool
    partition_columns: list[str]
    # (spec, location, exists) of the partitions looked at; every partition unless ``filtered``
    units: list[tuple[str, str, bool]]
    filtered: bool = False  # a where filter chose the units: unregistered directories are not judged
    # parent directory -> its entries (name, is_dir), hidden included (the listings analyze made)
    parents: dict[str, list[tuple[str, bool]]] = field(default_factory=dict)
    root_files: list[FileEntry] = field(default_factory=list)  # visible files of a partitioned table's root
    journal_runs: set[str] = field(default_factory=set)
    pending_runs: set[str] = field(default_factory=set)  # interrupted: recovery settles them
    backup_runs: set[str] = field(default_factory=set)  # runs with a backup table today
    live_lease_run: str | None = None  # the run holding a live lease on the table
    stale_lease: dict[str, Any] | None = None  # a lease no live run holds (its record and why)
    journal_dir: str = ""


def _depth(root: str, parent: str) -> int | None:
    """How many partition levels ``parent`` is below ``root`` (0: the root), None: not under it."""
    if parent == root:
        return 0
    if not parent.startswith(root + "/"):
        return None
    return parent[len(root) + 1:].count("/") + 1


def reconcile(t: TableFacts) -> dict[str, Any]:
    """The findings (see the module doc), each path once; ``sizes`` are
    filled in by the caller for the directories (``files``, ``bytes``)."""
    lives = {loc.rstrip("/") for _spec, loc, _e in t.units if loc}
    prefixes = {loc[:i] for loc in lives for i in range(len(loc)) if loc[i] == "/"}
    unregistered, stale = [], []
    for parent, entries in sorted(t.parents.items()):
        depth = _depth(t.root, parent) if t.partitioned else None
        names = {n for n, _d in entries}
        for name, is_dir in sorted(entries):
            path = f"{parent}/{name}"
            parsed = parse_hidden_name(name)
            if parsed and is_dir:
                # ours, beside one of the table's directories or under its root (not another table's in the
                # database directory beside a non-partitioned table)
                if f"{parent}/{parsed[0]}" in lives or depth is not None:
                    entry = _ours(t, parent, parsed, path, names, depth is not None)
                    if entry:
                        stale.append(entry)
                continue
            if parse_legacy_leftover(name):
                continue  # lakekeeper 0.0.x's __old_/__compact_tmp_: legacy_leftovers reports them
            if (t.partitioned and not t.filtered and is_dir and depth is not None and depth < len(t.partition_columns)
                    and not name.startswith((".", "_")) and path not in lives and path not in prefixes):
                column = t.partition_columns[depth]
                unregistered.append({"path": path, "looks_like_partition": name.lower().startswith(column.lower() + "="),
                                     "reason": "no Metastore partition of the table points at it (written or copied "
                                               "in without ADD PARTITION / MSCK REPAIR TABLE): readers do not see "
                                               "its files"})
    stale += _journals(t)
    if t.stale_lease:
        stale.append({"path": t.stale_lease["path"], "kind": "lease", "run_id": t.stale_lease.get("run_id"),
                      "state": "stale_lease", "removable": False,
                      "remedy": "the next compact, rollback, cleanup or recover takes it over (and recovers the run)",
                      "reason": f"lease of a run that is gone ({t.stale_lease.get('why')})"})
    missing = [{"spec": spec, "location": loc,
                "reason": "the Metastore partition's directory is gone: readers get no rows from it (drop the "
                          "partition, or restore its directory)"}
               for spec, loc, exists in t.units if t.partitioned and loc and not exists]
    files = sorted(t.root_files, key=lambda f: f.name) if t.partitioned else []
    root_files = {"files": len(files), "bytes": sum(f.size for f in files),
                  "names": [f.name for f in files[:NAMES_SHOWN]]}
    if files:
        root_files["reason"] = ("data files in the root of a partitioned table, outside every partition "
                                "directory: no reader reads them")
    out = {"unregistered_dirs": unregistered, "missing_dirs": missing, "root_files": root_files, "stale": stale}
    if t.filtered:
        out["partial"] = "a where filter chose the partitions: unregistered directories are not judged"
    return out


def _ours(t: TableFacts, parent: str, parsed: tuple[str, str, str], path: str, names: set[str],
          under_root: bool) -> dict[str, Any] | None:
    """A hidden directory of ours: a finding, or None when a run accounts
    for it (a live run's, or a backup's original). ``under_root``: beside a
    directory under a partitioned table's root (with a where filter, one of
    the partitions not looked at may be its live directory)."""
    live, tag, run = parsed
    live_path = f"{parent}/{live}"
    kind = KINDS[tag]
    if run == t.live_lease_run:
        return None  # the run working on the table now
    entry: dict[str, Any] = {"path": path, "kind": kind, "run_id": run, "live": live_path, "removable": False}
    known = live_path in {loc.rstrip("/") for _s, loc, _e in t.units} or (t.filtered and under_root)
    live_ok = live in names and known
    if run in t.pending_runs:
        entry.update(state="interrupted", remedy="recover (or the next compact, rollback or cleanup, which "
                                                 "recovers first) finishes or undoes its run from the journal",
                     reason=f"{kind} directory of run {run}, interrupted (its journal is not finished)")
    elif run in t.journal_runs:
        if tag == OLD_TAG and run in t.backup_runs:
            return None  # a backup's original files: the backups list it
        if tag == STAGING_TAG and live_ok:
            entry.update(state="finished_run", removable=True, remedy="cleanup with orphans removes it",
                         reason=f"staging copy of run {run}, whose journal is finished: never swapped in")
        else:
            entry.update(state="finished_run", remedy="inspect it, then delete it or put it back by hand",
                         reason=f"{kind} directory of finished run {run} that no backup table points at")
    elif tag == STAGING_TAG and live_ok:
        entry.update(state="orphaned", removable=True, remedy="cleanup with orphans removes it",
                     reason=f"staging copy of run {run}, in no journal of the table and no live run's: a killed "
                            f"run's copy, never swapped in (the live directory is there)")
    else:
        why = ("its live directory is gone: it may hold the table's only copy of these rows"
               if not live_ok else "it may hold the only copy of someone's rows")
        entry.update(state="orphaned", remedy="inspect it, then delete it or put it back by hand (recover reports "
                                              "it when its live directory is missing)",
                     reason=f"{kind} directory of run {run}, in no journal of the table; {why}")
    return entry


def _journals(t: TableFacts) -> list[dict[str, Any]]:
    """Journal runs that no live run holds and no backup keeps: an
    interrupted or abandoned run's (recovery settles it), and a finished
    compaction's whose backup table was dropped by hand (its journal, and
    maybe its originals, stay behind)."""
    out = []
    for run in sorted(t.journal_runs - t.backup_runs):
        if run == t.live_lease_run:
            continue
        entry = {"path": f"{t.journal_dir}/{run}", "kind": "journal", "run_id": run, "removable": False}
        if run in t.pending_runs:
            entry.update(state="interrupted", remedy="recover (or the next compact, rollback or cleanup, which "
                                                     "recovers first) finishes or undoes the run",
                         reason=f"journal of run {run}, interrupted or abandoned, no live run holds the table")
        else:
            entry.update(state="finished_run", remedy="inspect it (its originals are named in it), then delete it by hand",
                         reason=f"journal of finished run {run}, whose backup table is gone (dropped by hand?)")
        out.append(entry)
    return out


def summarize(found: dict[str, Any], legacy: int = 0) -> dict[str, Any]:
    """Counts and sizes of the findings (directories' ``files``/``bytes``
    where the caller measured them), and whether the table is consistent."""
    dirs = found["unregistered_dirs"] + found["stale"]
    removable = [e for e in found["stale"] if e.get("removable")]
    findings = (len(found["unregistered_dirs"]) + len(found["missing_dirs"]) + len(found["stale"])
                + (1 if found["root_files"]["files"] else 0) + legacy)
    return {"findings": findings, "consistent": findings == 0,
            "unregistered_dirs": len(found["unregistered_dirs"]), "missing_dirs": len(found["missing_dirs"]),
            "root_files": found["root_files"]["files"], "stale": len(found["stale"]), "legacy_leftovers": legacy,
            "bytes": sum(e.get("bytes") or 0 for e in dirs) + found["root_files"]["bytes"],
            "removable": len(removable), "removable_bytes": sum(e.get("bytes") or 0 for e in removable)}
