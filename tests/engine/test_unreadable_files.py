"""Files Hive reads and Spark skips (``storage/readers.py``): a closed,
complete ``part-....parquet._COPYING_``, as a killed ``hdfs dfs -put``
leaves it. Hive reads it (Hadoop's input formats hide only ``_`` and ``.``
names); Spark's file sources skip it, even named explicitly, so a copy
written and verified through Spark would lose its rows.

* compact: the partition holding one is refused (``unreadable_file``, naming
  the file), its files byte for byte as they were; the other partitions
  compact;
* merge (``--merge-from``): a batch listing one is refused as a whole, and so
  is a merge into a table holding one (its key check cannot see that file's
  keys); once the file is renamed to its final name, the merge takes its rows.
(The rule itself, pure: test_planner.py, ``test_which_names_hive_and_spark_read``.)
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.integration

SCHEMA = "id BIGINT, v STRING, ver INT, op STRING"
DEDUPE = dict(dedupe_keys="id", dedupe_order_by="ver", dedupe_delete_marker="op", dedupe_delete_value="D")


def _table(spark, warehouse: str, name: str) -> tuple[str, str]:
    t, loc = f"lk.{name}", f"{warehouse}/{name}"
    spark.sql(f"DROP TABLE IF EXISTS {t}")
    spark.sql(f"CREATE EXTERNAL TABLE {t} ({SCHEMA}) PARTITIONED BY (dt STRING) STORED AS PARQUET LOCATION '{loc}'")
    for dt, start in (("a", 0), ("b", 1000), ("c", 2000)):
        rows = [(i, f"{dt}{i}", 1, "I") for i in range(start, start + 60)]
        spark.createDataFrame(rows, SCHEMA).repartition(4).createOrReplaceTempView("lk_src")
        spark.sql(f"INSERT INTO {t} PARTITION (dt='{dt}') SELECT * FROM lk_src")
    return t, loc


def _left_by_put(spark, files, scratch: str, rows: list[tuple], schema: str, into: str) -> str:
    """A real Parquet file written by Spark into ``scratch``, then renamed into
    ``into`` with the ``._COPYING_`` suffix, closed and complete: what a killed
    ``hdfs dfs -put part-....parquet <into>/`` leaves. Returns its URI."""
    spark.createDataFrame(rows, schema).coalesce(1).write.mode("overwrite").parquet(scratch)
    (src,) = files.data_files(scratch)
    target = f"{into.rstrip('/')}/{src.rsplit('/', 1)[1]}._COPYING_"
    files.fs.rename(src, target)
    return target


def _hive_count(spark, table: str, dt: str) -> int:
    """Rows of a partition as Hive reads them: through the table's SerDe and
    Hadoop's input format (``convertMetastoreParquet`` off), whose listing
    hides only ``_`` and ``.`` names."""
    s = spark.newSession()
    s.conf.set("spark.sql.hive.convertMetastoreParquet", "false")
    s.sql(f"REFRESH TABLE {table}")
    return s.table(table).where(f"dt = '{dt}'").count()


def _spark_count(spark, table: str, dt: str) -> int:
    spark.sql(f"REFRESH TABLE {table}")
    return spark.table(table).where(f"dt = '{dt}'").count()


def test_a_partition_holding_a_file_spark_skips_is_refused_and_the_others_compact(spark, engine, files, warehouse):
    t, loc = _table(spark, warehouse, "unread_compact")
    copying = _left_by_put(spark, files, f"{warehouse}/unread_compact_put", [(1500 + i, f"put{i}", 1, "I") for i in range(10)],
                           SCHEMA, f"{loc}/dt=b")
    name = copying.rsplit("/", 1)[1]
    # the premise: Hive sees 70 rows in dt=b, Spark 60 (it skips the file, also when it is named)
    assert (_hive_count(spark, t, "b"), _spark_count(spark, t, "b")) == (70, 60)
    assert spark.read.schema(SCHEMA).parquet(copying).count() == 0
    before = {dt: files.snapshot(f"{loc}/dt={dt}") for dt in "abc"}
    names_b = files.names(f"{loc}/dt=b")
    assert name in before["b"] and len(before["b"]) == 5

    dry = engine.one("compact", t, dry_run=True)
    by = {p["spec"]: p for p in dry["partitions"]}
    assert (by["dt=a"]["status"], by["dt=b"]["status"], by["dt=c"]["status"]) == ("planned", "refused", "planned"), dry
    assert by["dt=b"]["code"] == "unreadable_file", by["dt=b"]

    res = engine.one("compact", t)
    by = {p["spec"]: p for p in res["partitions"]}
    assert res["status"] == "compacted" and res["changed"], res
    assert (by["dt=a"]["status"], by["dt=c"]["status"]) == ("compacted", "compacted"), res
    assert by["dt=b"]["status"] == "refused" and by["dt=b"]["code"] == "unreadable_file", by["dt=b"]
    assert name in by["dt=b"]["reason"] and "._COPYING_" in by["dt=b"]["reason"], by["dt=b"]
    assert files.snapshot(f"{loc}/dt=b") == before["b"] and files.names(f"{loc}/dt=b") == names_b  # nothing touched
    assert not [h for h in files.hidden(loc) if "dt=b.lk_" in h], files.hidden(loc)
    assert (_hive_count(spark, t, "b"), _spark_count(spark, t, "b")) == (70, 60)
    assert [_spark_count(spark, t, dt) for dt in "ac"] == [60, 60]
    assert all(len(files.data_files(f"{loc}/dt={dt}")) == 1 for dt in "ac")


def test_a_merge_of_a_batch_or_into_a_table_holding_a_file_spark_skips_is_refused(spark, engine, files, warehouse):
    t, loc = _table(spark, warehouse, "unread_merge")
    batch = f"{warehouse}/unread_merge_batch"
    rows = [(i, f"a{i}-2", 2, "U", "a") for i in range(5)]
    spark.createDataFrame(rows, SCHEMA + ", dt STRING").repartition(2).write.mode("overwrite").parquet(batch)
    put_rows = [(i, f"a{i}-put", 3, "U", "a") for i in range(10, 13)] + [(5000, "new", 1, "I", "a")]
    copying = _left_by_put(spark, files, f"{warehouse}/unread_merge_put", put_rows, SCHEMA + ", dt STRING", batch)
    original = {dt: files.snapshot(f"{loc}/dt={dt}") for dt in "abc"}

    res = engine.one("compact", t, merge_from=batch, **DEDUPE)
    assert res["status"] == "refused" and res["code"] == "unreadable_file" and not res["changed"], res
    assert copying.rsplit("/", 1)[1] in res["reason"] and "the batch directory" in res["reason"], res
    assert {dt: files.snapshot(f"{loc}/dt={dt}") for dt in "abc"} == original
    assert not [h for h in files.hidden(loc) if "lk_" in h or "merged" in h], files.hidden(loc)

    # the batch complete (renamed to its final name), but a partition of the table holding one: refused too
    files.fs.rename(copying, copying[: -len("._COPYING_")])
    in_table = _left_by_put(spark, files, f"{warehouse}/unread_merge_put2", [(2100, "c-put", 1, "I")], SCHEMA,
                            f"{loc}/dt=c")
    original["c"] = files.snapshot(f"{loc}/dt=c")
    res = engine.one("compact", t, merge_from=batch, **DEDUPE)
    assert res["status"] == "refused" and res["code"] == "unreadable_file" and not res["changed"], res
    assert "reads the keys of every partition" in res["reason"] and in_table.rsplit("/", 1)[1] in res["reason"], res
    assert {dt: files.snapshot(f"{loc}/dt={dt}") for dt in "abc"} == original

    # both renamed: the merge takes the rows of the file it could not read before
    files.fs.rename(in_table, in_table[: -len("._COPYING_")])
    res = engine.one("compact", t, merge_from=batch, **DEDUPE)
    by = {p["spec"]: p for p in res["partitions"]}
    assert res["status"] == "compacted" and by["dt=a"]["status"] == "compacted", res
    assert by["dt=a"]["merge"] == {"rows": 9, "inserted": 1, "updated": 8, "deleted": 0, "absent_deletes": 0}, by
    spark.sql(f"REFRESH TABLE {t}")
    got = {r["id"]: r["v"] for r in spark.table(t).where("dt = 'a'").collect()}
    assert len(got) == 61 and got[11] == "a11-put" and got[5000] == "new" and got[3] == "a3-2", got
