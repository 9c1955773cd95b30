"""Retention over real backups (local Spark): keep_last counts per partition,
the policy guards, and the backups of a table dropped since its compaction."""

from __future__ import annotations

import pytest

from engine_helpers import make_table, parent
from lakekeeper_spark.report.errors import UsageError


def backup_tables(spark, db: str, table: str) -> list[str]:
    return sorted(r.tableName for r in spark.sql(f"SHOW TABLES IN {db}").collect()
                  if r.tableName.startswith(f"__bkp_{table}_"))


def add_small_files(spark, table: str, dt: str, start: int) -> None:
    spark.range(start, start + 100).selectExpr(
        "id", "concat('n', id) name", "CAST(id AS DECIMAL(12,2)) amount",
        "timestamp_seconds(1700000000 + id) ts").repartition(10).createOrReplaceTempView("lk_src")
    spark.sql(f"INSERT INTO {table} PARTITION (dt='{dt}') SELECT * FROM lk_src")


def compacted(res) -> list[str]:
    assert res["status"] == "compacted", res
    return [p["spec"] for p in res["partitions"] if p["status"] == "compacted"]


def test_keep_last_counts_per_partition_and_guards(spark, engine, files, warehouse):
    """Run 1 compacts dt=a and dt=b, run 2 only dt=a: keep_last 1 keeps run
    1's backup, the only rollback point of dt=b (it counted runs per table
    and deleted it). Once run 3 compacts dt=b, run 1's backup goes."""
    t = "lk.perpart"
    loc = make_table(spark, warehouse, "perpart", rows=200, partitions={"a": 12, "b": 12})
    first = engine.one("compact", t)
    assert compacted(first) == ["dt=a", "dt=b"]
    add_small_files(spark, t, "a", 10000)
    second = engine.one("compact", t)
    assert compacted(second) == ["dt=a"]

    res = engine.one("cleanup", t, keep_last=1)
    assert res["status"] == "skipped" and res["backups_removed"] == [], res
    kept = {k["run_id"]: k for k in res["kept"]}
    assert kept[first["run_id"]]["rule"] == "keep_last" and "dt=b" in kept[first["run_id"]]["reason"], kept
    assert "dt=a" not in kept[first["run_id"]]["reason"]  # run 2's backup is dt=a's newest
    assert kept[second["run_id"]]["rule"] == "keep_last" and "dt=a" in kept[second["run_id"]]["reason"]
    verdicts = {b["run_id"]: b["verdict"] for b in engine.one("analyze", t, keep_last=1)["backups"]}
    assert verdicts == {first["run_id"]: "keep", second["run_id"]: "keep"}  # analyze says the same
    assert len(backup_tables(spark, "lk", "perpart")) == 2

    # refused before anything runs: keep_last 0, and an older_than shorter than the grace period
    with pytest.raises(UsageError, match="keep_last must be at least 1"):
        engine.run("cleanup", [t], keep_last=0)
    with pytest.raises(UsageError, match="shorter than the grace period"):
        engine.run("cleanup", [t], older_than="30m", grace_period="1h")

    add_small_files(spark, t, "b", 20000)
    third = engine.one("compact", t)
    assert compacted(third) == ["dt=b"]
    res = engine.one("cleanup", t, keep_last=1, dry_run=True)
    assert res["status"] == "planned" and [b["run_id"] for b in res["backups_removed"]] == [first["run_id"]]
    assert len(backup_tables(spark, "lk", "perpart")) == 3
    res = engine.one("cleanup", t, keep_last=1)
    assert res["status"] == "cleaned" and [b["run_id"] for b in res["backups_removed"]] == [first["run_id"]], res
    removed = res["backups_removed"][0]
    assert removed["rule"] == "keep_last" and "not one of the 1 newest of any of its partitions" in removed["reason"]
    assert sorted(k["run_id"] for k in res["kept"]) == sorted([second["run_id"], third["run_id"]])
    assert len(backup_tables(spark, "lk", "perpart")) == 2
    assert not any(first["run_id"] in h for h in files.hidden(loc))
    res = engine.one("cleanup", t, older_than="all")
    assert res["status"] == "cleaned" and files.hidden(loc) == [] and backup_tables(spark, "lk", "perpart") == []


