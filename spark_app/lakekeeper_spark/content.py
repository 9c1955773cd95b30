"""Content verification: what readers will see, not only how many rows.

A row count cannot see a changed value. With ``verify: content`` (the
default) each unit carries an order-independent checksum of its rows as the
table's readers decode them: the row count and the sum (as ``decimal(38,0)``:
exact, no overflow on any Spark line, ANSI mode or not) of a 64-bit hash of
every row. A row's hash covers every data column and, for each, whether it
is NULL, so a NULL that became an empty string (or the string ``\\N``) changes
it; arrays, maps and structs are hashed through their JSON text.

- The source side is computed in the pass that writes the copy: observed
  metrics on the write for Parquet and ORC (no extra scan; after dedupe, so a
  dedupe run is checked against the deduplicated rows), and in the one
  aggregate over the SerDe read that already counted the rows of a text or
  Avro unit.
- The staged side is read back through the reader the unit's readers use:
  the native Parquet/ORC reader with the table's schema, and for text and
  Avro the unit's own SerDe, its properties and table properties (a partition
  keeps its own storage descriptor, copied from the Metastore; a scratch
  EXTERNAL table over the staging directory, ``external.table.purge=false``,
  dropped right after; it is refused as a table to compact meanwhile:
  ``unit_table``, which also serves the rewrite's read of a text/Avro unit).
  That read is what ``content`` costs over ``rows``.

Any difference stops the unit before its swap with ``content_mismatch`` and
both figures. ``verify: rows`` keeps only the metadata checks (row counts
from footers, schema, codec).
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from typing import Any, Iterator

from .errors import LakekeeperError
from .model import TableInfo, Unit
from .names import qualified, quote_column

log = logging.getLogger(__name__)

# The property that marks a scratch table made to read a staged copy back.
SCRATCH_OF_PROPERTY = "lakekeeper.verify_of"
# The visible subdirectory of a staging directory a text/Avro copy is read from.
_READ_DIR = "verify"
_COMPLEX = ("array", "map", "struct")


def row_hash(df: Any) -> Any:
    """A 64-bit hash of each row of ``df``: every column's value and whether
    it is NULL."""
    from pyspark.sql import functions as F

    parts = []
    for field in df.schema.fields:
        col = F.col(quote_column(field.name))
        value = F.to_json(col) if field.dataType.typeName() in _COMPLEX else col
        parts += [value, F.isnull(col)]
    return F.xxhash64(*parts) if parts else F.lit(0)


def metrics(df: Any) -> list[Any]:
    """The checksum's aggregates over ``df`` (for ``agg`` or ``observe``)."""
    from pyspark.sql import functions as F

    return [F.count(F.lit(1)).alias("rows"),
            F.sum(row_hash(df).cast("decimal(38,0)")).alias("content")]


def figures(row: Any) -> dict[str, Any]:
    """``{"rows": int, "content": str}`` from a row (or dict) of ``metrics``."""
    content = row["content"]
    return {"rows": int(row["rows"] or 0), "content": str(int(content)) if content is not None else "0"}


def checksum(df: Any) -> dict[str, Any]:
    """One aggregate pass over ``df``."""
    return figures(df.agg(*metrics(df)).collect()[0])


def compare(expected: dict[str, Any], got: dict[str, Any]) -> None:
    if expected != got:
        raise LakekeeperError(
            "content_mismatch",
            f"the compacted copy does not read back as the original: {expected['rows']} rows with checksum "
            f"{expected['content']} expected, {got['rows']} rows with checksum {got['content']} read back",
        )


def staged_checksum(spark: Any, fs: Any, catalog: Any, table: TableInfo, unit: Unit, run_id: str) -> dict[str, Any]:
    """The checksum of the unit's staging directory, read as the table's
    readers will read it after the swap. Taken right after the write, while
    the staging holds only the rewritten files (minor mode copies the kept
    files in afterwards; those are verified byte for byte)."""
    s = spark.newSession()
    if table.format in ("parquet", "orc"):
        import json

        from pyspark.sql.types import StructType

        schema = StructType.fromJson(json.loads(table.data_schema_json))
        return checksum(s.read.schema(schema).format(table.format).load(unit.staging))
    return _through_serde(s, fs, catalog, table, unit, run_id)


def _through_serde(s: Any, fs: Any, catalog: Any, table: TableInfo, unit: Unit, run_id: str) -> dict[str, Any]:
    """Text and Avro: read through a scratch table over the staged files
    (``unit_table``). Hadoop's input formats skip an input path whose own
    name is hidden, so the staged files are read from a visible
    subdirectory of the (hidden) staging directory, and moved back up
    afterwards; a failure anywhere here fails the unit, whose staging is
    then discarded whole."""
    staging = unit.staging.rstrip("/")
    view = f"{staging}/{_READ_DIR}"
    names = [f.name for f in fs.list_dir(staging).files]
    fs.mkdirs(view)
    for n in names:
        fs.rename(f"{staging}/{n}", f"{view}/{n}")
    try:
        with unit_table(catalog, table, unit, view, run_id, "verify") as name:
            cols = [quote_column(n) for n, _type in table.data_columns]
            return checksum(s.table(qualified(table.db, name)).select(*cols))
    finally:
        for n in names:
            fs.rename(f"{view}/{n}", f"{staging}/{n}")
        fs.delete(view)


@contextlib.contextmanager
def unit_table(catalog: Any, table: TableInfo, unit: Unit, location: str, run_id: str,
               kind: str) -> Iterator[str]:
    """A scratch EXTERNAL clone of a text/Avro table (its SerDe, formats,
    SerDe and table properties, purge disabled, property ``lakekeeper.verify_of``:
    refused as a table to compact meanwhile) over exactly the directory
    ``location``; yields its name (in the table's database), dropped afterwards. For a
    partition, its one partition gets that partition's own storage
    descriptor and parameters straight from the Metastore, so Spark's reader
    layers them over the table's exactly as for the real partition.

    Reading it reads that directory and nothing else: never a filter on the
    partition's values, which a sibling partition may share (``hour=9`` and
    ``hour=09`` of an INT column cast to one value). Used for the unit's
    source (``kind`` ``source``, over its live directory) and for its staged
    copy (``verify``)."""
    name = f"__lk_{kind}_{table.name[:60]}_{uuid.uuid4().hex[:12]}".lower()
    catalog.create_clone(table, table.db, name, location, {SCRATCH_OF_PROPERTY: table.full_name,
                                                           "lakekeeper.run_id": run_id})
    try:
        if table.is_partitioned:  # the partition's own descriptor, as the Metastore holds it
            catalog.add_partitions(table.db, name, [(unit.partition or {}, location)])
            catalog.copy_partition_storage(table.db, table.name, name, unit.partition or {}, location)
        yield name
    finally:
        try:
            catalog.drop_table(table.db, name)
        except Exception:  # noqa: BLE001 - a leftover scratch table is refused as a table and changes nothing
            log.warning("could not drop the scratch table %s.%s", table.db, name, exc_info=True)
