"""Rollback of some partitions (``where``): an infrastructure-as-code
playbook undoes one day of a compaction, not the whole table.

One partitioned table, compacted in one run (three partitions); then:

* ``rollback --where "dt = 'b'"``: only dt=b gets its original files back
  (byte for byte); dt=a and dt=c stay compacted and stay in the backup table,
  whose dt=b partition is gone;
* a partial rollback that fails right after restoring its first unit is
  settled forward at once, and still only for the partitions it selected;
* a filter that matches none of the backup's partitions changes nothing;
  one on a data column is refused;
* the rest of the backup rolls back (then nothing is left to roll back).
"""

from __future__ import annotations

import pytest

from engine_helpers import frozen, make_table

pytestmark = pytest.mark.integration


def _backup_partitions(spark, backup: str) -> list[str]:
    return sorted(r[0] for r in spark.sql(f"SHOW PARTITIONS {backup}").collect())


def test_rollback_of_the_partitions_a_filter_selects(spark, engine, files, warehouse, monkeypatch):
    from lakekeeper_spark.protocol.faults import HOOKS

    t = "lk.partial_rb"
    loc = make_table(spark, warehouse, "partial_rb", rows=200, partitions={"a": 9, "b": 11, "c": 7, "d": 8})
    rows = frozen(spark, t)
    original = {dt: files.snapshot(f"{loc}/dt={dt}") for dt in "abcd"}
    first = engine.one("compact", t)
    assert sorted(p["spec"] for p in first["partitions"] if p["status"] == "compacted") == \
        ["dt=a", "dt=b", "dt=c", "dt=d"], first
    backup = first["backup_table"]
    compacted = {dt: files.snapshot(f"{loc}/dt={dt}") for dt in "abcd"}

    # check mode first: nothing moves
    plan = engine.one("rollback", t, where="dt = 'b'", dry_run=True)
    assert plan["status"] == "planned" and [p["spec"] for p in plan["partitions"]] == ["dt=b"], plan
    assert "1 of the 4 units" in plan["reason"] and files.snapshot(f"{loc}/dt=b") == compacted["b"], plan

    res = engine.one("rollback", t, where="dt = 'b'")
    assert res["status"] == "rolled_back" and res["changed"] and res["backup_table"] == backup, res
    assert res["where"] == "dt = 'b'" and [p["spec"] for p in res["partitions"]] == ["dt=b"], res
    assert "it keeps the other 3" in res["reason"], res
    assert files.snapshot(f"{loc}/dt=b") == original["b"]  # the originals, byte for byte
    assert all(files.snapshot(f"{loc}/dt={dt}") == compacted[dt] for dt in "acd")
    assert _backup_partitions(spark, backup) == ["dt=a", "dt=c", "dt=d"]

    # nothing of the backup matches: nothing changes; a filter on a data column is refused
    none = engine.one("rollback", t, where="dt = 'b'")
    assert none["status"] == "skipped" and "matches the where filter" in none["reason"], none
    bad = engine.one("rollback", t, where="id = 1")
    assert bad["status"] == "refused" and bad["code"] == "invalid_where", bad

    # a partial rollback that fails after restoring its first unit: settled forward, for its own units only
    monkeypatch.setattr(HOOKS, "fired", set())
    monkeypatch.setenv("LAKEKEEPER_FAULT_AT", f"rollback_restored:after@{t}#0=raise")
    res = engine.one("rollback", t, where="dt IN ('a', 'c')", rollback_run=first["run_id"])
    monkeypatch.delenv("LAKEKEEPER_FAULT_AT")
    assert res["status"] == "failed" and res["changed"] and "injected fault" in res["reason"], res
    actions = [a["action"] for a in res["recovered_after_error"]]
    assert actions[-3:] == ["rolled_back", "rolled_back", "finished_run"], res
    assert all(files.snapshot(f"{loc}/dt={dt}") == original[dt] for dt in "abc")
    assert files.snapshot(f"{loc}/dt=d") == compacted["d"]
    assert _backup_partitions(spark, backup) == ["dt=d"]

    # the rest of the backup: a whole rollback of what it still holds drops it
    res = engine.one("rollback", t)
    assert res["status"] == "rolled_back" and [p["spec"] for p in res["partitions"]] == ["dt=d"], res
    assert all(files.snapshot(f"{loc}/dt={dt}") == original[dt] for dt in "abcd")
    assert not spark.catalog.tableExists(backup)
    assert engine.one("rollback", t)["status"] == "skipped"
    assert not files.hidden(loc)  # no journal, staging, trash or originals left
    spark.sql(f"REFRESH TABLE {t}")
    assert spark.table(t).exceptAll(rows).count() == 0 and rows.exceptAll(spark.table(t)).count() == 0
