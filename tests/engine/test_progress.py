"""Progress records (lakekeeper_spark/report/progress.py): pure, no Spark."""

from __future__ import annotations

import json
import time

from lakekeeper_spark.report.progress import Progress


def records(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_run_writes_start_tables_heartbeats_tables_and_end(tmp_path):
    path = tmp_path / "progress.jsonl"
    p = Progress(str(path), "compact", "R1", interval=0.2)
    p.start()
    p.tables(["db.a", "db.b"])
    p.table_started("db.a")
    p.table_started("db.b")
    time.sleep(0.7)  # db.a and db.b in progress: heartbeats name both
    p.table_finished({"table": "db.a", "status": "compacted", "reason": "compacted 2 of 2 unit(s)", "seconds": 0.7})
    time.sleep(0.5)
    p.table_finished({"table": "db.b", "status": "failed", "reason": "boom", "seconds": 1.2})
    p.end({"failed": True, "changed": True, "msg": "compact: 1 compacted, 1 failed",
           "tables": [{"status": "compacted"}, {"status": "failed"}]})
    got = records(path)
    events = [r["event"] for r in got]
    assert events[:2] == ["start", "tables"] and events[-1] == "end", events
    assert all(r["command"] == "compact" and r["run_id"] == "R1" and r["time"].endswith("+00:00") for r in got)
    beats = [r for r in got if r["event"] == "working"]
    assert beats and [t["table"] for t in beats[0]["tables"]] == ["db.a", "db.b"], beats
    # once db.a is done, the heartbeats name db.b only, and count one done of two
    later = [r for r in beats if r["done"] == 1]
    assert later and all([t["table"] for t in r["tables"]] == ["db.b"] for r in later), beats
    assert [(r["table"], r["done"]) for r in got if r["event"] == "started"] == [("db.a", 0), ("db.b", 0)]
    assert events.index("started") < events.index("working")
    tables = [r for r in got if r["event"] == "table"]
    assert [(r["table"], r["status"], r["done"], r["of"]) for r in tables] == [
        ("db.a", "compacted", 1, 2), ("db.b", "failed", 2, 2)]
    assert got[-1]["counts"] == {"compacted": 1, "failed": 1} and got[-1]["failed"] is True
    # the heartbeat stops with the run
    size = path.stat().st_size
    time.sleep(0.5)
    assert path.stat().st_size == size


def test_an_unwritable_progress_file_never_fails_the_run(tmp_path, caplog):
    p = Progress(str(tmp_path / "missing-dir" / "progress.jsonl"), "analyze", "R2", interval=0.1)
    p.start()
    p.tables(["db.a"])
    p.table_finished({"table": "db.a", "status": "analyzed"})
    p.end({"failed": False, "tables": []})
    assert sum("cannot write progress" in r.getMessage() for r in caplog.records) == 1
    Progress(None, "analyze", "R3").end({})  # no file asked for: nothing at all
