"""Group commit (``group_commit.py``) and the Metastore writes made with it
(``catalog.PartitionWriter``): writes of threads that arrive while one is
being made go together in the next one; each item gets its own outcome,
and one failing item fails only its own caller."""

from __future__ import annotations

import os
import threading
import time

import pytest

from engine_helpers import make_table


def _wait_until(cond, timeout=10.0):
    end = time.time() + timeout
    while not cond():
        if time.time() > end:
            raise AssertionError("timed out")
        time.sleep(0.005)


def test_items_that_arrive_during_a_write_go_together_in_the_next():
    from lakekeeper_spark.storage.group_commit import GroupCommit

    release = threading.Event()
    batches: list[list[str]] = []

    def write(items):
        batches.append(list(items))
        if len(batches) == 1:
            release.wait(10)  # the first write is slow: the others arrive meanwhile
        return [f"wrote {x}" if x != "bad" else ValueError(f"refused {x}") for x in items]

    gc = GroupCommit(write)
    results: dict[str, object] = {}

    def submit(x):
        try:
            results[x] = gc.submit(x)
        except ValueError as exc:
            results[x] = exc

    first = threading.Thread(target=submit, args=("a",))
    first.start()
    _wait_until(lambda: len(batches) == 1)
    others = [threading.Thread(target=submit, args=(x,)) for x in ("b", "bad", "c")]
    for t in others:
        t.start()
    _wait_until(lambda: len(gc._queue) == 3)  # queued behind the write in progress, none written alone
    assert len(batches) == 1
    release.set()
    for t in [first, *others]:
        t.join(10)
    assert batches[0] == ["a"] and sorted(batches[1]) == ["b", "bad", "c"] and gc.batches == 2
    assert results["a"] == "wrote a" and results["b"] == "wrote b" and results["c"] == "wrote c"
    assert isinstance(results["bad"], ValueError) and str(results["bad"]) == "refused bad"
    assert gc.submit("d") == "wrote d" and batches[-1] == ["d"]  # alone: written at once


def test_a_failing_write_fails_every_item_of_its_batch_and_no_other():
    from lakekeeper_spark.storage.group_commit import GroupCommit

    calls = []

    def write(items):
        calls.append(list(items))
        if "boom" in items:
            raise RuntimeError("metastore down")
        return [None] * len(items)

    gc = GroupCommit(write)
    with pytest.raises(RuntimeError, match="metastore down"):
        gc.submit("boom")
    assert gc.submit("ok") is None and calls == [["boom"], ["ok"]]
    with pytest.raises(RuntimeError, match="2 outcomes for 1 items"):
        GroupCommit(lambda items: [None, None]).submit("x")


def test_partition_writer_writes_a_batch_and_isolates_a_dropped_partition(spark, warehouse):
    """Against the real Metastore: two partitions' changes in one call; when
    one of the partitions was dropped meanwhile, the call fails, each change
    is written on its own, and only the dropped one's caller gets an error."""
    from lakekeeper_spark.catalog.catalog import Catalog

    make_table(spark, warehouse, "gc_parts", rows=20, partitions={"a": 1, "b": 1, "c": 1})
    cat = Catalog(spark)
    w = cat.writer("lk", "GC_PARTS")
    assert w is cat.writer("lk", "gc_parts")  # one per table
    raws = {dt: w.read({"dt": dt}) for dt in ("a", "b", "c")}

    def mark(raw, value):
        return (w._hive.changed(raw, params=raw.parameters().updated("lk_test", value)), False)

    assert w._write([mark(raws["a"], "1"), mark(raws["b"], "1")]) == [None, None]
    assert [cat._map(w.read({"dt": dt}).parameters()).get("lk_test") for dt in "ab"] == ["1", "1"]

    spark.sql("ALTER TABLE lk.gc_parts DROP PARTITION (dt='b')")
    outcomes = w._write([mark(raws["a"], "2"), mark(raws["b"], "2"), mark(raws["c"], "2")])
    assert outcomes[0] is None and outcomes[2] is None and isinstance(outcomes[1], Exception)
    assert [cat._map(w.read({"dt": dt}).parameters()).get("lk_test") for dt in "ac"] == ["2", "2"]
    assert [r["partition"] for r in spark.sql("SHOW PARTITIONS lk.gc_parts").collect()] == ["dt=a", "dt=c"]

    # The catalog's own calls go through the writer: statistics written, and read back as the Metastore keeps
    # them (it counts the files and bytes itself on an alter; the row count is ours).
    stats = cat.set_statistics("lk", "gc_parts", {"dt": "c"}, 1, 1, 17)
    assert stats["numRows"] == "17" and stats["numFiles"] == "1" and stats == cat.statistics("lk", "gc_parts", {"dt": "c"})
    spark.sql("DROP TABLE lk.gc_parts")


