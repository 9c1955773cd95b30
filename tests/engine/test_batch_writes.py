"""A partitioned table's small partitions written by one job and read back by
one (rewrite/batch.py, policy/batching.py): the same result as one by one,
the batch recorded in the journal and gone afterwards, a bad batch falling
back to the per-unit path."""

from __future__ import annotations

import json
import logging
import re

import pytest

from engine_helpers import frozen, same_rows

pytestmark = pytest.mark.integration


def _table(spark, warehouse: str, name: str, parts: int = 5, nfiles: int = 6, fmt: str = "PARQUET",
           levels: int = 2) -> str:
    t = f"lk.{name}"
    loc = f"{warehouse}/{name}"
    spark.sql(f"DROP TABLE IF EXISTS {t}")
    by = "dt STRING, h STRING" if levels == 2 else "dt STRING"
    spark.sql(f"CREATE EXTERNAL TABLE {t} (id BIGINT, v STRING, d DOUBLE, ts TIMESTAMP) PARTITIONED BY ({by}) "
              f"STORED AS {fmt} LOCATION '{loc}'")
    for i in range(parts):
        cols = ("id", "cast(id as string) v", "id * 0.5 d", "timestamp_seconds(1700000000 + id) ts")
        spark.range(i * 1000, i * 1000 + 300).selectExpr(*cols).repartition(nfiles).createOrReplaceTempView("lk_src")
        spec = f"dt='2024-01-0{i}', h='0{i % 2}'" if levels == 2 else f"dt='2024-01-0{i}'"
        spark.sql(f"INSERT INTO {t} PARTITION ({spec}) SELECT * FROM lk_src")
    return loc


def _journal_table_docs(files, loc: str) -> list[dict]:
    jdir = f"{loc}/.lakekeeper"
    out = []
    for run, is_dir in files.fs.list_names(jdir):
        if is_dir and run != "history":
            out.append(json.loads(files.fs.read_text(f"{jdir}/{run}/table.json")))
    return out


# no ("PARQUET", 1): one level is ORC's case (the batch path is the same for both formats but the writer's
# options), Parquet's options are ("PARQUET", 2)'s, and test_rows_traded_... writes a one-level Parquet batch
@pytest.mark.parametrize("fmt,levels", [("PARQUET", 2), ("ORC", 1)])
def test_batch_gives_what_units_one_by_one_give(spark, engine, files, warehouse, fmt, levels, caplog):
    fmt_name = fmt
    fmt = f"{fmt}{levels}"
    a = _table(spark, warehouse, f"batch_a_{fmt.lower()}", fmt=fmt_name, levels=levels)
    _table(spark, warehouse, f"batch_b_{fmt.lower()}", fmt=fmt_name, levels=levels)
    rows = frozen(spark, f"lk.batch_a_{fmt.lower()}")
    with caplog.at_level(logging.INFO, logger="lakekeeper_spark"):
        batched = engine.one("compact", f"lk.batch_a_{fmt.lower()}")
    assert "batch 0: 5 units written and read back" in caplog.text, caplog.text[-3000:]
    assert "written one by one" not in caplog.text
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
    assert all(p["files_after"] == 1 for p in batched["partitions"]), batched
    assert not files.fs.exists(roots[0])
    hidden = [h for h in files.hidden(a) if ".lk_old_" not in h.split("/")[-1]]
    assert not [h for h in hidden if "lk_staging" in h or "lk_batch" in h], hidden
    spark.sql(f"REFRESH TABLE lk.batch_a_{fmt.lower()}")
    assert same_rows(spark.table(f"lk.batch_a_{fmt.lower()}"), rows)
    rb = engine.one("rollback", f"lk.batch_a_{fmt.lower()}")
    assert rb["status"] == "rolled_back", rb


def test_a_bad_batch_falls_back_to_units_one_by_one(spark, engine, files, warehouse, monkeypatch, caplog):
    loc = _table(spark, warehouse, "batch_bad", parts=3)
    rows = frozen(spark, "lk.batch_bad")
    monkeypatch.setenv("LAKEKEEPER_FAULT_AT", "alter_batch_value")  # a value changed in the batch's copy
    with caplog.at_level(logging.INFO, logger="lakekeeper_spark"):
        res = engine.one("compact", "lk.batch_bad")
    monkeypatch.delenv("LAKEKEEPER_FAULT_AT")
    assert "content_mismatch" in caplog.text or "read back" in caplog.text
    assert "batch 0 (3 units) failed, its units are written one by one" in caplog.text, caplog.text[-3000:]
    assert res["status"] == "compacted", res
    assert all(p["verified"] == "content" and p["files_after"] == 1 for p in res["partitions"]), res
    (doc,) = _journal_table_docs(files, loc)
    assert doc.get("batch_roots") and not files.fs.exists(doc["batch_roots"][0])
    spark.sql("REFRESH TABLE lk.batch_bad")
    assert same_rows(spark.table("lk.batch_bad"), rows)


def test_rows_traded_between_partitions_fail_the_batch(spark, engine, files, warehouse, monkeypatch, caplog):
    """Two partitions' files trade places in the batch root before its read-back:
    every unit is there with as many rows as written, and the plain checksums
    add up to the same total; only the hashes folded with each row's partition
    values see it (rewrite/batch.py, step 2)."""
    from lakekeeper_spark.commands import compact as compact_cmd

    _table(spark, warehouse, "batch_traded", parts=3, levels=1)
    rows = frozen(spark, "lk.batch_traded")
    traded = []

    def trade(_spark, fs, _info, unit_dir, _codec):
        if traded:
            return
        root, name = unit_dir.rstrip("/").rsplit("/", 1)
        other = next(n for n, is_dir in fs.list_names(root) if is_dir and n != name and not n.startswith((".", "_")))
        a = next(f.name for f in fs.list_dir(unit_dir).files if not f.name.startswith((".", "_")))
        b = next(f.name for f in fs.list_dir(f"{root}/{other}").files if not f.name.startswith((".", "_")))
        fs.rename(f"{unit_dir}/{a}", f"{root}/traded-{a}")
        fs.rename(f"{root}/{other}/{b}", f"{unit_dir}/{b}")
        fs.rename(f"{root}/traded-{a}", f"{root}/{other}/{a}")
        traded.append((name, other))

    monkeypatch.setattr(compact_cmd, "alter_batch_value", trade)
    with caplog.at_level(logging.INFO, logger="lakekeeper_spark"):
        res = engine.one("compact", "lk.batch_traded")
    assert traded, "the batch did not run"
    assert "batch 0 (3 units) failed, its units are written one by one" in caplog.text, caplog.text[-3000:]
    m = re.search(r"batch of 3 units: (\d+) rows with checksum (-?\d+) written, (\d+) with (-?\d+) read back",
                  caplog.text)
    assert m and m.group(1) == m.group(3) == "900" and m.group(2) != m.group(4), caplog.text[-3000:]
    assert "units missing" not in caplog.text and "units not planned" not in caplog.text
    assert res["status"] == "compacted", res
    assert all(p["verified"] == "content" and p["files_after"] == 1 for p in res["partitions"]), res
    spark.sql("REFRESH TABLE lk.batch_traded")
    assert same_rows(spark.table("lk.batch_traded"), rows)
