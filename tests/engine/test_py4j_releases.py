"""py4j's releases of JVM objects, a batch at a time (compat/jvm.py
``BatchedReleases``), on the session every engine test uses: ``build_session``
installs it, so the whole engine suite runs with it too. Each py4j line the
Spark lanes bring (0.10.9.5 with Spark 3.3 to 0.10.9.9 with 4.x) runs this
file (scripts/spark_lanes.py)."""
from __future__ import annotations

import gc
import time

import pytest

from lakekeeper_spark.compat.jvm import BatchedReleases, java_class

pytestmark = pytest.mark.integration


def _table(spark):
    """The gateway's table of the JVM objects the Python side holds."""
    return spark.sparkContext._gateway.java_gateway_server.getGateway().getBindings()  # pylint: disable=protected-access


def _drop_paths(spark, count: int) -> None:
    """``count`` JVM objects made and dropped (a ``Path`` each, its name read)."""
    path = java_class(spark._jvm, "org.apache.hadoop.fs.Path")  # pylint: disable=protected-access
    for i in range(count):
        assert path(f"/lk/releases/{i}").getName() == str(i)


def _settled(releases: BatchedReleases, timeout: float = 60) -> None:
    """Until py4j's finalizer thread has taken every full batch."""
    gc.collect()
    deadline = time.monotonic() + timeout
    while releases.pending >= releases.BATCH or releases._asked:  # pylint: disable=protected-access
        assert time.monotonic() < deadline, f"{releases.pending} releases still queued after {timeout} s"
        time.sleep(0.05)


def test_the_session_releases_dropped_jvm_objects_in_batches_and_keeps_the_held_ones(spark):
    releases = BatchedReleases.install(spark)  # the one build_session installed, not a second
    client = spark.sparkContext._gateway._gateway_client  # pylint: disable=protected-access
    assert releases is not None and client.garbage_collect_object.__self__ is releases
    _settled(releases)
    table = _table(spark)
    size, batches = table.size(), releases.batches
    held = java_class(spark._jvm, "org.apache.hadoop.fs.Path")("/lk/releases/held")  # pylint: disable=protected-access
    _drop_paths(spark, 4 * releases.BATCH)
    _settled(releases)
    # every full batch left the gateway's table in one go; what is left is the held object and less than a
    # batch still queued (py4j's own release would have sent 1,024 commands)
    assert releases.batches >= batches + 4
    assert table.size() <= size + 1 + releases.pending
    # an object the Python side still holds was not released with the batches around it
    assert held.getName() == "held"
    assert held.toString() == "/lk/releases/held"


def test_a_batch_the_table_will_not_take_is_released_one_object_at_a_time(spark):
    releases = BatchedReleases.install(spark)
    assert releases is not None
    _settled(releases)

    class Refusing:
        def removeAll(self, _ids):  # noqa: N802 - the Java method's name
            raise RuntimeError("refused")

    table = _table(spark)
    keys, releases._keys = releases._keys, Refusing()  # pylint: disable=protected-access
    try:
        size, batches = table.size(), releases.batches
        _drop_paths(spark, 2 * releases.BATCH)
        _settled(releases)
        assert releases.batches == batches  # no batch was removed at once
        # ... and yet the dropped objects left the table, one py4j release each (2 * 256 made)
        deadline = time.monotonic() + 60
        while table.size() > size + releases.pending:
            assert time.monotonic() < deadline, (table.size(), size, releases.pending)
            time.sleep(0.05)
    finally:
        releases._keys = keys  # pylint: disable=protected-access
