"""analyze: per table and per partition, file count, sizes, a file-size
histogram now and as the plan projects it, and the decision; plus the
table's existing backups with their size and the retention verdict a
cleanup with the same options would give, the table's run history (its
newest ``history`` records, newest first), the Metastore reconciled with
the filesystem (``reconcile``: protocol/orphans.py) and where its small
files come from (``sources``: policy/provenance.py, from the same
listings). Writes nothing."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from ..report import sizes
from ..catalog.backup import backup_partitions, find_backups
from ..catalog.context import Context
from ..catalog.legacy import find_legacy_backups
from ..rewrite.delete_ratio import apply_delete_ratio
from ..report.errors import java_message
from ..report.history import read_history, summarize, trim_units
from ..protocol.journal import Journal
from ..protocol.legacy import legacy_backup_facts, legacy_leftovers
from ..protocol.orphans import reconcile_facts
from ..policy.provenance import SourceFile, attribute
from ..storage.listing import NameCache
from ..storage.layout import history_dir
from ..protocol.lease import lease_path, read_holder, describe
from ..report.model import TableInfo, Unit
from ..protocol.recovery import backup_units, pending_runs
from ..report.results import partition_result, table_result
from ..policy.retention import backup_verdicts
from ..policy.replication import check_replication
from ..storage.space import space_check
from ..policy.queues import queue_facts
from ..policy.table_policy import excluded, exclusion_property, policy_sources
from ..catalog.tables import check_rewritable, leftovers, load_table, plan, with_policy


def lease_facts(holder: dict[str, Any] | None) -> dict[str, Any] | None:
    """Who holds the table's lease right now (a run working on it), or None."""
    if holder is None:
        return None
    return dict({k: v for k, v in holder.items() if k != "pid_start"}, description=describe(holder))


def unit_histograms(u: Unit, compact: bool) -> tuple[list[int], list[int]]:
    """File-size histogram of a unit now, and after the plan (projected)."""
    before = sizes.histogram(f.size for f in u.listing.files)
    if not compact:
        return before, before
    return before, sizes.histogram(sizes.projected_sizes(u.stats.bytes, u.decision.target_files))


def backup_facts(ctx: Context, info: TableInfo) -> list[dict[str, Any]]:
    """Every backup of the table: age, pinned, size of its original
    directories (bytes, files), and the retention verdict."""
    out = []
    backups = find_backups(ctx.catalog, info.db, info.name, ctx.settings.backup_prefix)
    for b, v in backup_verdicts(backups, ctx.settings, time.time(), lambda b: backup_partitions(ctx.catalog, b)):
        entry = v.to_dict()
        entry["created_at"] = int(b.created_at)
        try:
            units = backup_units(ctx, info, b)
            present = [u["old"] for u in units if ctx.fs.exists(u["old"])]
            summaries = [ctx.fs.content_summary(path) for path in present]
            entry.update(units=len(units), bytes=sum(x["length"] for x in summaries),
                         files=sum(x["file_count"] for x in summaries), missing=len(units) - len(present),
                         directories=present)
        except Exception as exc:  # noqa: BLE001 - one odd backup must not hide the others
            entry.update(units=None, bytes=None, files=None, error=java_message(exc))
        out.append(entry)
    return out


def legacy_facts(ctx: Context, info: TableInfo, p: Any) -> dict[str, Any]:
    """What lakekeeper 0.0.x left of the table (its backups, with the verdict
    of a cleanup over them and today's backups, and its directories that no
    backup accounts for); no keys when there is nothing."""
    legacy = find_legacy_backups(ctx.catalog, info.db, info.name, ctx.settings.backup_prefix)
    out: dict[str, Any] = {}
    if legacy:
        out["legacy_backups"] = legacy_backup_facts(
            ctx, info, find_backups(ctx.catalog, info.db, info.name, ctx.settings.backup_prefix), legacy)
    found = legacy_leftovers(ctx, info, p, legacy)
    if found:
        out["legacy_leftovers"] = found
    return out


def source_facts(ctx: Context, p: Any) -> dict[str, Any]:
    """Where the table's small files come from (policy/provenance.py), from
    the units' listings the plan made: names, sizes, owners, times."""
    files = [SourceFile(f.name, f.size, f.mtime, f.owner, u.spec or "(table)") for u in p.units for f in u.listing.files]
    return attribute(files, ctx.settings.small_file_threshold_bytes)