def test_a_recent_passing_check_answers_for_later_askers_and_a_failing_one_for_nobody(monkeypatch):
    """``RecentCheck`` (the backup table's existence before each swap): a
    check that passed and began at most ``max_age`` before a thread asked
    answers for it; an older one does not; a failing check is answered to
    its askers and then forgotten, so the next asker checks again."""
    from lakekeeper_spark.storage import group_commit
    from lakekeeper_spark.storage.group_commit import RecentCheck

    clock = [100.0]
    monkeypatch.setattr(group_commit.time, "monotonic", lambda: clock[0])
    answers = iter([True, True, False, True])
    rc = RecentCheck(lambda: next(answers), max_age=1.0)

    def ask_at(t):
        clock[0] = t
        return rc.ask(), rc.checks

    assert ask_at(100.0) == (True, 1)
    assert ask_at(100.9) == (True, 1)  # 0.9 s after the check began: its answer
    assert ask_at(101.05) == (True, 2)  # 1.05 s: a new check
    assert ask_at(101.9) == (True, 2)
    assert ask_at(102.2) == (False, 3)  # the table went away
    assert ask_at(102.3) == (True, 4)  # not answered by the failure, nor by the pass before it


def _hive_calls(spark):
    metrics = spark.sparkContext._jvm.org.apache.spark.metrics.source.HiveCatalogMetrics
    return int(metrics.METRIC_HIVE_CLIENT_CALLS().getCount())


def test_statistics_of_many_partitions_are_written_together(spark, warehouse):
    """``Catalog.set_statistics_many`` against the real Metastore: ten
    partitions read from one listing, written in one alterPartitions, read
    back from one listing (a few client calls, where one at a time takes
    five a partition); the figures are what one-at-a-time reads return,
    Spark's own statistics are kept in step, and a partition that is not
    there gets its own error without failing the others. ``PendingStatistics``
    writes a group once enough units wait, the rest on ``flush``."""
    import types

    from lakekeeper_spark.catalog.catalog import BULK_STORAGE, Catalog
    from lakekeeper_spark.protocol.recovery import PendingStatistics

    spark.sql("DROP TABLE IF EXISTS lk.gc_many")
    spark.sql(f"CREATE EXTERNAL TABLE lk.gc_many (id BIGINT) PARTITIONED BY (dt STRING) STORED AS PARQUET "
              f"LOCATION '{warehouse}/gc_many'")
    days = [f"d{i:02d}" for i in range(12)]
    spark.sql("ALTER TABLE lk.gc_many ADD " + " ".join(f"PARTITION (dt='{d}')" for d in days))
    cat = Catalog(spark)
    w = cat.writer("lk", "gc_many")
    raw = w.read({"dt": "d00"})  # d00 carries Spark's own statistics too: they must follow
    w._write([(w._hive.changed(raw, params=raw.parameters().updated("spark.sql.statistics.totalSize", "5")), False)])
    info = cat.get_table("lk", "gc_many")

    items = [({"dt": d}, 1, 10, 100 + i) for i, d in enumerate(days[:10])] + [({"dt": "gone"}, 1, 10, 7)]
    assert len(items) >= BULK_STORAGE
    before = _hive_calls(spark)
    out = cat.set_statistics_many(info, items)
    calls = _hive_calls(spark) - before
    # the table's partition names first (this catalog has not listed it yet), then two listings and one write;
    # one at a time: 5 a partition, 50 for these ten
    assert calls <= 16, calls
    assert isinstance(out[-1], Exception)
    for (spec, _f, _s, rows), got in zip(items[:10], out[:10]):
        assert got["numRows"] == str(rows) and got == cat.statistics("lk", "gc_many", spec), (spec, got)
    assert out[0]["spark.sql.statistics.numRows"] == "100" and "spark.sql.statistics.numRows" not in out[1]
    assert cat.statistics("lk", "gc_many", {"dt": "d10"}).get("numRows") in (None, "-1", "0")  # not among the items

    # Two partitions: below BULK_STORAGE, read one call each; the same figures.
    out = cat.set_statistics_many(info, [({"dt": "d10"}, 1, 10, 3), ({"dt": "d11"}, 1, 10, 4)])
    assert [o["numRows"] for o in out] == ["3", "4"] and out[1] == cat.statistics("lk", "gc_many", {"dt": "d11"})

    pending = PendingStatistics(types.SimpleNamespace(catalog=cat), info, flush_units=3)
    results = [{"spec": f"dt={d}", "files_after": 1, "bytes_after": 10, "rows_after": 50 + i}
               for i, d in enumerate(days[:4])]
    for d, r in zip(days, results):
        pending.add({"partition": {"dt": d}}, r)
    assert pending.groups == 1 and [r.get("statistics", {}).get("numRows") for r in results] == ["50", "51", "52", None]
    pending.flush()
    assert pending.groups == 2 and results[3]["statistics"]["numRows"] == "53"
    pending.flush()
    assert pending.groups == 2  # nothing waiting: nothing written
    spark.sql("DROP TABLE lk.gc_many")


