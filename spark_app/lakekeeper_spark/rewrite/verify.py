"""Checks on the staged copy before anything is swapped: same rows, same
schema, same format and codec (the unit's own: ``unit_formats``; Parquet:
the same layout and timestamp type; Avro: the same writer schema). Any mismatch stops the unit; the original
directory is never touched before this passes.

A dedupe rewrite changes the rows by design: there the staged copy must hold
exactly the expected number of rows (the input's distinct keys whose latest
version is not a delete) and that many distinct keys (a read of the key
columns only), i.e. one row per surviving key; a row with a NULL key is a key
of its own (NULL keys never match: ``rewrite.null_key``)."""

from __future__ import annotations

import json
import logging
from typing import Any

from ..report.errors import LakekeeperError
from ..storage.formats import data_file_footer, detect_codec, input_format_rows, orc_footer, parquet_footer
from ..storage.fs import HadoopFS
from ..storage.hdfs_checks import verify_erasure_coding
from ..report.model import Listing, TableInfo, Unit
from ..policy.names import quote_column

log = logging.getLogger(__name__)


def _norm_schema(schema_json: str) -> list[tuple[str, str]]:
    from pyspark.sql.types import StructType

    st = StructType.fromJson(json.loads(schema_json))
    return [(f.name.lower(), f.dataType.simpleString()) for f in st.fields]


def verify_staging(
    spark: Any,
    fs: HadoopFS,
    table: TableInfo,
    unit: Unit,
    rows_before: int,
    codec: dict[str, Any],
    keys: tuple[str, ...] = (),
    copied: dict[str, dict[str, Any]] | None = None,
) -> tuple[Listing, int]:
    """Returns the staged listing and the row count of the rewritten files,
    or raises ``LakekeeperError('verification_failed', ...)``. With ``keys``
    (dedupe), ``rows_before`` is the expected row count after deduplication
    and the staged copy must also hold that many distinct keys.

    ``copied``: name -> what ``HadoopFS.copy_file`` returned for files
    copied unchanged into the staging, checked by length and checksum
    (``verify_copies``), the other staged files by rows. Minor mode no
    longer copies: its kept files are moved into the staging by rename
    after this check, right before the swap, and checked there by presence
    and length (``swap.move_kept``; their bytes never move)."""
    staged = fs.list_dir(unit.staging)
    if copied:
        verify_copies(fs, unit, copied)
    if not staged.exists:
        raise LakekeeperError("verification_failed", f"staging directory {unit.staging} is missing")
    if staged.subdirs:
        raise LakekeeperError("verification_failed", f"staging directory has subdirectories {staged.subdirs}")
    if rows_before > 0 and not staged.files:
        raise LakekeeperError("verification_failed", "no files were written")
    verify_erasure_coding(fs, unit, [f.name for f in staged.files])  # HDFS, erasure coding about: the unit's policy
    uris = [f"{unit.staging}/{f.name}" for f in staged.files if f.name not in (copied or {})]
    footers: list[dict[str, Any]] = []
    if table.format in ("parquet", "orc"):
        # File metadata only, one read per file, on the driver (no Spark job
        # that would queue behind other units' tasks): rows, codec, schema.
        footers = [data_file_footer(spark, table.format, u) for u in uris]
        rows_after = sum(f["rows"] for f in footers)
        for uri, f in zip(uris, footers):
            _check_schema(table, f["spark_schema"], uri)
    else:
        rows_after = input_format_rows(spark, table.input_format or "", uris)
    if rows_after != rows_before:
        what = "expected after dedupe" if keys else "before"
        raise LakekeeperError(
            "verification_failed", f"row count mismatch: {rows_before} {what}, {rows_after} in the compacted copy"
        )
    if keys and uris:
        distinct = _distinct_keys(spark, table.format or "", uris, keys)
        if distinct != rows_before:
            raise LakekeeperError(
                "verification_failed",
                f"dedupe: {distinct} distinct keys in the compacted copy, expected {rows_before} (one row per key)")
    if table.format == "parquet" and "legacy" in codec:  # the unit's own layout (None: nothing differs)
        want = "legacy" if codec["legacy"] else "standard"
        for uri, f in zip(uris, footers):
            if f.get("layout") not in (None, want):
                raise LakekeeperError("verification_failed", f"Parquet layout changed: {want} in the unit's files, "
                                                             f"{f.get('layout')} in {uri.rsplit('/', 1)[-1]}")
    if table.format == "parquet" and codec.get("timestamp_type"):  # the unit's own timestamp type
        want = [codec["timestamp_type"]]
        for uri, f in zip(uris, footers):
            if f.get("timestamps") != want:
                raise LakekeeperError("verification_failed", f"Parquet timestamp type changed: {want[0]} in the "
                                                             f"unit's files, {', '.join(f.get('timestamps') or [])} "
                                                             f"in {uri.rsplit('/', 1)[-1]}")
    header = detect_codec(spark, "avro", uris[0]) if uris and table.format == "avro" else {}
    if uris and codec.get("codec") and table.format in ("parquet", "orc", "avro"):
        got = footers[0]["codec"] if footers else header.get("codec")
        if str(got).lower() != str(codec["codec"]).lower():
            raise LakekeeperError(
                "verification_failed", f"codec changed: {codec['codec']} before, {got} in the compacted copy"
            )
    if header and codec.get("schema") and header.get("schema") != codec["schema"]:
        raise LakekeeperError("verification_failed", f"Avro writer schema changed: {codec['schema']} in the unit's "
                                                     f"files, {header.get('schema')} in the compacted copy")
    return staged, rows_after


