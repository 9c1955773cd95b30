"""Content verification: what readers will see, not only how many rows.

A row count cannot see a changed value. With ``verify: content`` (the
default) each unit carries an order-independent checksum of its rows as the
table's readers decode them: the row count and the exact sum of a 64-bit
hash of every row. Spark adds the hash in three slices of 22, 21 and 21 bits
as ``bigint`` sums (``_SLICES``; no overflow below 2^42 rows a unit, on any
Spark line, ANSI mode or not) and the driver puts them together: the same
number a ``decimal(38,0)`` sum gives, without the decimal arithmetic per row
that cost about as much again as the read itself. A row's hash covers every data column and, for each, whether it
is NULL, so a NULL that became an empty string (or the string ``\\N``) changes
it; arrays, maps and structs are hashed through their JSON text, with
timestamps at full (microsecond) precision (``JSON_OPTIONS``; the default
JSON format stops at milliseconds); a float or double zero's sign counts
(-0.0 is not 0.0); every NaN hashes alike, as Spark compares them.

The checksum sees values as Spark decodes them, in microseconds: what a
file holds that Spark cannot carry (nanoseconds in Parquet INT96, ORC and
text timestamps) is not in it, and is refused before the write instead
(``values``: ``unsupported_values``).

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
  ``UnitTable``, the same one the rewrite read the unit's directory
  through). That read is what ``content`` costs over ``rows``.

Any difference stops the unit before its swap with ``content_mismatch`` and
both figures. ``verify: rows`` keeps only the metadata checks (row counts
from footers, schema, codec).
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from ..report.errors import LakekeeperError
from ..report.model import TableInfo, Unit
from ..policy.names import qualified, quote_column
from ..storage.layout import SCRATCH_OF_PROPERTY

log = logging.getLogger(__name__)

# The visible subdirectory of a staging directory a text/Avro copy is read from.
_READ_DIR = "verify"
_COMPLEX = ("array", "map", "struct")


def row_hash(df: Any) -> Any:
    """A 64-bit hash of each row of ``df``: every column's value and whether
    it is NULL. Its arguments are SQL text (one gateway call however wide
    the table; built from ``Column`` objects it was four calls a column, in
    the write pass and again in the read-back, the driver's largest gateway
    cost on a table of many small partitions)."""
    from pyspark.sql import functions as F

    fields = df.schema.fields
    if not fields:
        return F.lit(0)
    # Each column's arguments: its value (arrays, maps and structs: their JSON
    # text, timestamps in microseconds: JSON_OPTIONS), whether it is NULL, and
    # for float/double the sign of a zero (xxhash64 hashes -0.0 as 0.0; NaN
    # stays as Spark hashes it: every NaN alike). Written inline so that the
    # SQL review (tests/security/test_sql_review.py) sees every name quoted.
    json_options = ("map('timestampFormat', 'yyyy-MM-dd HH:mm:ss.SSSSSSXXX', "
                    "'timestampNTZFormat', 'yyyy-MM-dd HH:mm:ss.SSSSSS')")
    args = ", ".join(
        f"to_json({quote_column(f.name)}, {json_options}), isnull({quote_column(f.name)})"
        if f.dataType.typeName() in _COMPLEX else
        f"{quote_column(f.name)}, isnull({quote_column(f.name)}), "
        f"if({quote_column(f.name)} = 0, cast({quote_column(f.name)} AS string), '')"
        if f.dataType.typeName() in ("float", "double") else
        f"{quote_column(f.name)}, isnull({quote_column(f.name)})"
        for f in fields)
    return F.expr(f"xxhash64({args})")


# Options of to_json that keep a nested timestamp whole: its default format
# stops at milliseconds. Spark keeps microseconds, so six digits are all of it.
# (row_hash spells the same options as SQL text.)
JSON_OPTIONS = {"timestampFormat": "yyyy-MM-dd HH:mm:ss.SSSSSSXXX", "timestampNTZFormat": "yyyy-MM-dd HH:mm:ss.SSSSSS"}


# A hash h is h_hi * 2^42 + h_mid * 2^21 + h_lo, with h_hi the signed top 22
# bits and the others unsigned 21-bit slices: each slice's sum over n rows
# stays under n * 2^21, inside a bigint for any n below 2^42.
_SLICES = (("content_hi", 42), ("content_mid", 21), ("content_lo", 0))
_SLICE_MASK = (1 << 21) - 1


def metrics(df: Any) -> list[Any]:
    """The checksum's aggregates over ``df`` (for ``agg`` or ``observe``):
    the row count and the hash's sum in slices (``figures`` joins them)."""
    from pyspark.sql import functions as F

    return [F.count(F.lit(1)).alias("rows"), *slice_sums(row_hash(df))]


def slice_sums(h: Any, prefix: str = "") -> list[Any]:
    """The sum of a 64-bit hash column ``h`` in the checksum's slices, as
    aggregates named ``<prefix>content_hi`` ... (``slice_total`` joins them):
    the checksum's own (``metrics``) and the batch's (``rewrite/batch.py``),
    over hashes it made itself."""
    from pyspark.sql import functions as F

    out = []
    for name, shift in _SLICES:
        part = F.shiftright(h, shift) if shift else h
        out.append(F.sum(part if name == "content_hi" else part.bitwiseAND(F.lit(_SLICE_MASK))).alias(prefix + name))
    return out


def slice_total(row: Any, prefix: str = "") -> int:
    """The exact sum ``slice_sums`` took, from a row (or dict) of them."""
    return sum(int(row[prefix + name] or 0) << shift for name, shift in _SLICES)


