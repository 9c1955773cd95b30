"""NULL keys never match, as in SQL (``rewrite.null_key``): in dedupe
(``--dedupe-keys``) and merge (``--merge-from``) a row with a NULL in any
key column is a key of its own, kept as it is: never deduplicated against
another row (not even an identical one), never matched by a batch row; a
batch row with a NULL key is inserted, a delete marker with a NULL key
deletes nothing (and, like every delete marker, is not kept). The
verification (one row per key, the independently computed expected merge)
counts them the same way.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.integration

DEDUPE = dict(dedupe_keys="id", dedupe_order_by="ver", dedupe_delete_marker="op", dedupe_delete_value="D")


def _insert(spark, table: str, schema: str, dt: str, rows: list[tuple], nfiles: int) -> None:
    spark.createDataFrame(rows, schema).repartition(nfiles).createOrReplaceTempView("lk_src")
    spark.sql(f"INSERT INTO {table} PARTITION (dt='{dt}') SELECT * FROM lk_src")


def _expected(rows: list[tuple], nkeys: int, ver: int, op: int) -> list[tuple]:
    """Dedupe as documented: per key (the first ``nkeys`` columns) the latest
    version by ``ver`` (None oldest), a latest delete marker dropping the key;
    each row with a None key kept as it is unless it is a delete marker."""
    latest: dict[tuple, tuple] = {}
    kept = []
    for r in rows:
        key = r[:nkeys]
        if any(k is None for k in key):
            kept.append(r)
            continue
        order = -1 if r[ver] is None else r[ver]
        if key not in latest or order >= (-1 if latest[key][ver] is None else latest[key][ver]):
            latest[key] = r
    return sorted((r for r in kept + list(latest.values()) if r[op] != "D"), key=repr)


def _rows(spark, table: str, dt: str, cols: str) -> list[tuple]:
    spark.sql(f"REFRESH TABLE {table}")
    return sorted((tuple(r) for r in spark.table(table).where(f"dt = '{dt}'").selectExpr(*cols.split(", ")).collect()),
                  key=repr)


def test_dedupe_keeps_every_row_with_a_null_key(spark, engine, files, warehouse):
    """Key (id, region): three rows with a NULL id (two identical), two with a
    NULL region on one id (different rows, different versions: neither
    superseded nor a tie), a NULL-key delete marker (deletes nothing); the
    non-NULL keys of the same partition are still deduplicated."""
    schema = "id BIGINT, region STRING, v STRING, ver INT, op STRING"
    t, loc = "lk.nk_dedupe", f"{warehouse}/nk_dedupe"
    spark.sql(f"DROP TABLE IF EXISTS {t}")
    spark.sql(f"CREATE EXTERNAL TABLE {t} ({schema}) PARTITIONED BY (dt STRING) STORED AS PARQUET LOCATION '{loc}'")
    a = [(i, "r1", f"v{i}-1", 1, "I") for i in range(50)]
    a += [(i, "r1", f"v{i}-2", 2, "U") for i in range(10)]  # updates
    a += [(20, "r1", "v20-3", 3, "D")]  # a delete
    a += [(None, "r1", "n1", 1, "I"), (None, "r1", "n1", 1, "I"), (None, "r1", "n2", 5, "U")]  # NULL id
    a += [(7, None, "x", 1, "I"), (7, None, "y", 9, "U")]  # NULL region
    a += [(None, "r1", "gone", 9, "D")]  # a delete marker with a NULL key
    _insert(spark, t, schema, "a", a, 6)
    cols = "id, region, v, ver, op"
    dedupe = dict(DEDUPE, dedupe_keys=["id", "region"])

    res = engine.one("compact", t, **dedupe)
    assert res["status"] == "compacted", res
    (p,) = res["partitions"]
    assert p["status"] == "compacted" and p["verified"] == "content", p
    keys = 50 + 3 + 2 + 1  # each row with a NULL key is a key of its own
    assert (p["rows_before"], p["keys_before"], p["deletes_dropped"]) == (len(a), keys, 2), p
    assert (p["duplicates_dropped"], p["rows_after"]) == (len(a) - keys, keys - 2), p
    got = _rows(spark, t, "a", cols)
    assert got == _expected(a, 2, 3, 4)
    assert [r for r in got if r[0] is None] == sorted([(None, "r1", "n1", 1, "I")] * 2 + [(None, "r1", "n2", 5, "U")], key=repr)
    assert sorted(r[2] for r in got if r[1] is None) == ["x", "y"]
    assert (3, "r1", "v3-2", 2, "U") in got and not [r for r in got if r[0] == 20]
    again = engine.one("compact", t, **dedupe)  # one file now: the size rule skips it
    assert again["changed"] is False, again


def test_merge_never_matches_null_keys(spark, engine, files, warehouse):
    """A batch that updates other keys of a partition holding NULL-id rows
    leaves them all; batch rows with a NULL id are inserted (a NULL-id delete
    marker deletes nothing), in two partitions at once without counting as a
    key that moves, and a partition the batch never touches keeps its files."""
    schema = "id BIGINT, v STRING, ver INT, op STRING"
    t, loc = "lk.nk_merge", f"{warehouse}/nk_merge"
    spark.sql(f"DROP TABLE IF EXISTS {t}")
    spark.sql(f"CREATE EXTERNAL TABLE {t} ({schema}) PARTITIONED BY (dt STRING) STORED AS PARQUET LOCATION '{loc}'")
    nulls_a = [(None, "na", 1, "I"), (None, "na", 1, "I"), (None, "nb", 2, "U")]
    base = {"a": [(i, f"a{i}", 1, "I") for i in range(30)] + nulls_a,
            "b": [(100 + i, f"b{i}", 1, "I") for i in range(30)],
            "c": [(200 + i, f"c{i}", 1, "I") for i in range(30)] + [(None, "nc", 1, "I")] * 2}
    for dt, rows in base.items():
        _insert(spark, t, schema, dt, rows, 3)
    untouched_c = files.snapshot(f"{loc}/dt=c")
    cols = "id, v, ver, op"

    def merge(name: str, rows: list[tuple]) -> dict:
        batch = f"{warehouse}/{name}"
        spark.createDataFrame(rows, schema + ", dt STRING").repartition(2).write.mode("overwrite").parquet(batch)
        return engine.one("compact", t, merge_from=batch, **DEDUPE)

    first = [(i, f"a{i}-2", 2, "U", "a") for i in range(5)] + [(50, "a50", 1, "I", "a"), (100, "b0-2", 2, "U", "b")]
    res = merge("nk_merge_batch1", first)
    by = {p["spec"]: p for p in res["partitions"]}
    assert res["status"] == "compacted" and by["dt=a"]["status"] == "compacted", res
    assert by["dt=a"]["merge"] == {"rows": 6, "inserted": 1, "updated": 5, "deleted": 0, "absent_deletes": 0}, by
    assert (by["dt=a"]["rows_before"], by["dt=a"]["rows_after"]) == (33 + 6, 34), by["dt=a"]
    want = {dt: _expected(base[dt] + [r[:4] for r in first if r[4] == dt], 1, 2, 3) for dt in "abc"}
    assert {dt: _rows(spark, t, dt, cols) for dt in "abc"} == want
    assert [r for r in want["a"] if r[0] is None] == sorted(nulls_a, key=repr)  # all three NULL-id rows
    assert files.snapshot(f"{loc}/dt=c") == untouched_c

    second = [(None, "na", 1, "I", "a"),  # identical to two rows of the partition: inserted all the same
              (None, "gone", 9, "D", "a"),  # deletes nothing
              (1, "a1-3", 3, "U", "a"),
              (None, "nb-new", 1, "I", "b")]  # a NULL id in another partition too: not a key that moves
    res = merge("nk_merge_batch2", second)
    by = {p["spec"]: p for p in res["partitions"]}
    assert res["status"] == "compacted", res
    assert by["dt=a"]["merge"] == {"rows": 3, "inserted": 1, "updated": 1, "deleted": 0, "absent_deletes": 1}, by
    assert by["dt=b"]["merge"] == {"rows": 1, "inserted": 1, "updated": 0, "deleted": 0, "absent_deletes": 0}, by
    assert by["dt=c"]["status"] == "not_needed" and files.snapshot(f"{loc}/dt=c") == untouched_c
    want = {dt: _expected(want[dt] + [r[:4] for r in second if r[4] == dt], 1, 2, 3) for dt in "abc"}
    got = {dt: _rows(spark, t, dt, cols) for dt in "abc"}
    assert got == want
    assert sorted(r for r in got["a"] if r[0] is None and r[1] == "na") == [(None, "na", 1, "I")] * 3
    assert [r for r in got["b"] if r[0] is None] == [(None, "nb-new", 1, "I")]
    assert len([r for r in got["c"] if r[0] is None]) == 2


def test_the_verification_counts_each_null_key_row_as_a_key(spark, engine, files, warehouse, monkeypatch):
    """The distinct-key check fires on a copy whose rows are right in number
    but whose NULL-key rows took an existing key (the rewrite altered after its
    dedupe, so the copy and the rewrite's own checksum agree): nothing swapped."""
    from pyspark.sql import functions as F

    from lakekeeper_spark.rewrite import rewrite

    schema = "id BIGINT, v STRING, ver INT, op STRING"
    t, loc = "lk.nk_verify", f"{warehouse}/nk_verify"
    spark.sql(f"DROP TABLE IF EXISTS {t}")
    spark.sql(f"CREATE EXTERNAL TABLE {t} ({schema}) PARTITIONED BY (dt STRING) STORED AS PARQUET LOCATION '{loc}'")
    rows = [(i, f"v{i}", 1, "I") for i in range(20)] + [(None, "n", 1, "I")] * 3
    _insert(spark, t, schema, "a", rows, 4)
    original = files.snapshot(f"{loc}/dt=a")
    dedupe = rewrite._dedupe
    monkeypatch.setattr(rewrite, "_dedupe", lambda *a, **k: dedupe(*a, **k).withColumn(
        "id", F.coalesce(F.col("id"), F.lit(0).cast("bigint"))))
    res = engine.one("compact", t, **DEDUPE)
    monkeypatch.undo()
    (p,) = res["partitions"]
    assert res["status"] == "failed" and p["code"] == "verification_failed", res
    assert "20 distinct keys in the compacted copy, expected 23" in p["reason"], p
    assert files.snapshot(f"{loc}/dt=a") == original
    res = engine.one("compact", t, **DEDUPE)
    assert res["status"] == "compacted" and res["partitions"][0]["rows_after"] == 23, res