def verify_copies(fs: HadoopFS, unit: Unit, copied: dict[str, dict[str, Any]]) -> None:
    """Each copied file: present in the staging, the planned length, and the
    same bytes - the filesystem's checksums of original and copy when it has
    them (HDFS), else the copy's MD5 against the MD5 of the bytes read while
    copying (one more read of the copy)."""
    planned = {f.name: f.size for f in unit.listing.files}
    staged = {f.name: f.size for f in fs.list_dir(unit.staging).files}
    for name, info in sorted(copied.items()):
        src, dst = f"{unit.location}/{name}", f"{unit.staging}/{name}"
        if staged.get(name) != planned.get(name) or info.get("length") != planned.get(name):
            raise LakekeeperError("verification_failed", f"copy of {name}: {staged.get(name)} bytes in the "
                                                         f"staging, {planned.get(name)} planned")
        theirs, ours = fs.file_checksum(src), fs.file_checksum(dst)
        if theirs is not None and theirs == ours:
            continue
        if fs.md5(dst) != info.get("md5"):
            raise LakekeeperError("verification_failed", f"copy of {name} differs from the original (checksum)")


def _check_schema(table: TableInfo, file_schema_json: str, uri: str) -> None:
    """The schema Spark reads a staged file with (from its footer) has the
    table's columns and types, in order."""
    want = _norm_schema(table.data_schema_json)
    have = _norm_schema(file_schema_json)
    if want != have:
        raise LakekeeperError("verification_failed",
                              f"schema mismatch: table {want}, compacted file {uri.rsplit('/', 1)[-1]} {have}")


def _distinct_keys(spark: Any, fmt: str, uris: list[str], keys: tuple[str, ...]) -> int:
    """Distinct keys in the staged files, as the dedupe counts them: the
    distinct key tuples without a NULL, plus each row with a NULL key (a
    key of its own: ``rewrite.null_key``). Only the key columns are read."""
    from pyspark.sql import functions as F

    from .rewrite import null_key

    s = spark.newSession()
    cols = [F.col(quote_column(k)) for k in keys]
    row = s.read.format(fmt).load(uris).select(*cols).agg(
        F.countDistinct(*cols).alias("keys"),  # count(DISTINCT ...) leaves out a tuple with a NULL
        F.sum(F.when(null_key(keys), 1).otherwise(0)).alias("nulls")).collect()[0]
    return int(row["keys"] or 0) + int(row["nulls"] or 0)


def kept_rows(spark: Any, table: TableInfo, unit: Unit) -> int | None:
    """Minor mode and a split: the rows of the files the unit keeps (moved
    by rename, never read), from their footers (one metadata read a file on
    the driver), so that the partition's ``numRows`` counts them too; 0 when
    it keeps none, None when their format has no row count in metadata."""
    if not unit.kept_files:
        return 0
    if table.format not in ("parquet", "orc"):
        return None
    footer = parquet_footer if table.format == "parquet" else orc_footer
    base = unit.location.rstrip("/")
    return sum(int(footer(spark, f"{base}/{f.name}")["rows"]) for f in unit.kept_files)
