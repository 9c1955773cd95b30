"""A batch of units written by one scan and one job, and verified by one
read-back (``policy/batching.py`` says which units).

1. One read over all the batch's directories, ``basePath`` the table's
   root, so each row carries its unit's partition values (from the paths,
   as strings: type inference off). The files that read takes are checked
   against the plan, unit by unit (``concurrent_write`` otherwise).
2. One observed checksum over every row: the row's hash as the per-unit
   checksum takes it (``content.row_hash``), then hashed again with the
   unit's partition values (``xxhash64(h, values...)``), so a row that
   lands in another unit changes the total (a sum of the plain hashes would
   not see two rows trade places).
3. ``repartition`` by the partition values, written with ``partitionBy``
   (no sort: planned writes off, concurrent writers on) into the batch's
   hidden root (``layout.batch_root``): each unit's rows in one task, one
   file a unit.
4. One read-back of the batch root, grouped by unit: per unit its rows and
   its plain checksum (what ``content.staged_checksum`` would give for it
   alone) and its share of the folded one. The folded total and the row
   total must be the write's, and the units found those planned, else
   ``content_mismatch`` (the caller then writes the batch's units one by one,
   which names the unit at fault).
5. One rename a unit, from the batch root into its planned staging directory;
   the root (empty by then) is removed. Each unit then goes on as written
   by itself: footer checks, the swap, the journal.

Fault points (the crash tests): ``batch_writing`` before the write,
``batch_reading`` before the read-back, ``batch_renaming`` before the first
rename and ``batch_renaming:after`` right after it.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from functools import reduce
from typing import Any, Callable
from urllib.parse import unquote

from . import content as content_check
from .rewrite import WriteResult, unit_session
from ..compat.jvm import string_list
from ..policy.names import quote_column
from ..policy.planner import batch_read_split
from ..report.errors import LakekeeperError
from ..report.model import TableInfo, Unit
from ..storage.formats import spark_codec_name

log = logging.getLogger(__name__)

_H = "__lk_h"
_F = "__lk_f"


def write_batch(spark: Any, fs: Any, table: TableInfo, units: list[Unit], codec: dict[str, Any], root: str,
                cores: int = 1, step: Callable[[str, str], None] = lambda _s, _w: None,
                alter: Callable[[str], None] = lambda _d: None) -> dict[str, WriteResult]:
    """Write ``units`` (batchable, one codec and layout: ``codec``) through
    ``root`` into their staging directories; returns each unit's
    ``WriteResult`` (by spec), its content figures from the read-back.
    ``cores``: the application's, for the read splits (``batch_read_split``);
    ``step(name, when)``: the fault points; ``alter(dir)``: a test hook
    over each unit's written directory before the read-back. On any error
    the caller removes ``root`` and the staging directories (``discard``)."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    times = [("start", time.monotonic())]
    fmt = table.format or ""
    table_root = (table.location or "").rstrip("/")
    parts = list(units[0].partition or {})
    by_spec = {u.spec: u for u in units}
    s = unit_session(spark)
    s.conf.set("spark.sql.sources.partitionColumnTypeInference.enabled", "false")  # values as the paths spell them
    s.conf.set("spark.sql.files.ignoreCorruptFiles", "false")
    s.conf.set("spark.sql.files.ignoreMissingFiles", "false")
    s.conf.set("spark.sql.files.openCostInBytes", "1")
    splits, split_bytes = batch_read_split([f.size for u in units for f in u.rewrite_files], cores,
                                           _max_split_bytes(s))
    s.conf.set("spark.sql.files.maxPartitionBytes", str(split_bytes))
    s.conf.set("spark.sql.files.minPartitionNum", "1")
    s.conf.set("spark.sql.sources.parallelPartitionDiscovery.threshold", str(max(32, len(units) + 1)))
    s.conf.set("spark.sql.maxConcurrentOutputFileWriters", "64")  # partitionBy without a sort
    s.conf.set("spark.sql.optimizer.plannedWrite.enabled", "false")
    if fmt == "parquet":
        s.conf.set("spark.sql.parquet.writeLegacyFormat", "true" if codec.get("legacy") else "false")
        if codec.get("timestamp_type"):
            s.conf.set("spark.sql.parquet.outputTimestampType", codec["timestamp_type"])
    schema = StructType.fromJson(json.loads(table.data_schema_json))
    data_cols = [f.name for f in schema.fields]
    step("batch_writing", "before")
    df = s.read.schema(schema).option("basePath", table_root).format(fmt).load([u.location.rstrip("/") for u in units])
    if [c.lower() for c in df.columns] != [c.lower() for c in data_cols + parts]:
        raise LakekeeperError("write_failed", f"batch read gave columns {df.columns}, expected {data_cols + parts}")
    _check_read_files(df, by_spec, len(parts))
    times.append(("read planned", time.monotonic()))
    h = content_check.row_hash(df.select(*[F.col(quote_column(c)) for c in data_cols]))
    pcols = [F.col(quote_column(p)) for p in parts]
    df = df.withColumn(_H, h).withColumn(_F, F.xxhash64(F.col(_H), *pcols))
    obs = Observation("lk_batch_" + uuid.uuid4().hex[:12])
    stray = F.sum(F.when(reduce(lambda a, b: a | b, [c.isNull() for c in pcols]), 1).otherwise(0)).alias("stray")
    df = df.observe(obs, F.count(F.lit(1)).alias("rows"), stray, *content_check.slice_sums(F.col(_F), "f_"))
    out = df.drop(_H, _F).repartition(len(units), *pcols)
    writer = out.write.mode("errorifexists").format(fmt).partitionBy(*parts)
    name = spark_codec_name(fmt, codec.get("codec"))
    if name:
        writer = writer.option("compression", name)
    log.info("%s: writing %d units (%d files, %d bytes) in one job into %s as %s/%s, read in %d splits of %d bytes",
             table.full_name, len(units), sum(u.stats.files for u in units), sum(u.stats.bytes for u in units), root,
             fmt, name, splits, split_bytes)
    writer.save(root)
    got = obs.get
    times.append(("written", time.monotonic()))
    if int(got["stray"] or 0):
        raise LakekeeperError("content_mismatch", f"batch: {got['stray']} row(s) read without their unit's values")
    for u in units:
        alter(f"{root}/{u.spec}")  # test hook
    step("batch_reading", "before")
    figures = _read_back(s, fmt, schema, root, parts)
    times.append(("read back", time.monotonic()))
    written_rows, written_sum = int(got["rows"] or 0), content_check.slice_total(got, "f_")
    found_rows = sum(f["rows"] for f in figures.values())
    found_sum = sum(f["folded"] for f in figures.values())
    missing, unknown = sorted(set(by_spec) - set(figures)), sorted(set(figures) - set(by_spec))
    if (found_rows, found_sum) != (written_rows, written_sum) or missing or unknown:
        raise LakekeeperError(
            "content_mismatch",
            f"batch of {len(units)} units: {written_rows} rows with checksum {written_sum} written, {found_rows} "
            f"with {found_sum} read back" + (f"; units missing {missing[:3]}" if missing else "")
            + (f"; units not planned {unknown[:3]}" if unknown else ""))
    step("batch_renaming", "before")
    for n, u in enumerate(units):
        fs.rename(f"{root}/{u.spec}", u.staging)
        if n == 0:
            step("batch_renaming", "after")
    fs.delete(root)
    times.append(("renamed", time.monotonic()))
    log.info("%s: batch of %d units: %s", table.full_name, len(units),
             ", ".join(f"{name} {t - prev:.2f} s" for (_p, prev), (name, t) in zip(times, times[1:])))
    return {spec: WriteResult(rows_source=f["rows"], content={"rows": f["rows"], "content": str(f["plain"])})
            for spec, f in figures.items()}


