"""The one seam between the engine and what differs between Spark lines.

The application meets whatever Spark the cluster's ``spark-submit`` has:
Spark 3.3 to 3.5 (Scala 2.12, Parquet 1.12-1.13, Hive client 2.3.9) or
Spark 4 (Scala 2.13, Parquet 1.15+, Hive client 2.3.10). Every use of a
Spark, Scala, Hive or file-format internal goes through one small module
here, per concern, chosen by the running versions (``runtime``):

- ``collections``        Scala <-> Java/Python collections (2.12 vs 2.13)
- ``catalog_internals``  the session catalog and its case classes
- ``hive_client``        Spark's Hive client (partitions without SQL)
- ``file_joins``         joining Parquet/ORC files without decoding
- ``jvm``                JVM classes by their full name, their static methods kept, and the
                         releases of dropped JVM objects in batches (py4j 0.10.9.5-0.10.9.9)

A feature a Spark line cannot support (e.g. joining Parquet pieces without
``ParquetRewriter``) is reported as unavailable with the reason, and the
caller takes the plain path; it never fails a unit.
"""

from __future__ import annotations

import dataclasses
import platform
import re
import sys
import threading
from typing import Any

from .jvm import java_class

SUPPORTED_SPARK = ((3, 3), (4, 99))  # inclusive range of (major, minor) lines
TESTED_SPARK = ("3.3.4", "3.5.8", "4.3.0")


def version_tuple(text: str | None) -> tuple[int, ...]:
    """``"3.5.8"`` -> ``(3, 5, 8)``; leading numbers only (``"2.12.18"``,
    ``"1.13.1 (build ...)"``, ``"3.3.4-SNAPSHOT"``); ``()`` when none."""
    m = re.match(r"\s*(?:[A-Za-z-]+ version )?(\d+(?:\.\d+)*)", text or "")
    return tuple(int(x) for x in m.group(1).split(".")) if m else ()


@dataclasses.dataclass(frozen=True)
class Runtime:
    """The versions the application runs on (reported in the JSON result)."""

    spark: str
    scala: str
    hadoop: str
    hive_client: str | None
    parquet: str | None
    python: str
    python_prefix: str  # sys.prefix: which environment (a packed one unpacks to ./<alias>)

    @property
    def spark_line(self) -> tuple[int, int]:
        v = version_tuple(self.spark) + (0, 0)
        return v[0], v[1]

    @property
    def scala_line(self) -> tuple[int, int]:
        v = version_tuple(self.scala) + (0, 0)
        return v[0], v[1]

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


_LOCK = threading.Lock()
_CACHE: dict[int, Runtime] = {}


def runtime(spark: Any) -> Runtime:
    """The running versions, read once per SparkContext."""
    key = id(spark.sparkContext)
    with _LOCK:
        found = _CACHE.get(key)
    if found is not None:
        return found
    jvm = spark._jvm  # pylint: disable=protected-access
    found = Runtime(
        spark=str(spark.version),
        scala=str(java_class(jvm, "scala.util.Properties").versionNumberString()),
        hadoop=str(java_class(jvm, "org.apache.hadoop.util.VersionInfo").getVersion()),
        hive_client=_optional(lambda: str(java_class(jvm, "org.apache.hive.common.util.HiveVersionInfo").getVersion())),
        parquet=_optional(lambda: ".".join(map(str, version_tuple(
            str(java_class(jvm, "org.apache.parquet.Version").FULL_VERSION))))),
        python=platform.python_version(),
        python_prefix=sys.prefix,
    )
    with _LOCK:
        _CACHE[key] = found
    return found


def _optional(read: Any) -> str | None:
    try:
        return read() or None
    except Exception:  # noqa: BLE001 - a jar that is not on this cluster's classpath
        return None


def unsupported_reason(rt: Runtime) -> str | None:
    """Why the engine refuses to run on this Spark, or None."""
    low, high = SUPPORTED_SPARK
    if not low <= rt.spark_line <= high:
        return (f"Spark {rt.spark} is not supported: lakekeeper runs on Spark "
                f"{low[0]}.{low[1]} to {high[0]}.x (tested: {', '.join(TESTED_SPARK)})")
    return None
