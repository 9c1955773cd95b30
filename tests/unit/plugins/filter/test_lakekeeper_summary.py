# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The maintenance role's summary filter, on module results shaped as the
engine returns them (tables[] with partitions[])."""

from __future__ import annotations

from ansible_collections.lakekeeper.hive.plugins.filter.lakekeeper_summary import maintenance_summary

ANALYSIS = {"run_id": "20261124T230000-abc123", "tables": [
    {"table": "e2e.events", "status": "analyzed", "needs_compaction": True, "files": 60, "bytes": 6000,
     "files_after_estimate": 1, "space": {"ok": True}},
    {"table": "e2e.clicks", "status": "analyzed", "needs_compaction": True, "files": 60, "bytes": 3000,
     "files_after_estimate": 2},
    {"table": "e2e.users", "status": "analyzed", "needs_compaction": False, "files": 1, "bytes": 100},
    {"table": "e2e.view", "status": "refused", "code": "view", "reason": "not an EXTERNAL table", "files": 0,
     "bytes": 0},
]}
COMPACTED = {"run_id": "20261124T230100-def456", "tables": [
    {"table": "e2e.events", "status": "compacted", "backup_table": "e2e.__bkp_events_20261124T230100_def456",
     "run_id": "20261124T230100-def456", "order": "files-desc", "sort": {"strategy": "zorder", "columns": ["a", "b"]},
     "max_file_size_mb": 512.0, "files_split": 2,
     "partitions": [{"status": "compacted", "files_before": 30, "files_after": 1, "bytes_before": 3000,
                     "bytes_after": 2000},
                    {"status": "compacted", "files_before": 30, "files_after": 1, "bytes_before": 3000,
                     "bytes_after": 2000}]},
    {"table": "e2e.clicks", "status": "failed", "code": "concurrent_write", "reason": "concurrent_write",
     "partitions": [], "run_id": "20261124T230100-aaa111"},
]}


def run(**kw):
    base = {"action": "compact", "host": "edge", "cluster": "paris", "dry_run": False}
    base.update(kw)
    return maintenance_summary(base)


def test_a_compaction():
    paused = {"ingest": {"systemd": ["ingest.timer"], "cron": ["a", "b"], "hooks": []}}
    s = run(analysis=ANALYSIS, result=COMPACTED, todo=["e2e.events", "e2e.clicks"], paused=paused,
            paused_at="1000.0", resumed_at="1012.34", ingestion_hosts=["ingest"], pipeline_run_id="lakekeeper-paris")
    assert s["ok"] and s["run_id"] == "20261124T230100-def456"
    assert s["counts"] == {"compacted": 1, "not_needed": 1, "skipped": 0, "refused": 1, "failed": 1}
    assert [(t["table"], t["status"], t.get("code")) for t in s["tables"]] == [
        ("e2e.events", "compacted", None), ("e2e.clicks", "failed", "concurrent_write"),
        ("e2e.users", "not_needed", None), ("e2e.view", "refused", "view")]
    assert [t.get("order") for t in s["tables"]] == ["files-desc", None, None, None]  # compact's order, as given
    assert [t.get("sort") for t in s["tables"]] == [{"strategy": "zorder", "columns": ["a", "b"]}, None, None, None]
    # the split bound (max_file_size_mb) and the files it split, only where a bound was set
    assert [(t.get("max_file_size_mb"), t.get("files_split")) for t in s["tables"]] == [
        (512.0, 2), (None, None), (None, None), (None, None)]
    assert s["files_before"] == 60 + 1 + 0 and s["files_after"] == 2 + 1 + 0
    assert s["backup_tables"] == ["e2e.__bkp_events_20261124T230100_def456"]
    assert s["ingestion"] == {"hosts": ["ingest"], "run_id": "lakekeeper-paris", "paused": paused, "resumed": {},
                              "would_pause": [], "paused_at": 1000.0, "resumed_at": 1012.34, "paused_seconds": 12.3,
                              "earlier": {}}
    assert s["lines"] == [
        "compact on edge (cluster paris): 1 compacted, 1 not needed, 0 skipped, 1 refused, 1 failed; "
        "files 61 -> 3, 5.96 KB -> 4.00 KB",
        "e2e.events: compacted, files 60 -> 2, backup e2e.__bkp_events_20261124T230100_def456",
        "e2e.clicks: failed (concurrent_write)",
        "e2e.users: not_needed (no compaction needed)",
        "e2e.view: refused (not an EXTERNAL table)",
        "ingestion paused on ingest: systemd ingest.timer, cron 2, hooks -",
        "ingestion paused for 12.3 s"]
    assert s["totals"] == {
        "lakekeeper_hosts_failed": 0, "lakekeeper_files_before": 61, "lakekeeper_files_after": 3,
        "lakekeeper_bytes_before": 6100, "lakekeeper_bytes_after": 4100,
        "lakekeeper_backup_tables": ["edge:e2e.__bkp_events_20261124T230100_def456"],
        "lakekeeper_tables_compacted": 1, "lakekeeper_tables_not_needed": 1, "lakekeeper_tables_skipped": 0,
        "lakekeeper_tables_refused": 1, "lakekeeper_tables_failed": 1,
        # names per status and the run of each table the module worked on (set_stats adds lists up over hosts)
        "lakekeeper_compacted_tables": ["edge:e2e.events"], "lakekeeper_failed_tables": ["edge:e2e.clicks"],
        "lakekeeper_not_needed_tables": ["edge:e2e.users"], "lakekeeper_skipped_tables": [],
        "lakekeeper_refused_tables": ["edge:e2e.view"],
        "lakekeeper_runs": [
            {"host": "edge", "table": "e2e.events", "status": "compacted", "run_id": "20261124T230100-def456"},
            {"host": "edge", "table": "e2e.clicks", "status": "failed", "run_id": "20261124T230100-aaa111"}]}


def test_a_table_whose_earlier_run_was_recovered_names_that_run():
    """compact's recovery of an earlier run left unfinished (the role compacts a table with pending_recovery
    though it needs no compaction): the record names the runs recovered; others carry no such key."""
    analysis = {"run_id": "R2", "tables": [
        {"table": "db.t", "status": "analyzed", "needs_compaction": False, "pending_recovery": ["R1"], "files": 2},
        {"table": "db.u", "status": "analyzed", "needs_compaction": True, "files": 40}]}
    actions = [{"run_id": "R1", "action": "forward", "spec": "dt=a"}, {"run_id": "R1", "action": "finished"}]
    result = {"run_id": "R2", "tables": [
        {"table": "db.t", "status": "not_needed", "recovered": actions, "partitions": []},
        {"table": "db.u", "status": "compacted", "partitions": [{"files_before": 40, "files_after": 2}]}]}
    s = run(analysis=analysis, result=result, todo=["db.u", "db.t"])
    assert [(t["table"], t["status"], t.get("recovered")) for t in s["tables"]] == [
        ("db.t", "not_needed", ["R1"]), ("db.u", "compacted", None)]
    assert "recovered" not in run(action="analyze", analysis=analysis)["tables"][0]


def test_a_dry_run_counts_the_planned_target_files():
    result = {"tables": [{"table": "e2e.events", "status": "planned", "partitions": [
        {"status": "planned", "files_before": 30, "target_files": 1, "bytes_before": 10},
        {"status": "skipped", "files_before": 2, "files_after": 2, "bytes_before": 5}]}]}
    s = run(result=result, dry_run=True, would_pause=["ingest"])
    assert s["tables"][0]["files_after"] == 3 and s["counts"] == {
        "compacted": 0, "not_needed": 0, "skipped": 0, "refused": 0, "failed": 0, "planned": 1}
    assert s["lines"][0].startswith("compact (dry run) on edge (cluster paris): 0 compacted, 0 not needed, "
                                    "0 skipped, 0 refused, 0 failed; files 32 -> 3 (estimate)")
    assert "dry run: the ingestion would be paused on ingest" in s["lines"]
    assert s["totals"]["lakekeeper_tables_planned"] == 1


def test_an_analysis():
    s = run(action="analyze", analysis=ANALYSIS, preflight={"problems": ["e2e.events: short by 1"]}, cluster="")
    assert s["counts"] == {"to_compact": 2, "not_needed": 1, "refused": 1, "failed": 0}
    events = s["tables"][0]
    assert events["status"] == "to_compact" and events["files_after"] == 1 and events["space_ok"] is True
    assert s["tables"][1]["space_ok"] is True and s["tables"][1]["backups"] == []
    assert s["lines"][0] == "analyze on edge: 2 to compact, 1 not needed, 1 refused, 0 failed; files 121 -> 4 " \
                            "(estimate), " \
                            "8.89 KB -> 8.89 KB"
    assert s["lines"][-1] == "e2e.events: short by 1"


def test_an_analysis_with_reconcile_findings_and_small_file_writers():
    messy = {"table": "pl.messy", "status": "analyzed", "needs_compaction": True, "files": 16, "bytes": 900,
             "files_after_estimate": 3, "reason": "1 of 2 unit(s) need compaction",
             "reconcile": {"summary": {"findings": 4, "removable": 1, "consistent": False}},
             "sources": {"writers": [
                 {"writer": "spark", "small_files": 12, "cadence": {"text": "4 files every 5 minutes since 2026-11-01 by etl"}},
                 {"writer": "hive", "small_files": 3, "cadence": {"text": "3 file(s) in 1 write(s) on 2026-11-02"}},
                 {"writer": "other", "small_files": 0, "cadence": None}]}}
    tidy = {"table": "pl.tidy", "status": "analyzed", "needs_compaction": False, "files": 2, "bytes": 100,
            "reconcile": {"summary": {"findings": 0, "removable": 0, "consistent": True}},
            "sources": {"writers": []}}
    s = run(action="analyze", analysis={"tables": [messy, tidy]})
    m, t = s["tables"]
    assert (m["reconcile_findings"], m["reconcile_removable"]) == (4, 1)
    assert m["small_file_writers"] == ["4 files every 5 minutes since 2026-11-01 by etl",
                                       "3 file(s) in 1 write(s) on 2026-11-02"]
    assert (t["reconcile_findings"], t["small_file_writers"]) == (0, [])
    assert s["lines"][1] == ("pl.messy: to_compact, files 16 -> 3, 4 Metastore/filesystem finding(s), small files: "
                             "4 files every 5 minutes since 2026-11-01 by etl (1 of 2 unit(s) need compaction)")
    assert "finding" not in s["lines"][2] and "small files" not in s["lines"][2], s["lines"]
    # an engine without them: no such keys
    assert "reconcile_findings" not in run(action="analyze", analysis=ANALYSIS)["tables"][0]


def test_a_cleanup_with_orphans_names_them():
    result = {"run_id": "r", "tables": [
        {"table": "pl.messy", "status": "cleaned", "freed_bytes": 4096, "backups_removed": [], "kept": [],
         "reason": "no retention policy given: backups left alone; removed 1 orphaned staging copy (4096 bytes)",
         "orphans_removed": [{"path": "file:/d/messy/.dt=a.lk_staging_r"}], "orphans_kept": []}]}
    s = run(action="cleanup", result=result)
    assert s["tables"][0]["orphans_removed"] == ["file:/d/messy/.dt=a.lk_staging_r"]
    assert s["freed_bytes"] == 4096 and s["totals"]["lakekeeper_tables_cleaned"] == 1
    assert "orphans_removed" not in run(action="cleanup", result={"tables": [{"table": "x.y", "status": "skipped"}]})[
        "tables"][0]


def test_a_run_that_stopped_before_compacting():
    s = run(analysis=ANALYSIS, todo=["e2e.events"], error="  Check that quotas ...: Not enough room  ")
    assert not s["ok"] and s["error"] == "Check that quotas ...: Not enough room"
    events = s["tables"][0]
    assert events["status"] == "failed" and events["reason"] == "not compacted: Check that quotas ...: Not enough room"
    assert s["lines"][-1] == "FAILED: Check that quotas ...: Not enough room"
    assert s["totals"]["lakekeeper_hosts_failed"] == 1


def test_a_run_that_failed_before_anything_names_the_tables():
    s = run(action="rollback", tables=["e2e.events"], error="kinit failed", resume_errors=["ingest: unreachable"])
    assert s["tables"] == [{"table": "e2e.events", "status": "failed", "reason": "not done: kinit failed",
                            "files_before": 0, "files_after": 0, "bytes_before": 0, "bytes_after": 0,
                            "backup_table": None, "run_id": ""}]
    assert s["totals"]["lakekeeper_runs"] == [] and s["totals"]["lakekeeper_failed_tables"] == ["edge:e2e.events"]
    assert s["lines"][-2:] == ["FAILED: kinit failed", "RESUME FAILED: ingest: unreachable"]
    assert s["counts"] == {"rolled_back": 0, "skipped": 0, "refused": 0, "failed": 1}


def test_a_cleanup():
    result = {"run_id": "r", "tables": [
        {"table": "e2e.events", "status": "cleaned", "freed_bytes": 2048,
         "backups_removed": [{"backup_table": "e2e.__bkp_events_1"}, {"backup_table": "e2e.__bkp_events_2"}],
         "kept": [{"backup_table": "e2e.__bkp_events_3"}]},
        {"table": "e2e.clicks", "status": "skipped", "reason": "no backups"}]}
    s = run(action="cleanup", result=result)
    assert s["freed_bytes"] == 2048 and s["backup_tables"] == ["e2e.__bkp_events_1", "e2e.__bkp_events_2"]
    assert s["tables"][0]["backups_kept"] == 1
    assert s["lines"][:3] == ["cleanup on edge (cluster paris): 1 cleaned, 1 skipped, 0 refused, 0 failed; "
                              "2 backup(s) removed, 2.00 KB freed",
                              "e2e.events: cleaned, removed e2e.__bkp_events_1, e2e.__bkp_events_2",
                              "e2e.clicks: skipped (no backups)"]
    assert s["totals"]["lakekeeper_freed_bytes"] == 2048
    assert s["totals"]["lakekeeper_backup_tables"] == ["edge:e2e.__bkp_events_1", "edge:e2e.__bkp_events_2"]


def test_nothing_known():
    s = maintenance_summary({})
    assert s["ok"] and s["action"] == "compact" and s["tables"] == [] and s["run_id"] == ""
    assert s["lines"] == ["compact on : 0 compacted, 0 not needed, 0 skipped, 0 refused, 0 failed"]
    assert s["ingestion"]["paused_at"] is None and s["ingestion"]["paused_seconds"] == 0


def test_a_list_of_partitions_cut_by_the_module_keeps_the_totals():
    from ansible_collections.lakekeeper.hive.plugins.module_utils._lakekeeper_result import limit_partitions

    parts = [{"status": "compacted", "files_before": 30, "files_after": 1, "bytes_before": 3000, "bytes_after": 2000}]
    parts += [{"status": "skipped", "files_before": 2, "files_after": 2, "bytes_before": 50 + i, "bytes_after": 50 + i}
              for i in range(40)]
    whole = {"tables": [{"table": "e2e.events", "status": "compacted", "partitions": parts}]}
    cut = {"tables": limit_partitions(whole["tables"], 5)}
    assert len(cut["tables"][0]["partitions"]) == 5 and cut["tables"][0]["partitions_not_listed"]["partitions"] == 36
    a, b = run(result=whole), run(result=cut)
    assert a["tables"] == b["tables"] and a["totals"] == b["totals"] and a["lines"] == b["lines"]
    assert a["tables"][0]["files_before"] == 30 + 80 and a["tables"][0]["files_after"] == 1 + 80


def test_a_background_job_stopped_without_its_result_is_summarized_from_its_progress():
    # lakekeeper_wait's result for a job that async_wrapper killed at its async limit
    waited = {"msg": "Timeout exceeded", "failed": True, "finished": 1, "checks": 1204, "progress_lines": 6,
              "waited_seconds": 31.5,
              "progress_tables": [{"table": "db.a", "status": "compacted", "reason": "compacted 1 of 1 unit(s)"},
                                  {"table": "db.b", "status": "in_progress", "reason": ""}]}
    s = maintenance_summary({"action": "compact", "result": waited, "todo": ["db.a", "db.b", "db.c"],
                             "error": "Fail when a table could not be compacted: Timeout exceeded",
                             "analysis": {"tables": [{"table": t, "needs_compaction": True, "files": 10}
                                                     for t in ("db.a", "db.b", "db.c")]}})
    by = {t["table"]: t for t in s["tables"]}
    assert by["db.a"]["status"] == "compacted", by
    assert by["db.b"]["status"] == "failed" and by["db.b"]["reason"].startswith(
        "interrupted while being worked on (Fail when a table could not be compacted: Timeout exceeded): its "
        "journal is finished or undone by the next run"), by
    assert by["db.c"]["status"] == "failed" and by["db.c"]["reason"].startswith("not compacted: "), by
    assert s["counts"] == {"compacted": 1, "not_needed": 0, "skipped": 0, "refused": 0, "failed": 2} and not s["ok"], s
    assert s["background"] == {"checks": 1204, "progress_lines": 6, "waited_seconds": 31.5}, s


def test_a_mixed_fleet_is_not_a_failure():
    """Issue 48 item 2: refused tables (named explicitly, or excluded by their
    owner, which analyze reports and compact refuses) are counted as refused
    with their code, the tables that needed nothing as not_needed, those left
    for now as skipped; none of them makes the run fail (ok, hosts_failed 0)."""
    analysis = {"tables": [
        {"table": "db.big", "status": "analyzed", "needs_compaction": True, "files": 50},
        {"table": "db.fine", "status": "analyzed", "needs_compaction": False, "files": 1},
        {"table": "db.mine", "status": "analyzed", "needs_compaction": False, "excluded": True, "files": 9,
         "reason": "excluded by its table property lakekeeper.exclude=true (compact leaves it alone); ..."},
        {"table": "db.managed", "status": "refused", "code": "managed_table", "reason": "MANAGED table"},
        {"table": "db.replica", "status": "refused", "code": "replicated", "reason": "repl.last.id=4711"}]}
    result = {"tables": [
        {"table": "db.big", "status": "compacted", "run_id": "r1", "partitions": []},
        {"table": "db.new", "status": "skipped", "code": "quiet_period", "reason": "newest file is 3s old",
         "partitions": []}]}
    s = run(analysis=analysis, result=result, todo=["db.big", "db.new"])
    by = {t["table"]: (t["status"], t.get("code")) for t in s["tables"]}
    assert by == {"db.big": ("compacted", None), "db.new": ("skipped", "quiet_period"), "db.fine": ("not_needed", None),
                  "db.mine": ("refused", "excluded"), "db.managed": ("refused", "managed_table"),
                  "db.replica": ("refused", "replicated")}, by
    assert s["ok"] and s["totals"]["lakekeeper_hosts_failed"] == 0
    assert s["counts"] == {"compacted": 1, "not_needed": 1, "skipped": 1, "refused": 3, "failed": 0}
    assert s["totals"]["lakekeeper_refused_tables"] == ["edge:db.mine", "edge:db.managed", "edge:db.replica"]
    assert "db.managed: refused (MANAGED table)" in s["lines"]


def test_what_an_earlier_run_left_on_the_ingestion_hosts():
    """A pause record still there (no guard, or a guard not yet expired) and a
    guard's report: in ingestion.earlier and in the lines."""
    found = {
        "ing1": {"record": {"paused_at": "2026-11-29T01:00:00Z", "systemd": [{"name": "a.timer"}],
                            "cron": [{"user": "etl", "lines": ["1 * * * * x", "2 * * * * y"]}], "hooks": []},
                 "expired": False, "guard_report": {}},
        "ing2": {"record": {"paused_at": "2026-11-29T01:00:00Z", "hooks": [{"name": "airflow"}],
                            "guard": {"expires": "2026-11-30T02:00:00Z", "fired": "2026-11-30T02:00:01Z"}},
                 "expired": True,
                 "guard_report": {"paused_at": "2026-11-29T01:00:00Z",
                                  "guard": {"expires": "2026-11-30T02:00:00Z", "fired": "2026-11-30T02:00:01Z"},
                                  "resumed": {"systemd": ["s.service"], "cron": [], "hooks": ["loader"]},
                                  "left": {"hooks": [{"name": "airflow"}], "errors": ["hook airflow: no resume"]}}},
        "ing3": {"record": {"paused_at": "2026-11-29T01:00:00Z", "hooks": [{"name": "h"}],
                            "guard": {"expires": "2026-11-30T02:00:00Z"}}, "expired": "True"},
    }
    s = run(found=found)
    earlier = s["ingestion"]["earlier"]
    assert earlier["ing1"]["left_paused"]["expired"] is False and "guard_fired" not in earlier["ing1"]
    assert earlier["ing2"]["guard_fired"]["resumed"]["hooks"] == ["loader"]
    assert earlier["ing3"]["left_paused"]["expired"] is True
    lines = "\n".join(s["lines"])
    assert ("ingestion on ing1: an earlier run left it paused (paused at 2026-11-29T01:00:00Z: systemd a.timer, "
            "cron 2, hooks -; no guard); this run resumes it") in lines
    assert ("ingestion on ing2: the pause an earlier run left (paused at 2026-11-29T01:00:00Z, never resumed by its "
            "run) expired at 2026-11-30T02:00:00Z; its guard resumed systemd s.service, cron 0, hooks loader at "
            "2026-11-30T02:00:01Z; not resumed by the guard: hook airflow: no resume") in lines
    assert "its guard fired at 2026-11-30T02:00:01Z and left this" in lines
    assert "ing3: an earlier run left it paused" in lines and "expired at 2026-11-30T02:00:00Z, its guard did not" \
        in lines
    assert s["ok"]  # what an earlier run left does not fail this one


