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
    res = engine.one("cleanup", t)
    assert res["status"] == "cleaned" and res["backups_removed"], res
    spark.sql(f"REFRESH TABLE {t}")
    assert same_rows(spark.table(t), rows)
    spark.sql(f"DROP TABLE {t}")
