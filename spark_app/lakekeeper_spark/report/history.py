"""The table's run history: every compaction, rollback and cleanup leaves a
small JSON record that outlives the run's journal and its backup (like the
commit timeline and ``cleans show`` of Hudi).

Records live on the table's own filesystem, in ``layout.history_dir``
(``<journal dir>/history``), one file per run of one table, named
``<end time UTC>-<run id>.json`` (``20261126T114447.123Z-20261126T114400-3f9a1c.json``):
names sort by time, each is created once and never rewritten, so concurrent
runs never touch each other's records, and cleanup never removes them. A
record is written once the outcome is known (for a failure, best effort).

The pure part builds a record from a command's result (``build_record``)
and summarises records (``timeline``, ``summarize``); the I/O part writes
(``write_record``) and reads (``read_history``) them through the Hadoop
FileSystem adapter.
"""

from __future__ import annotations

import json
import logging
import re
import socket
from datetime import datetime, timezone
from typing import Any

log = logging.getLogger(__name__)

VERSION = 1
RECORDED_COMMANDS = ("compact", "rollback", "cleanup")
# Results that are recorded (besides any run that changed something, e.g. a
# compaction that had nothing to do but whose recovery settled an earlier run:
# ``recovered``). The words are the statuses of docs/statuses.md.
OUTCOMES = ("compacted", "rolled_back", "cleaned", "failed", "refused", "pinned", "unpinned")
# Statuses that leave no record: nothing was done (not_needed), nothing yet (skipped: deadline, quiet
# period, open files), another run holds the table and records itself (locked), a dry run (planned).
NOT_RECORDED = ("not_needed", "skipped", "locked", "planned")
# Units listed in one record at most (the totals count every unit); in analyze's result, per record.
MAX_UNITS = 200
RESULT_UNITS = 20
# Units a record lists: those the run changed (compacted, rolled back), failed on or refused.
_TOUCHED = ("compacted", "rolled_back", "failed", "refused")
_UNIT_KEYS = ("spec", "status", "code", "files_before", "files_after", "bytes_before", "bytes_after",
              "rows_before", "rows_after", "verified", "content_checksum", "duplicates_dropped", "deletes_dropped",
              "rule", "retries", "retry_causes", "tiering", "files_rewritten", "files_copied", "files_split",
              "files_moved", "rows_kept")
_FIGURES = ("files_before", "files_after", "bytes_before", "bytes_after", "rows_before", "rows_after")
_RECORD_NAME = re.compile(r"^\d{8}T\d{6}\.\d{3}Z-\d{8}T\d{6}-[0-9a-f]{6}(-\d+)?\.json$")
_BACKUP_RUN = re.compile(r"_(\d{8})_(\d{6})_([0-9a-f]{6})$")


# ---------------------------------------------------------------- pure: records


