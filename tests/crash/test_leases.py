"""One run per table, with real concurrent processes (HDFS test bed and its
Metastore service, where several engine processes can run at once): while a
compaction of one table waits right before its swap (its backup table made;
LAKEKEEPER_PAUSE_AT, no sleeps) and a rollback of another table waits right
before its first unit's swap, a second ``compact``, a ``cleanup`` (of both
tables) and a ``rollback`` (of the compacting one) are started as separate
engine processes: compact+compact, compact+cleanup, compact+rollback,
rollback+compact and rollback+cleanup. Every second run finds the table's
lease, changes nothing and reports ``locked`` naming the first run; the
first runs then finish. Every row is the same both ways afterwards
(apps/world_verify.py), the backup kept by the compaction is there."""
from __future__ import annotations

import pytest

import world as W

pytestmark = [pytest.mark.testbed, pytest.mark.timeout(5400)]


def test_second_runs_find_the_table_locked(hdfs_world, request):
    w = hdfs_world
    (full,) = [t for t, c in w.cases.items() if c["group"] == "lease"]
    (rb_full,) = [t for t, c in w.cases.items() if c["group"] == "lease_rb"]
    first = w.stages["quota"]["results"][full]
    first_rb = w.stages["lease_first_rollback"]["results"][rb_full]
    lines = [["first compact", "", first["status"], first["changed"], first["run_id"], first["reason"][:60]],
             ["first rollback", "", first_rb["status"], first_rb["changed"], first_rb["run_id"],
              first_rb["reason"][:60]]]
    seconds = [("lease_compact", full, first), ("lease_cleanup", full, first), ("lease_rollback", full, first),
               ("lease_compact", rb_full, first_rb), ("lease_cleanup", rb_full, first_rb)]
    for name, table, holder in seconds:
        st = w.stages[name]
        res = st["results"][table]
        lines.append([name, table.split(".")[-1], res["status"], res["changed"], res["run_id"], res["reason"][:60]])
        assert st["rc"] == 0 and not st["doc"]["failed"], W.stderr_tail(st)
        assert res["status"] == "locked" and res["code"] == "locked" and not res["changed"], (name, res)
        assert holder["run_id"] in res["reason"] and res["lease_holder"]["run_id"] == holder["run_id"], (name, res)
        assert not res.get("recovered"), (name, res)  # recovery never ran against the live run
    W.terminal(request.config, ["one run per table (HDFS, Metastore service): second runs while the first "
                                "waits before its swap", *W.table_lines(["run", "table", "status", "changed",
                                                                         "run id", "reason"], lines)])
    assert first["status"] == "compacted" and first["changed"] and "lease_taken_over" not in first, first
    f = w.facts[full]
    assert W.units_outcome(f) == "table=fwd", f
    assert len(f["backups"]) == 1 and not f["problems"], f  # rows identical both ways, backup intact
    assert first_rb["status"] == "rolled_back" and first_rb["changed"] and "lease_taken_over" not in first_rb, first_rb
    f = w.facts[rb_full]
    assert W.units_outcome(f) == "table=back" and not f["problems"], f  # the original rows back, nothing lost
