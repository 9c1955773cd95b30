"""Statuses (issue 48 item 2, "Mixed fleets do not turn the job red"; the
table of them is docs/statuses.md).

A compaction named explicitly over a mixed list - a table that needs it, one
that needs nothing, one written too recently, and the tables Lakekeeper must
leave alone as Hive, Spark or a replication tool leave them: MANAGED (Spark's
``CREATE TABLE``), transactional (Hive ACID: bucketed ORC with
``transactional=true``), excluded by its owner (``lakekeeper.exclude``), a
replica (``repl.last.id``, as ``REPL LOAD`` leaves it) and lakekeeper's own
backup table - reports each with its own status: ``compacted``,
``not_needed``, ``skipped`` (``quiet_period``) and ``refused`` with its code
and reason. Refused tables do not fail the run (``run_failed``, the exit
code) unless ``fail_on_refused``; a database run reports them ``refused``
too (it used to call them ``skipped``). Nothing refused is touched.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.integration

DB = "lkst"


def _external(spark, warehouse: str, name: str, files: int, props: dict[str, str] | None = None) -> str:
    loc = f"{warehouse}/statuses/{name}"
    tbl = (" TBLPROPERTIES (" + ", ".join(f"'{k}'='{v}'" for k, v in props.items()) + ")") if props else ""
    spark.sql(f"CREATE EXTERNAL TABLE {DB}.{name} (id BIGINT, name STRING) STORED AS PARQUET LOCATION '{loc}'{tbl}")
    (spark.range(0, 600).selectExpr("id", "concat('name-', id) AS name").repartition(files)
     .createOrReplaceTempView("lk_st_src"))
    spark.sql(f"INSERT INTO {DB}.{name} SELECT * FROM lk_st_src")
    return loc


def test_a_mixed_list_reports_each_table_with_its_own_status_and_refusals_do_not_fail(
        spark, engine, files, warehouse):
    from lakekeeper_spark.report.results import run_failed

    spark.sql(f"CREATE DATABASE IF NOT EXISTS {DB}")
    locs = {
        "done": _external(spark, warehouse, "done", 12),
        "fresh": _external(spark, warehouse, "fresh", 12),
        "single": _external(spark, warehouse, "single", 1),
        "excluded": _external(spark, warehouse, "excluded", 12, {"lakekeeper.exclude": "true"}),
        "replica": _external(spark, warehouse, "replica", 12, {"repl.last.id": "4711"}),
    }
    # MANAGED, as Spark's CREATE TABLE leaves it; Hive ACID, as Hive's DDL leaves it (the Metastore only takes
    # transactional=true on a bucketed ORC managed table)
    spark.sql(f"CREATE TABLE {DB}.managed (id BIGINT) STORED AS PARQUET")
    spark.sql(f"INSERT INTO {DB}.managed VALUES (1), (2)")
    spark.sql(f"INSERT INTO {DB}.managed VALUES (3)")
    spark.sql(f"CREATE TABLE {DB}.acid (id INT) CLUSTERED BY (id) INTO 2 BUCKETS STORED AS ORC "
              f"TBLPROPERTIES ('transactional'='true')")
    # lakekeeper's own backup table, as a compaction leaves it
    first = engine.one("compact", f"{DB}.done")
    assert first["status"] == "compacted" and first["backup_table"], first
    backup = first["backup_table"]
    before = {name: files.snapshot(loc) for name, loc in locs.items() if name != "done"}

    names = ["done", "fresh", "single", "excluded", "replica", "managed", "acid"]
    listed = [f"{DB}.{n}" for n in names] + [backup]
    # one run, named explicitly; a quiet period longer than the tables' age: "fresh" is skipped for now
    res = {r["table"]: r for r in engine.run("compact", listed, quiet_period="1h")}
    got = {t: (r["status"], r.get("code")) for t, r in res.items()}
    assert got == {
        f"{DB}.done": ("not_needed", None),  # compacted by the first run: nothing to do
        f"{DB}.fresh": ("skipped", "quiet_period"),
        f"{DB}.single": ("not_needed", None),
        f"{DB}.excluded": ("refused", "excluded"),
        f"{DB}.replica": ("refused", "replicated"),
        f"{DB}.managed": ("refused", "managed_table"),
        f"{DB}.acid": ("refused", "transactional_table"),
        backup: ("refused", "backup_table"),
    }, got
    assert res[f"{DB}.fresh"]["partitions"][0]["status"] == "skipped", res[f"{DB}.fresh"]
    assert res[f"{DB}.single"]["partitions"][0]["status"] == "not_needed", res[f"{DB}.single"]
    for t, words in ((f"{DB}.excluded", "lakekeeper.exclude"), (f"{DB}.replica", "repl.last.id=4711"),
                     (f"{DB}.managed", "MANAGED"), (f"{DB}.acid", "transactional"), (backup, "backup of")):
        assert words in res[t]["reason"] and not res[t]["changed"], res[t]
    assert not any(r["changed"] for r in res.values()), res
    assert not run_failed(list(res.values()))  # refused: reported, the run succeeds (exit code 0)
    assert run_failed(list(res.values()), fail_on_refused=True)  # the strict behaviour, on request
    assert {n: files.snapshot(locs[n]) for n in before} == before
    # the settings the command line gives: --fail-on-refused
    from lakekeeper_spark.args import parse_args

    assert parse_args(["compact", "--table", f"{DB}.acid", "--fail-on-refused"])[1].fail_on_refused is True
    assert parse_args(["compact", "--table", f"{DB}.acid"])[1].fail_on_refused is False

    # A database run (analyze, nothing written) says refused too, no longer "skipped"; backups are not listed.
    db = {r["table"]: r for r in engine.run("analyze", database=DB)}
    assert sorted(db) == sorted(f"{DB}.{n}" for n in names), sorted(db)
    assert {t: db[t]["status"] for t in (f"{DB}.managed", f"{DB}.acid", f"{DB}.replica")} == dict.fromkeys(
        (f"{DB}.managed", f"{DB}.acid", f"{DB}.replica"), "refused"), db
    assert not run_failed(list(db.values()))
    # and the dry run: nothing to do is not_needed there too
    assert engine.one("compact", f"{DB}.single", dry_run=True)["status"] == "not_needed"

    # the run failed only for what it tried and could not finish
    assert run_failed([{"status": "failed"}, {"status": "refused"}])
    assert not run_failed([{"status": s} for s in ("not_needed", "skipped", "locked", "refused", "compacted")])