def test_prefetched_partitions_are_repointed_without_reading_them_again(spark, warehouse):
    """``Catalog.prefetch_partitions`` (a backup table's partitions, read
    right after they are added): one listing, then each ``set_location``
    takes its partition from it once, writing without a read of its own; a
    second change of the same partition reads the Metastore again, so it
    never writes back a stale copy."""
    from lakekeeper_spark.catalog.catalog import Catalog

    spark.sql("DROP TABLE IF EXISTS lk.gc_backup")
    spark.sql(f"CREATE EXTERNAL TABLE lk.gc_backup (id BIGINT) PARTITIONED BY (dt STRING, hr STRING) "
              f"STORED AS PARQUET LOCATION '{warehouse}/gc_backup'")
    specs = [{"dt": "2024-01-0%d" % d, "hr": "09"} for d in range(1, 4)]
    cat = Catalog(spark)
    cat.add_partitions("lk", "gc_backup", [(s, f"{warehouse}/gc_backup/live{i}") for i, s in enumerate(specs)])
    info = cat.get_table("lk", "gc_backup")
    cat.prefetch_partitions(info, "lk", "gc_backup")

    def repoint(spec, where):
        before = _hive_calls(spark)
        cat.set_location("lk", "gc_backup", where, spec)
        return _hive_calls(spark) - before

    first = repoint(specs[0], f"{warehouse}/gc_backup/old0")  # the write alone
    repoint(specs[0], f"{warehouse}/gc_backup/old0a")  # taken once: now read from the Metastore (and its table)
    again = repoint(specs[0], f"{warehouse}/gc_backup/old0b")  # the table known: the read and the write
    assert again == first + 1, (first, again)
    repoint(specs[1], f"{warehouse}/gc_backup/old1")
    got = {spec_text(p): p.location for p in cat.list_partitions(info)}
    assert got["dt=2024-01-01/hr=09"].endswith("/gc_backup/old0b") and got["dt=2024-01-02/hr=09"].endswith("/old1")
    assert got["dt=2024-01-03/hr=09"].endswith("/gc_backup/live2")
    spark.sql("DROP TABLE lk.gc_backup")


