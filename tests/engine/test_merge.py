"""Merge mode of compact (``merge_from``): an incoming batch of inserts,
updates and delete markers merged into a partitioned Parquet table.

* the dry run names the partitions the batch touches and what it does to
  them, writing nothing; the merge rewrites exactly those partitions (the
  others keep their files byte for byte) and the table then holds the latest
  version of each key, deleted keys gone;
* the same batch again changes nothing (``batch_already_applied``);
* a rollback of the merge run brings the original files back;
* keys that would move between partitions, and rows for a partition the table
  does not have, refuse the whole merge, nothing written;
* a failure after the first partition was swapped: every partition ends either
  merged or original, the batch is recorded for the merged ones only, and the
  next run merges the rest without applying the batch twice; a crash right
  before the batch is recorded after the swaps: ``recover`` records it.
(The pure rules: test_merge_rules.py.)
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.integration

SCHEMA = "id BIGINT, v STRING, ver INT, op STRING"
DEDUPE = dict(dedupe_keys="id", dedupe_order_by="ver", dedupe_delete_marker="op", dedupe_delete_value="D")


def _table(spark, warehouse: str, name: str) -> tuple[str, str, dict[str, list[tuple]]]:
    t, loc = f"lk.{name}", f"{warehouse}/{name}"
    spark.sql(f"DROP TABLE IF EXISTS {t}")
    spark.sql(f"CREATE EXTERNAL TABLE {t} ({SCHEMA}) PARTITIONED BY (dt STRING) STORED AS PARQUET LOCATION '{loc}'")
    base = {dt: [(i, f"{dt}{i}-1", 1, "I") for i in range(start, start + 300)]
            for dt, start in (("a", 0), ("b", 1000), ("c", 2000))}
    for dt, rows in base.items():
        spark.createDataFrame(rows, SCHEMA).repartition(3).createOrReplaceTempView("lk_src")
        spark.sql(f"INSERT INTO {t} PARTITION (dt='{dt}') SELECT * FROM lk_src")
    return t, loc, base


def _batch(spark, uri: str, rows: list[tuple]) -> str:
    spark.createDataFrame(rows, SCHEMA + ", dt STRING").repartition(2).write.mode("overwrite").parquet(uri)
    return uri


def _rows(spark, t: str) -> dict[str, list[tuple]]:
    spark.sql(f"REFRESH TABLE {t}")
    out: dict[str, list[tuple]] = {}
    for r in spark.table(t).collect():
        out.setdefault(r["dt"], []).append((r["id"], r["v"], r["ver"], r["op"]))
    return {dt: sorted(rows) for dt, rows in out.items()}


def _expected(base: dict[str, list[tuple]], batch: list[tuple]) -> dict[str, list[tuple]]:
    out = {}
    for dt, rows in base.items():
        latest = {r[0]: r for r in rows}
        for r in sorted((b for b in batch if b[4] == dt), key=lambda b: b[2]):
            if r[0] not in latest or r[2] >= latest[r[0]][2]:
                latest[r[0]] = r[:4]
        out[dt] = sorted(r for r in latest.values() if r[3] != "D")
    return out


BATCH = ([(i, f"a{i}-new", 1, "I", "a") for i in range(5000, 5010)]  # 10 inserts into a
         + [(i, f"a{i}-2", 2, "U", "a") for i in range(0, 20)]  # 20 updates in a
         + [(5, "a5-3", 3, "U", "a")]  # a later version of one of them, in the same batch
         + [(1000 + i, f"b{i}-2", 2, "D", "b") for i in range(3)]  # 3 deletes in b
         + [(1100, "b1100-2", 2, "U", "b")])  # 1 update in b; c untouched


def test_merge_a_batch_then_again_then_roll_it_back(spark, engine, files, warehouse):
    t, loc, base = _table(spark, warehouse, "merge_main")
    batch = _batch(spark, f"{warehouse}/merge_main_batch", BATCH)
    original = {dt: files.snapshot(f"{loc}/dt={dt}") for dt in "abc"}

    dry = engine.one("compact", t, merge_from=batch, dry_run=True, **DEDUPE)
    assert dry["status"] == "planned" and not dry["changed"], dry
    by = {p["spec"]: p for p in dry["partitions"]}
    assert (by["dt=a"]["status"], by["dt=b"]["status"], by["dt=c"]["status"]) == ("planned", "planned", "not_needed"), dry
    assert by["dt=a"]["merge"] == {"rows": 31, "inserted": 10, "updated": 20, "deleted": 0, "absent_deletes": 0}, by
    assert by["dt=b"]["merge"] == {"rows": 4, "inserted": 0, "updated": 1, "deleted": 3, "absent_deletes": 0}, by
    assert "no rows for this partition" in by["dt=c"]["reason"], by
    assert dry["merge"]["batch_rows"] == len(BATCH) and sorted(dry["merge"]["partitions"]) == ["dt=a", "dt=b"], dry
    assert {dt: files.snapshot(f"{loc}/dt={dt}") for dt in "abc"} == original

    res = engine.one("compact", t, merge_from=batch, **DEDUPE)
    assert res["status"] == "compacted" and res["changed"], res
    by = {p["spec"]: p for p in res["partitions"]}
    assert by["dt=a"]["status"] == "compacted" and by["dt=a"]["verified"] == "content", by
    assert (by["dt=a"]["rows_before"], by["dt=a"]["rows_after"]) == (300 + 31, 310), by["dt=a"]
    assert (by["dt=b"]["rows_before"], by["dt=b"]["rows_after"], by["dt=b"]["deletes_dropped"]) == (304, 297, 3), by
    assert by["dt=c"]["status"] == "not_needed" and files.snapshot(f"{loc}/dt=c") == original["c"]
    got = _rows(spark, t)
    assert got == _expected(base, BATCH)
    assert (5, "a5-3", 3, "U") in got["a"] and (5000, "a5000-new", 1, "I") in got["a"]
    assert not any(r[0] in (1000, 1001, 1002) for r in got["b"])
    merged = {dt: files.snapshot(f"{loc}/dt={dt}") for dt in "abc"}

    again = engine.one("compact", t, merge_from=batch, **DEDUPE)
    assert again["status"] == "not_needed" and again["code"] == "batch_already_applied" and not again["changed"], again
    assert "batch already applied" in again["reason"], again
    assert {dt: files.snapshot(f"{loc}/dt={dt}") for dt in "abc"} == merged

    rb = engine.one("rollback", t, rollback_run=res["run_id"])
    assert rb["status"] == "rolled_back", rb
    assert {dt: files.snapshot(f"{loc}/dt={dt}") for dt in "abc"} == original  # byte for byte
    assert _rows(spark, t) == {dt: sorted(rows) for dt, rows in base.items()}


def test_merge_refuses_moving_keys_and_new_partitions(spark, engine, files, warehouse):
    t, loc, _base = _table(spark, warehouse, "merge_refused")
    original = {dt: files.snapshot(f"{loc}/dt={dt}") for dt in "abc"}
    cases = {
        "moved_in_table": ([(7, "a7-in-b", 2, "U", "b"), (5000, "new", 1, "I", "a")], "merge_key_moved",
                           "already exist in another partition"),
        "moved_in_batch": ([(6000, "x", 1, "I", "a"), (6000, "x", 2, "I", "c")], "merge_key_moved",
                           "two or more partitions of the batch"),
        "new_partition": ([(7000, "x", 1, "I", "z")], "merge_new_partition", "dt=z"),
    }
    for case, (rows, code, text) in cases.items():
        batch = _batch(spark, f"{warehouse}/merge_refused_{case}", rows)
        res = engine.one("compact", t, merge_from=batch, **DEDUPE)
        assert res["status"] == "refused" and res["code"] == code and text in res["reason"], (case, res)
        assert not res["changed"]
        assert {dt: files.snapshot(f"{loc}/dt={dt}") for dt in "abc"} == original, case
    assert not [h for h in files.hidden(loc) if "lk_" in h], files.hidden(loc)


def test_merge_interrupted_after_the_first_swap(spark, engine, files, warehouse, monkeypatch):
    from lakekeeper_spark.protocol.faults import HOOKS

    t, loc, base = _table(spark, warehouse, "merge_crash")
    batch = _batch(spark, f"{warehouse}/merge_crash_batch", BATCH)
    original = {dt: files.snapshot(f"{loc}/dt={dt}") for dt in "abc"}
    expected = _expected(base, BATCH)

    # dt=b (unit 1) fails right before its original is moved aside, after dt=a was swapped: b stays as it was
    monkeypatch.setattr(HOOKS, "fired", set())
    monkeypatch.setenv("LAKEKEEPER_FAULT_AT", f"moving_aside@{t}#1=raise")
    res = engine.one("compact", t, merge_from=batch, parallelism=1, **DEDUPE)
    monkeypatch.delenv("LAKEKEEPER_FAULT_AT")
    by = {p["spec"]: p for p in res["partitions"]}
    assert res["status"] == "failed" and res["changed"] and "injected fault" in res["reason"], res
    assert (by["dt=a"]["status"], by["dt=b"]["status"]) == ("compacted", "failed"), by
    assert engine.one("recover", t)["status"] == "skipped"  # nothing left half-done
    got = _rows(spark, t)
    assert got["a"] == expected["a"] and got["b"] == sorted(base["b"]) and got["c"] == sorted(base["c"])
    assert files.snapshot(f"{loc}/dt=b") == original["b"]
    merged_a = files.snapshot(f"{loc}/dt=a")

    # the next run merges the batch into dt=b only: dt=a keeps the files of the first merge
    res = engine.one("compact", t, merge_from=batch, **DEDUPE)
    by = {p["spec"]: p for p in res["partitions"]}
    assert res["status"] == "compacted" and res["merge"]["already_applied"] == ["dt=a"], res
    assert (by["dt=a"]["status"], by["dt=b"]["status"]) == ("not_needed", "compacted"), by
    assert "already merged" in by["dt=a"]["reason"]
    assert files.snapshot(f"{loc}/dt=a") == merged_a
    assert _rows(spark, t) == expected
    assert engine.one("compact", t, merge_from=batch, **DEDUPE)["code"] == "batch_already_applied"

    # a crash once both partitions were swapped, before the batch is recorded (the compaction called directly, as
    # the process would die: no recovery after the error): the journal stays, `recover` records the batch
    t2, loc2, base2 = _table(spark, warehouse, "merge_crash2")
    monkeypatch.setattr(HOOKS, "fired", set())
    monkeypatch.setenv("LAKEKEEPER_FAULT_AT", f"merge_recording@{t2}=raise")
    with pytest.raises(Exception, match="injected fault"):
        _compact_directly(spark, t2, merge_from=batch, **DEDUPE)
    monkeypatch.delenv("LAKEKEEPER_FAULT_AT")
    rec = engine.one("recover", t2)
    actions = {a["action"]: a for a in rec["actions"]}
    assert rec["status"] == "recovered" and actions["recorded_merged_batch"]["partitions"] == ["dt=a", "dt=b"], rec
    assert "finished_run" in actions, rec
    assert engine.one("recover", t2)["status"] == "skipped"
    assert _rows(spark, t2) == _expected(base2, BATCH)
    merged = {dt: files.snapshot(f"{loc2}/dt={dt}") for dt in "abc"}
    again = engine.one("compact", t2, merge_from=batch, **DEDUPE)
    assert again["code"] == "batch_already_applied" and not again["changed"], again
    assert {dt: files.snapshot(f"{loc2}/dt={dt}") for dt in "abc"} == merged


def _compact_directly(spark, table: str, **settings):
    """compact of one table without the CLI's error handling (which recovers right away)."""
    from lakekeeper_spark.catalog.catalog import Catalog
    from lakekeeper_spark.commands.compact import compact_table
    from lakekeeper_spark.policy.config import build_settings
    from lakekeeper_spark.catalog.context import Context
    from lakekeeper_spark.storage.fs import HadoopFS
    from lakekeeper_spark.storage.layout import new_run_id

    ctx = Context(spark, HadoopFS(spark), Catalog(spark), build_settings({}, settings), new_run_id())
    return compact_table(ctx, table)