def test_backups_of_a_dropped_table_are_cleaned_by_a_database_run(spark, engine, files, warehouse):
    """A table dropped after its compaction: its backup (table and original
    files) is found through the backup's lakekeeper.backup_of property, kept
    as the policy says (grace period, older_than; not keep_last: nothing
    can be rolled back into a dropped table), then removed, and reported as
    the backup of a dropped table."""
    spark.sql("CREATE DATABASE IF NOT EXISTS lkret")
    for name in ("gone", "stays"):
        spark.sql(f"DROP TABLE IF EXISTS lkret.{name}")
        spark.sql(f"CREATE EXTERNAL TABLE lkret.{name} (id BIGINT) STORED AS PARQUET "
                  f"LOCATION '{warehouse}/lkret/{name}'")
        spark.range(0, 200).repartition(12).createOrReplaceTempView("lk_src")
        spark.sql(f"INSERT INTO lkret.{name} SELECT * FROM lk_src")
    res = engine.run("compact", database="lkret")
    assert sorted((r["table"], r["status"]) for r in res) == [("lkret.gone", "compacted"), ("lkret.stays", "compacted")]
    gone_backup = backup_tables(spark, "lkret", "gone")
    assert len(gone_backup) == 1
    spark.sql("DROP TABLE lkret.gone")  # EXTERNAL: its files, originals and journal stay
    old_dirs = [n for n in files.names(f"{warehouse}/lkret") if "lk_old" in n]
    assert len(old_dirs) == 2, old_dirs

    res = {r["table"]: r for r in engine.run("cleanup", database="lkret", keep_last=1, grace_period="1h")}
    assert sorted(res) == ["lkret.gone", "lkret.stays"]
    gone = res["lkret.gone"]
    assert gone["status"] == "skipped" and gone["table_dropped"] is True, gone
    assert gone["reason"].startswith("table lkret.gone was dropped; ")
    assert [(k["rule"], k["table_dropped"]) for k in gone["kept"]] == [("grace", True)]
    assert res["lkret.stays"]["status"] == "skipped" and "table_dropped" not in res["lkret.stays"]

    res = {r["table"]: r for r in engine.run("cleanup", database="lkret", keep_last=1, older_than="1d")}
    assert [k["rule"] for k in res["lkret.gone"]["kept"]] == ["older_than"]

    res = {r["table"]: r for r in engine.run("cleanup", database="lkret", keep_last=1, dry_run=True)}
    assert res["lkret.gone"]["status"] == "planned" and backup_tables(spark, "lkret", "gone") == gone_backup

    res = {r["table"]: r for r in engine.run("cleanup", database="lkret", keep_last=1)}
    gone = res["lkret.gone"]
    assert gone["status"] == "cleaned" and gone["changed"] and gone["table_dropped"], gone
    (removed,) = gone["backups_removed"]
    assert removed["table_dropped"] and removed["rule"] == "table_dropped" and removed["bytes"] > 0
    assert "the table was dropped" in removed["reason"]
    assert res["lkret.stays"]["status"] == "skipped" and res["lkret.stays"]["kept"][0]["rule"] == "keep_last"
    assert backup_tables(spark, "lkret", "gone") == []
    assert [n for n in files.names(f"{warehouse}/lkret") if "lk_old" in n and "gone" in n] == []
    assert not any(gone_backup[0].split("_")[-1] in h for h in files.hidden(parent(f"{warehouse}/lkret/gone/x")))
    # nothing left to find: the dropped table no longer shows up
    assert [r["table"] for r in engine.run("cleanup", database="lkret", keep_last=1)] == ["lkret.stays"]
