# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Filter of the maintenance role: the summary of a run (per table what
happened, totals, the ingestion window, human lines, flat totals for
set_stats). Every input may be missing (a run that failed early). The
documentation is in maintenance_summary.yml."""

from __future__ import annotations

from collections.abc import Mapping

from ansible.module_utils.common.text.formatters import bytes_to_human
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.lakekeeper.hive.plugins.plugin_utils._lakekeeper_numbers import to_int as _int

# The statuses every summary counts (0 included), in this order; the words of docs/statuses.md. A refused
# table is counted as refused, not failed: it fails the run only with fail_on_refused (the module then fails).
MAIN_STATUSES = {
    "compact": ["compacted", "not_needed", "skipped", "refused", "failed"],
    "analyze": ["to_compact", "not_needed", "refused", "failed"],
    "rollback": ["rolled_back", "skipped", "refused", "failed"],
    "recover": ["recovered", "skipped", "refused", "failed"],
    "cleanup": ["cleaned", "skipped", "refused", "failed"],
}


def _float(value, default=0.0):
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


def _str(value):
    return value if isinstance(value, str) else str(value)


def _sum_parts(table, key, planned_key=None):
    n = 0
    for p in table.get("partitions") or []:
        if planned_key and p.get("status", "") == "planned":
            n += _int(p.get(planned_key, p.get(key, 0)))
        else:
            n += _int(p.get(key, 0))
    # the partitions the module left out of a long list (max_partitions_listed): nothing was done to
    # them, so their files and bytes count the same before and after
    left = table.get("partitions_not_listed")
    if isinstance(left, Mapping):
        n += _int(left.get("bytes" if key.startswith("bytes") else "files", 0))
    return n


def _left_behind(module_result, error):
    """Per table, what a background job that ended without its own result
    (stopped by its async limit, killed) left behind, from its progress
    records (lakekeeper_wait's progress_tables): finished tables with the
    engine's status, the tables it was working on as failed, with what to do."""
    out = []
    for t in module_result.get("progress_tables") or []:
        if not isinstance(t, Mapping) or not t.get("table"):
            continue
        if t.get("status") == "in_progress":
            out.append({"table": t["table"], "status": "failed",
                        "reason": "interrupted while being worked on (%s): its journal is finished or undone by the "
                                  "next run on the table, or now by rollback.yml with lakekeeper_rollback_mode=recover"
                                  % (error or "the run stopped")})
        else:
            out.append({"table": t["table"], "status": t.get("status") or "failed", "reason": t.get("reason") or ""})
    return out


def _what(record):
    """'systemd a b, cron N, hooks c' of a pause record or a pipeline_paused/resumed fact."""
    systemd = [u.get("name", "") if isinstance(u, Mapping) else _str(u) for u in record.get("systemd") or []]
    cron = record.get("cron") or []
    lines = sum(len(c.get("lines") or []) if isinstance(c, Mapping) else 1 for c in cron)
    hooks = [h.get("name", "") if isinstance(h, Mapping) else _str(h) for h in record.get("hooks") or []]
    return "systemd %s, cron %s, hooks %s" % (" ".join(systemd) or "-", lines, " ".join(hooks) or "-")


def _earlier(found):
    """Per ingestion host, what an earlier run left (the pipeline role's
    inspect: its pause record still there, the report of its guard) and the
    summary's lines about it."""
    out, lines = {}, []
    for host in sorted(found):
        f = found[host] or {}
        record = f.get("record") or {}
        report = f.get("guard_report") or {}
        entry = {}
        if report:
            guard = report.get("guard") or {}
            left = report.get("left") or {}
            entry["guard_fired"] = {"paused_at": report.get("paused_at", ""), "expires": guard.get("expires", ""),
                                    "fired": guard.get("fired", ""), "resumed": report.get("resumed") or {},
                                    "left": left}
            line = ("ingestion on %s: the pause an earlier run left (paused at %s, never resumed by its run) expired "
                    "at %s; its guard resumed %s at %s"
                    % (host, report.get("paused_at", "?"), guard.get("expires", "?"),
                       _what(report.get("resumed") or {}), guard.get("fired", "?")))
            if left.get("errors"):
                line += "; not resumed by the guard: " + "; ".join(left["errors"])
            lines.append(line)
        if record:
            guard = record.get("guard") or {}
            expired = boolean(f.get("expired", False), strict=False)
            entry["left_paused"] = {"paused_at": record.get("paused_at", ""), "expires": guard.get("expires", ""),
                                    "expired": expired, "systemd": record.get("systemd") or [],
                                    "cron": record.get("cron") or [], "hooks": record.get("hooks") or []}
            if guard.get("fired"):
                state = "its guard fired at %s and left this" % guard["fired"]
            elif not guard:
                state = "no guard"
            elif expired:
                state = "expired at %s, its guard did not resume it" % guard.get("expires", "?")
            else:
                state = "its guard would resume it at %s" % guard.get("expires", "?")
            lines.append("ingestion on %s: an earlier run left it paused (paused at %s: %s; %s); this run resumes it"
                         % (host, record.get("paused_at", "?"), _what(record), state))
        out[host] = entry
    return out, lines


def _earlier_run(earlier):
    """What an earlier compaction whose play never ended left (its record on
    the edge host and one look at its job): per table its state, and lines."""
    record = earlier.get("record") or {}
    if not record:
        return {}, []
    result = earlier.get("result") or {}
    finished = _int(result.get("finished", 0)) == 1
    why = _str(result.get("msg", "")) if finished else "still running"
    tables = []
    for t in result.get("tables") or _left_behind(result, why) or []:
        tables.append({"table": t.get("table"), "status": t.get("status") or "failed",
                       "reason": _str(t.get("reason") or "")})
    out = {"started_at": record.get("started_at", ""), "jid": record.get("jid", ""), "finished": finished,
           "tables": tables}
    if not finished:
        out["still_running"] = True
    head = "the compaction started at %s by an earlier run whose play never ended (cancelled or killed)%s" % (
        record.get("started_at", "?"), "" if finished else " is still running (job %s)" % record.get("jid", "?"))
    lines = [head + (": " if tables else ": no table finished or begun")
             + ("; ".join("%s %s%s" % (t["table"], t["status"], (" (" + t["reason"] + ")") if t["reason"] else "")
                          for t in tables))]
    return out, lines


def _reconcile_and_sources(a):
    """analyze's reconcile and sources, in short (docs/reconcile.md): the
    number of findings and of those cleanup's orphans may remove, and the
    cadence of the (at most 3) writers with the most small files; nothing
    when the engine gave neither."""
    out = {}
    summary = (a.get("reconcile") or {}).get("summary") if isinstance(a.get("reconcile"), Mapping) else None
    if isinstance(summary, Mapping):
        out["reconcile_findings"] = _int(summary.get("findings", 0))
        out["reconcile_removable"] = _int(summary.get("removable", 0))
    sources = a.get("sources")
    if isinstance(sources, Mapping):
        out["small_file_writers"] = [_str((w.get("cadence") or {}).get("text") or w.get("writer") or "")
                                     for w in (sources.get("writers") or [])[:3]
                                     if isinstance(w, Mapping) and _int(w.get("small_files", 0)) > 0]
    return out


# what the summary keeps of a partition's tiering (compact)
_TIER_KEYS = ("storage_policy", "erasure_coding_policy", "age_days", "space_before", "space_after", "space_saved",
              "not_applied")


def _tier_of(tier):
    return dict((k, tier[k]) for k in _TIER_KEYS if k in tier)


def _records(action, analysis, results, todo, error, tables):
    records = []
    result_names = [r.get("table") for r in results]
    for r in results:
        status = r.get("status", "failed")
        rec = {"table": r.get("table"), "status": status,
               "reason": _str(r.get("reason", "")),
               "files_before": _sum_parts(r, "files_before"),
               "files_after": _sum_parts(r, "files_after", "target_files"),
               "bytes_before": _sum_parts(r, "bytes_before"),
               "bytes_after": _sum_parts(r, "bytes_after"),
               "backup_table": r.get("backup_table"), "run_id": r.get("run_id") or ""}
        if r.get("code"):  # why it was refused, skipped or failed (docs/engine-contract.md)
            rec["code"] = _str(r["code"])
        if r.get("recovered") and action != "analyze":  # the earlier runs it finished or undid first
            rec["recovered"] = sorted(set(_str(a.get("run_id", "")) for a in r["recovered"] if isinstance(a, Mapping)))
        if r.get("order"):  # compact: the order its partitions started in (docs/engine-contract.md)
            rec["order"] = _str(r["order"])
        if isinstance(r.get("sort"), Mapping):  # compact with sort_by: {strategy: linear|zorder, columns}
            rec["sort"] = {"strategy": _str(r["sort"].get("strategy", "")),
                           "columns": [_str(c) for c in r["sort"].get("columns") or []]}
        if isinstance(r.get("verify_sample"), Mapping):  # compact, verify sample: the units verified by content
            rec["verify_sample"] = [_str(u) for u in r["verify_sample"].get("sampled") or []]
        if r.get("queue"):  # the YARN queue its properties name (lakekeeper.queue, Amoro's self-optimizing.group)
            rec["queue"] = _str(r["queue"])
        if r.get("max_file_size_mb"):  # compact: the split bound the table ran with, and the files it split
            rec["max_file_size_mb"] = r["max_file_size_mb"]
            rec["files_split"] = _int(r.get("files_split", 0))
        if r.get("retries"):  # compact: partitions tried again after a failure that passes, and why
            rec["retries"] = _int(r["retries"])
            rec["retry_causes"] = dict(r.get("retry_causes") or {})
        if r.get("tiered"):  # compact: partitions written under a tier's policy (docs/engine-contract.md)
            rec["tiered"] = _int(r["tiered"])
            rec["tier_space_saved"] = _int(r.get("tier_space_saved") or 0)
            rec["tiering"] = dict((_str(p.get("spec", "")), _tier_of(p["tiering"]))
                                  for p in r.get("partitions") or []
                                  if isinstance(p, Mapping) and isinstance(p.get("tiering"), Mapping))
        if action == "cleanup":
            rec.update({"freed_bytes": _int(r.get("freed_bytes", 0)),
                        "backups_removed": [b.get("backup_table") for b in r.get("backups_removed") or []],
                        "backups_kept": len(r.get("kept") or [])})
            if "orphans_removed" in r:  # cleanup with orphans (docs/reconcile.md)
                rec["orphans_removed"] = [o.get("path") for o in r.get("orphans_removed") or []]
        records.append(rec)
    for a in analysis:
        if a.get("table") in result_names:
            continue
        rec = {"table": a.get("table"), "reason": _str(a.get("reason", "")),
               "files_before": _int(a.get("files", 0)), "files_after": _int(a.get("files", 0)),
               "bytes_before": _int(a.get("bytes", 0)), "bytes_after": _int(a.get("bytes", 0)),
               "backup_table": None, "run_id": ""}
        space = a.get("space", {})
        if a.get("status", "") in ("failed", "refused"):
            rec["status"] = a["status"]
            if a.get("code"):
                rec["code"] = a["code"]
        elif a.get("excluded"):  # analyze reports it; compact refuses it (code excluded)
            rec.update({"status": "refused", "code": "excluded"})
        elif action == "analyze":
            rec.update({"status": "to_compact" if a.get("needs_compaction", False)
                        else (a["status"] if a.get("status", "") in ("skipped", "not_needed") else "not_needed"),
                        "files_after": _int(a.get("files_after_estimate", a.get("files", 0))),
                        "space_ok": space.get("ok", True) if isinstance(space, Mapping) else True,
                        "backups": a.get("backups", []),
                        "pending_recovery": a.get("pending_recovery", []),
                        "leftovers": a.get("leftovers", [])})
            rec.update(_reconcile_and_sources(a))
        elif a.get("table") in todo:
            # needed compaction, but the run stopped before (pre-flight, pause, ...)
            rec.update({"status": "failed", "reason": "not compacted: " + (error or "the run stopped")})
        else:
            rec.update({"status": "not_needed",
                        "reason": _str(a.get("reason", "no compaction needed")) if a.get("status", "") == "skipped"
                        else "no compaction needed"})
        records.append(rec)
    if not records and error:
        for t in tables:
            records.append({"table": t, "status": "failed", "reason": "not done: " + error, "files_before": 0,
                            "files_after": 0, "bytes_before": 0, "bytes_after": 0, "backup_table": None,
                            "run_id": ""})
    return records


def _applications(analysis_result, module_result, queue_runs, run_queue):
    """The Spark applications of the run, in the order they started: each
    ``run_id``, ``queue`` (the YARN queue it was submitted to; "" for the
    cluster's default), ``what`` it did and the ``tables`` it compacted."""
    apps = []
    analysis_id, main_id = analysis_result.get("run_id"), module_result.get("run_id")
    main_tables = [_str(t.get("table")) for t in module_result.get("tables") or [] if isinstance(t, Mapping)]
    if analysis_id and analysis_id != main_id:
        apps.append({"run_id": _str(analysis_id), "queue": run_queue, "what": "analysis", "tables": []})
    if main_id:
        apps.append({"run_id": _str(main_id), "queue": run_queue, "tables": main_tables,
                     "what": "analysis and compaction" if main_id == analysis_id else "compaction"})
    for q in queue_runs:
        item = q.get("item") if isinstance(q.get("item"), Mapping) else {}
        tables = [_str(t.get("table")) for t in q.get("tables") or [] if isinstance(t, Mapping)]
        apps.append({"run_id": _str(q.get("run_id") or ""), "queue": _str(item.get("queue", "")),
                     "what": "compaction", "tables": tables or [_str(t) for t in item.get("tables") or []]})
        if q.get("application_id"):
            apps[-1]["application_id"] = _str(q["application_id"])
    return apps


def maintenance_summary(run):
    """The summary of a maintenance run from a dict of its facts: action,
    error, resume_errors, analysis (lakekeeper_analyze's result), result (the
    compact/rollback/cleanup module's result), todo, tables, host, cluster,
    dry_run, preflight, ingestion_hosts, pipeline_run_id, paused, resumed,
    would_pause, paused_at, resumed_at, found (per ingestion host, what an
    earlier run left: the pipeline role's pipeline_found), earlier_run (the
    record of an earlier compaction whose play never ended, and one look at
    its job: lakekeeper_wait's result)."""
    action = run.get("action") or "compact"
    error = _str(run.get("error", "")).strip()
    resume_errors = list(run.get("resume_errors") or [])
    analysis_result = run.get("analysis") or {}
    module_result = run.get("result") or {}
    host = run.get("host", "")
    run_queue = _str(run.get("run_queue", ""))
    # the applications of the other YARN queues (one each, after the run's own: tasks/main.yml, queue_groups)
    queue_runs = [q for q in run.get("queue_runs") or [] if isinstance(q, Mapping) and not q.get("skipped")]
    results = list(module_result.get("tables") or _left_behind(module_result, error))
    for q in queue_runs:
        results.extend(t for t in q.get("tables") or [] if isinstance(t, Mapping))
    records = _records(action, analysis_result.get("tables") or [], results,
                       run.get("todo") or [], error, run.get("tables") or [])

    main_statuses = MAIN_STATUSES.get(action, ["failed"])
    counts = {}
    for s in main_statuses + [r["status"] for r in records]:
        counts.setdefault(s, len([r for r in records if r["status"] == s]))
    if action != "cleanup":
        backups = [r["backup_table"] for r in records if r["backup_table"]]
    else:
        backups = [b for r in records for b in r["backups_removed"]]
    paused = run.get("paused") or {}
    paused_at = _str(run.get("paused_at", ""))
    resumed_at = _str(run.get("resumed_at", ""))
    paused_seconds = round(_float(resumed_at) - _float(paused_at), 1) if paused_at and resumed_at and paused else 0
    dry_run = boolean(run.get("dry_run", False), strict=False)
    earlier, earlier_lines = _earlier(run.get("found") or {})
    earlier_run, earlier_run_lines = _earlier_run(run.get("earlier_run") or {})
    summary = {
        "action": action, "host": host, "cluster": run.get("cluster") or "",
        "dry_run": dry_run, "ok": not error and not resume_errors,
        "error": error, "resume_errors": resume_errors,
        "run_id": module_result.get("run_id", analysis_result.get("run_id", "")),
        # the Spark applications (drivers) the run started, by their run ids: 1 when the compaction analyzed
        # in its own application (lakekeeper_compact's analyze_first), 2 for an analysis and a compaction,
        # one more for each other YARN queue the tables' properties name
        "applications": len(set(r for r in [analysis_result.get("run_id"), module_result.get("run_id")]
                                + [q.get("run_id") for q in queue_runs] if r)),
        "application_list": _applications(analysis_result, module_result, queue_runs, run_queue),
        "handoff": module_result.get("handoff") or {},
        "counts": counts,
        "tables": records,
        "files_before": sum(r["files_before"] for r in records),
        "files_after": sum(r["files_after"] for r in records),
        "bytes_before": sum(r["bytes_before"] for r in records),
        "bytes_after": sum(r["bytes_after"] for r in records),
        "backup_tables": backups,
        "freed_bytes": sum(r.get("freed_bytes", 0) for r in records) if action == "cleanup" else 0,
        "preflight": run.get("preflight") or {},
        "earlier_run": earlier_run,
        "background": {k: module_result[k] for k in ("checks", "progress_lines", "waited_seconds")
                       if k in module_result},
        "ingestion": {"hosts": list(run.get("ingestion_hosts") or []),
                      "run_id": run.get("pipeline_run_id") or "",
                      "paused": paused, "resumed": run.get("resumed") or {},
                      "would_pause": list(run.get("would_pause") or []),
                      "paused_at": _float(paused_at) if paused_at else None,
                      "resumed_at": _float(resumed_at) if resumed_at else None,
                      "paused_seconds": paused_seconds, "earlier": earlier},
    }

    lines = []
    count_words = ["%d %s" % (counts[st], st.replace("_", " ")) for st in main_statuses]
    head = "%s%s on %s%s: %s" % (action, " (dry run)" if dry_run else "", host,
                                 (" (cluster " + summary["cluster"] + ")") if summary["cluster"] else "",
                                 ", ".join(count_words))
    if action in ("compact", "analyze", "rollback") and records:
        head += "; files %d -> %d%s, %s -> %s" % (
            summary["files_before"], summary["files_after"], " (estimate)" if action == "analyze" or dry_run else "",
            bytes_to_human(summary["bytes_before"]), bytes_to_human(summary["bytes_after"]))
    elif action == "cleanup":
        head += "; %d backup(s) removed, %s freed" % (len(backups), bytes_to_human(summary["freed_bytes"]))
    lines.append(head)
    for r in records:
        line = "%s: %s" % (r["table"], r["status"])
        if r["files_before"] != r["files_after"]:
            line += ", files %d -> %d" % (r["files_before"], r["files_after"])
        if r["backup_table"] and action != "cleanup":
            line += ", backup " + r["backup_table"]
        if r.get("backups_removed"):
            line += ", removed " + ", ".join(r["backups_removed"])
        if r.get("reconcile_findings"):
            line += ", %d Metastore/filesystem finding(s)" % r["reconcile_findings"]
        if r.get("small_file_writers"):
            line += ", small files: " + r["small_file_writers"][0]
        if r["reason"]:
            line += " (" + r["reason"] + ")"
        lines.append(line)
    if queue_runs:  # more than one queue: each application with its queue
        for app in summary["application_list"]:
            lines.append("application %s in queue %s: %s%s" % (
                app["run_id"] or "-", app["queue"] or "(default)", app["what"],
                (" of " + ", ".join(app["tables"])) if app["tables"] else ""))
    lines.extend(earlier_run_lines)
    lines.extend(earlier_lines)
    for h, p in paused.items():
        guard = p.get("guard") or {}
        lines.append("ingestion %s on %s: systemd %s, cron %s, hooks %s%s" % (
            "would be paused" if dry_run else "paused", h, " ".join(p.get("systemd") or []) or "-",
            len(p.get("cron") or []), " ".join(p.get("hooks") or []) or "-",
            ("; guard armed, expires %s" % guard["expires"]) if guard.get("expires") else ""))
    if summary["ingestion"]["would_pause"]:
        lines.append("dry run: the ingestion would be paused on " + ", ".join(summary["ingestion"]["would_pause"]))
    if paused and paused_seconds and not dry_run:
        lines.append("ingestion paused for %s s" % (paused_seconds,))
    lines.extend(summary["preflight"].get("problems") or [])
    if error:
        lines.append("FAILED: " + error)
    for e in resume_errors:
        lines.append("RESUME FAILED: " + e)

    totals = {"lakekeeper_hosts_failed": 0 if summary["ok"] else 1,
              "lakekeeper_files_before": summary["files_before"], "lakekeeper_files_after": summary["files_after"],
              "lakekeeper_bytes_before": summary["bytes_before"], "lakekeeper_bytes_after": summary["bytes_after"],
              "lakekeeper_backup_tables": ["%s:%s" % (host, b) for b in backups]}
    for st, n in counts.items():
        totals["lakekeeper_tables_" + st] = n
        # the names too (lists add up over the hosts, where a dict per status would be replaced)
        totals["lakekeeper_%s_tables" % st] = ["%s:%s" % (host, r["table"]) for r in records if r["status"] == st]
    # what a later job needs to undo one run of one table (rollback.yml -e lakekeeper_run_id=...)
    totals["lakekeeper_runs"] = [{"host": host, "table": r["table"], "status": r["status"], "run_id": r["run_id"]}
                                 for r in records if r["run_id"]]
    if action == "cleanup":
        totals["lakekeeper_freed_bytes"] = summary["freed_bytes"]
    summary.update({"lines": lines, "totals": totals})
    return summary


class FilterModule(object):
    def filters(self):
        return {"maintenance_summary": maintenance_summary}
