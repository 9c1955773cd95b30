"""Subdirectories written after a compaction (issue "every partition as its
readers see it"): Hive on Tez writes an ``INSERT ... SELECT ... UNION ALL``
as ``HIVE_UNION_SUBDIR_1/``, ``HIVE_UNION_SUBDIR_2/`` under the table or
partition directory (files named ``000000_0``), and Hive reads them with
``mapreduce.input.fileinputformat.input.dir.recursive``. Before, a rollback
after such a write deleted them with their rows (reported as "kept 0
file(s)"), and a cleanup deleted one that had followed the original aside.
Now both carry them into the live directory; a compaction leaves a unit with
subdirectories alone."""

from __future__ import annotations

import pytest

from engine_helpers import frozen, make_table, parent, same_rows

pytestmark = pytest.mark.integration


def _tez_union_dir(spark, files, loc: str, n: int, start: int) -> dict[str, str]:
    """``<loc>/HIVE_UNION_SUBDIR_<n>/000000_0``, one Parquet file of 50 rows
    with the table's columns, as a Tez UNION ALL branch leaves it. Returns
    relative path -> sha256."""
    tmp = f"{parent(loc)}/_tez_tmp_{n}"
    spark.range(start, start + 50).selectExpr(
        "id", "concat('union-', id) AS name", "CAST(id * 1.5 AS DECIMAL(12,2)) AS amount",
        "timestamp_seconds(1700000000 + id) AS ts").coalesce(1).write.mode("overwrite").parquet(tmp)
    (written,) = files.data_files(tmp)
    sub = f"{loc}/HIVE_UNION_SUBDIR_{n}"
    files.mkdir(sub)
    files.fs.rename(written, f"{sub}/000000_0")
    files.rmtree(tmp)
    return {f"HIVE_UNION_SUBDIR_{n}/{k}": v for k, v in files.snapshot(sub).items()}


def _recursive(spark, loc: str):
    """Every row as Hive reads the directory with recursive input directories."""
    return spark.read.option("recursiveFileLookup", "true").parquet(loc).select("id", "name", "amount", "ts")


def test_union_subdirs_survive_rollback_and_cleanup(spark, engine, files, warehouse):
    loc = make_table(spark, warehouse, "tez_union", rows=400, files=20)
    t = "lk.tez_union"
    base = frozen(spark, t)
    original = files.snapshot(loc)

    res = engine.one("compact", t)
    assert res["status"] == "compacted", res
    union = {**_tez_union_dir(spark, files, loc, 1, 10_000), **_tez_union_dir(spark, files, loc, 2, 20_000)}
    df = _recursive(spark, loc)
    everything = spark.createDataFrame(df.collect(), df.schema)  # table rows and the union's, as Hive reads them
    assert everything.count() == 500

    # A compaction leaves a unit with subdirectories alone (nested layouts are not compacted).
    again = engine.one("compact", t)
    assert again["status"] == "skipped" and "subdirectories" in again["partitions"][0]["reason"], again

    res = engine.one("rollback", t)
    assert res["status"] == "rolled_back", res
    (part,) = res["partitions"]
    assert sorted(part["carried_over"]) == ["HIVE_UNION_SUBDIR_1/", "HIVE_UNION_SUBDIR_2/"], part
    assert "2 subdirectory(ies)" in part["reason"] and part["files_after"] == 22, part
    snap = files.snapshot(loc)
    assert {k: v for k, v in snap.items() if "/" in k} == union  # the union's files, byte for byte
    assert {k: v for k, v in snap.items() if "/" not in k} == original
    assert same_rows(_recursive(spark, loc), everything)
    spark.sql(f"REFRESH TABLE {t}")
    assert same_rows(spark.table(t).select("id", "name", "amount", "ts"),
                     base.select("id", "name", "amount", "ts"))

    # Cleanup: a union directory that landed just before the move aside followed the original into
    # .lk_old (the swap's race); the cleanup moves it into the live directory instead of deleting it.
    stash = f"{parent(loc)}/_stash_union"
    files.mkdir(stash)
    for n in (1, 2):
        files.fs.rename(f"{loc}/HIVE_UNION_SUBDIR_{n}", f"{stash}/HIVE_UNION_SUBDIR_{n}")
    res = engine.one("compact", t)
    assert res["status"] == "compacted", res
    (old,) = [n for n in files.names(parent(loc)) if n.startswith(".tez_union.lk_old_")]
    files.fs.rename(f"{stash}/HIVE_UNION_SUBDIR_1", f"{parent(loc)}/{old}/HIVE_UNION_SUBDIR_1")
    files.fs.rename(f"{stash}/HIVE_UNION_SUBDIR_2", f"{loc}/HIVE_UNION_SUBDIR_2")
    res = engine.one("cleanup", t, older_than="all")
    assert res["status"] == "cleaned", res
    assert res["backups_removed"][0]["moved_to_live"] == ["HIVE_UNION_SUBDIR_1/"], res
    assert not files.exists(f"{parent(loc)}/{old}")
    assert {k: v for k, v in files.snapshot(loc).items() if "/" in k} == union
    assert same_rows(_recursive(spark, loc), everything)
    files.rmtree(stash)
    spark.sql(f"DROP TABLE {t}")
