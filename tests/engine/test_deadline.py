"""A maintenance window's deadline (``compact --deadline``), on real tables.

Two tables, named in the worse order: a bulky one (a few MB in four files:
little to gain) and a dense one (two partitions of twenty tiny files). With
a deadline 40 s away and one unit at a time:

* the dense table is worked on first (most small files removed per byte),
  both its partitions compacted;
* the bulky table's unit would take far longer than what is left, by the
  seconds per byte the dense units took: it is not started - ``skipped``
  with code ``deadline``, nothing written, no backup table left, the
  table's rows and files as they were;
* the next window (no deadline) compacts it.
A deadline already past starts nothing at all.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from engine_helpers import frozen, make_table, same_rows

pytestmark = pytest.mark.integration


def _backups(spark, table: str) -> list[str]:
    return [r.tableName for r in spark.sql("SHOW TABLES IN lk").collect() if table in r.tableName and "bkp" in r.tableName]


def test_a_deadline_leaves_the_least_useful_work_for_the_next_window(spark, engine, files, warehouse):
    bulky_loc = make_table(spark, warehouse, "dl_bulky", rows=200_000, files=4)
    dense_loc = make_table(spark, warehouse, "dl_dense", rows=20, partitions={"a": 20, "b": 20})
    bulky, dense = "lk.dl_bulky", "lk.dl_dense"
    bulky_files, bulky_rows = files.snapshot(bulky_loc), frozen(spark, bulky)
    dense_files, dense_rows = files.snapshot(dense_loc), frozen(spark, dense)
    assert len(dense_files) > 20  # each partition about twenty one-row files

    # a window that has already closed: nothing starts
    past = datetime(2026, 1, 1, tzinfo=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    closed = engine.run("compact", [bulky, dense], deadline=past, parallelism=1)
    assert [(r["table"], r["status"], r.get("code")) for r in closed] == \
        [(dense, "skipped", "deadline"), (bulky, "skipped", "deadline")], closed  # by benefit: dense first
    assert all("has passed" in r["reason"] for r in closed), closed
    assert files.snapshot(bulky_loc) == bulky_files and files.snapshot(dense_loc) == dense_files
    assert not files.hidden(bulky_loc) and not files.hidden(dense_loc)

    res = {r["table"]: r for r in engine.run("compact", [bulky, dense], deadline="40s", parallelism=1)}
    d, b = res[dense], res[bulky]
    assert d["status"] == "compacted" and [p["status"] for p in d["partitions"]] == ["compacted", "compacted"], d
    assert "deferred" not in d and same_rows(spark.table(dense), dense_rows)
    assert (b["status"], b["code"], b["changed"], b["deferred"]) == ("skipped", "deadline", False, 1), b
    (part,) = b["partitions"]
    assert (part["status"], part["code"]) == ("skipped", "deadline") and "would take about" in part["reason"], part
    assert "end after the deadline" in part["reason"] and "left for the next window" in b["reason"], b
    # nothing of it written or kept: same files, no hidden directories, no backup table
    assert files.snapshot(bulky_loc) == bulky_files and not files.hidden(bulky_loc)
    assert not [n for n in files.names(warehouse) if n.startswith(".dl_bulky.lk_")]
    assert b["backup_table"] is None and not _backups(spark, "dl_bulky"), b

    nxt = engine.one("compact", bulky)  # the next window
    assert nxt["status"] == "compacted" and nxt["partitions"][0]["files_after"] < 4, nxt
    assert same_rows(spark.table(bulky), bulky_rows)
