"""Content verification (``verify: content``, the default): the staged copy
read back as readers decode it must have the checksum of the rows written.
Each check here is shown to fire: a changed value is caught by ``content``
and missed by ``rows``."""

from __future__ import annotations

import pytest

from engine_helpers import frozen, make_table, same_rows

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("fmt, row_format", [
    ("parquet", ""),
    ("textfile", "ROW FORMAT DELIMITED FIELDS TERMINATED BY ','"),
])
def test_a_changed_value_is_caught_by_content_and_missed_by_rows(
        spark, engine, files, warehouse, monkeypatch, fmt, row_format):
    name = f"altered_{fmt}"
    loc = make_table(spark, warehouse, name, fmt=fmt, rows=300, partitions={"2024-01-01": 12, "2024-01-02": 3},
                     row_format=row_format)
    t = f"lk.{name}"
    original = files.snapshot(loc)
    rows = frozen(spark, t)
    monkeypatch.setenv("LAKEKEEPER_FAULT_AT", "alter_staged_value")

    res = engine.one("compact", t)
    (part,) = [p for p in res["partitions"] if p["spec"] == "dt=2024-01-01"]
    assert res["status"] == "failed" and part["status"] == "failed" and part["code"] == "content_mismatch", res
    assert "300 rows with checksum" in part["reason"] and "read back" in part["reason"], part
    assert files.snapshot(loc) == original and files.hidden(loc) == []  # original untouched, staging gone
    spark.sql(f"REFRESH TABLE {t}")
    assert same_rows(spark.table(t), rows)

    res = engine.one("compact", t, verify="rows")  # the same alteration, row counts only: not seen
    (part,) = [p for p in res["partitions"] if p["spec"] == "dt=2024-01-01"]
    assert res["status"] == "compacted" and part["status"] == "compacted" and part["verified"] == "rows", res
    spark.sql(f"REFRESH TABLE {t}")
    assert not same_rows(spark.table(t), rows)  # a reader sees the changed value
    assert spark.table(t).count() == rows.count()
    monkeypatch.delenv("LAKEKEEPER_FAULT_AT")
    assert engine.one("rollback", t)["status"] == "rolled_back"
    assert files.snapshot(loc) == original
    spark.sql(f"DROP TABLE {t}")


def test_verify_sample_catches_a_change_in_a_sampled_unit_and_misses_one_outside_it(
        spark, engine, files, warehouse, monkeypatch):
    """``verify: sample`` (here from the table's own properties) reads back a
    seeded share of the units (at least one) and checks the others by rows
    only: the same changed value in every staged copy fails the sampled unit
    (content_mismatch) and is swapped in, unseen, in the others - the
    trade-off the contract documents. The same table's Amoro group and quota
    are reported (queue through the run's queues; the quota not read)."""
    name = "sampled"
    loc = make_table(spark, warehouse, name, rows=40, partitions={"a": 6, "b": 6, "c": 6},
                     props={"lakekeeper.verify": "sample", "lakekeeper.verify_sample": "0.2",
                            "self-optimizing.group": "etl", "self-optimizing.quota": "0.5"})
    t = f"lk.{name}"
    original = files.snapshot(loc)
    monkeypatch.setenv("LAKEKEEPER_FAULT_AT", "alter_staged_value")

    res = engine.one("compact", t, queues={"etl": "root.etl"})
    chosen = res["verify_sample"]
    assert res["verify"] == "sample" and chosen["units"] == 3 and chosen["fraction"] == 0.2, res
    assert len(chosen["sampled"]) == 1 and chosen["seed"] == f"{res['run_id']}/{t}", chosen
    by_spec = {p["spec"]: p for p in res["partitions"]}
    (caught,) = [p for p in res["partitions"] if p["status"] == "failed"]
    assert [caught["spec"]] == chosen["sampled"] and caught["code"] == "content_mismatch", res
    missed = [p for spec, p in by_spec.items() if spec not in chosen["sampled"]]
    assert len(missed) == 2 and all(p["status"] == "compacted" and p["verified"] == "rows" for p in missed), res
    assert (res["queue"], res["queue_from"], res["optimizer_group"]) == ("root.etl", "self-optimizing.group", "etl")
    assert "self-optimizing.quota" in res["policy_not_read"], res
    monkeypatch.delenv("LAKEKEEPER_FAULT_AT")
    assert engine.one("rollback", t)["status"] == "rolled_back"
    assert files.snapshot(loc) == original
    spark.sql(f"DROP TABLE {t}")