def test_backup_partitions_are_repointed_in_groups_and_recovery_finishes_a_group_never_written(spark, warehouse):
    """``backup.PendingRepoints`` (a partitioned table's backup partitions
    after their units' swaps): a group written once ``flush_units`` units
    wait, in a few client calls for the whole group (one at a time: two a
    partition); a partition that cannot be written fails alone and is
    handed back by ``flush``. ``recovery.repoint_swapped`` (a run stopped
    after its units' ``done`` records, before their group): one listing, the
    partitions that do not point at their originals repointed together, the
    others left alone; a second pass finds nothing to do."""
    import types

    from lakekeeper_spark.catalog.backup import PendingRepoints
    from lakekeeper_spark.catalog.catalog import Catalog
    from lakekeeper_spark.storage.fs import HadoopFS
    from lakekeeper_spark.protocol.recovery import repoint_swapped

    spark.sql("DROP TABLE IF EXISTS lk.gc_repoint")
    spark.sql(f"CREATE EXTERNAL TABLE lk.gc_repoint (id BIGINT) PARTITIONED BY (dt STRING) STORED AS PARQUET "
              f"LOCATION '{warehouse}/gc_repoint'")
    days = [f"d{i:02d}" for i in range(12)]
    cat = Catalog(spark)
    cat.add_partitions("lk", "gc_repoint", [({"dt": d}, f"{warehouse}/gc_repoint/dt={d}") for d in days])
    cat.prefetch_partitions(cat.get_table("lk", "gc_repoint"), "lk", "gc_repoint")

    def unit(d):
        return types.SimpleNamespace(spec=f"dt={d}", partition={"dt": d}, old=f"{warehouse}/gc_repoint/.dt={d}.lk_old")

    def locations():
        return {spec_text(p): p.location for p in cat.list_partitions(cat.get_table("lk", "gc_repoint"))}

    pending = PendingRepoints(cat, types.SimpleNamespace(backup_table="lk.gc_repoint"), flush_units=3)
    before = _hive_calls(spark)
    for d in days[:3]:
        pending.add(unit(d))
    calls = _hive_calls(spark) - before
    assert pending.groups == 1 and calls <= 3, calls  # read from the listing; one alterPartitions (and its lookups)
    got = locations()
    assert [got[f"dt={d}"].endswith(f"/.dt={d}.lk_old") for d in days[:4]] == [True, True, True, False], got
    pending.add(unit(days[3]))
    pending.add(types.SimpleNamespace(spec="dt=gone", partition={"dt": "gone"}, old=f"{warehouse}/gc_repoint/x"))
    assert pending.groups == 1  # two waiting
    failed = pending.flush()
    assert pending.groups == 2 and [u.spec for u, _message in failed] == ["dt=gone"], failed
    assert locations()["dt=d03"].endswith("/.dt=d03.lk_old")
    assert pending.flush() == failed and pending.groups == 2  # nothing waiting: nothing written, the failure kept

    # recovery: d00-d03 repointed, d04-d10 recorded done but never repointed, d11 not swapped
    ctx = types.SimpleNamespace(catalog=cat, fs=HadoopFS(spark))
    journal = types.SimpleNamespace(run_id="r1")
    done = [{"spec": f"dt={d}", "partition": {"dt": d}, "old": unit(d).old} for d in days[:11]]
    before = _hive_calls(spark)
    actions = repoint_swapped(ctx, journal, ("lk", "gc_repoint", True), done)
    first = _hive_calls(spark) - before
    assert [a["spec"] for a in actions] == [f"dt={d}" for d in days[4:11]], actions
    assert {a["action"] for a in actions} == {"repointed_backup"}
    got = locations()
    assert all(got[f"dt={d}"].endswith(f"/.dt={d}.lk_old") for d in days[:11]), got
    assert got["dt=d11"].endswith("/gc_repoint/dt=d11")
    before = _hive_calls(spark)
    assert repoint_swapped(ctx, journal, ("lk", "gc_repoint", True), done) == []
    second = _hive_calls(spark) - before  # the backup and its listing alone
    print("recovery client calls", first, second)
    assert first - second <= 3, (first, second)  # seven partitions: one alterPartitions and its lookups
    spark.sql("DROP TABLE lk.gc_repoint")


def spec_text(p):
    return "/".join(f"{k}={v}" for k, v in p.spec.items())


