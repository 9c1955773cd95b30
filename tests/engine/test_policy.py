"""Per-table policies (policy.py): a table's ``lakekeeper.*`` properties
override the run's settings for that table.

The pure rules first (no Spark), then one database run on real tables:
a table tagged with its own target size and sort order, one excluded, one
with a typo in its policy, one whose retention keeps more than the run's.
"""

from __future__ import annotations

import json
import time

import pytest

from lakekeeper_spark.policy.config import build_settings
from lakekeeper_spark.report.errors import Refused
from lakekeeper_spark.policy.table_policy import apply_policy, excluded, table_policy

from engine_helpers import frozen, make_table, same_rows


def test_policy_properties_override_the_run_and_nothing_else():
    run = build_settings({"block_size_mb": 64, "mode": "ratio"}, {"older_than": "7d", "sort_by": "a"})
    props = {"owner": "etl", "lakekeeper.Mode": "major", "lakekeeper.target_file_size_mb": "16",
             "lakekeeper.sort_by": "b, c", "lakekeeper.retention.keep_last": "3",
             "lakekeeper.dedupe.keys": "id", "lakekeeper.dedupe.order_by": "ts",
             "lakekeeper.backup_of": "db.t", "lakekeeper.run_id": "x"}  # lakekeeper's own: not a policy
    policy = table_policy(props)
    assert list(policy) == ["lakekeeper.dedupe.keys", "lakekeeper.dedupe.order_by", "lakekeeper.mode",
                            "lakekeeper.retention.keep_last", "lakekeeper.sort_by", "lakekeeper.target_file_size_mb"]
    s = apply_policy(run, policy)
    assert (s.mode, s.target_file_size_mb, s.sort_by, s.keep_last) == ("major", 16.0, ["b", "c"], 3)
    assert (s.dedupe_keys, s.dedupe_order_by) == (["id"], "ts")
    assert (s.block_size_mb, s.older_than_seconds) == (64.0, 7 * 86400)  # the run's, where the table says nothing
    assert (run.mode, run.sort_by, run.keep_last) == ("ratio", ["a"], None)  # the run's own settings untouched
    assert apply_policy(run, {}) is run and not excluded({})
    assert excluded({"lakekeeper.exclude": "TRUE"}) and not excluded({"lakekeeper.exclude": "false"})


@pytest.mark.parametrize("props, match", [
    ({"lakekeeper.target_file_sz_mb": "16"}, "unknown table property lakekeeper.target_file_sz_mb"),
    ({"lakekeeper.mode": "mega"}, "lakekeeper.mode='mega': invalid mode"),
    ({"lakekeeper.retention.older_than": "soon"}, "invalid duration"),
    ({"lakekeeper.dedupe.keys": "id"}, "dedupe needs an ordering column"),
    ({"lakekeeper.exclude": "maybe"}, "true or false"),
])
def test_a_policy_that_does_not_validate_refuses_the_table(props, match):
    with pytest.raises(Refused, match=match) as err:
        apply_policy(build_settings({}, {}), table_policy(props))
    assert err.value.code == "invalid_policy"


