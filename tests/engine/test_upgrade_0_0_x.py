"""An upgrade from lakekeeper 0.0.x (docs/upgrading-from-0.0.x.md): what
0.0.x left behind is found, rolled back and cleaned up, never compacted.

The 0.0.x shapes are made by lakekeeper 0.0.6 itself: its wheel (as PyPI
serves it, ``lakekeeper-0.0.6-py3-none-any.whl``, which scripts/bootstrap downloads, see
``tests/engine/legacy/README.md``) is put on ``sys.path`` and its own engine
(``HiveExternalEngine``: analyze, create_backup, compact) compacts three
tables of a database of their own on the shared session: its ``__bkp_``
backup tables and ``__old_<ts>`` directories are the real thing. Only the
directories of a 0.0.x run that crashed (``__compact_tmp_<ts>``) are made by
hand, named as its ``core/compactor.py`` names them (lines 121 and 226:
``f"{location}__compact_tmp_{run_ts}"``).

One set of 0.0.6 compactions serves every test here:

* analyze of the database reports each table's 0.0.x backup (its original
  directory, files, the retention verdict) and the 0.0.x leftovers, and
  lists no backup as a table;
* compact of the database compacts no 0.0.x backup; one named is refused;
* rollback restores the originals from the 0.0.x backup byte for byte, as
  0.0.6 did (non-partitioned and partitioned), and drops the backup;
* cleanup keeps a young 0.0.x backup under ``older_than``, and deletes it
  under ``older_than all`` (its ``__old_`` directory, then its table).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from engine_helpers import same_rows

pytestmark = pytest.mark.integration

# downloaded by scripts/bootstrap (requirements.txt, "# legacy-wheel"), hash-checked by pip
WHEEL = Path(os.environ.get("LAKEKEEPER_CACHE") or Path.home() / ".cache" / "lakekeeper") / "legacy" / \
    "lakekeeper-0.0.6-py3-none-any.whl"
DB = "lk_upgrade"
CRASH_TS = "1700000000"


def _create(spark, warehouse: str, name: str, files: int = 0, partitions: dict[str, int] | None = None) -> str:
    loc = f"{warehouse}/{DB}/{name}"
    part = "PARTITIONED BY (dt STRING)" if partitions else ""
    spark.sql(f"CREATE EXTERNAL TABLE {DB}.{name} (id BIGINT, name STRING) {part} STORED AS parquet "
              f"LOCATION '{loc}'")
    body = ["id", "concat('name-', id) AS name"]
    for i, (dt, n) in enumerate((partitions or {"": files}).items()):
        spark.range(i * 300, i * 300 + 300).selectExpr(*body).repartition(n).createOrReplaceTempView("lk_up_src")
        into = f"{DB}.{name} PARTITION (dt='{dt}')" if partitions else f"{DB}.{name}"
        spark.sql(f"INSERT INTO {into} SELECT * FROM lk_up_src")
    return loc


def _legacy_compact(engine, table: str) -> str:
    """Compact ``table`` with lakekeeper 0.0.6's own engine; its backup table."""
    from lakekeeper.models import CompactionStatus

    info = engine.analyze(DB, table)
    assert info.needs_compaction, info
    backup = engine.create_backup(info)
    report = engine.compact(info, backup)
    assert report.status == CompactionStatus.COMPLETED, report
    return backup.backup_table