def test_a_hive_table_is_repointed_and_its_statistics_written_through_the_client(spark, warehouse, files):
    """A non-partitioned Hive table (a backup repointed after its swap, a
    table's statistics) is read and written back through the Hive client,
    two Metastore calls, everything else about it kept: its properties, its
    SerDe's, its comment, Hive's and Spark's statistics as written. Spark's
    number of rows is removed when the rows are unknown (Scala 2.12 and 2.13
    spell that differently). A data source table goes through the
    statements, and is repointed all the same."""
    from lakekeeper_spark.catalog.catalog import Catalog

    spark.sql("DROP TABLE IF EXISTS lk.gc_flat")
    spark.sql(f"CREATE EXTERNAL TABLE lk.gc_flat (id BIGINT, s STRING) COMMENT 'kept' STORED AS PARQUET "
              f"LOCATION '{warehouse}/gc_flat/live' TBLPROPERTIES ('team'='ingest', 'parquet.compression'='SNAPPY')")
    spark.sql("ALTER TABLE lk.gc_flat SET SERDEPROPERTIES ('serialization.null.format'='-')")
    spark.sql("INSERT INTO lk.gc_flat VALUES (1, 'a'), (2, NULL)")
    spark.sql("ANALYZE TABLE lk.gc_flat COMPUTE STATISTICS")  # Spark's own figures as well as Hive's
    spark.range(5, 8).selectExpr("id", "CAST(NULL AS STRING) AS s").write.parquet(f"{warehouse}/gc_flat/old")
    cat = Catalog(spark)
    before_info = cat.get_table("lk", "gc_flat")
    assert "spark.sql.statistics.numRows" in cat.statistics("lk", "gc_flat")

    calls = _hive_calls(spark)
    cat.set_location("lk", "gc_flat", f"{warehouse}/gc_flat/old")
    assert _hive_calls(spark) - calls <= 2
    info = cat.get_table("lk", "gc_flat")
    assert info.location.rstrip("/").endswith("/gc_flat/old")
    assert info.properties["team"] == "ingest" and info.properties["parquet.compression"] == "SNAPPY"
    assert info.serde_properties == before_info.serde_properties and info.serde == before_info.serde
    assert info.serde_properties.get("serialization.null.format") == "-"
    assert info.table_type == "EXTERNAL"
    assert spark.sql("DESCRIBE TABLE EXTENDED lk.gc_flat").where("col_name = 'Comment'").first()["data_type"] == "kept"
    assert sorted(r.id for r in spark.table("lk.gc_flat").collect()) == [5, 6, 7]  # the cached relation is gone

    # the figures of the files there (the Metastore counts them again itself on an alter)
    old = warehouse.replace("file://", "") + "/gc_flat/old"
    sizes = [os.path.getsize(os.path.join(old, n)) for n in os.listdir(old) if n.endswith(".parquet")]
    calls = _hive_calls(spark)
    got = cat.set_statistics("lk", "gc_flat", None, len(sizes), sum(sizes), 77)
    assert _hive_calls(spark) - calls <= 3  # read, write, read back (the Metastore counts again)
    assert got["numFiles"] == str(len(sizes)) and got["totalSize"] == str(sum(sizes)) and got["numRows"] == "77", got
    assert got["spark.sql.statistics.totalSize"] == str(sum(sizes)) and got["spark.sql.statistics.numRows"] == "77", got
    got = cat.set_statistics("lk", "gc_flat", None, len(sizes), sum(sizes), None)
    assert got["numRows"] == "-1" and got["spark.sql.statistics.totalSize"] == str(sum(sizes)), got
    assert "spark.sql.statistics.numRows" not in got, got
    assert cat.get_table("lk", "gc_flat").properties["team"] == "ingest"
    assert spark.table("lk.gc_flat").count() == 3
    spark.sql("DROP TABLE lk.gc_flat")

    spark.sql("DROP TABLE IF EXISTS lk.gc_source")
    spark.range(0, 2).write.parquet(f"{warehouse}/gc_source/live")
    spark.sql(f"CREATE TABLE lk.gc_source (id BIGINT) USING parquet LOCATION '{warehouse}/gc_source/live'")
    cat.set_location("lk", "gc_source", f"{warehouse}/gc_flat/old")
    assert cat.get_table("lk", "gc_source").location.rstrip("/").endswith("/gc_flat/old")
    assert spark.table("lk.gc_source").count() == 3
    spark.sql("DROP TABLE lk.gc_source")


def test_a_tables_run_loads_it_from_the_metastore_once(spark, engine, warehouse, monkeypatch):
    """The lease, the compaction and the history record of one table's run
    work on one ``getTable`` (issue 49: the fixed cost before the first job);
    a second run loads it again (nothing is kept between runs)."""
    from lakekeeper_spark.catalog.catalog import Catalog

    make_table(spark, warehouse, "gc_once", rows=40, files=8)
    loads: list[tuple[str, str]] = []
    real = Catalog.get_table

    def counted(self, db, name):
        loads.append((db, name))
        return real(self, db, name)

    monkeypatch.setattr(Catalog, "get_table", counted)
    res = engine.one("compact", "lk.gc_once")
    assert res["status"] == "compacted" and res.get("history_record"), res
    assert loads.count(("lk", "gc_once")) == 1, loads
    res = engine.one("rollback", "lk.gc_once")
    assert res["status"] == "rolled_back" and loads.count(("lk", "gc_once")) == 2, loads
