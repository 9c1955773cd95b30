"""Bounded retries (issue 50 item 2) on the shared local Spark and its
Metastore: a partitioned table as a pipeline leaves it (many small files a
partition), a genuine transient failure - the driver's JVM refused a
connection (``java.net.ConnectException``, ``=transient`` of
protocol/faults.py) - once in each of two partitions at two steps:

* ``verifying`` of unit 0: its staged copy written, nothing moved;
* ``moving_aside`` of unit 1: the step recorded in the journal, the swap
  begun (the rename not yet done).

Each attempt is settled by recovery's state machine (staging removed,
original in place, backup partition dropped), then tried again: both
partitions end compacted with every row, ``retries`` and ``retry_causes``
in the partitions, the table and the history record, no staging left, and
a rollback restores the original files (the backup partitions were added
back). With ``retries: 0`` the same fault fails the unit. A content
mismatch (``alter_staged_value``) is never tried again."""

from __future__ import annotations

import json

import pytest

from engine_helpers import frozen, make_table, same_rows

pytestmark = pytest.mark.integration


@pytest.fixture()
def fresh_hooks(monkeypatch):
    from lakekeeper_spark.protocol.faults import HOOKS

    monkeypatch.setattr(HOOKS, "fired", set())  # a spec fires once per process
    return monkeypatch


def test_a_transient_failure_is_tried_again_from_a_settled_state(spark, engine, files, warehouse, fresh_hooks):
    name = "retry_parts"
    loc = make_table(spark, warehouse, name, rows=200, partitions={"2024-01-01": 8, "2024-01-02": 8, "2024-01-03": 8})
    t = f"lk.{name}"
    original = files.snapshot(loc)
    rows = frozen(spark, t)
    fresh_hooks.setenv("LAKEKEEPER_FAULT_AT", f"verifying@{t}#0=transient;moving_aside@{t}#1=transient")

    res = engine.one("compact", t, retry_backoff=0.2, parallelism=1)
    parts = {p["spec"]: p for p in res["partitions"]}
    assert res["status"] == "compacted" and res["changed"], res
    assert all(p["status"] == "compacted" and p["files_after"] == 1 for p in parts.values()), parts
    retried = [p for p in parts.values() if p.get("retries")]
    assert sorted((p["retries"], tuple(p["retry_causes"])) for p in retried) == [(1, ("namenode",))] * 2, parts
    assert (res["retries"], res["retry_causes"]) == (2, {"namenode": 2}), res
    hidden = files.hidden(loc)  # no staging left; one moved-aside original a partition (the backup)
    assert not [h for h in hidden if "lk_staging" in h] and len([h for h in hidden if ".lk_old_" in h]) == 3, hidden
    spark.sql(f"REFRESH TABLE {t}")
    assert same_rows(spark.table(t), rows)
    record = json.loads(files.read_bytes(res["history_record"]))
    assert record["totals"]["retries"] == 2 and record["retry_causes"] == {"namenode": 2}, record
    assert sorted(u.get("retries", 0) for u in record["units"]) == [0, 1, 1], record

    fresh_hooks.delenv("LAKEKEEPER_FAULT_AT")
    back = engine.one("rollback", t)
    assert back["status"] == "rolled_back", back
    assert files.snapshot(loc) == original  # every partition's original files, through its backup partition
    spark.sql(f"DROP TABLE {t}")


def test_no_retry_when_turned_off_and_never_for_a_mismatch(spark, engine, files, warehouse, fresh_hooks):
    name = "retry_off"
    loc = make_table(spark, warehouse, name, rows=200, partitions={"2024-01-01": 8})
    t = f"lk.{name}"
    original = files.snapshot(loc)
    fresh_hooks.setenv("LAKEKEEPER_FAULT_AT", f"verifying@{t}#0=transient")
    res = engine.one("compact", t, retries=0)
    (part,) = res["partitions"]
    assert part["status"] == "failed" and "ConnectException" in part["reason"] and "retries" not in part, part
    assert files.snapshot(loc) == original and files.hidden(loc) == []

    fresh_hooks.setenv("LAKEKEEPER_FAULT_AT", "alter_staged_value")  # a content mismatch: never tried again
    res = engine.one("compact", t, retry_backoff=0)
    (part,) = res["partitions"]
    assert part["status"] == "failed" and part["code"] == "content_mismatch" and "retries" not in part, part
    assert "retries" not in res and files.snapshot(loc) == original and files.hidden(loc) == []
    spark.sql(f"DROP TABLE {t}")