@pytest.mark.integration
def test_a_database_run_honours_each_tables_policy(spark, engine, files, warehouse):
    spark.sql("CREATE DATABASE IF NOT EXISTS lkpol")

    def table(name: str, props: dict[str, str], rows: int = 2000) -> str:
        loc = f"{warehouse}/lkpol/{name}"
        spark.sql(f"DROP TABLE IF EXISTS lkpol.{name}")
        tbl = ", ".join(f"'{k}'='{v}'" for k, v in props.items())
        spark.sql(f"CREATE EXTERNAL TABLE lkpol.{name} (id BIGINT, k INT, pad STRING) STORED AS PARQUET "
                  f"LOCATION '{loc}'" + (f" TBLPROPERTIES ({tbl})" if tbl else ""))
        (spark.range(0, rows).selectExpr("id", "CAST(id % 97 AS INT) AS k", "concat(sha2(CAST(id AS STRING), 512), sha2(CAST(-id AS STRING), 512)) AS pad")
         .repartition(24).createOrReplaceTempView("lk_src"))
        spark.sql(f"INSERT INTO lkpol.{name} SELECT * FROM lk_src")
        return loc

    plain = table("plain", {})
    # 24 small files each; only the tagged table needs the MBs its 1 MB target splits into several files
    tagged = table("tagged", {"lakekeeper.target_file_size_mb": "1", "lakekeeper.sort_by": "k DESC",
                              "lakekeeper.retention.keep_last": "1"}, rows=20000)
    excluded_loc = table("excluded", {"lakekeeper.exclude": "true"})
    table("typo", {"lakekeeper.taget_file_size_mb": "1"})
    rows = {n: frozen(spark, f"lkpol.{n}") for n in ("plain", "tagged")}
    untouched = files.snapshot(excluded_loc)

    report = {r["table"]: r for r in engine.run("analyze", database="lkpol")}
    assert report["lkpol.tagged"]["policy"] == {"lakekeeper.retention.keep_last": "1", "lakekeeper.sort_by": "k DESC",
                                                "lakekeeper.target_file_size_mb": "1"}
    assert report["lkpol.excluded"]["excluded"] is True and not report["lkpol.excluded"]["needs_compaction"]
    assert "policy" not in report["lkpol.plain"] and report["lkpol.plain"]["needs_compaction"]
    assert report["lkpol.typo"]["status"] == "refused" and report["lkpol.typo"]["code"] == "invalid_policy"

    res = {r["table"]: r for r in engine.run("compact", database="lkpol")}
    assert res["lkpol.plain"]["status"] == "compacted" and "policy" not in res["lkpol.plain"]
    assert res["lkpol.tagged"]["status"] == "compacted" and res["lkpol.tagged"]["policy"]["lakekeeper.sort_by"] == "k DESC"
    assert (res["lkpol.excluded"]["status"], res["lkpol.excluded"]["code"]) == ("refused", "excluded")
    assert (res["lkpol.typo"]["status"], res["lkpol.typo"]["code"]) == ("refused", "invalid_policy")
    assert "lakekeeper.taget_file_size_mb" in res["lkpol.typo"]["reason"]
    assert files.snapshot(excluded_loc) == untouched
    # the table's 1 MB target against the run's 128 MB: several files, each sorted by k, largest first; the other: one
    assert len(files.data_files(plain)) == 1
    tagged_files = files.data_files(tagged)
    assert len(tagged_files) > 1, tagged_files
    for f in tagged_files:
        ks = [r.k for r in spark.read.parquet(f).select("k").collect()]
        assert ks == sorted(ks, reverse=True) and ks[0] > ks[-1], f
    for name in ("plain", "tagged"):
        spark.sql(f"REFRESH TABLE lkpol.{name}")
        assert same_rows(rows[name], spark.table(f"lkpol.{name}")), name

    # retention: the run keeps nothing older than 0 s, the tagged table keeps its newest backup
    res = {r["table"]: r for r in engine.run("cleanup", database="lkpol", older_than="all")}
    assert res["lkpol.plain"]["status"] == "cleaned", res["lkpol.plain"]
    assert res["lkpol.tagged"]["status"] == "skipped" and len(res["lkpol.tagged"]["kept"]) == 1, res["lkpol.tagged"]
    spark.sql("ALTER TABLE lkpol.tagged UNSET TBLPROPERTIES ('lakekeeper.retention.keep_last')")
    res = engine.one("cleanup", "lkpol.tagged", older_than="all")
    assert res["status"] == "cleaned", res


