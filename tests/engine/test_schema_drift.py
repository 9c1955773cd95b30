"""Schema drift on real files (issue "every partition as its readers see
it"): columns renamed or dropped by Hive's metadata-only DDL, run by Hive
itself (its Driver inside Spark's Hive client), leave files whose columns
are not the table's. Such a unit is refused before anything is written, its
files byte for byte as they were; benign differences (case, nullability,
columns added at the end) still compact with every value identical."""

from __future__ import annotations

import pytest

from engine_helpers import frozen, parent, same_rows

pytestmark = pytest.mark.integration


def hive(spark, statement: str) -> None:
    """Run a statement through Hive's own Driver (Spark refuses ``CHANGE a b``
    and ``REPLACE COLUMNS`` on Hive tables), so the Metastore holds exactly
    what Hive leaves. Spark's client runs it only under ``spark.testing``."""
    system = spark._jvm.java.lang.System
    client = spark._jsparkSession.sharedState().externalCatalog().unwrapped().client()
    system.setProperty("spark.testing", "true")
    try:
        client.runSqlHive(statement)
    finally:
        system.clearProperty("spark.testing")


def _leftovers(files, loc: str) -> list[str]:
    """The table's hidden siblings (a journal directory that only holds its history does not count)."""
    return [h for h in files.hidden(parent(loc)) if "/" not in h and h.startswith(f".{loc.rsplit('/', 1)[1]}")]


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_renamed_column_is_refused_and_files_untouched(spark, engine, files, warehouse, fmt):
    """``ALTER TABLE t CHANGE a b STRING`` after the files were written: Spark
    and Hive (by name) read NULL in b, Impala (by position) reads a's data.
    Before, the compaction wrote the by-name view: a's data was gone for
    every reader. Now refused with schema_drift naming a and b, nothing
    written; with allow_by_name_projection the by-name view is compacted
    (Parquet) and rollback restores the original files byte for byte."""
    name = f"drift_rename_{fmt}"
    loc = f"{warehouse}/{name}"
    t = f"lk.{name}"
    spark.sql(f"DROP TABLE IF EXISTS {t}")
    spark.sql(f"CREATE EXTERNAL TABLE {t} (id BIGINT, a STRING, c INT) STORED AS {fmt} LOCATION '{loc}'")
    src = spark.range(300).selectExpr("id", "concat('a-', id) AS a", "CAST(id % 7 AS INT) AS c")
    src.repartition(12).createOrReplaceTempView("lk_drift_src")
    spark.sql(f"INSERT INTO {t} SELECT * FROM lk_drift_src")
    hive(spark, f"ALTER TABLE {t} CHANGE a b STRING")
    spark.sql(f"REFRESH TABLE {t}")
    assert [f.name for f in spark.table(t).schema.fields] == ["id", "b", "c"]
    original = files.snapshot(loc)
    by_name = frozen(spark, t)
    assert by_name.where("b IS NOT NULL").count() == 0  # what a by-name reader sees now

    res = engine.one("compact", t)
    assert (res["status"], res["code"]) == ("refused", "schema_drift"), res
    assert "position 2 is a in the file, b in the table" in res["reason"], res["reason"]
    assert files.snapshot(loc) == original  # byte for byte
    assert _leftovers(files, loc) == []  # no staging, no journal
    assert not [r for r in spark.sql("SHOW TABLES IN lk").collect() if r.tableName.startswith(f"__bkp_{name}")]
    # the data of a is still in the files, for positional readers
    physical = spark.read.format(fmt).load(loc)
    assert same_rows(physical.select("id", "a", "c"), src)

    planned = engine.one("compact", t, dry_run=True)  # check mode says the same
    assert (planned["status"], planned["code"]) == ("refused", "schema_drift"), planned

    if fmt != "parquet":
        spark.sql(f"DROP TABLE {t}")
        return
    res = engine.one("compact", t, allow_by_name_projection=True)
    assert res["status"] == "compacted", res
    (part,) = res["partitions"]
    assert "schema drift compacted by name" in part["notes"][0], part
    spark.sql(f"REFRESH TABLE {t}")
    assert same_rows(spark.table(t), by_name)
    res = engine.one("rollback", t)
    assert res["status"] == "rolled_back", res
    assert files.snapshot(loc) == original
    spark.sql(f"DROP TABLE {t}")