def test_what_an_earlier_compaction_left():
    """The record of a compaction whose play never ended, and one look at its job."""
    record = {"started_at": "2026-11-29T01:00:00Z", "jid": "j1.2", "tables": ["db.a", "db.b"]}
    ended = {"finished": 1, "failed": 1, "msg": "Timeout exceeded",
             "progress_tables": [{"table": "db.a", "status": "compacted", "reason": "2 of 2"},
                                 {"table": "db.b", "status": "in_progress", "reason": ""}]}
    s = run(earlier_run={"record": record, "result": ended})
    er = s["earlier_run"]
    assert er["finished"] and "still_running" not in er
    assert [(t["table"], t["status"]) for t in er["tables"]] == [("db.a", "compacted"), ("db.b", "failed")]
    assert "interrupted while being worked on (Timeout exceeded)" in er["tables"][1]["reason"]
    assert any(line.startswith("the compaction started at 2026-11-29T01:00:00Z by an earlier run whose play never "
                               "ended (cancelled or killed): db.a compacted (2 of 2); db.b failed") for line in s["lines"])
    # its own result when it finished by itself; still running otherwise
    done = {"finished": 1, "rc": 0, "tables": [{"table": "db.a", "status": "compacted"}]}
    assert run(earlier_run={"record": record, "result": done})["earlier_run"]["tables"][0]["status"] == "compacted"
    running = run(earlier_run={"record": record, "result": {"finished": 0, "progress_tables": []}})
    assert running["earlier_run"]["still_running"]
    assert "is still running (job j1.2): no table finished or begun" in running["lines"][-1] or any(
        "is still running (job j1.2): no table finished or begun" in line for line in running["lines"])
    assert run()["earlier_run"] == {}


