"""Fault injection on file:// with the embedded Derby Metastore: the real CLI
is SIGKILLed (JVM and Python) at every journal step of a compaction and of a
rollback, for a non-partitioned table, a partitioned table and a table with
a partition outside its root; recovery (the ``recover`` command, and a plain
new ``compact`` in some cases) must bring every table back to a consistent
state without losing a row. See world.py for the processes and
apps/world_verify.py for what is checked per table:

* rows equal to the original both ways (exceptAll), plus any file written later;
* Metastore location of the table and of every partition unchanged;
* SHOW PARTITIONS unchanged, also after MSCK REPAIR TABLE; no stray visible dir;
* no staging or trash left; originals kept only where a backup table
  points at them, holding exactly the original files;
* the backup table exists iff a unit was swapped;
* a second recovery does nothing.
"""
from __future__ import annotations

import os

import pytest

import world as W

pytestmark = [pytest.mark.integration, pytest.mark.timeout(5400)]


def test_the_kill_runs_really_died_by_sigkill(file_world):
    for name in ("kill_compact", "kill_rollback"):
        st = file_world.stages[name]
        assert st["killed"], f"{name}: expected death by SIGKILL, exit {st['rc']}\n{W.stderr_tail(st)}"
        assert not st["left_processes"], f"{name}: processes left behind {st['left_processes']}"
    assert not file_world.errors, file_world.errors


def test_compaction_crash_at_every_step(file_world, request):
    rows = W.crash_rows(file_world, ("crash",))
    W.report(request.config, file_world, rows, "compaction killed at every journal step, then `recover`",
             "crash-matrix-file.json")
    assert len(rows) == 3 * len(W.COMPACT_STEPS) + len(W.BATCH_STEPS)
    assert {r["step"] for r in rows if r["kind"] == "part"} >= set(W.BATCH_STEPS)
    assert file_world.stages["recover"]["rc"] == 0, W.stderr_tail(file_world.stages["recover"])
    for r in rows:
        if r["step"] == "table:finished":
            assert r["recovery_status"] == "skipped", r  # the run had completed: nothing to do
        else:
            assert r["recovery_status"] == "recovered" and r["actions"], r
        swapped = "fwd" in r["outcome"].values()
        assert r["backups"] == (1 if swapped else 0), r
    assert not W.failures(rows), W.failures(rows)


def test_a_new_compact_run_recovers_automatically(file_world, request):
    rows = W.crash_rows(file_world, ("auto",))
    W.report(request.config, file_world, rows, "killed, then a plain new `compact`", "crash-auto-file.json")
    for r in rows:
        res = file_world.stages["compact"]["results"][r["table"]]
        assert res["recovered"], res  # the automatic recovery did something
        assert res["status"] in ("compacted", "not_needed"), res
    assert not W.failures(rows), W.failures(rows)


def test_late_file_during_the_swap_then_crash(file_world, request):
    """A writer adds a file at the move aside (it follows the directory into
    .lk_old) or re-creates the directory between the renames; the process
    dies before adopting it; recovery must bring the file's rows back."""
    rows = W.crash_rows(file_world, ("late_crash",))
    W.report(request.config, file_world, rows, "writer during the swap, then killed", "crash-late-file.json")
    for r in rows:
        assert file_world.extras.get(r["table"]), f"no file was written at the pause point of {r['table']}"
    assert not W.failures(rows), W.failures(rows)


def test_rollback_crash_at_every_step(file_world, request):
    rows = W.crash_rows(file_world, ("rollback",))
    W.report(request.config, file_world, rows, "rollback killed at every step, then `recover`", "crash-rollback-file.json")
    assert len(rows) == 11
    for r in rows:
        assert r["recovery_status"] == "recovered" and r["actions"], r
        assert r["backups"] == 0, r
    assert not W.failures(rows), W.failures(rows)


def test_errors_injected_at_every_step(file_world, request):
    """An exception (not a crash) at every step: the unit ends either with
    its original untouched or, after the swap, compacted with the backup at
    the original; the error is reported; nothing is left for recovery."""
    rows = W.crash_rows(file_world, ("raise",))
    W.report(request.config, file_world, rows, "exception at every step (normal run)", "crash-raise-file.json")
    results = file_world.stages["compact"]["results"]
    for r in rows:
        res = results[r["table"]]
        text = res["reason"] + " " + " ".join(p.get("reason", "") for p in res.get("partitions", []))
        assert "injected fault" in text, res
        back = "back" in r["outcome"].values()
        if back or r["step"] == "table:finished":
            assert res["status"] == "failed", res
    assert not W.failures(rows), W.failures(rows)