def history_facts(ctx: Context, info: TableInfo) -> dict[str, Any]:
    """The table's newest history records (newest first, at most
    ``settings.history``) and their summary; what could not be read is
    reported, never fatal."""
    try:
        records, unreadable = read_history(ctx.fs, history_dir(info), ctx.settings.history)
    except Exception as exc:  # noqa: BLE001 - the analysis stands without its history
        return {"history": [], "history_summary": summarize([]), "history_error": java_message(exc)}
    out: dict[str, Any] = {"history": [trim_units(r) for r in records], "history_summary": summarize(records)}
    if unreadable:
        out["history_unreadable"] = unreadable
    return out


def analyze_table(ctx: Context, full_name: str) -> dict[str, Any]:
    info = load_table(ctx, full_name)
    ctx, policy = with_policy(ctx, info)  # the table owner's lakekeeper.* properties
    queue = queue_facts(info.properties, ctx.settings.queues)  # its YARN queue (lakekeeper.queue, Amoro's group)
    check_replication(info, ctx.settings.allow_replicated)  # repl.* properties: a replica of Hive replication
    check_rewritable(info)  # text properties a rewrite cannot honour
    p = plan(ctx, info)
    apply_delete_ratio(ctx, info, p)  # dedupe trigger_ratio: the measured share per unit the size rule skips
    todo = p.to_compact
    chosen = {id(u) for u in todo}  # by identity: a Unit's == compares every field (and its listing)
    out = excluded(policy)
    parts, before_all, after_all = [], [], []
    for u in p.units:
        before, after = unit_histograms(u, id(u) in chosen)
        before_all.append(before)
        after_all.append(after)
        parts.append(partition_result(u, "analyzed", u.decision.reason, decision=u.decision.action,
                                      histogram_before=before, histogram_after=after))
    ctx = dataclasses.replace(ctx, fs=NameCache(ctx.fs))  # the parents' listings, once for every pass below
    backups = backup_facts(ctx, info)
    legacy = legacy_facts(ctx, info, p)
    holder = read_holder(ctx.fs, lease_path(p.journal_dir))
    pending = pending_runs(ctx, info)
    reconciled = reconcile_facts(ctx, info, p, {b["run_id"] for b in backups}, holder, pending,
                                 len(legacy.get("legacy_leftovers", [])))
    files = sum(u.stats.files for u in p.units)
    files_after = sum(u.decision.target_files if id(u) in chosen else u.stats.files for u in p.units)
    reason = f"{len(todo)} of {len(p.units)} unit(s) need compaction" if p.units else (
        "no partition matches the where filter" if ctx.settings.where else "no partitions")
    if out:
        reason = f"excluded by its table property {exclusion_property(info.properties)} (compact leaves it alone); " \
                 f"{reason}"
    policy_from = policy_sources(info.properties)  # read from Amoro's self-optimizing.* properties
    return table_result(
        full_name,
        "analyzed",
        reason,
        would_change=False,
        needs_compaction=bool(todo) and not out,
        run_id=ctx.run_id,
        location=info.location,
        format=info.format,
        partitioned=info.is_partitioned,
        files=files,
        bytes=sum(u.stats.bytes for u in p.units),
        files_after_estimate=files_after,
        files_saved_estimate=files - files_after,
        small_files=sum(u.stats.files for u in todo),
        histogram={"buckets": sizes.describe(), "before": sizes.add(*before_all), "after": sizes.add(*after_all)},
        partitions=parts,
        backups=backups,
        backups_pending_cleanup=sum(1 for b in backups if b["verdict"] == "delete"),
        backup_bytes_pending_cleanup=sum(b["bytes"] or 0 for b in backups if b["verdict"] == "delete"),
        space=space_check(ctx.fs, todo),
        pending_recovery=pending,
        leftovers=leftovers(ctx, p, set(Journal.run_ids(ctx.fs, p.journal_dir))),
        lease=lease_facts(holder),
        reconcile=reconciled,
        sources=source_facts(ctx, p),
        mode=ctx.settings.mode,
        **history_facts(ctx, info),
        **legacy,
        **({"where": ctx.settings.where} if ctx.settings.where else {}),
        **({"policy": policy, "excluded": out} if policy else {}),
        **({"policy_from": policy_from} if policy_from else {}),
        **queue,
    )
