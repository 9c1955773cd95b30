# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The pure parts of the action lakekeeper_wait: reading a job's results file
as async_status does, and the progress records read in pieces."""

from __future__ import annotations

import json

from ansible_collections.lakekeeper.hive.plugins.action.lakekeeper_wait import Progress, job_state


def test_job_state_reads_the_results_file_as_async_status_does():
    assert job_state("") == (False, {"started": 1, "finished": 0})
    assert job_state('{"started": 1, "finished": 0, "ansible_job_id": "j1"}')[0] is False
    done, data = job_state('{"rc": 0, "tables": [], "changed": true}')
    assert done and data["finished"] == 1 and data["rc"] == 0
    # what async_wrapper writes once the job's async limit has passed (it killed the job)
    done, data = job_state('{"msg": "Timeout exceeded", "failed": true, "child_pid": 7}')
    assert done and data["failed"] and data["msg"] == "Timeout exceeded"
    done, data = job_state("not json{")
    assert done and data["failed"] and "not JSON" in data["msg"]


def rec(event, **kw):
    return json.dumps(dict({"time": "2026-11-29T01:02:03+00:00", "elapsed": 5, "event": event,
                            "command": "compact", "run_id": "R"}, **kw)) + "\n"


def test_progress_in_pieces_keeps_a_partial_last_line_and_tracks_the_tables():
    text = (rec("start") + rec("tables", tables=["db.a", "db.b", "db.c"], of=3)
            + rec("started", table="db.a", done=0, of=3) + rec("started", table="db.b", done=0, of=3)
            + rec("table", table="db.a", status="compacted", reason="ok", seconds=3, done=1, of=3))
    p = Progress()
    cut = len(text) - 20  # the last record arrives in two reads
    first = p.feed(text[:cut])
    assert len(first) == 4 and first[0].endswith("compact started (run R)") and p.records == 4
    assert p.offset == len(text[:cut].encode("utf-8"))
    second = p.feed(text[cut:])
    assert second == ["[01:02:03, +5 s] db.a: compacted in 3 s (1 of 3 done): ok"]
    assert p.records == 5 and p.partial == ""
    # db.a finished, db.b begun and not finished, db.c never begun
    assert p.left() == [{"table": "db.a", "status": "compacted", "reason": "ok"},
                        {"table": "db.b", "status": "in_progress", "reason": ""}]
    assert p.feed("garbage\n") == ["(unreadable progress record: garbage)"]


def test_analysis_file_is_returned_as_lakekeeper_analyze_returns_it():
    from ansible_collections.lakekeeper.hive.plugins.action.lakekeeper_wait import analysis_result

    assert analysis_result("") is None and analysis_result("partial{") is None
    doc = {"command": "analyze", "run_id": "R1", "failed": False, "msg": "analyze:  2 analyzed",
           "tables": [{"table": "db.a", "status": "analyzed", "needs_compaction": True,
                       "partitions": [{"spec": "d=%d" % i, "status": "analyzed"} for i in range(5)]},
                      {"table": "db.b", "status": "refused", "reason": "managed"}]}
    out = analysis_result(json.dumps(doc), max_partitions_listed=2)
    assert out["run_id"] == "R1" and out["changed"] is False and out["msg"] == "analyze: 2 analyzed"
    assert [t["table"] for t in out["tables"]] == ["db.a", "db.b"] and len(out["tables"][0]["partitions"]) == 2
    assert "failed" not in out and out["warnings"] == ["db.b was refused (refused): managed"]
    refused = analysis_result(json.dumps(doc), fail_on_refused=True)
    assert refused["failed"] and "db.b: refused: managed" in refused["msg"]
    failed = analysis_result(json.dumps(dict(doc, failed=True)))
    assert failed["failed"] and failed["msg"].startswith("lakekeeper analyze failed")
