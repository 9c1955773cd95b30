"""Merge mode under SIGKILL (issue 21): the real CLI process (JVM and
Python) merging a batch into a partitioned table
(``compact --table t --merge-from <batch> --dedupe-...``) is killed at the
journal steps of the merge, one table a process (world.MERGE_KILLS): before
any swap, between the two renames of the first partition, after the move in
of the second, with the first partition merged and the second untouched, and
with every partition swapped but the batch not yet recorded as applied.
Then one ``recover`` for all of them but the last, whose plain re-run of the
same merge recovers it; the table with one partition merged is merged again
with the same batch. One verify process (apps/merge_verify.py) checks per
table, besides every invariant of the crash matrix (apps/world_verify.py:
second recovery a no-op, Metastore locations and partitions unchanged, no
staging or trash left, each backup holding exactly the original files,
journal runs exactly those of the backups):

* the rows of each partition equal its original rows or, where it was
  swapped, the batch merged into them (computed by the verify app itself:
  latest version per key, delete markers dropped), compared row for row;
* the partition the batch does not touch keeps exactly its files;
* the batch's applied record names exactly the merged partitions.

A batch merged twice into a partition would leave it in two backups, the
second not holding the original files, and its re-run result would say so.
"""
from __future__ import annotations

import pytest

import world as W

# On the main line (scripts/test's crash part): the merge's journal steps make the same FileSystem and Metastore
# calls on every Spark line, and the main line's drivers map the class-data archive (this world: 294 CPU s on the
# main line against 432 on the 3.3 lane, where it ran until 2026-11-30). A lane marked ``crash`` in
# requirements.txt runs it too (scripts/spark_lanes.py CRASH_TESTS, by hand).
pytestmark = [pytest.mark.integration, pytest.mark.timeout(5400)]

BATCH_PARTS = {  # what merge_rules.BatchPart says the batch (world_common.MERGE_BATCH) does to each partition
    "dt=a": {"rows": 38, "inserted": 10, "updated": 20, "deleted": 5, "absent_deletes": 0},
    "dt=c": {"rows": 38, "inserted": 8, "updated": 25, "deleted": 3, "absent_deletes": 2},
}
ROWS_AFTER = {"dt=a": 300 - 5 + 10, "dt=c": 300 - 3 + 8}


def _case(w: W.World, step: str) -> tuple[str, dict]:
    return next((t, c) for t, c in w.cases.items() if c["step"] == step)


def _recorded(actions) -> list[list[str]]:
    return [a["partitions"] for a in actions or [] if a.get("action") == "recorded_merged_batch"]


def test_the_merge_kill_runs_really_died_by_sigkill(merge_world):
    kills = [n for n in merge_world.stages if n.startswith("kill_")]
    assert len(kills) == len(W.MERGE_KILLS), kills
    for full, case in merge_world.cases.items():
        name = f"kill_{W.code(case['step'])}"
        st = merge_world.stages[name]
        assert st["killed"], f"{name}: expected death by SIGKILL, exit {st['rc']}\n{W.stderr_tail(st)}"
        assert not st["left_processes"], f"{name}: processes left behind {st['left_processes']}"
        # ... at the step meant, not anywhere else (the hook's own log line)
        where = f"parking at {case['step']} of {full}" + (f" unit {case['unit']}" if case["unit"] is not None else "")
        assert where in W.stderr_tail(st, 400), f"{name}: not killed {where}\n{W.stderr_tail(st)}"
    assert not merge_world.errors, merge_world.errors


def test_merge_killed_at_each_step_then_recovered(merge_world, request):
    w = merge_world
    rows = W.crash_rows(w, ("merge_crash",))
    W.report(request.config, w, rows, "merge killed at its journal steps, then `recover` (or a re-run)",
             "crash-merge-file.json")
    assert len(rows) == len(W.MERGE_KILLS)
    assert w.stages["recover"]["rc"] == 0, W.stderr_tail(w.stages["recover"])
    for r in rows:
        merged = W.MERGED_AFTER_KILL[r["step"]]
        res = w.stages[w.cases[r["table"]]["recover_stage"]]["results"][r["table"]]
        if r["recover_by"] == "recover":
            assert r["recovery_status"] == "recovered", r
            actions = res["actions"]
        else:  # the plain re-run: recovered first, then nothing left to merge (test below)
            actions = res["recovered"]
        # the batch recorded for exactly the partitions that end swapped, not at all when none did
        assert _recorded(actions) == ([merged] if merged else []), (r, actions)
        assert r["backups"] == (2 if r["step"] == "done" else 1 if merged else 0), r  # done: and the re-run's
    assert not W.failures(rows), W.failures(rows)


def test_the_batch_record_names_exactly_the_merged_partitions(merge_world):
    for full, case in merge_world.cases.items():
        f = merge_world.facts[full]
        merged = sorted(u for u, o in case["expect"].items() if o == "fwd")
        assert f["merged_units"] == merged, (full, f["units"])
        assert f["record_applied"] == (merged or None), (full, f["record_applied"])
        assert f["untouched_same_files"] == {"dt=b": True}, full
        assert not f["problems"], (full, f["problems"])


def test_a_rerun_merges_only_the_partitions_not_merged_yet(merge_world):
    """Killed with the first partition merged, recovered: the same merge
    again rewrites only the second partition, with the batch applied to it
    once (its figures), and leaves the first alone (batch already applied)."""
    w = merge_world
    full, _case_ = _case(w, "done")
    res = w.stages["rerun_done"]["results"][full]
    assert res["status"] == "compacted" and not res["recovered"], res
    assert res["merge"]["already_applied"] == ["dt=a"], res["merge"]
    by = {p["spec"]: p for p in res["partitions"]}
    assert by["dt=a"]["status"] == "not_needed" and "already merged" in by["dt=a"]["reason"], by["dt=a"]
    assert by["dt=b"]["status"] == "not_needed", by["dt=b"]
    c = by["dt=c"]
    assert c["status"] == "compacted" and c["merge"] == BATCH_PARTS["dt=c"], c
    assert (c["rows_before"], c["rows_after"]) == (300 + 38, ROWS_AFTER["dt=c"]), c


def test_a_plain_rerun_recovers_and_applies_nothing_twice(merge_world):
    """Killed after every swap, before the batch was recorded: the plain
    re-run of the same merge recovers first (records the batch for both
    partitions), then finds nothing left to merge."""
    w = merge_world
    full, _case_ = _case(w, "merge_recording")
    res = w.stages["rerun_merge_recording"]["results"][full]
    assert res["status"] == "not_needed" and res["code"] == "batch_already_applied", res
    assert _recorded(res["recovered"]) == [["dt=a", "dt=c"]], res["recovered"]
    assert sorted(res["merge"]["already_applied"]) == ["dt=a", "dt=c"] and not res["merge"]["partitions"], res
    assert all(p["status"] == "not_needed" for p in res["partitions"]), res["partitions"]
    assert not res.get("backup_table"), res