@pytest.fixture(scope="module")
def legacy(spark, warehouse, files):
    """Three tables compacted by lakekeeper 0.0.6: (locations, snapshots of
    the originals, backup tables, rows)."""
    spark.sql(f"DROP DATABASE IF EXISTS {DB} CASCADE")
    spark.sql(f"CREATE DATABASE {DB}")
    locs = {"np": _create(spark, warehouse, "np", files=20), "cl": _create(spark, warehouse, "cl", files=10),
            "pt": _create(spark, warehouse, "pt", partitions={"a": 9, "b": 4})}
    originals = {"np": files.snapshot(locs["np"]), "cl": files.snapshot(locs["cl"]),
                 "pt/a": files.snapshot(locs["pt"] + "/dt=a"), "pt/b": files.snapshot(locs["pt"] + "/dt=b")}
    rows = {t: spark.createDataFrame(spark.table(f"{DB}.{t}").collect(), spark.table(f"{DB}.{t}").schema)
            for t in locs}
    sys.path.insert(0, str(WHEEL))
    try:
        from lakekeeper.config import LakekeeperConfig
        from lakekeeper.engine.hive_external import HiveExternalEngine

        engine = HiveExternalEngine(spark, LakekeeperConfig(block_size_mb=1))
        backups = {t: _legacy_compact(engine, t) for t in locs}
    finally:
        sys.path.remove(str(WHEEL))
        for name in [m for m in sys.modules if m == "lakekeeper" or m.startswith("lakekeeper.")]:
            del sys.modules[name]
    # a 0.0.x run that crashed while writing its copy
    files.write_bytes(f"{locs['np']}__compact_tmp_{CRASH_TS}/part-00000.parquet", b"partial")
    files.write_bytes(f"{locs['pt']}/dt=a__compact_tmp_{CRASH_TS}/part-00000.parquet", b"partial")
    return locs, originals, backups, rows


def _old_dirs(spark, backup: str) -> list[str]:
    """Where a 0.0.x backup points (its table's, or each partition's, location)."""
    from lakekeeper_spark.catalog.catalog import Catalog

    cat = Catalog(spark)
    info = cat.get_table(*backup.split("."))
    if not info.is_partitioned:
        return [info.location.rstrip("/")]
    return [p.location.rstrip("/") for p in cat.list_partitions(info)]


def test_analyze_reports_and_compact_leaves_alone_the_0_0_x_backups(spark, engine, files, legacy):
    locs, _originals, backups, _rows = legacy
    assert sorted(b.split(".")[1].rsplit("_", 2)[0] for b in backups.values()) == ["__bkp_cl", "__bkp_np", "__bkp_pt"]
    olds = {t: _old_dirs(spark, b) for t, b in backups.items()}
    assert all("__old_" in d for d in olds["np"] + olds["pt"]) and len(olds["pt"]) == 2, olds

    results = {r["table"]: r for r in engine.run("analyze", database=DB)}
    assert sorted(results) == [f"{DB}.cl", f"{DB}.np", f"{DB}.pt"], sorted(results)  # no backup as a table
    np_ = results[f"{DB}.np"]
    (bk,) = np_["legacy_backups"]
    assert bk["backup_table"] == backups["np"] and bk["version"] == "0.0.x", bk
    assert bk["units"] == 1 and bk["files"] >= 20 and bk["bytes"] > 0 and bk["missing"] == 0, bk
    assert [d.rstrip("/") for d in bk["directories"]] == [files.fs.qualify(olds["np"][0]).rstrip("/")], bk
    (left,) = np_["legacy_leftovers"]
    assert left["path"].endswith(f"/np__compact_tmp_{CRASH_TS}") and left["kind"] == "compact_tmp", left
    assert np_["backups"] == [], np_  # today's backups: none
    pt = results[f"{DB}.pt"]
    assert pt["legacy_backups"][0]["units"] == 2 and pt["legacy_backups"][0]["files"] >= 13, pt["legacy_backups"]
    assert [x["path"].rsplit("/", 1)[1] for x in pt["legacy_leftovers"]] == [f"dt=a__compact_tmp_{CRASH_TS}"]
    assert "legacy_leftovers" not in results[f"{DB}.cl"], results[f"{DB}.cl"]
    # the verdict of a cleanup with the same options
    (young,) = engine.one("analyze", f"{DB}.cl", older_than="7d")["legacy_backups"]
    (gone,) = engine.one("analyze", f"{DB}.cl", older_than="all")["legacy_backups"]
    assert young["verdict"] == "keep" and gone["verdict"] == "delete", (young, gone)

    # compact: no 0.0.x backup is compacted (their originals stay as they are), one named is refused
    before = {d: files.snapshot(d) for d in olds["np"] + olds["pt"] + olds["cl"]}
    compacted = engine.run("compact", database=DB, block_size_mb=1, compaction_ratio_threshold=1.0)
    assert sorted(r["table"] for r in compacted) == [f"{DB}.cl", f"{DB}.np", f"{DB}.pt"], compacted
    assert {d: files.snapshot(d) for d in before} == before
    named = engine.one("compact", backups["np"])
    assert named["status"] == "refused" and named["code"] == "backup_table" and "0.0.x" in named["reason"], named


