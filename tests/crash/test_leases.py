"""One run per table, with real concurrent processes (HDFS test bed and its
Metastore service, where several engine processes can run at once): while a
compaction of a table waits right before its swap (its backup table made;
LAKEKEEPER_PAUSE_AT, no sleeps), a second ``compact`` and a ``cleanup`` of
the same table are started as separate engine processes. Both find the
table's lease, change nothing and report ``locked`` naming the first run;
the first then swaps. Every row is the same both ways afterwards
(apps/world_verify.py), the backup kept by the first run is there."""
from __future__ import annotations

import pytest

import world as W

pytestmark = [pytest.mark.testbed, pytest.mark.timeout(5400)]


def test_second_compact_and_cleanup_find_the_table_locked(hdfs_world, request):
    w = hdfs_world
    (full,) = [t for t, c in w.cases.items() if c["group"] == "lease"]
    first = w.stages["quota"]["results"][full]
    lines = [["first compact", first["status"], first["changed"], first["run_id"], first["reason"][:70]]]
    for name in ("lease_compact", "lease_cleanup"):
        st = w.stages[name]
        res = st["results"][full]
        lines.append([name, res["status"], res["changed"], res["run_id"], res["reason"][:70]])
        assert st["rc"] == 0 and not st["doc"]["failed"], W.stderr_tail(st)
        assert res["status"] == "locked" and res["code"] == "locked" and not res["changed"], res
        assert first["run_id"] in res["reason"] and res["lease_holder"]["run_id"] == first["run_id"], res
        assert not res.get("recovered"), res  # recovery never ran against the live run
    W.terminal(request.config, ["one run per table (HDFS, Metastore service): second runs while the first "
                                "waits before its swap", *W.table_lines(["run", "status", "changed", "run id",
                                                                         "reason"], lines)])
    assert first["status"] == "compacted" and first["changed"] and "lease_taken_over" not in first, first
    f = w.facts[full]
    assert W.units_outcome(f) == "table=fwd", f
    assert len(f["backups"]) == 1 and not f["problems"], f  # rows identical both ways, backup intact
