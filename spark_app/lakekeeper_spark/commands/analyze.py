"""analyze: per table and per partition, file count, sizes and the decision,
plus the table's existing backups. Writes nothing."""

from __future__ import annotations

import time
from typing import Any

from ..backup import find_backups
from ..journal import Journal
from ..space import space_check
from .common import Context, leftovers, load_table, partition_result, plan, table_result
from .recover import _pending_runs


def analyze_table(ctx: Context, full_name: str) -> dict[str, Any]:
    info = load_table(ctx, full_name)
    p = plan(ctx, info)
    parts = [partition_result(u, "analyzed", u.decision.reason, decision=u.decision.action) for u in p.units]
    todo = p.to_compact
    now = time.time()
    backups = [
        {"backup_table": b.full_name, "run_id": b.run_id, "age_seconds": int(now - b.created_at), "pinned": b.pinned}
        for b in find_backups(ctx.catalog, info.db, info.name, ctx.settings.backup_prefix)
    ]
    return table_result(
        full_name,
        "analyzed",
        f"{len(todo)} of {len(p.units)} unit(s) need compaction" if p.units else (
            "no partition matches the where filter" if ctx.settings.where else "no partitions"),
        would_change=False,
        needs_compaction=bool(todo),
        run_id=ctx.run_id,
        location=info.location,
        format=info.format,
        partitioned=info.is_partitioned,
        files=sum(u.stats.files for u in p.units),
        bytes=sum(u.stats.bytes for u in p.units),
        files_after_estimate=sum(u.decision.target_files if u in todo else u.stats.files for u in p.units),
        partitions=parts,
        backups=backups,
        space=space_check(ctx.fs, todo),
        pending_recovery=_pending_runs(ctx, info),
        leftovers=leftovers(ctx, p, set(Journal.run_ids(ctx.fs, p.journal_dir))),
        mode=ctx.settings.mode,
        **({"where": ctx.settings.where} if ctx.settings.where else {}),
    )