def utc_text(epoch: float) -> str:
    """``2026-11-26T11:44:47.123Z``."""
    t = datetime.fromtimestamp(epoch, timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def record_name(record: dict[str, Any], attempt: int = 0) -> str:
    """``<end time>-<run id>.json``; ``-<n>`` before ``.json`` on the n-th
    retry (a record of this name is there already)."""
    end = datetime.fromtimestamp(record["ended"], timezone.utc)
    stamp = end.strftime("%Y%m%dT%H%M%S.") + f"{end.microsecond // 1000:03d}Z"
    return f"{stamp}-{record['run_id']}" + (f"-{attempt}" if attempt else "") + ".json"


def is_record_name(name: str) -> bool:
    return bool(_RECORD_NAME.match(name))


def should_record(command: str, result: dict[str, Any], dry_run: bool) -> bool:
    """Whether a run's result leaves a record: a compact, rollback or
    cleanup that did something or ended compacted, rolled back, cleaned,
    (un)pinned, failed or refused; never a dry run, nor a table whose lease
    another run held (that run records itself). (A table that is not there,
    or not one Lakekeeper may touch, has no history directory: the caller
    finds that out when it loads the table.)"""
    if command not in RECORDED_COMMANDS or dry_run or not result.get("run_id"):
        return False
    if result.get("status") == "locked":
        return False
    return result.get("status") in OUTCOMES or bool(result.get("changed"))  # NOT_RECORDED: only when changed


def outcome_of(result: dict[str, Any]) -> str:
    status = result.get("status") or "failed"
    if status in OUTCOMES:
        return status
    return "recovered" if result.get("changed") else status


def backup_run_id(backup_table: str | None) -> str | None:
    """The run id a backup table's name carries (``..._20261121_013000_3f9a1c``)."""
    m = _BACKUP_RUN.search(backup_table or "")
    return f"{m.group(1)}T{m.group(2)}-{m.group(3)}" if m else None


def _unit(part: dict[str, Any]) -> dict[str, Any]:
    return {k: part[k] for k in _UNIT_KEYS if part.get(k) is not None}


def _total(units: list[dict[str, Any]], key: str) -> int | None:
    values = [u.get(key) for u in units]
    if not values or any(v is None for v in values):
        return None
    return sum(int(v) for v in values)


def _verification(units: list[dict[str, Any]]) -> dict[str, Any] | None:
    """What the compacted units were checked for before their swap."""
    done = [u for u in units if u.get("status") == "compacted"]
    if not done:
        return None
    out: dict[str, Any] = {
        "units": len(done),
        "content": sum(1 for u in done if u.get("verified") == "content"),
        "rows": sum(1 for u in done if u.get("verified") == "rows"),
        "rows_before": _total(done, "rows_before"),
        "rows_after": _total(done, "rows_after"),
    }
    dropped = sum(int(u.get("duplicates_dropped") or 0) + int(u.get("deletes_dropped") or 0) for u in done)
    if dropped:
        out["rows_dropped_by_dedupe"] = dropped
    return out


def _backup_entry(b: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: b.get(k) for k in keys if k in b}


def build_record(command: str, result: dict[str, Any], started: float, ended: float,
                 facts: dict[str, Any] | None = None) -> dict[str, Any]:
    """The history record of one table's run from the command's result
    (``results.table_result`` shape). ``facts``: who and where it ran
    (``run_facts``): user, host, Spark application id and master,
    versions."""
    parts = [p for p in result.get("partitions") or [] if p.get("status") in _TOUCHED]
    units = [_unit(p) for p in parts]
    done = [u for u in units if u.get("status") in ("compacted", "rolled_back")]
    totals: dict[str, Any] = {"units": len(units), "units_changed": len(done)}
    for key in _FIGURES:
        totals[key] = _total(done, key)
    retries = sum(int(p.get("retries") or 0) for p in result.get("partitions") or [])
    if retries:  # compact: times its units were tried again after a failure that passes (policy/retries.py)
        totals["retries"] = retries
    for key in ("tiered", "tier_space_saved"):  # compact: tiering (rewrite/tiering.py)
        if result.get(key):
            totals[key] = result[key]
    split = sum(int(u.get("files_split") or 0) for u in done)
    if split:  # compact: files above max_file_size_mb split into files of about the target size
        totals["files_split"] = split
    rec: dict[str, Any] = {
        "version": VERSION,
        "run_id": result.get("run_id"),
        "command": command,
        "table": result.get("table"),
        "outcome": outcome_of(result),
        "code": result.get("code"),
        "reason": result.get("reason"),
        "changed": bool(result.get("changed")),
        "started": round(started, 3),
        "ended": round(ended, 3),
        "started_at": utc_text(started),
        "ended_at": utc_text(ended),
        "seconds": round(max(0.0, ended - started), 3),
        **(facts or {}),
        "totals": totals,
        "units": units[:MAX_UNITS],
    }
    if len(units) > MAX_UNITS:
        rec["units_not_listed"] = len(units) - MAX_UNITS
    if result.get("retry_causes"):  # compact: what its retried units failed with first (policy/retries.py)
        rec["retry_causes"] = result["retry_causes"]
    for key in ("mode", "where", "backup_table", "order", "sort", "verify", "verify_sample", "queue"):
        if result.get(key) is not None:
            rec[key] = result[key]
    if command == "compact":
        verification = _verification(units)
        if verification:
            rec["verification"] = verification
    if command == "rollback" and result.get("backup_table"):
        rec["backup_run_id"] = backup_run_id(result["backup_table"])
    if command == "cleanup":
        removed = result.get("backups_removed") or []
        rec["backups_dropped"] = [_backup_entry(b, ("backup_table", "run_id", "bytes", "units", "age_seconds", "rule",
                                                    "reason", "dropped_partitions", "moved_to_live"))
                                  for b in removed]
        rec["backups_kept"] = [_backup_entry(b, ("backup_table", "run_id", "age_seconds", "pinned", "rule", "reason"))
                               for b in result.get("kept") or []]
        rec["freed_bytes"] = int(result.get("freed_bytes") or 0)
        for key in ("pinned", "unpinned"):
            if result.get(key):
                rec[key] = [b.get("backup_table") for b in result[key]]
        if result.get("orphans_removed"):  # cleanup with orphans: the killed runs' staging copies it removed
            rec["orphans_removed"] = [_backup_entry(o, ("path", "run_id", "state", "files", "bytes"))
                                      for o in result["orphans_removed"]]
    recovered = list(result.get("recovered") or []) + list(result.get("recovered_after_error") or [])
    if recovered:
        rec["recovered"] = [{k: a.get(k) for k in ("run_id", "action", "spec") if a.get(k) is not None}
                            for a in recovered if isinstance(a, dict)]
    return rec


def trim_units(record: dict[str, Any], limit: int = RESULT_UNITS) -> dict[str, Any]:
    """The record with at most ``limit`` units listed (``units_not_listed``
    counts the others): what analyze returns, so that the history of many
    tables with many partitions stays a small result."""
    units = record.get("units") or []
    if len(units) <= limit:
        return record
    return dict(record, units=units[:limit], units_not_listed=int(record.get("units_not_listed") or 0) + len(units) - limit)


# ---------------------------------------------------------------- pure: summaries


def timeline(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One point per run, oldest first: when, what, the outcome, and the
    table's files and bytes before and after it (the units it changed;
    a cleanup's freed bytes and dropped backups)."""
    out = []
    for r in sorted(records, key=lambda r: (r.get("ended") or 0, r.get("run_id") or "")):
        t = r.get("totals") or {}
        point = {k: r.get(k) for k in ("run_id", "command", "outcome", "code", "ended_at")}
        point.update({k: t.get(k) for k in _FIGURES[:4]})
        point["units"] = t.get("units_changed", 0)
        if r.get("command") == "cleanup":
            point["freed_bytes"] = r.get("freed_bytes", 0)
            point["backups_dropped"] = [b.get("backup_table") for b in r.get("backups_dropped") or []]
        out.append(point)
    return out


def summarize(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts per outcome, the first and last run, files removed by
    compactions and put back by rollbacks, bytes freed by cleanups, and the
    last run of each command."""
    points = timeline(records)
    outcomes: dict[str, int] = {}
    for p in points:
        outcomes[p["outcome"]] = outcomes.get(p["outcome"], 0) + 1

    def delta(command: str) -> int:
        return sum((p["files_before"] or 0) - (p["files_after"] or 0) for p in points
                   if p["command"] == command and p["files_before"] is not None and p["files_after"] is not None)

    last = {}
    for p in points:
        last[p["command"]] = {"run_id": p["run_id"], "outcome": p["outcome"], "ended_at": p["ended_at"]}
    return {
        "runs": len(points),
        "outcomes": outcomes,
        "first_at": points[0]["ended_at"] if points else None,
        "last_at": points[-1]["ended_at"] if points else None,
        "files_removed": delta("compact"),
        "files_restored": -delta("rollback"),
        "bytes_freed": sum(p.get("freed_bytes") or 0 for p in points),
        "backups_dropped": sum(len(p.get("backups_dropped") or []) for p in points),
        "last": last,
    }


# ---------------------------------------------------------------- I/O


def run_facts(spark: Any, fs: Any) -> dict[str, Any]:
    """Who and where: the run's Hadoop user, the driver's host, the Spark
    application id and master, Spark's version (each None when unknown)."""
    from .. import __version__

    facts: dict[str, Any] = {"user": None, "host": None, "spark_app_id": None, "spark_master": None,
                             "spark_version": None, "lakekeeper_version": __version__}
    for key, get in (("user", fs.current_user), ("host", socket.gethostname),
                     ("spark_app_id", lambda: spark.sparkContext.applicationId),
                     ("spark_master", lambda: spark.sparkContext.master), ("spark_version", lambda: spark.version)):
        try:
            facts[key] = str(get())
        except Exception:  # noqa: BLE001 - a record without it beats none
            log.debug("history: no %s", key, exc_info=True)
    return facts


def write_record(fs: Any, folder: str, record: dict[str, Any]) -> str:
    """Create the record's file in ``folder`` (made when missing); never
    overwrites: a name that is taken gets a ``-<n>`` suffix. Returns its URI."""
    text = json.dumps(record, indent=1, sort_keys=True, default=str)
    fs.mkdirs(folder)
    for attempt in range(5):
        uri = f"{folder.rstrip('/')}/{record_name(record, attempt)}"
        if fs.exists(uri):
            continue
        fs.write_text(uri, text)  # creates, fails if another writer created it meanwhile
        return uri
    raise FileExistsError(f"no free record name in {folder} for run {record.get('run_id')}")


def read_history(fs: Any, folder: str, limit: int) -> tuple[list[dict[str, Any]], list[str]]:
    """The newest ``limit`` records, newest first, and the names of those
    that could not be read (torn by a crash, or not JSON)."""
    if limit <= 0 or not fs.exists(folder):
        return [], []
    names = sorted((n for n, is_dir in fs.list_names(folder) if not is_dir and is_record_name(n)), reverse=True)
    out, bad = [], []
    for name in names:
        if len(out) >= limit:
            break
        try:
            doc = json.loads(fs.read_text(f"{folder.rstrip('/')}/{name}"))
        except Exception:  # noqa: BLE001 - a torn record must not hide the others
            bad.append(name)
            continue
        if isinstance(doc, dict):
            out.append(doc)
        else:
            bad.append(name)
    return out, bad