def test_content_is_verified_by_default_and_sees_null_apart_from_empty(spark, engine, files, warehouse):
    """NULL, '' and the text NULL marker are different checksums: a copy
    whose NULLs came back as empty strings is a mismatch, not a pass."""
    from lakekeeper_spark.rewrite import content

    df = spark.createDataFrame([(1, None), (2, "")], "id INT, s STRING")
    swapped = spark.createDataFrame([(1, ""), (2, None)], "id INT, s STRING")
    as_empty = spark.createDataFrame([(1, ""), (2, "")], "id INT, s STRING")
    figures = [content.checksum(x) for x in (df, swapped, as_empty)]
    assert figures[0]["rows"] == figures[1]["rows"] == figures[2]["rows"] == 2
    assert len({f["content"] for f in figures}) == 3, figures
    # order-independent: the same rows in another order and partitioning
    assert content.checksum(df.repartition(3)) == content.checksum(df.orderBy("id", ascending=False)) == figures[0]
    nested = spark.createDataFrame([(1, [1, 2], {"k": "v"})], "id INT, a ARRAY<INT>, m MAP<STRING,STRING>")
    assert content.checksum(nested)["rows"] == 1
    # no rows, no partitions at all: the observed figures still arrive (the noop pass runs no task)
    empty = {"rows": 0, "content": "0"}
    assert content.checksum(df.limit(0)) == content.checksum(spark.range(0, 0, 1, 0)) == empty
    # the sliced sums are the exact sum of the hashes: hashes of both signs, and a
    # column whose values would carry from one slice into the next in any other split
    many = spark.range(0, 5000, 1, 3).selectExpr("id", "CAST(id * 7919 AS STRING) AS s")
    hashes = [r[0] for r in many.select(content.row_hash(many)).collect()]
    assert min(hashes) < 0 < max(hashes)
    assert content.checksum(many) == {"rows": 5000, "content": str(sum(hashes))}
    # the hash is built as SQL text: the same number as built from Column objects, for a complex
    # type (its JSON text with timestamps in microseconds) and a name that needs quoting too
    from pyspark.sql import functions as F

    odd = spark.createDataFrame([(1, None, {"k": "v"}), (2, "x", None)], "id INT, `we``ird name` STRING, m MAP<STRING,STRING>")
    by_columns = F.xxhash64(F.col("id"), F.isnull(F.col("id")), F.col("`we``ird name`"), F.isnull(F.col("`we``ird name`")),
                            F.to_json(F.col("m"), content.JSON_OPTIONS), F.isnull(F.col("m")))
    assert odd.select(content.row_hash(odd).alias("a"), by_columns.alias("b")).where("a != b").count() == 0
    expected = sum(r[0] for r in odd.select(by_columns).collect())
    assert content.checksum(odd) == {"rows": 2, "content": str(expected)}

    loc = make_table(spark, warehouse, "verified_orc", fmt="orc", rows=500, files=25)
    spark.sql("INSERT INTO lk.verified_orc VALUES (9001, NULL, NULL, NULL), (9002, '', 1.50, NULL)")
    rows = frozen(spark, "lk.verified_orc")
    res = engine.one("compact", "lk.verified_orc")
    assert res["status"] == "compacted", res
    (p,) = res["partitions"]
    assert p["verified"] == "content" and p["content_checksum"] == content.checksum(rows)["content"], p
    spark.sql("REFRESH TABLE lk.verified_orc")
    assert same_rows(spark.table("lk.verified_orc"), rows)
    assert len(files.data_files(loc)) == 1
    spark.sql("DROP TABLE lk.verified_orc")


def test_a_scratch_table_left_by_a_verification_is_never_compacted(spark, engine, warehouse):
    """The scratch clone a text/Avro read-back makes (dropped right after)
    is refused as a table while it exists, also by a database run."""
    spark.sql("CREATE DATABASE IF NOT EXISTS lk_scratch")
    spark.sql("DROP TABLE IF EXISTS lk_scratch.__lk_verify_events_0123456789ab")
    spark.sql("CREATE EXTERNAL TABLE lk_scratch.__lk_verify_events_0123456789ab (id BIGINT) STORED AS PARQUET "
              f"LOCATION '{warehouse}/lk_scratch_left' TBLPROPERTIES ('lakekeeper.verify_of'='lk_scratch.events', "
              "'external.table.purge'='false')")
    spark.range(40).repartition(8).write.insertInto("lk_scratch.__lk_verify_events_0123456789ab")
    res = engine.one("compact", "lk_scratch.__lk_verify_events_0123456789ab")
    assert (res["status"], res["code"]) == ("refused", "verify_scratch"), res
    assert "scratch table of a running verification (of lk_scratch.events)" in res["reason"]
    (db_run,) = engine.run("compact", database="lk_scratch")
    assert (db_run["status"], db_run["code"]) == ("refused", "verify_scratch"), db_run
    spark.sql("DROP TABLE lk_scratch.__lk_verify_events_0123456789ab")