def test_minor_mode_moves_kept_files_and_every_crash_keeps_them(file_world, request):
    """Minor mode moves the files it keeps by rename into the staging right
    before the swap (``moving_kept``, journaled first, then
    ``moving_kept:after``). Killed at each step around it and recovered by
    ``recover`` or by a new compact, an exception there, a rollback killed
    and a cleanup of its backup: every original file is live byte for byte
    (the kept ones under their own names), or the compaction completed
    forward with every kept file live; the backup's original directory
    never holds a kept file; nothing is lost (world_verify: rows both ways)."""
    rows = W.crash_rows(file_world, W.MINOR_GROUPS)
    W.report(request.config, file_world, rows, "minor mode: kept files moved by rename, killed around the moves",
             "crash-minor-file.json")
    by_group: dict = {}
    for r in rows:
        by_group.setdefault(r["group"], []).append(r)
    assert {r["step"] for r in by_group["minor_crash"]} == set(W.MINOR_STEPS)
    assert len(by_group["minor_rollback"]) == len(W.MINOR_ROLLBACK_STEPS)
    assert len(by_group["minor_auto"]) == len(by_group["minor_raise"]) == 2 and len(by_group["minor_cleanup"]) == 1
    for r in by_group["minor_crash"] + by_group["minor_rollback"]:
        assert r["recovery_status"] == "recovered" and r["actions"], r
    moved_back = {r["step"]: file_world.stages["recover"]["results"][r["table"]]["actions"]
                  for r in by_group["minor_crash"] if r["step"] in ("moving_kept", "moving_kept:after")}
    for step, actions in moved_back.items():  # recovery moved the kept files back before deleting the staging
        unit = [a for a in actions if a.get("action") == "rolled_back_unswapped"]
        assert unit and len(unit[0]["kept_moved_back"]) == (2 if step == "moving_kept:after" else 0), actions
    results = file_world.stages["compact"]["results"]
    for r in by_group["minor_auto"]:
        res = results[r["table"]]
        assert res["recovered"] and res["status"] == "compacted", res
        assert res["partitions"][0]["files_moved"] == 2 and res["partitions"][0]["files_copied"] == 0, res
    for r in by_group["minor_raise"]:
        res = results[r["table"]]
        assert res["status"] == "failed" and "injected fault" in res["partitions"][0]["reason"], res
    cleaned = file_world.stages["cleanup"]["results"]["cx.minor_cleaned"]
    assert cleaned["status"] == "cleaned" and not cleaned["backups_removed"][0].get("moved_to_live"), cleaned
    assert not W.failures(rows), W.failures(rows)


def test_cleanup_recovers_first_and_never_deletes_foreign_files(file_world):
    """cleanup deletes the originals for good: it finishes an interrupted
    run first, and a file found among the originals that the compaction did
    not plan (a writer closed it there after the move aside) is moved into
    the live directory, not deleted."""
    w = file_world
    results = w.stages["cleanup"]["results"]
    late = results["cx.late_in_backup"]
    assert late["status"] == "cleaned", late
    assert late["backups_removed"][0].get("moved_to_live") == ["late-in-old-1.parquet"], late
    crashed = results["cx.crashed"]
    assert crashed["status"] == "cleaned" and crashed["recovered"], crashed
    for full in ("cx.late_in_backup", "cx.crashed"):
        f = w.facts[full]
        assert f["units"][""]["state"] == "compacted" and not f["backups"], f
        assert not f["problems"], f["problems"]


@pytest.mark.spark_lane
@pytest.mark.skipif(not os.environ.get("LAKEKEEPER_SPARK_LANE"),
                    reason="older-Spark lanes only: on the main lane the file world covers this shape")
def test_older_spark_lane_crash_matrix_one_shape(lane_world, request):
    """The older-Spark lanes (scripts/spark-lanes): a partitioned table killed
    at every compaction and every rollback step, then `recover`. On the main
    lane the file world above covers this shape with the others."""
    w = lane_world
    for name in ("kill_compact", "kill_rollback"):
        st = w.stages[name]
        assert st["killed"] and not st["left_processes"], f"{name}: exit {st['rc']}\n{W.stderr_tail(st)}"
    assert w.stages["recover"]["rc"] == 0, W.stderr_tail(w.stages["recover"])
    rows = W.crash_rows(w, ("crash", "rollback"))
    W.report(request.config, w, rows, f"lane: {W.LANE_KIND} table killed at every step, then `recover`",
             "crash-matrix-lane.json")
    assert len(rows) == len(W.COMPACT_STEPS) + len(W.ROLLBACK_STEPS)
    for r in rows:
        if r["step"] == "table:finished":
            assert r["recovery_status"] == "skipped", r
        else:
            assert r["recovery_status"] == "recovered" and r["actions"], r
    assert not W.failures(rows), W.failures(rows)
