"""cleanup: delete backups (original files and backup table) of a table,
all of them or those older than ``--older-than``. Irreversible. Pinned
backups are never deleted. Only directories that are provably Lakekeeper
originals next to a live directory are deleted (see rollback.backup_units),
and only the files the compaction planned: anything else found there is
moved into the live directory first (``moved_to_live``).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from ..backup import find_backups
from ..journal import Journal
from ..planner import journal_dir
from .common import Context, load_table, table_result
from .recover import recover_table
from ..swap import adopt_files
from .rollback import backup_units


def planned_files(ctx: Context, info, b) -> dict[str, set[str]]:
    """Location -> names of the original files the backup's compaction
    planned (from its journal); locations without a record are absent."""
    doc, _units = Journal.load(ctx.fs, b.journal_dir or journal_dir(info), b.run_id)
    return {ctx.fs.qualify(u["location"]): {f[0] for f in u.get("files") or []}
            for u in doc.get("units", []) if u.get("files")}


log = logging.getLogger(__name__)


def cleanup_table(ctx: Context, full_name: str) -> dict[str, Any]:
    info = load_table(ctx, full_name)
    recovered = [] if ctx.settings.dry_run else recover_table(ctx, info)
    backups = find_backups(ctx.catalog, info.db, info.name, ctx.settings.backup_prefix)
    now = time.time()
    limit = ctx.settings.older_than_seconds
    chosen, kept = [], []
    for b in backups:
        if b.pinned:
            kept.append({"backup_table": b.full_name, "reason": "pinned"})
        elif limit is not None and now - b.created_at < limit:
            kept.append({"backup_table": b.full_name, "reason": f"younger than {limit}s"})
        else:
            chosen.append(b)
    if not chosen:
        reason = "no backups" if not backups else f"{len(kept)} backup(s) kept, none to clean"
        return table_result(full_name, "skipped", reason, changed=bool(recovered), run_id=ctx.run_id,
                            kept=kept, freed_bytes=0, backups_removed=[])
    removed, freed = [], 0
    for b in chosen:
        units = backup_units(ctx, info, b)
        size = sum(ctx.fs.content_summary(u["old"])["length"] for u in units if ctx.fs.exists(u["old"]))
        entry = {"backup_table": b.full_name, "run_id": b.run_id, "bytes": size, "units": len(units),
                 "age_seconds": int(now - b.created_at)}
        if not ctx.settings.dry_run:
            planned = planned_files(ctx, info, b)
            for u in units:
                names = planned.get(u["location"])
                if names is not None and ctx.fs.exists(u["old"]):
                    # a file that is not one of the originals (a writer closed it there after the
                    # move aside) is someone's data: into the live directory, not deleted
                    late = adopt_files(ctx.fs, u["old"], u["location"], names, what="files found among the originals")
                    if late:
                        entry.setdefault("moved_to_live", []).extend(late)
                ctx.fs.delete(u["old"])
            ctx.catalog.drop_table(b.db, b.name)
            Journal(ctx.fs, b.journal_dir or journal_dir(info), b.run_id).remove()
        removed.append(entry)
        freed += size
    if ctx.settings.dry_run:
        return table_result(full_name, "planned", f"would remove {len(removed)} backup(s), {freed} bytes",
                            would_change=True, run_id=ctx.run_id, backups_removed=removed, freed_bytes=freed, kept=kept)
    return table_result(full_name, "cleaned", f"removed {len(removed)} backup(s), freed {freed} bytes",
                        changed=True, run_id=ctx.run_id, backups_removed=removed, freed_bytes=freed, kept=kept,
                        recovered=recovered)
