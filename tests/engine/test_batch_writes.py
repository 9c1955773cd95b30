"""A partitioned table's small partitions written by one job and read back by
one (rewrite/batch.py, policy/batching.py): the same result as one by one,
the batch recorded in the journal and gone afterwards, a bad batch falling
back to the per-unit path."""

from __future__ import annotations

import json

import pytest

from engine_helpers import frozen, same_rows

pytestmark = pytest.mark.integration


def _table(spark, warehouse: str, name: str, parts: int = 5, nfiles: int = 6, fmt: str = "PARQUET") -> str:
    t = f"lk.{name}"
    loc = f"{warehouse}/{name}"
    spark.sql(f"DROP TABLE IF EXISTS {t}")
    spark.sql(f"CREATE EXTERNAL TABLE {t} (id BIGINT, v STRING, d DOUBLE) PARTITIONED BY (dt STRING, h STRING) "
              f"STORED AS {fmt} LOCATION '{loc}'")
    for i in range(parts):
        spark.range(i * 1000, i * 1000 + 300).selectExpr("id", "cast(id as string) v", "id * 0.5 d") \
            .repartition(nfiles).createOrReplaceTempView("lk_src")
        spark.sql(f"INSERT INTO {t} PARTITION (dt='2024-01-0{i}', h='0{i % 2}') SELECT * FROM lk_src")
    return loc


def _journal_table_docs(files, loc: str) -> list[dict]:
    jdir = f"{loc}/.lakekeeper"
    out = []
    for run, is_dir in files.fs.list_names(jdir):
        if is_dir and run != "history":
            out.append(json.loads(files.fs.read_text(f"{jdir}/{run}/table.json")))
    return out


@pytest.mark.parametrize("fmt", ["PARQUET", "ORC"])
def test_batch_gives_what_units_one_by_one_give(spark, engine, files, warehouse, fmt):
    a = _table(spark, warehouse, f"batch_a_{fmt.lower()}", fmt=fmt)
    _table(spark, warehouse, f"batch_b_{fmt.lower()}", fmt=fmt)
    rows = frozen(spark, f"lk.batch_a_{fmt.lower()}")
    batched = engine.one("compact", f"lk.batch_a_{fmt.lower()}")
    spark.conf.set("spark.lakekeeper.batch.units", "0")
    try:
        alone = engine.one("compact", f"lk.batch_b_{fmt.lower()}")
    finally:
        spark.conf.unset("spark.lakekeeper.batch.units")
    assert batched["status"] == alone["status"] == "compacted", (batched, alone)
    for x, y in zip(batched["partitions"], alone["partitions"]):
        assert x["spec"] == y["spec"] and x["status"] == y["status"] == "compacted"
        for k in ("files_after", "rows_before", "rows_after", "verified", "content_checksum"):
            assert x[k] == y[k], (k, x, y)
    (doc,) = _journal_table_docs(files, a)
    roots = doc.get("batch_roots")
    assert roots and ".lk_batch-0.lk_staging_" in roots[0], doc
    assert not files.fs.exists(roots[0])
    hidden = [h for h in files.hidden(a) if ".lk_old_" not in h.split("/")[-1]]
    assert not [h for h in hidden if "lk_staging" in h or "lk_batch" in h], hidden
    spark.sql(f"REFRESH TABLE lk.batch_a_{fmt.lower()}")
    assert same_rows(spark.table(f"lk.batch_a_{fmt.lower()}"), rows)
    rb = engine.one("rollback", f"lk.batch_a_{fmt.lower()}")
    assert rb["status"] == "rolled_back", rb


def test_a_bad_batch_falls_back_to_units_one_by_one(spark, engine, files, warehouse, monkeypatch):
    loc = _table(spark, warehouse, "batch_bad", parts=3)
    rows = frozen(spark, "lk.batch_bad")
    monkeypatch.setenv("LAKEKEEPER_FAULT_AT", "alter_batch_value")  # a value changed in the batch's copy
    res = engine.one("compact", "lk.batch_bad")
    monkeypatch.delenv("LAKEKEEPER_FAULT_AT")
    assert res["status"] == "compacted", res
    assert all(p["verified"] == "content" and p["files_after"] == 1 for p in res["partitions"]), res
    (doc,) = _journal_table_docs(files, loc)
    assert doc.get("batch_roots") and not files.fs.exists(doc["batch_roots"][0])
    spark.sql("REFRESH TABLE lk.batch_bad")
    assert same_rows(spark.table("lk.batch_bad"), rows)