def test_merge_verification_checks_the_staged_rows_against_the_expected_merge(
        spark, engine, files, warehouse, monkeypatch):
    """A rewrite that keeps the right number of rows and keys but the wrong
    values (here: every kept value altered after the dedupe, so the staged
    copy and the rewrite's own checksum agree) is caught by the independent
    expected merge, before any swap."""
    from pyspark.sql import functions as F

    from lakekeeper_spark.rewrite import rewrite

    t, loc, base = _table(spark, warehouse, "merge_verify")
    batch = _batch(spark, f"{warehouse}/merge_verify_batch", BATCH)
    original = {dt: files.snapshot(f"{loc}/dt={dt}") for dt in "abc"}
    dedupe = rewrite._dedupe
    monkeypatch.setattr(rewrite, "_dedupe", lambda *a, **k: dedupe(*a, **k).withColumn("v", F.upper(F.col("v"))))
    res = engine.one("compact", t, merge_from=batch, **DEDUPE)
    monkeypatch.undo()
    assert res["status"] == "failed" and not res["changed"], res
    assert all(p["code"] == "verification_failed" and "expected merged content" in p["reason"]
               for p in res["partitions"] if p["spec"] in ("dt=a", "dt=b")), res
    assert {dt: files.snapshot(f"{loc}/dt={dt}") for dt in "abc"} == original
    assert _rows(spark, t) == {dt: sorted(rows) for dt, rows in base.items()}
    # nothing was recorded: the same batch merges now
    assert engine.one("compact", t, merge_from=batch, **DEDUPE)["status"] == "compacted"
    assert _rows(spark, t) == _expected(base, BATCH)


