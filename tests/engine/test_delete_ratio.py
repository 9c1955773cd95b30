"""The delete-ratio trigger of dedupe tables (``dedupe.trigger_ratio``):
a partition already compacted (few big files, which no size rule selects)
that then receives a small batch of updates and a delete marker is only
rewritten, and deduplicated, once the trigger is set, here as the table's
own policy (``lakekeeper.dedupe.trigger_ratio``); a partition whose share
of superseded rows stays below the trigger is left alone. (The pure rule
and the settings: test_planner.py.)
"""

from __future__ import annotations

import pytest

from engine_helpers import frozen, same_rows

SCHEMA = "id BIGINT, v STRING, ver INT, op STRING"
DEDUPE = {"lakekeeper.dedupe.keys": "id", "lakekeeper.dedupe.order_by": "ver",
          "lakekeeper.dedupe.delete_marker": "op", "lakekeeper.dedupe.delete_marker_value": "D"}
# target 10 KB (block size) and small-file threshold 1 KB (block / ratio 10): a file of 2,000 rows and a
# small batch average well above 1 KB, so the size rule skips both partitions
SIZES = {"block_size_mb": 0.01}


def _insert(spark, table: str, dt: str, rows: list[tuple]) -> None:
    spark.createDataFrame(rows, SCHEMA).repartition(1).createOrReplaceTempView("lk_src")
    spark.sql(f"INSERT INTO {table} PARTITION (dt='{dt}') SELECT * FROM lk_src")


@pytest.mark.integration
def test_delete_ratio_trigger_rewrites_a_compacted_partition_with_updates(spark, engine, files, warehouse):
    t, loc = "lk.delratio", f"{warehouse}/delratio"
    spark.sql(f"DROP TABLE IF EXISTS {t}")
    props = ", ".join(f"'{k}'='{v}'" for k, v in DEDUPE.items())
    spark.sql(f"CREATE EXTERNAL TABLE {t} ({SCHEMA}) PARTITIONED BY (dt STRING) STORED AS PARQUET "
              f"LOCATION '{loc}' TBLPROPERTIES ({props})")
    base = {dt: [(i, f"{dt}{i}-1", 1, "I") for i in range(2000)] for dt in ("a", "b")}
    updates = [(i, f"a{i}-2", 2, "U") for i in range(30)] + [(100, "a100-2", 2, "D")]  # 30 updates, 1 delete
    for dt in ("a", "b"):
        _insert(spark, t, dt, base[dt])  # one big file: as a compaction left it
    _insert(spark, t, "a", updates)  # then a small batch: 32 of 2,031 rows are superseded or deleted (1.58%)
    _insert(spark, t, "b", [(i, f"b{i}-2", 2, "U") for i in range(5)])  # 5 of 2,005 (0.25%)
    before = {dt: files.snapshot(f"{loc}/dt={dt}") for dt in ("a", "b")}
    rows_b = frozen(spark, t).where("dt = 'b'")
    assert all(len(before[dt]) == 2 for dt in ("a", "b")), before

    # dedupe configured, no trigger: nothing selects either partition, nothing is measured
    res = engine.one("compact", t, **SIZES)
    assert res["status"] == "not_needed" and not res["changed"], res
    assert all("delete_ratio" not in p and "average file size" in p["reason"] for p in res["partitions"]), res
    assert {dt: files.snapshot(f"{loc}/dt={dt}") for dt in ("a", "b")} == before

    spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('lakekeeper.dedupe.trigger_ratio'='0.01')")
    report = engine.one("analyze", t, **SIZES)
    by = {p["spec"]: p for p in report["partitions"]}
    assert report["policy"]["lakekeeper.dedupe.trigger_ratio"] == "0.01" and report["needs_compaction"], report
    assert (by["dt=a"]["decision"], by["dt=a"]["rule"], by["dt=a"]["delete_ratio"]) == (
        "compact", "delete_ratio", round(32 / 2031, 6)), by["dt=a"]
    assert by["dt=a"]["reason"].startswith("delete_ratio: 32 of 2031 rows (1.58%) are superseded versions or delete "
                                           "markers, at or above the trigger 0.01"), by["dt=a"]
    assert (by["dt=b"]["decision"], by["dt=b"]["rule"], by["dt=b"]["delete_ratio"]) == (
        "skip", "ratio", round(5 / 2005, 6)), by["dt=b"]
    assert "below the trigger 0.01" in by["dt=b"]["reason"]
    dry = engine.one("compact", t, dry_run=True, **SIZES)
    assert dry["status"] == "planned" and [p["spec"] for p in dry["partitions"] if p["status"] == "planned"] == ["dt=a"]
    assert {p["spec"]: (p["rule"], p["delete_ratio"]) for p in dry["partitions"]} == {
        "dt=a": ("delete_ratio", round(32 / 2031, 6)), "dt=b": ("ratio", round(5 / 2005, 6))}, dry
    assert {dt: files.snapshot(f"{loc}/dt={dt}") for dt in ("a", "b")} == before

    res = engine.one("compact", t, **SIZES)
    assert res["status"] == "compacted" and res["changed"], res
    by = {p["spec"]: p for p in res["partitions"]}
    a = by["dt=a"]
    assert (a["status"], a["rule"], a["delete_ratio"]) == ("compacted", "delete_ratio", round(32 / 2031, 6)), a
    assert (a["rows_before"], a["rows_after"], a["duplicates_dropped"], a["deletes_dropped"]) == (2031, 1999, 31, 1), a
    assert (by["dt=b"]["status"], by["dt=b"]["delete_ratio"]) == ("not_needed", round(5 / 2005, 6)), by["dt=b"]
    assert files.snapshot(f"{loc}/dt=b") == before["b"]  # below the trigger: byte for byte

    spark.sql(f"REFRESH TABLE {t}")
    latest = {r[0]: r for r in base["a"]}
    latest.update({r[0]: r for r in updates})
    expected = sorted(r for i, r in latest.items() if i != 100)  # the latest version of each key, id 100 deleted
    got = sorted(tuple(r) for r in spark.table(t).where("dt = 'a'").select("id", "v", "ver", "op").collect())
    assert got == expected
    assert same_rows(rows_b, spark.table(t).where("dt = 'b'"))

    again = engine.one("compact", t, **SIZES)  # nothing left to remove: measured 0, not_needed
    assert not again["changed"] and {p["spec"]: p["delete_ratio"] for p in again["partitions"]} == {
        "dt=a": 0.0, "dt=b": round(5 / 2005, 6)}, again
