"""The JSON result of a table and of each of its units (partitions), as
docs/engine-contract.md describes them."""

from __future__ import annotations

from typing import Any

from .errors import LakekeeperError

# The statuses a run leaves nothing done with (docs/statuses.md, the one table of them all):
# not_needed - nothing to do (no unit needs compaction, no backup to clean, nothing to recover);
# skipped - left for now for a reason that passes (deadline, quiet period, open files, another run's
# lease: locked); refused - never done as things stand (managed, transactional, excluded, replicated,
# a backup table, ...); failed - tried and could not finish. Only failed tables fail a run, and refused
# ones with --fail-on-refused.
NOT_NEEDED, SKIPPED, REFUSED, FAILED = "not_needed", "skipped", "refused", "failed"


def run_failed(results: list[dict[str, Any]], fail_on_refused: bool = False) -> bool:
    """Whether a run's tables make it fail (exit code 1)."""
    failing = (FAILED, REFUSED) if fail_on_refused else (FAILED,)
    return any(r.get("status") in failing for r in results)


def partition_result(unit: Any, status: str, reason: str, **extra: Any) -> dict[str, Any]:
    d = {
        "spec": unit.spec,
        "location": unit.location,
        "files_before": unit.stats.files,
        "files_after": unit.stats.files,
        "bytes_before": unit.stats.bytes,
        "bytes_after": unit.stats.bytes,
        "rows_before": None,
        "rows_after": None,
        "target_files": unit.decision.target_files,
        "avg_file_bytes": round(unit.stats.avg_bytes, 1),
        "median_file_bytes": round(unit.stats.median_bytes, 1),
        "status": status,
        "reason": reason,
        "rule": unit.decision.rule,
    }
    if unit.decision.rewrite is not None or unit.decision.split:
        # minor mode or a split: these files rewritten (the split ones among them), the other files copied
        d["files_rewritten"] = len(unit.rewrite_files)
        d["files_copied"] = len(unit.kept_files)
        d["files_split"] = len(unit.decision.split)
    if getattr(unit, "delete_ratio", None) is not None:  # dedupe trigger_ratio: measured for this unit
        d["delete_ratio"] = unit.delete_ratio
    if unit.decision.code and status in ("skipped", "analyzed"):  # a refused unit (e.g. schema_drift)
        d["code"] = unit.decision.code
    d.update(extra)
    return d


def table_result(table: str, status: str, reason: str, changed: bool = False, **extra: Any) -> dict[str, Any]:
    d = {
        "table": table,
        "status": status,
        "reason": reason,
        "changed": changed,
        "would_change": changed,
        "partitions": [],
        "backup_table": None,
        "run_id": None,
    }
    d.update(extra)
    return d


def error_result(table: str, exc: LakekeeperError, run_id: str) -> dict[str, Any]:
    return table_result(table, exc.status, exc.message, code=exc.code, run_id=run_id)