def test_each_application_is_listed_with_its_queue():
    """Issue 50 item 5: the tables of another YARN queue compacted by an
    application of their own (tasks/main.yml's loop over queue_groups)."""
    analysis = {"run_id": "20261124T230000-abc123", "tables": [
        {"table": "e2e.events", "status": "analyzed", "needs_compaction": True, "files": 60, "bytes": 6000},
        {"table": "e2e.clicks", "status": "analyzed", "needs_compaction": True, "files": 60, "bytes": 3000,
         "queue": "root.etl.nightly"}]}
    main = {"run_id": "20261124T230000-abc123", "tables": [
        {"table": "e2e.events", "status": "compacted", "run_id": "20261124T230000-abc123", "partitions": [],
         "verify_sample": {"fraction": 0.1, "seed": "x", "units": 3, "sampled": ["dt=1"]}}]}
    nightly = {"run_id": "20261124T230500-fed987", "application_id": "application_1_0002",
               "item": {"queue": "root.etl.nightly", "tables": ["e2e.clicks"], "own": False},
               "tables": [{"table": "e2e.clicks", "status": "compacted", "queue": "root.etl.nightly",
                           "run_id": "20261124T230500-fed987", "partitions": []}]}
    s = run(analysis=analysis, result=main, todo=["e2e.events", "e2e.clicks"], run_queue="maintenance",
            queue_runs=[nightly, {"skipped": True}])
    assert s["applications"] == 2 and s["counts"]["compacted"] == 2, s
    assert s["application_list"] == [
        {"run_id": "20261124T230000-abc123", "queue": "maintenance", "what": "analysis and compaction",
         "tables": ["e2e.events"]},
        {"run_id": "20261124T230500-fed987", "queue": "root.etl.nightly", "what": "compaction",
         "tables": ["e2e.clicks"], "application_id": "application_1_0002"}]
    assert "application 20261124T230500-fed987 in queue root.etl.nightly: compaction of e2e.clicks" in s["lines"]
    tables = {t["table"]: t for t in s["tables"]}
    assert tables["e2e.events"]["verify_sample"] == ["dt=1"] and tables["e2e.clicks"]["queue"] == "root.etl.nightly"
    # one queue: no application lines, the list still there
    one = run(analysis=analysis, result=main, todo=["e2e.events"])
    assert one["applications"] == 1 and not [x for x in one["lines"] if x.startswith("application ")]
    assert one["application_list"] == [
        {"run_id": "20261124T230000-abc123", "queue": "", "what": "analysis and compaction", "tables": ["e2e.events"]}]
