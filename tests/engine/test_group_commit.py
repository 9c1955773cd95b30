"""Group commit (``group_commit.py``) and the Metastore writes made with it
(``catalog.PartitionWriter``): writes of threads that arrive while one is
being made go together in the next one; each item gets its own outcome,
and one failing item fails only its own caller."""

from __future__ import annotations

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
    from lakekeeper_spark.group_commit import GroupCommit

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
    from lakekeeper_spark.group_commit import GroupCommit

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
    from lakekeeper_spark.catalog import Catalog

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