def test_rollback_restores_a_0_0_x_backup_as_0_0_6_did(spark, engine, files, legacy):
    locs, originals, backups, rows = legacy
    olds = _old_dirs(spark, backups["np"]) + _old_dirs(spark, backups["pt"])

    plan = engine.one("rollback", f"{DB}.np", dry_run=True)
    assert plan["status"] == "planned" and plan["backup_table"] == backups["np"] and plan["legacy"] == "0.0.x", plan
    assert files.snapshot(locs["np"]) != originals["np"]

    res = engine.one("rollback", f"{DB}.np")
    assert res["status"] == "rolled_back" and res["changed"] and "0.0.x" in res["reason"], res
    assert res["partitions"][0]["files_after"] == 20, res
    assert files.snapshot(locs["np"]) == originals["np"]  # the originals, byte for byte
    assert same_rows(spark.table(f"{DB}.np"), rows["np"])

    res = engine.one("rollback", f"{DB}.pt")
    assert res["status"] == "rolled_back" and sorted(p["spec"] for p in res["partitions"]) == ["dt=a", "dt=b"], res
    assert files.snapshot(locs["pt"] + "/dt=a") == originals["pt/a"]
    assert files.snapshot(locs["pt"] + "/dt=b") == originals["pt/b"]
    assert same_rows(spark.table(f"{DB}.pt"), rows["pt"])

    assert not any(files.exists(d) for d in olds), olds  # each __old_ directory went back in place
    tables = {r.tableName for r in spark.sql(f"SHOW TABLES IN {DB}").collect()}
    assert backups["np"].split(".")[1] not in tables and backups["pt"].split(".")[1] not in tables, tables
    again = engine.one("rollback", f"{DB}.np")
    assert again["status"] == "skipped" and again["reason"] == "no backup to roll back to", again
    # the crashed run's copy is still reported, never touched
    assert files.exists(f"{locs['np']}__compact_tmp_{CRASH_TS}")


def test_cleanup_deletes_0_0_x_backups_under_the_retention_policy(spark, engine, files, legacy):
    locs, _originals, backups, rows = legacy
    (old,) = _old_dirs(spark, backups["cl"])
    compacted = files.snapshot(locs["cl"])

    young = engine.one("cleanup", f"{DB}.cl", older_than="7d")
    assert young["status"] == "skipped" and [k["backup_table"] for k in young["kept"]] == [backups["cl"]], young
    assert files.exists(old)

    plan = engine.one("cleanup", f"{DB}.cl", older_than="all", dry_run=True)
    assert plan["status"] == "planned" and files.exists(old), plan

    res = engine.one("cleanup", f"{DB}.cl", older_than="all")
    assert res["status"] == "cleaned" and res["changed"], res
    (removed,) = res["backups_removed"]
    assert removed["version"] == "0.0.x" and removed["backup_table"] == backups["cl"], removed
    assert removed["bytes"] > 0 and res["freed_bytes"] == removed["bytes"], res
    assert not files.exists(old)
    tables = {r.tableName for r in spark.sql(f"SHOW TABLES IN {DB}").collect()}
    assert backups["cl"].split(".")[1] not in tables, tables
    spark.catalog.refreshTable(f"{DB}.cl")  # 0.0.6 swapped its files behind the session's back
    assert files.snapshot(locs["cl"]) == compacted and same_rows(spark.table(f"{DB}.cl"), rows["cl"])
