"""Helpers shared by the engine tests: file checks through the Hadoop
FileSystem API (so the same test runs on file:// and hdfs://) and a table
factory."""

from __future__ import annotations

import hashlib
from typing import Any


class Files:
    """What the tests need to look at or break on the table's filesystem."""

    def __init__(self, spark: Any):
        from lakekeeper_spark.storage.fs import HadoopFS

        self.spark = spark
        self.fs = HadoopFS(spark)
        from lakekeeper_spark.compat.jvm import java_class

        self._io_utils = java_class(spark._jvm, "org.apache.commons.io.IOUtils")

    def _walk(self, uri: str, rel: str = ""):
        for name, is_dir in sorted(self.fs.list_names(uri)):
            child_rel = f"{rel}/{name}" if rel else name
            yield child_rel, is_dir
            if is_dir:
                yield from self._walk(f"{uri.rstrip('/')}/{name}", child_rel)

    def read_bytes(self, uri: str) -> bytes:
        stream = self.fs.fs(uri).open(self.fs.path(uri))
        try:
            return bytes(self._io_utils.toByteArray(stream))
        finally:
            stream.close()

    def write_bytes(self, uri: str, data: bytes) -> None:
        out = self.fs.fs(uri).create(self.fs.path(uri), True)
        try:
            out.write(bytearray(data))
        finally:
            out.close()

    def snapshot(self, uri: str) -> dict[str, str]:
        """Relative path -> sha256 of every visible data file under ``uri``."""
        out = {}
        for rel, is_dir in self._walk(uri):
            if not is_dir and not any(p.startswith((".", "_")) for p in rel.split("/")):
                out[rel] = hashlib.sha256(self.read_bytes(f"{uri.rstrip('/')}/{rel}")).hexdigest()
        return out

    def hidden(self, uri: str, history: bool = False) -> list[str]:
        """Hidden entries anywhere under ``uri`` (checksum files excepted).
        Without ``history``, a journal directory that holds nothing but the
        table's run history (``<journal dir>/history``, which outlives every
        run by design) is not counted."""
        walked = [(rel, is_dir) for rel, is_dir in self._walk(uri) if not rel.endswith(".crc")]
        out = []
        for rel, is_dir in walked:
            name = rel.rsplit("/", 1)[-1]
            if not name.startswith("."):
                continue
            if not history and is_dir and name.endswith(".lakekeeper"):
                children = [r.rsplit("/", 1)[-1] for r, _d in walked
                            if r.startswith(rel + "/") and "/" not in r[len(rel) + 1:]]
                if children == ["history"]:
                    continue
            out.append(rel)
        return out

    def history_records(self, journal_dir: str) -> list[str]:
        """Names of the run history records of a table (oldest first)."""
        folder = f"{journal_dir.rstrip('/')}/history"
        if not self.fs.exists(folder):
            return []
        return sorted(n for n, is_dir in self.fs.list_names(folder) if not is_dir and n.endswith(".json"))

    def names(self, uri: str) -> list[str]:
        return sorted(n for n, _is_dir in self.fs.list_names(uri))

    def data_files(self, uri: str) -> list[str]:
        return [f"{uri.rstrip('/')}/{f.name}" for f in sorted(self.fs.list_dir(uri).files, key=lambda f: f.name)]

    def mode(self, uri: str) -> int:
        """The permission bits of a file or directory, as the filesystem reports them."""
        return int(self.fs.fs(uri).getFileStatus(self.fs.path(uri)).getPermission().toShort()) & 0o7777

    def rmtree(self, uri: str) -> None:
        self.fs.delete(uri)

    def mkdir(self, uri: str) -> None:
        self.fs.mkdirs(uri)

    def exists(self, uri: str) -> bool:
        return self.fs.exists(uri)


def parent(uri: str) -> str:
    return uri.rstrip("/").rsplit("/", 1)[0]


def make_table(spark, warehouse: str, name: str, fmt: str = "parquet", rows: int = 2000, files: int = 50,
               partitions: dict[str, int] | None = None, props: dict[str, str] | None = None,
               row_format: str = "") -> str:
    """Create EXTERNAL table lk.<name> with small files; returns its location URI.
    ``partitions``: value of ``dt`` -> number of files."""
    loc = f"{warehouse}/{name}"
    spark.sql(f"DROP TABLE IF EXISTS lk.{name}")
    tbl = ""
    if props:
        tbl = "TBLPROPERTIES (" + ", ".join(f"'{k}'='{v}'" for k, v in props.items()) + ")"
    part = "PARTITIONED BY (dt STRING)" if partitions else ""
    spark.sql(
        f"CREATE EXTERNAL TABLE lk.{name} (id BIGINT, name STRING, amount DECIMAL(12,2), ts TIMESTAMP) {part} "
        f"{row_format} STORED AS {fmt} LOCATION '{loc}' {tbl}"
    )
    body = ["id", "concat('name-', id) AS name", "CAST(id * 1.5 AS DECIMAL(12,2)) AS amount",
            "timestamp_seconds(1700000000 + id) AS ts"]
    if partitions:
        start = 0
        for dt, nfiles in partitions.items():
            spark.range(start, start + rows).selectExpr(*body).repartition(nfiles).createOrReplaceTempView("lk_src")
            spark.sql(f"INSERT INTO lk.{name} PARTITION (dt='{dt}') SELECT * FROM lk_src")
            start += rows
    else:
        spark.range(0, rows).selectExpr(*body).repartition(files).createOrReplaceTempView("lk_src")
        spark.sql(f"INSERT INTO lk.{name} SELECT * FROM lk_src")
    return loc


def frozen(spark, table: str):
    """The table's current rows as an in-memory DataFrame (survives later swaps).

    A local checkpoint, taken at once: the rows are kept by the session's
    block manager (memory, else its local disk) with no lineage back to the
    table's files, so a later read of it never sees what a swap put there (a
    lost block fails the read instead). The same rows as collecting them into
    Python and back, exact JVM values and no Python round trip (200,000 rows:
    10 -> 2 CPU seconds, and each comparison with it 21 -> 14)."""
    return spark.table(table).localCheckpoint(eager=True)


def same_rows(left, right) -> bool:
    """The same rows, as multisets (column by position, as ``exceptAll``).

    One aggregation: each row counted +1 on the left and -1 on the right,
    grouped by every column; any group whose counts do not cancel is a row
    one side has more often. The same verdict as ``left.exceptAll(right)``
    and ``right.exceptAll(left)`` both empty (the same grouping, NULLs and
    NaN equal to themselves), in one pass instead of two."""
    from pyspark.sql import functions as F

    cols = [f"c{i}" for i in range(len(left.columns))]
    if len(right.columns) != len(cols):
        return False
    tagged = left.toDF(*cols).withColumn("__side", F.lit(1)).unionAll(
        right.toDF(*cols).withColumn("__side", F.lit(-1)))
    return tagged.groupBy(*cols).agg(F.sum("__side").alias("__n")).where("__n != 0").limit(1).count() == 0