def figures(row: Any) -> dict[str, Any]:
    """``{"rows": int, "content": str}`` from a row (or dict) of ``metrics``:
    the exact sum of the rows' hashes (``"0"`` for no rows)."""
    return {"rows": int(row["rows"] or 0), "content": str(slice_total(row))}


def checksum(df: Any) -> dict[str, Any]:
    """One pass over ``df``: the checksum's aggregates observed on the way
    to Spark's ``noop`` sink. That is one Spark job without a shuffle; an
    aggregate collected to the driver is two under adaptive execution (its
    partial stage, then the final one), a job more per unit verified."""
    from pyspark.sql import Observation

    obs = Observation("lk_checksum_" + uuid.uuid4().hex[:12])
    df.observe(obs, *metrics(df)).write.format("noop").mode("overwrite").save()
    return figures(obs.get)


def compare(expected: dict[str, Any], got: dict[str, Any]) -> None:
    if expected != got:
        raise LakekeeperError(
            "content_mismatch",
            f"the compacted copy does not read back as the original: {expected['rows']} rows with checksum "
            f"{expected['content']} expected, {got['rows']} rows with checksum {got['content']} read back",
        )


def staged_checksum(spark: Any, fs: Any, catalog: Any, table: TableInfo, unit: Unit, run_id: str,
                    scratch: UnitTable | None = None) -> dict[str, Any]:
    """The checksum of the unit's staging directory, read as the table's
    readers will read it after the swap. Taken right after the write, while
    the staging holds only the rewritten files (minor mode copies the kept
    files in afterwards; those are verified byte for byte). ``scratch``: the
    unit's scratch table (``UnitTable``) the rewrite read its source
    through, re-pointed here (else one is made for this read)."""
    s = spark.newSession()
    if table.format in ("parquet", "orc"):
        import json

        from pyspark.sql.types import StructType

        schema = StructType.fromJson(json.loads(table.data_schema_json))
        return checksum(s.read.schema(schema).format(table.format).load(unit.staging))
    own = scratch is None
    scratch = scratch or UnitTable(catalog, table, unit, run_id)
    try:
        return _through_serde(s, fs, table, unit, scratch)
    finally:
        if own:
            scratch.close()


def _through_serde(s: Any, fs: Any, table: TableInfo, unit: Unit, scratch: UnitTable) -> dict[str, Any]:
    """Text and Avro: read through the unit's scratch table over the staged
    files. Hadoop's input formats skip an input path whose own name is
    hidden, so the staged files are read from a visible subdirectory of the
    (hidden) staging directory, and moved back up afterwards; a failure
    anywhere here fails the unit, whose staging is then discarded whole."""
    staging = unit.staging.rstrip("/")
    view = f"{staging}/{_READ_DIR}"
    names = [f.name for f in fs.list_dir(staging).files]
    fs.mkdirs(view)
    for n in names:
        fs.rename(f"{staging}/{n}", f"{view}/{n}")
    try:
        name = scratch.over(view)
        cols = [quote_column(n) for n, _type in table.data_columns]
        return checksum(s.table(qualified(table.db, name)).select(*cols))
    finally:
        for n in names:
            fs.rename(f"{view}/{n}", f"{staging}/{n}")
        fs.delete(view)


class UnitTable:
    """A scratch EXTERNAL clone of a text/Avro table (its SerDe, formats,
    SerDe and table properties, purge disabled, property
    ``lakekeeper.verify_of``: refused as a table to compact meanwhile) over
    exactly one directory at a time (``over``), dropped by ``close``. For a
    partition, its one partition gets that partition's own storage
    descriptor and parameters straight from the Metastore, so Spark's reader
    layers them over the table's exactly as for the real partition.

    Reading it reads that directory and nothing else: never a filter on the
    partition's values, which a sibling partition may share (``hour=9`` and
    ``hour=09`` of an INT column cast to one value). One per unit: the
    rewrite reads the unit's live directory through it, the verification
    its staged copy (the partition re-pointed: two Metastore calls instead
    of a second table)."""

    def __init__(self, catalog: Any, table: TableInfo, unit: Unit, run_id: str):
        self.catalog, self.table, self.unit, self.run_id = catalog, table, unit, run_id
        self.name: str | None = None

    def over(self, location: str) -> str:
        """The scratch table (its name, in the table's database) over ``location``."""
        t, spec = self.table, self.unit.partition or {}
        if self.name is None:
            name = f"__lk_verify_{t.name[:60]}_{uuid.uuid4().hex[:12]}".lower()
            self.catalog.create_clone(t, t.db, name, location, {SCRATCH_OF_PROPERTY: t.full_name,
                                                                "lakekeeper.run_id": self.run_id})
            self.name = name
            if t.is_partitioned:  # the partition's own descriptor, as the Metastore holds it
                self.catalog.add_partitions(t.db, name, [(spec, location)])
                self.catalog.copy_partition_storage(t.db, t.name, name, spec, location)
        elif t.is_partitioned:
            self.catalog.set_location(t.db, self.name, location, spec)
        else:
            self.catalog.set_location(t.db, self.name, location)
        return self.name

    def close(self) -> None:
        if self.name is None:
            return
        try:
            self.catalog.drop_table(self.table.db, self.name)
        except Exception:  # noqa: BLE001 - a leftover scratch table is refused as a table and changes nothing
            log.warning("could not drop the scratch table %s.%s", self.table.db, self.name, exc_info=True)
        self.name = None