def test_merge_into_an_orc_table_from_a_batch_table_and_text_refused(spark, engine, files, warehouse):
    """A non-partitioned ORC table (one unit, spec ""), the batch given as a
    non-partitioned table's name; a text table is refused."""
    t, loc = "lk.merge_orc", f"{warehouse}/merge_orc"
    b, bloc = "lk.merge_orc_batch", f"{warehouse}/merge_orc_batch"
    for name, where in ((t, loc), (b, bloc)):
        spark.sql(f"DROP TABLE IF EXISTS {name}")
        spark.sql(f"CREATE EXTERNAL TABLE {name} ({SCHEMA}) STORED AS ORC LOCATION '{where}'")
    base = [(i, f"v{i}-1", 1, "I") for i in range(200)]
    spark.createDataFrame(base, SCHEMA).repartition(4).createOrReplaceTempView("lk_src")
    spark.sql(f"INSERT INTO {t} SELECT * FROM lk_src")
    rows = [(i, f"v{i}-2", 2, "U") for i in range(10)] + [(50, "v50-2", 2, "D"), (900, "v900-1", 1, "I")]
    spark.createDataFrame(rows, SCHEMA).repartition(1).createOrReplaceTempView("lk_src")
    spark.sql(f"INSERT INTO {b} SELECT * FROM lk_src")
    original = files.snapshot(loc)

    res = engine.one("compact", t, merge_from=b, **DEDUPE)
    assert res["status"] == "compacted" and res["format"] == "orc", res
    (part,) = res["partitions"]
    assert part["merge"] == {"rows": 12, "inserted": 1, "updated": 10, "deleted": 1, "absent_deletes": 0}, part
    spark.sql(f"REFRESH TABLE {t}")
    latest = {r[0]: r for r in base}
    latest.update({r[0]: r for r in rows})
    assert sorted(tuple(r) for r in spark.table(t).collect()) == sorted(r for r in latest.values() if r[3] != "D")
    again = engine.one("compact", t, merge_from=b, **DEDUPE)
    assert again["status"] == "not_needed" and again["code"] == "batch_already_applied", again
    assert engine.one("rollback", t, rollback_run=res["run_id"])["status"] == "rolled_back"
    assert files.snapshot(loc) == original

    text, tloc = "lk.merge_text", f"{warehouse}/merge_text"
    spark.sql(f"DROP TABLE IF EXISTS {text}")
    spark.sql(f"CREATE EXTERNAL TABLE {text} ({SCHEMA}) STORED AS TEXTFILE LOCATION '{tloc}'")
    res = engine.one("compact", text, merge_from=bloc, **DEDUPE)
    assert res["status"] == "refused" and res["code"] == "unsupported_format", res


