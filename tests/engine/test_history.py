"""The table's run history (history.py), end to end: one partitioned table
is compacted, rolled back, compacted again and cleaned up; ``analyze``
returns the four records newest first - outcomes, files before and after,
the rollback's undone run, the cleanup's dropped backup and why - and the
records outlive the cleanup that removed the journal and the backup. A run
with nothing to do and a dry run leave no record; a refused one does."""

from __future__ import annotations

import pytest

from engine_helpers import make_table

pytestmark = pytest.mark.integration


def test_history_of_compact_rollback_compact_cleanup(spark, engine, files, warehouse):
    from lakekeeper_spark.protocol.journal import Journal

    t = "lk.hist"
    loc = make_table(spark, warehouse, "hist", rows=200, partitions={"a": 6, "b": 4})
    jdir = files.fs.qualify(loc).rstrip("/") + "/.lakekeeper"

    c1 = engine.one("compact", t)
    assert c1["status"] == "compacted" and c1["history_record"].startswith(f"{jdir}/history/"), c1
    assert files.exists(c1["history_record"])
    assert engine.one("compact", t, dry_run=True)["status"] == "not_needed"  # dry run, nothing to do: no record
    rb = engine.one("rollback", t)
    assert rb["status"] == "rolled_back" and rb["backup_table"] == c1["backup_table"], rb
    c2 = engine.one("compact", t)
    assert c2["status"] == "compacted", c2
    idle = engine.one("compact", t)
    assert idle["status"] == "not_needed" and "history_record" not in idle, idle  # nothing to do: no record
    cl = engine.one("cleanup", t, older_than="all")
    assert cl["status"] == "cleaned" and [b["backup_table"] for b in cl["backups_removed"]] == [c2["backup_table"]]
    assert cl["backups_removed"][0]["rule"] == "all", cl

    # the cleanup removed the journal and the backup; the history stays
    assert Journal.run_ids(files.fs, jdir) == [] and not spark.catalog.tableExists(c2["backup_table"])
    assert len(files.history_records(jdir)) == 4
    assert files.hidden(loc) == [] and files.hidden(loc, history=True) == [".lakekeeper"]

    res = engine.one("analyze", t, history=10)
    hist = res["history"]
    assert [(h["command"], h["outcome"], h["run_id"]) for h in hist] == [
        ("cleanup", "cleaned", cl["run_id"]), ("compact", "compacted", c2["run_id"]),
        ("rollback", "rolled_back", rb["run_id"]), ("compact", "compacted", c1["run_id"])], hist
    assert [h["ended_at"] for h in hist] == sorted((h["ended_at"] for h in hist), reverse=True)
    new_c2, new_rb, new_c1 = hist[1], hist[2], hist[3]
    for rec, result in ((new_c1, c1), (new_c2, c2)):
        assert rec["totals"]["files_before"] == 10 and rec["totals"]["files_after"] == 2, rec
        assert rec["totals"]["units_changed"] == 2 and sorted(u["spec"] for u in rec["units"]) == ["dt=a", "dt=b"]
        assert rec["totals"]["rows_before"] == rec["totals"]["rows_after"] == 400, rec
        assert rec["verification"] == {"units": 2, "content": 2, "rows": 0, "rows_before": 400, "rows_after": 400}
        assert rec["backup_table"] == result["backup_table"] and rec["changed"] is True
    assert new_rb["backup_run_id"] == c1["run_id"] and new_rb["backup_table"] == c1["backup_table"]
    assert new_rb["totals"]["files_before"] == 2 and new_rb["totals"]["files_after"] == 10, new_rb
    (dropped,) = hist[0]["backups_dropped"]
    assert dropped["backup_table"] == c2["backup_table"] and dropped["run_id"] == c2["run_id"]
    assert dropped["rule"] == "all" and "older_than all" in dropped["reason"] and dropped["bytes"] > 0, dropped
    assert hist[0]["freed_bytes"] == cl["freed_bytes"] and hist[0]["backups_kept"] == []
    # who and where, when
    assert new_c1["spark_app_id"] == spark.sparkContext.applicationId and new_c1["spark_master"] == spark.sparkContext.master
    assert new_c1["user"] and new_c1["host"] and new_c1["started_at"] <= new_c1["ended_at"]
    summary = res["history_summary"]
    assert summary["runs"] == 4 and summary["outcomes"] == {"compacted": 2, "rolled_back": 1, "cleaned": 1}
    assert summary["files_removed"] == 16 and summary["files_restored"] == 8 and summary["backups_dropped"] == 1

    # bounded, and 0 skips it
    assert [h["run_id"] for h in engine.one("analyze", t, history=2)["history"]] == [cl["run_id"], c2["run_id"]]
    none = engine.one("analyze", t, history=0)
    assert none["history"] == [] and none["history_summary"]["runs"] == 0

    # a refusal is recorded with its code
    spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('lakekeeper.exclude'='true')")
    refused = engine.one("compact", t)
    assert refused["status"] == "refused" and refused["code"] == "excluded" and "history_record" in refused, refused
    (last,) = engine.one("analyze", t, history=1)["history"]
    assert (last["run_id"], last["outcome"], last["code"]) == (refused["run_id"], "refused", "excluded")
    assert last["totals"]["units"] == 0 and last["changed"] is False


def test_a_record_that_cannot_be_written_never_fails_the_run(spark, engine, files, warehouse, monkeypatch):
    """Best effort: the run's outcome stands, the result says why its record
    is missing (``history_error``); the next run records as usual."""
    from lakekeeper_spark.report import history

    loc = make_table(spark, warehouse, "hist_err", rows=100, files=6)

    def full(fs, folder, record):
        raise OSError("No space left on device")

    monkeypatch.setattr(history, "write_record", full)
    res = engine.one("compact", "lk.hist_err")
    monkeypatch.undo()
    assert res["status"] == "compacted" and res["changed"], res
    assert "No space left on device" in res["history_error"] and "history_record" not in res, res
    jdir = f"{files.fs.qualify(loc).rsplit('/', 1)[0]}/.hist_err.lakekeeper"
    assert files.history_records(jdir) == []
    cl = engine.one("cleanup", "lk.hist_err", older_than="all")
    assert cl["status"] == "cleaned" and "history_error" not in cl, cl
    assert [h["command"] for h in engine.one("analyze", "lk.hist_err")["history"]] == ["cleanup"]
