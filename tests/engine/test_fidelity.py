"""Tables as years of DDL and several tools leave them (issue "every
partition as its readers see it"): each case ends compacted with every value
identical, or untouched with a reason."""

from __future__ import annotations

import pytest

from engine_helpers import frozen, make_table, same_rows

pytestmark = pytest.mark.integration


def test_long_table_name_keeps_its_backup_findable(spark, engine, files, warehouse):
    """A 110-character table name: its backup's name is cut to fit the
    Metastore, and rollback and cleanup still find that backup (before,
    rollback said "no backup" and cleanup never freed the originals)."""
    name = "events_from_the_ingestion_pipeline_of_the_" + "x" * 68
    assert len(name) == 110
    loc = make_table(spark, warehouse, name, rows=600, files=30)
    t = f"lk.{name}"
    original = files.snapshot(loc)
    rows = frozen(spark, t)

    res = engine.one("compact", t)
    assert res["status"] == "compacted", res
    bkp = res["backup_table"].split(".", 1)[1]
    assert len(bkp) == 128 and bkp.startswith("__bkp_events_from_the_ingestion"), bkp

    res = engine.one("rollback", t)
    assert res["status"] == "rolled_back" and res["changed"], res
    assert files.snapshot(loc) == original
    assert bkp not in [r.tableName for r in spark.sql("SHOW TABLES IN lk").collect()]

    res = engine.one("compact", t)
    assert res["status"] == "compacted", res
    res = engine.one("cleanup", t, older_than="all")
    assert res["status"] == "cleaned" and res["backups_removed"], res
    spark.sql(f"REFRESH TABLE {t}")
    assert same_rows(spark.table(t), rows)
    spark.sql(f"DROP TABLE {t}")


def test_backups_are_known_by_their_property_whatever_the_prefix(spark, engine, files, warehouse):
    """A backup made under an earlier ``backup_prefix`` is still this table's
    backup: rollback finds it after the prefix changed, a database run
    passes over it (never compacts a backup as a table), and a backup named
    directly is refused."""
    loc = f"{warehouse}/lk_pfx_prefixed"  # its own database: the database run sees only this table and its backup
    spark.sql("CREATE DATABASE IF NOT EXISTS lk_pfx")
    spark.sql(f"CREATE EXTERNAL TABLE lk_pfx.prefixed (id BIGINT, name STRING) STORED AS PARQUET LOCATION '{loc}'")
    spark.range(400).selectExpr("id", "concat('name-', id) AS name").repartition(20).write.insertInto("lk_pfx.prefixed")
    t = "lk_pfx.prefixed"
    original = files.snapshot(loc)
    res = engine.one("compact", t, backup_prefix="__old")
    assert res["status"] == "compacted" and res["backup_table"].startswith("lk_pfx.__old_prefixed_"), res
    bkp = res["backup_table"]

    refused = engine.one("compact", bkp)
    assert (refused["status"], refused["code"]) == ("refused", "backup_table"), refused
    assert "backup of lk_pfx.prefixed" in refused["reason"]

    by_table = {r["table"]: r for r in engine.run("compact", database="lk_pfx")}
    assert sorted(by_table) == sorted([t, bkp]), by_table
    assert by_table[bkp]["status"] == "skipped" and by_table[bkp]["code"] == "backup_table", by_table
    assert by_table[t]["status"] == "skipped", by_table[t]  # compacted already

    res = engine.one("rollback", t)  # the default prefix now
    assert res["status"] == "rolled_back" and res["changed"], res
    assert files.snapshot(loc) == original
    assert bkp.split(".")[1] not in [r.tableName for r in spark.sql("SHOW TABLES IN lk_pfx").collect()]
    spark.sql(f"DROP TABLE {t}")


def test_hive_default_control_character_delimiters(spark, engine, files, warehouse):
    """The commonest text table there is: Hive's layout with \\001 between
    fields, as `SHOW CREATE TABLE` prints it, files written by an ingestion
    tool (Sqoop/Flume style: raw \\001 bytes, \\N for NULL, empty strings).
    Before, every run failed with "refusing control characters in SQL
    literal" after the journal and backup work."""
    loc = f"{warehouse}/ctrl_text"
    spark.sql("DROP TABLE IF EXISTS lk.ctrl_text")
    spark.sql(
        "CREATE EXTERNAL TABLE lk.ctrl_text (id BIGINT, name STRING, note STRING) "
        "ROW FORMAT DELIMITED FIELDS TERMINATED BY '\\001' LINES TERMINATED BY '\\n' "
        f"STORED AS TEXTFILE LOCATION '{loc}'")
    serde = spark.sql("DESCRIBE FORMATTED lk.ctrl_text").collect()
    assert any("\x01" in (r.data_type or "") for r in serde), serde  # field.delim really is \001
    lines = []
    for f in range(12):
        chunk = []
        for i in range(f * 10, f * 10 + 10):
            note = "\\N" if i % 7 == 0 else ("" if i % 5 == 0 else f"note {i}, with | and ;")
            chunk.append(f"{i}\x01name-{i}\x01{note}")
        lines += chunk
        files.write_bytes(f"{loc}/part-{f:05d}", ("\n".join(chunk) + "\n").encode())
    spark.sql("REFRESH TABLE lk.ctrl_text")
    rows = frozen(spark, "lk.ctrl_text")
    assert rows.count() == 120 and rows.where("note IS NULL").count() == 18 and rows.where("note = ''").count() == 20

    res = engine.one("compact", "lk.ctrl_text")
    assert res["status"] == "compacted", res
    (new,) = files.data_files(loc)
    spark.sql("REFRESH TABLE lk.ctrl_text")
    assert same_rows(spark.table("lk.ctrl_text"), rows)
    # the bytes as Hive splits them: the same lines, \001 between fields, \N for NULL
    written = files.read_bytes(new).decode().split("\n")
    assert written[-1] == "" and sorted(written[:-1]) == sorted(lines)
    assert engine.one("rollback", "lk.ctrl_text")["status"] == "rolled_back"
    spark.sql("DROP TABLE lk.ctrl_text")