def test_partitions_drifted_and_benign(spark, engine, files, warehouse):
    """One partitioned Parquet table through the DDL of its life:
    ``dt=old`` written with (id, name) before ``ADD COLUMNS (score INT)``
    (old files lack the last column: NULL for every reader), ``dt=case``
    written by Spark with upper-case names and a required (non-null) id,
    ``dt=new`` written with score before ``CHANGE score points INT``, and
    ``dt=after`` written after it. Only ``dt=new`` drifts: it is skipped with
    code schema_drift and its files stay byte for byte; the other three
    compact with every value identical."""
    loc = f"{warehouse}/drift_parts"
    t = "lk.drift_parts"
    spark.sql(f"DROP TABLE IF EXISTS {t}")
    spark.sql(f"CREATE EXTERNAL TABLE {t} (id BIGINT, name STRING) PARTITIONED BY (dt STRING) STORED AS PARQUET "
              f"LOCATION '{loc}'")
    spark.range(0, 200).selectExpr("id", "concat('n-', id) AS name").repartition(8).createOrReplaceTempView("lk_d1")
    spark.sql(f"INSERT INTO {t} PARTITION (dt='old') SELECT * FROM lk_d1")
    spark.range(200, 400).selectExpr("id AS ID", "concat('N-', id) AS NAME").repartition(8) \
        .write.parquet(f"{loc}/dt=case")
    spark.sql(f"ALTER TABLE {t} ADD PARTITION (dt='case') LOCATION '{loc}/dt=case'")
    hive(spark, f"ALTER TABLE {t} ADD COLUMNS (score INT)")
    spark.sql(f"REFRESH TABLE {t}")
    spark.range(400, 600).selectExpr("id", "concat('n-', id) AS name", "CAST(id % 11 AS INT) AS score") \
        .repartition(8).createOrReplaceTempView("lk_d2")
    spark.sql(f"INSERT INTO {t} PARTITION (dt='new') SELECT * FROM lk_d2")
    hive(spark, f"ALTER TABLE {t} CHANGE score points INT")
    spark.sql(f"REFRESH TABLE {t}")
    spark.range(600, 800).selectExpr("id", "concat('n-', id) AS name", "CAST(id % 13 AS INT) AS points") \
        .repartition(8).createOrReplaceTempView("lk_d3")
    spark.sql(f"INSERT INTO {t} PARTITION (dt='after') SELECT * FROM lk_d3")
    rows = frozen(spark, t)
    new_files = files.snapshot(f"{loc}/dt=new")

    res = engine.one("compact", t)
    assert res["status"] == "compacted" and "1 refused (schema_drift)" in res["reason"], res
    by_spec = {p["spec"]: p for p in res["partitions"]}
    assert {s: p["status"] for s, p in by_spec.items()} == {
        "dt=after": "compacted", "dt=case": "compacted", "dt=new": "skipped", "dt=old": "compacted"}, by_spec
    assert by_spec["dt=new"]["code"] == "schema_drift"
    assert "position 3 is score in the file, points in the table" in by_spec["dt=new"]["reason"]
    assert files.snapshot(f"{loc}/dt=new") == new_files
    assert len(files.data_files(f"{loc}/dt=old")) == 1 and len(files.data_files(f"{loc}/dt=case")) == 1
    spark.sql(f"REFRESH TABLE {t}")
    assert same_rows(spark.table(t), rows)
    assert spark.table(t).where("dt = 'old' AND points IS NOT NULL").count() == 0
    assert spark.table(t).where("dt = 'case' AND name LIKE 'N-%'").count() == 200
    # the score values of dt=new are still in its files
    assert spark.read.parquet(f"{loc}/dt=new").where("score IS NOT NULL").count() == 200
    engine.one("rollback", t)
    spark.sql(f"DROP TABLE {t}")
