"""The Spark-version seam (spark_app/lakekeeper_spark/compat): pure parts,
and what the running Spark reports (the engine suite runs on every Spark
lane, so each lane checks its own line)."""

from __future__ import annotations

import sys

import pytest

from lakekeeper_spark.compat import Runtime, runtime, unsupported_reason, version_tuple


@pytest.mark.parametrize("text, expect", [
    ("3.5.8", (3, 5, 8)), ("2.12.18", (2, 12, 18)), ("3.3.4-SNAPSHOT", (3, 3, 4)),
    ("parquet-mr version 1.13.1 (build db41831)", (1, 13, 1)), ("", ()), (None, ()), ("x", ()),
])
def test_version_tuple(text, expect):
    assert version_tuple(text) == expect


def _rt(spark: str, scala: str = "2.12.18") -> Runtime:
    return Runtime(spark=spark, scala=scala, hadoop="3.3.4", hive_client="2.3.9", parquet="1.13.1", python="3.9.18",
                   python_prefix="/opt/python3.9")


@pytest.mark.parametrize("spark, ok", [("2.4.8", False), ("3.2.4", False), ("3.3.0", True), ("3.4.4", True),
                                       ("3.5.8", True), ("4.0.0", True), ("4.3.0", True)])
def test_supported_spark_lines(spark, ok):
    reason = unsupported_reason(_rt(spark))
    assert (reason is None) is ok, reason
    if not ok:
        assert f"Spark {spark} is not supported" in reason and "3.3" in reason


def test_runtime_of_the_running_spark(spark):
    """The running versions as the JSON result reports them; the Scala line
    picks the collection converters (2.13: CollectionConverters, 2.12:
    JavaConverters) and Spark 4 runs on Scala 2.13."""
    import pyspark

    from lakekeeper_spark.compat import collections as scala_collections

    rt = runtime(spark)
    assert rt.spark == pyspark.__version__
    assert rt.spark_line >= (3, 3) and unsupported_reason(rt) is None
    assert rt.scala_line == ((2, 13) if rt.spark_line >= (4, 0) else (2, 12)), rt
    assert version_tuple(rt.hadoop) >= (3, 3) and rt.hive_client and rt.hive_client.startswith("2.3.")
    conv = scala_collections.for_spark(spark)
    assert type(conv).__name__ == ("Scala213" if rt.scala_line >= (2, 13) else "Scala212")
    seq = conv.to_seq(["a", "b"])
    assert [str(x) for x in conv.to_list(seq)] == ["a", "b"]
    assert conv.to_dict(conv.to_map({"k": "v", "x": "y"})) == {"k": "v", "x": "y"}
    odd = {"serialization.null.format": "\\N", "field.delim": "\u0001", "quote": '"', "ü": "日本", "": ""}
    assert conv.to_dict(conv.to_map(odd)) == odd and conv.to_dict(conv.to_map({})) == {}
    assert set(rt.to_dict()) == {"spark", "scala", "hadoop", "hive_client", "parquet", "python", "python_prefix"}
    assert rt.python_prefix == sys.prefix
