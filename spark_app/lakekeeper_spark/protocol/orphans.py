"""The Metastore against the filesystem, with the filesystem's answers:
analyze's ``reconcile`` (policy/reconcile.py decides, this gathers and
measures) and what ``cleanup --orphans`` removes. Only the listings analyze
makes anyway (the partitions' parents, shared through ``NameCache``), plus
one listing of a partitioned table's root and its levels above the
partitions' parents, and one content summary per finding."""

from __future__ import annotations

import logging
import time
from typing import Any

from ..catalog.context import Context
from ..policy.reconcile import TableFacts, reconcile, summarize
from ..report.errors import java_message
from ..report.model import TableInfo, TablePlan
from ..storage.layout import parse_hidden_name, split_path
from .journal import Journal
from .lease import lease_path, read_holder, stale_reason
from .recovery import pending_runs

log = logging.getLogger(__name__)

MEASURED = 200  # findings measured (a content summary each); beyond, their size is not given


def _parents(root: str, p: TablePlan, partitioned: bool) -> list[str]:
    """The directories to list: each unit's parent, and for a partitioned
    table every level from its root down to them."""
    out = set()
    for u in p.units:
        if not u.location:
            continue
        parent = split_path(u.location)[0]
        out.add(parent)
        while partitioned and parent.startswith(root + "/"):
            parent = split_path(parent)[0]
            out.add(parent)
    if partitioned:
        out.add(root)
    return sorted(out)


def table_facts(ctx: Context, info: TableInfo, p: TablePlan, backup_runs: set[str],
                holder: dict[str, Any] | None, pending: list[str] | None = None) -> TableFacts:
    root = (info.location or "").rstrip("/")
    parents = {parent: ctx.fs.list_names(parent) for parent in _parents(root, p, info.is_partitioned)}
    root_files = ctx.fs.list_dir(root).files if info.is_partitioned else []
    journal_runs = set(Journal.run_ids(ctx.fs, p.journal_dir))
    pending_set = set(pending_runs(ctx, info) if pending is None else pending)
    live_run, stale = None, None
    if holder is not None:
        why = stale_reason(holder, ctx.settings.lease_timeout_seconds, time.time())
        if why is None:
            live_run = holder.get("run_id")
        else:
            stale = {"path": lease_path(p.journal_dir), "run_id": holder.get("run_id"), "why": why}
    return TableFacts(root=root, partitioned=info.is_partitioned,
                      partition_columns=[c for c, _t in info.partition_columns],
                      units=[(u.spec, u.location.rstrip("/"), u.listing.exists) for u in p.units if u.location],
                      filtered=bool(ctx.settings.where), parents=parents, root_files=root_files,
                      journal_runs=journal_runs, pending_runs=pending_set, backup_runs=backup_runs,
                      live_lease_run=live_run, stale_lease=stale, journal_dir=p.journal_dir.rstrip("/"))


def _measure(ctx: Context, found: dict[str, Any]) -> None:
    """``files`` and ``bytes`` of every directory found (one content summary each)."""
    dirs = [e for e in found["unregistered_dirs"] + found["stale"] if e.get("kind") != "lease"]
    for e in dirs[:MEASURED]:
        try:
            cs = ctx.fs.content_summary(e["path"])
            e.update(files=cs["file_count"], bytes=cs["length"])
        except Exception as exc:  # noqa: BLE001 - gone meanwhile, or unreadable: the finding stands
            e.update(files=None, bytes=None, error=java_message(exc))


def reconcile_facts(ctx: Context, info: TableInfo, p: TablePlan, backup_runs: set[str],
                    holder: dict[str, Any] | None, pending: list[str] | None = None,
                    legacy: int = 0) -> dict[str, Any]:
    """analyze's ``reconcile`` of the table: the findings, measured, and their ``summary``."""
    found = reconcile(table_facts(ctx, info, p, backup_runs, holder, pending))
    _measure(ctx, found)
    found["summary"] = summarize(found, legacy)
    return found


def remove_orphans(ctx: Context, info: TableInfo, p: TablePlan, backup_runs: set[str]) -> dict[str, Any]:
    """cleanup with ``orphans``: the removable findings (orphaned staging
    copies, policy/reconcile.py) deleted - each checked again right before
    (still there, still ours, its run still in no unfinished journal, its
    live directory there) - or, in a dry run, listed. Under the table's
    lease (the caller's), after its recovery: no run of ours is live."""
    holder = read_holder(ctx.fs, lease_path(p.journal_dir))
    if holder is not None and holder.get("run_id") == ctx.run_id:
        holder = None  # our own lease
    found = reconcile(table_facts(ctx, info, p, backup_runs, holder))
    _measure(ctx, found)
    removed, kept = [], []
    for e in found["stale"]:
        if not e.get("removable"):
            kept.append({k: e[k] for k in ("path", "kind", "run_id", "state", "reason", "remedy") if k in e})
            continue
        entry = {k: e.get(k) for k in ("path", "kind", "run_id", "state", "files", "bytes", "reason")}
        if not ctx.settings.dry_run:
            parent, name = split_path(e["path"])
            parsed = parse_hidden_name(name)
            again = set(pending_runs(ctx, info))
            if (not parsed or parsed[1] != "lk_staging" or parsed[2] in again
                    or not ctx.fs.exists(f"{parent}/{parsed[0]}") or not ctx.fs.exists(e["path"])):
                kept.append(dict(entry, reason="changed since it was found; not removed"))
                continue
            ctx.fs.delete(e["path"])
            log.info("%s: removed the orphaned staging copy %s (%s bytes)", info.full_name, e["path"], e.get("bytes"))
        removed.append(entry)
    return {"orphans_removed": removed, "orphans_kept": kept,
            "orphan_bytes": sum(e.get("bytes") or 0 for e in removed)}