def _max_split_bytes(s: Any) -> int:
    """The session's ``spark.sql.files.maxPartitionBytes`` (128 MB unless
    set), in bytes: the largest read split a batch asks for."""
    return int(s._jsparkSession.sessionState().conf().filesMaxPartitionBytes())  # pylint: disable=protected-access


def _read_back(s: Any, fmt: str, schema: Any, root: str, parts: list[str]) -> dict[str, dict[str, int]]:
    """The batch root read back in one job, grouped by unit (its spec):
    rows, the plain checksum and the folded one."""
    from pyspark.sql import functions as F

    rb = s.read.schema(schema).option("basePath", root).format(fmt).load(root)
    data = [F.col(quote_column(f.name)) for f in schema.fields]
    pcols = [F.col(quote_column(p)) for p in parts]
    h = content_check.row_hash(rb.select(*data))
    rb = rb.withColumn(_H, h).withColumn(_F, F.xxhash64(F.col(_H), *pcols))
    rows = rb.groupBy(*pcols).agg(F.count(F.lit(1)).alias("rows"), *content_check.slice_sums(F.col(_H), "p_"),
                                  *content_check.slice_sums(F.col(_F), "f_")).collect()
    out = {}
    for r in rows:
        spec = "/".join(f"{p}={r[p]}" for p in parts)
        out[spec] = {"rows": int(r["rows"]), "plain": content_check.slice_total(r, "p_"),
                     "folded": content_check.slice_total(r, "f_")}
    return out


def _check_read_files(df: Any, by_spec: dict[str, Unit], depth: int) -> None:
    """The files the batch's read takes, unit by unit, are the planned ones
    (as ``rewrite._check_read_files`` for one unit)."""
    uris = string_list(df.sparkSession._jvm, df._jdf.inputFiles())
    read: dict[str, set[str]] = {spec: set() for spec in by_spec}
    for uri in uris:
        parent, _sep, name = uri.rstrip("/").rpartition("/")
        spec = unquote("/".join(parent.split("/")[-depth:]))
        read.setdefault(spec, set()).add(unquote(name))
    for spec, names in read.items():
        u = by_spec.get(spec)
        planned = {f.name for f in u.rewrite_files} if u is not None else set()
        if names != planned:
            raise LakekeeperError("concurrent_write", f"{spec}: changed before the batch read it (added "
                                                      f"{sorted(names - planned)[:3]}, removed "
                                                      f"{sorted(planned - names)[:3]}); nothing was swapped")


def discard(fs: Any, root: str, units: list[Unit]) -> None:
    """A failed batch: its root and the staging directories it renamed
    into are removed, so that its units can be written one by one."""
    fs.delete(root)
    for u in units:
        fs.delete(u.staging)