def test_merge_into_a_partition_added_empty(spark, engine, files, warehouse):
    """The way to merge rows for a new partition: add it first (an empty
    partition, as ALTER TABLE ... ADD PARTITION leaves it); the batch's rows
    are then its rows."""
    t, loc, base = _table(spark, warehouse, "merge_new")
    spark.sql(f"ALTER TABLE {t} ADD PARTITION (dt='d')")
    rows = [(9000 + i, f"d{i}", 1, "I", "d") for i in range(5)] + [(9000, "d0-2", 2, "U", "d"), (9001, "x", 2, "D", "d")]
    batch = _batch(spark, f"{warehouse}/merge_new_batch", rows)
    res = engine.one("compact", t, merge_from=batch, **DEDUPE)
    assert res["status"] == "compacted", res
    by = {p["spec"]: p for p in res["partitions"]}
    assert by["dt=d"]["status"] == "compacted" and by["dt=d"]["rows_after"] == 4, by["dt=d"]
    got = _rows(spark, t)
    assert got["d"] == [(9000, "d0-2", 2, "U")] + [(9000 + i, f"d{i}", 1, "I") for i in range(2, 5)]
    assert {dt: got[dt] for dt in "abc"} == {dt: sorted(r) for dt, r in base.items()}
    assert engine.one("compact", t, merge_from=batch, **DEDUPE)["code"] == "batch_already_applied"
