"""The rename-critical crash points on real HDFS (test bed: Hadoop 3.5
HDFS by default, 2.7.3 with LAKEKEEPER_TESTBED_HADOOP=2.7; Hive Metastore service), where rename semantics differ
from file:// (a directory renamed onto an existing one moves inside it, a
missing source returns false): killed between the two renames, before and
after the move in, and during a rollback; minor mode also with its kept
files moved by rename into the staging; then ``recover``. Same invariants
as the file:// matrix (apps/world_verify.py)."""
from __future__ import annotations

import pytest

import world as W

pytestmark = [pytest.mark.testbed, pytest.mark.timeout(5400)]


def test_kill_runs_died_by_sigkill(hdfs_world):
    for name in ("kill_compact", "kill_rollback"):
        st = hdfs_world.stages[name]
        assert st["killed"], f"{name}: expected death by SIGKILL, exit {st['rc']}\n{W.stderr_tail(st)}"
        assert not st["left_processes"], st["left_processes"]


def test_hdfs_crash_matrix(hdfs_world, request):
    w = hdfs_world
    rows = W.crash_rows(w, ("crash", "rollback"))
    W.terminal(request.config, [f"HDFS: killed at the rename-critical steps and during a rollback, then `recover` "
                                f"({len(rows)} cases; world {w.total_seconds()} s)", *W.matrix_lines(rows)])
    W.save_json("crash-matrix-hdfs.json", {"rows": rows, "world_seconds": w.total_seconds(), "load": w.load,
                                           "stages": {k: {kk: vv for kk, vv in v.items() if kk != "results"}
                                                      for k, v in w.stages.items()}})
    assert len(rows) == 3 * len(W.HDFS_STEPS) + len(W.HDFS_ROLLBACK) + len(W.HDFS_MINOR_STEPS) + \
        len(W.HDFS_MINOR_ROLLBACK)
    # minor mode's kept files, moved by rename on HDFS: every one back in its live directory after `recover`
    assert len([r for r in rows if r["kind"] == "minor"]) == len(W.HDFS_MINOR_STEPS) + len(W.HDFS_MINOR_ROLLBACK)
    assert w.stages["recover"]["rc"] == 0, W.stderr_tail(w.stages["recover"])
    for r in rows:
        assert r["recovery_status"] == "recovered" and r["actions"], r
        assert r["backups"] == (1 if "fwd" in r["outcome"].values() else 0), r
    bad = [r for r in rows if r["problems"] or r["outcome"] != r["expected"]]
    assert not bad, bad