@pytest.mark.integration
def test_order_and_amoros_properties_on_real_tables(spark, engine, files, warehouse):
    """A table filled the way a pipeline leaves it (one INSERT a partition,
    each its own number of files), one tuned for Amoro (ALTER TABLE ... SET
    TBLPROPERTIES), one Amoro must not optimize: the order asked for is the
    order tables and partitions start in, and Amoro's properties are ours."""
    parts_loc = make_table(spark, warehouse, "ord_parts", rows=60, partitions={"a": 3, "b": 9, "c": 5})
    amoro_loc = make_table(spark, warehouse, "ord_amoro", rows=400, files=12)
    make_table(spark, warehouse, "ord_off", rows=20, files=2)
    spark.sql("ALTER TABLE lk.ord_amoro SET TBLPROPERTIES ('self-optimizing.target-size'='1048576', "
              "'self-optimizing.fragment-ratio'='4', 'self-optimizing.minor.trigger.file-count'='20', "
              "'lakekeeper.min_input_files'='7', 'self-optimizing.group'='etl')")
    spark.sql("ALTER TABLE lk.ord_off SET TBLPROPERTIES ('self-optimizing.enabled'='false')")
    off_files = files.snapshot(f"{warehouse}/ord_off")
    parts, amoro, off = "lk.ord_parts", "lk.ord_amoro", "lk.ord_off"

    # the most files first: partition b (9), c (5), a (3); a table's own lakekeeper.order wins for its partitions
    plan = engine.one("compact", parts, order="files-desc", dry_run=True)
    assert (plan["order"], plan["start_order"]) == ("files-desc", ["dt=b", "dt=c", "dt=a"]), plan
    spark.sql("ALTER TABLE lk.ord_parts SET TBLPROPERTIES ('lakekeeper.order'='files-asc')")
    plan = engine.one("compact", parts, order="files-desc", dry_run=True)
    assert (plan["order"], plan["start_order"]) == ("files-asc", ["dt=a", "dt=c", "dt=b"]), plan
    assert plan["policy"] == {"lakekeeper.order": "files-asc"} and "policy_from" not in plan, plan
    spark.sql("ALTER TABLE lk.ord_parts UNSET TBLPROPERTIES ('lakekeeper.order')")
    # tiering on file:// (no storage policies): partition a, written 40 days ago, is compacted untiered, saying why
    spark.sql("ALTER TABLE lk.ord_parts SET TBLPROPERTIES ('lakekeeper.tier.older_than'='30d', "
              "'lakekeeper.tier.storage_policy'='COLD')")
    then_ms = int((time.time() - 40 * 86400) * 1000)
    for f in files.data_files(f"{parts_loc}/dt=a"):
        files.fs.touch(f, then_ms)

    # the tables, fewest files first: ord_off (2), ord_amoro (12), ord_parts (17); one at a time
    res = engine.run("compact", [parts, amoro, off], order="files-asc", parallelism=1)
    assert [r["table"] for r in res] == [off, amoro, parts], res
    r_off, r_amoro, r_parts = res
    assert (r_off["status"], r_off["code"]) == ("refused", "excluded"), r_off
    assert "self-optimizing.enabled=false" in r_off["reason"] and files.snapshot(f"{warehouse}/ord_off") == off_files
    assert r_parts["status"] == "compacted" and r_parts["start_order"] == ["dt=a", "dt=c", "dt=b"], r_parts
    assert [p["files_after"] for p in r_parts["partitions"]] == [1, 1, 1], r_parts
    tiers = {p["spec"]: p.get("tiering") for p in r_parts["partitions"]}
    assert tiers["dt=b"] is None and tiers["dt=c"] is None and "tiered" not in r_parts, r_parts
    assert "storage_policy" not in tiers["dt=a"] and tiers["dt=a"]["age_days"] >= 39.9, tiers
    assert "not HDFS" in tiers["dt=a"]["not_applied"]["storage_policy"], tiers
    assert r_amoro["status"] == "compacted", r_amoro
    assert r_amoro["policy"] == {"lakekeeper.fragment_ratio": "0.25", "lakekeeper.min_input_files": "7",
                                 "lakekeeper.target_file_size_mb": "1"}, r_amoro  # ours (7) over Amoro's (20)
    assert r_amoro["policy_from"] == {"lakekeeper.fragment_ratio": "self-optimizing.fragment-ratio",
                                      "lakekeeper.target_file_size_mb": "self-optimizing.target-size"}, r_amoro
    assert r_amoro["order"] == "files-asc" and r_parts["history_record"], r_parts
    assert len(files.data_files(amoro_loc)) < 12
    assert [len(files.data_files(f"{parts_loc}/dt={dt}")) for dt in "abc"] == [1, 1, 1]
    record = json.loads(files.read_bytes(r_parts["history_record"]))
    assert record["order"] == "files-asc", record
