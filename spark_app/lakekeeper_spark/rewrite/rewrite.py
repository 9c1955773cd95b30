"""Writing the compacted copy of one unit into its hidden staging directory.

Parquet and ORC: read exactly the planned files with Spark's native readers
and let the scan pack them into splits of the target size, so each read task
writes one output file: one read, one write, no shuffle and no ``coalesce``
(which would collapse read parallelism). When a unit's files are fewer than
the task slots it can use (one 64 MB file on two cores), each file is
written as several pieces by parallel tasks and the pieces are then joined
without decoding (``join_pieces``: ORC stripes, Parquet row groups copied
behind one footer), so the encoding, the costly part, uses every slot.
Text and Avro: read through the
table's Hive SerDe (each partition through its own descriptor, as readers
read it, from a scratch table over exactly its directory: never a filter on
its values, which a sibling partition may share) and write with the unit's own SerDe, formats and codec via
``INSERT OVERWRITE DIRECTORY``, repartitioned to the target file count, with
every property its readers' SerDe is initialised with (SerDe properties,
table properties, a partition's own; ``formats.reader_properties``).

``sort_by``: each write task sorts its own rows (``sortWithinPartitions``,
``SORT BY`` on the SerDe path), so every output file is sorted and no global
shuffle is added. ``sort_by: zorder(a, b)`` (Parquet and ORC): the rows are
range-partitioned by their z-value into the planned number of files and
sorted by it in each (``zorder.py``, which says what the extra passes cost). ``dedupe`` (parquet and ORC; NULL keys never match:
``null_key``): a column-pruned read of the
key, ordering and marker columns counts rows, keys and deletes (and sizes the
output by the rows that survive); the rewrite hash-partitions the rows by key
into that many files, keeps the latest version of each key (deletes dropped)
and observes the same counts in its own pass, plus ties; both must agree
before verification checks the staged copy against them.
"""

from __future__ import annotations

import dataclasses
import uuid
import logging
from typing import Any

from .columns import RewriteColumns
from .zorder import zorder as zorder_rows
from . import content as content_check
from ..policy.config import Settings, sort_key
from ..report.errors import LakekeeperError
from ..compat.file_joins import join_files, join_support
from ..compat.jvm import string_list
from ..protocol.faults import write_with_table_descriptor
from ..storage.formats import reader_properties, spark_codec_name
from ..report.model import TableInfo, Unit
from ..policy.names import qualified, quote_column, sql_path_literal, sql_string_literal
from ..policy.planner import DedupeCounts, WriteLayout, group_pieces, read_paths, target_file_count, write_layout

log = logging.getLogger(__name__)


@dataclasses.dataclass
class WriteResult:
    rows_source: int  # rows of the unit's data before compaction
    # dedupe only: distinct keys of the input, and how many of them end in a delete
    keys_source: int | None = None
    deletes: int | None = None
    # what this Spark could not do for the unit and did the plain way instead
    notes: list[str] = dataclasses.field(default_factory=list)
    # verify "content": {"rows", "content"} of the rows written (content.py),
    # from the write's own pass; None with verify "rows"
    content: dict[str, Any] | None = None

    @property
    def rows_expected(self) -> int:
        """Rows the staged copy must hold."""
        if self.keys_source is None:
            return self.rows_source
        return self.keys_source - (self.deletes or 0)


def unit_session(spark: Any) -> Any:
    """A child session: its own SQL conf (split sizes, codecs) over the shared
    SparkContext and catalog, so concurrent units cannot disturb each other."""
    s = spark.newSession()
    s.conf.set("mapreduce.fileoutputcommitter.marksuccessfuljobs", "false")
    s.conf.set("spark.sql.sources.partitionOverwriteMode", "static")
    return s


def write_staging(
    spark: Any, fs: Any, table: TableInfo, unit: Unit, settings: Settings, codec: dict[str, Any],
    columns: RewriteColumns | None = None, slots: int = 1, scratch: Any = None, batch: Any = None,
    into_existing: bool = False,
) -> WriteResult:
    """The compacted copy of ``unit`` in its staging directory, written with
    ``codec``: the codec (and Parquet layout, Avro writer schema) of the
    unit's own files (``unit_formats``). ``slots``: the task slots this unit
    can count on (the application's cores shared by the units that run at
    the same time). ``scratch``: the unit's ``content.UnitTable``, which a
    text or Avro partition is read through. ``batch`` (merge mode, with
    dedupe): ``batch(session)`` gives the batch rows of this unit, added to
    its own rows before the dedupe; ``batch.bytes`` (if set) estimates their
    size, which sizes the output with the unit's own bytes.
    ``into_existing``: the staging directory was made beforehand, empty
    (``hdfs_checks.prepare_staging``: given its erasure coding policy), and
    the copy is written into it (Parquet and ORC only)."""
    fmt = table.format
    columns = columns or RewriteColumns()
    if batch is not None and not columns.dedupe:
        raise ValueError("a merge needs dedupe columns")
    if fmt in ("parquet", "orc"):
        return _write_native(spark, fs, table, unit, settings, codec, columns, slots, batch, into_existing)
    if batch is not None:
        raise ValueError(f"merge is not supported for {fmt}")
    if columns.dedupe:
        raise ValueError(f"dedupe is not supported for {fmt}")
    if fmt in ("text", "avro"):
        return _write_hive_serde(spark, table, unit, codec, _serde_source(table, unit, scratch), columns.sort_by,
                                 settings.verify == "content")
    raise ValueError(f"unsupported format {fmt}")


def _cols(names: Any) -> list[Any]:
    from pyspark.sql import functions as F

    return [F.col(quote_column(n)) for n in names]


def _sort_cols(sort_by: Any) -> list[Any]:
    """sort_by items (``col`` or ``col desc``) as sort expressions."""
    from pyspark.sql import functions as F

    return [F.col(quote_column(c)).desc() if desc else F.col(quote_column(c)) for c, desc in map(sort_key, sort_by)]


def is_deleted(columns: RewriteColumns) -> Any:
    """True for a row that is a delete marker (never NULL)."""
    from pyspark.sql import functions as F

    if columns.delete_marker is None:
        return F.lit(False)
    marker = F.col(quote_column(columns.delete_marker))
    if columns.delete_value is None:
        return F.coalesce(marker, F.lit(False))
    return F.coalesce(marker.cast("string") == F.lit(columns.delete_value), F.lit(False))


def null_key(keys: Any) -> Any:
    """True for a row with a NULL in any of the ``keys`` columns (never
    NULL itself). NULL keys never match, as in SQL: such a row is a key of
    its own, never deduplicated against another row (not even an identical
    one) and never matched by a batch row; a batch row with a NULL key is
    inserted. A delete marker with a NULL key deletes nothing and, like every
    delete marker, is not kept."""
    from functools import reduce

    from pyspark.sql import functions as F

    return reduce(lambda a, b: a | b, [F.col(quote_column(k)).isNull() for k in keys])


def key_present(keys: Any) -> Any:
    """The opposite of ``null_key``: every one of the ``keys`` columns is set."""
    from functools import reduce

    from pyspark.sql import functions as F

    return reduce(lambda a, b: a & b, [F.col(quote_column(k)).isNotNull() for k in keys])


def _dedupe_aggregate(df: Any, columns: RewriteColumns, group: tuple[str, ...] = ()) -> Any:
    """Rows, distinct keys and keys whose latest version is a delete (per
    ``group`` column, if any), from the key, ordering and marker columns
    only (a column-pruned read). A row with a NULL key counts as a key of
    its own (``null_key``)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    by = [F.col(g) for g in group]
    w = Window.partitionBy(*by, *_cols(columns.keys)).orderBy(F.col(quote_column(columns.order_by or "")).desc_nulls_last())
    first = (F.row_number().over(w) == 1) | null_key(columns.keys)
    ranked = (df.select(*by, *_cols(columns.dedupe_columns))
              .select(*by, first.alias("first"), is_deleted(columns).alias("deleted")))
    metrics = [F.count(F.lit(1)).alias("rows"),
               F.sum(F.when(F.col("first"), 1).otherwise(0)).alias("keys"),
               F.sum(F.when(F.col("first") & F.col("deleted"), 1).otherwise(0)).alias("deletes")]
    return ranked.groupBy(*by).agg(*metrics) if group else ranked.agg(*metrics)


def _dedupe_counts(df: Any, columns: RewriteColumns) -> dict[str, int]:
    """Rows, distinct keys and keys whose latest version is a delete, from
    the key, ordering and marker columns only (a column-pruned read). Sizes
    the output by the rows that survive, so a second run finds files of the
    target size instead of compacting again."""
    row = _dedupe_aggregate(df, columns).collect()[0]
    return {k: int(row[k] or 0) for k in ("rows", "keys", "deletes")}


# Units measured by one job of dedupe_counts_by_unit (a union of their reads).
MEASURE_BATCH = 200


def dedupe_counts_by_unit(spark: Any, table: TableInfo, units: list[Unit],
                          columns: RewriteColumns) -> dict[str, DedupeCounts]:
    """Each unit's rows, distinct keys and deleted keys (``planner.DedupeCounts``,
    by unit spec), counted as the rewrite's dedupe counts them: one
    column-pruned read of the key, ordering and marker columns of all the
    units' files, grouped by unit (one job per ``MEASURE_BATCH`` units).
    Parquet and ORC only (as dedupe)."""
    import json
    from functools import reduce

    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    s = unit_session(spark)
    s.conf.set("spark.sql.files.ignoreCorruptFiles", "false")
    s.conf.set("spark.sql.files.ignoreMissingFiles", "false")
    most = max((len(u.listing.files) for u in units), default=0)
    s.conf.set("spark.sql.sources.parallelPartitionDiscovery.threshold", str(max(32, most + 1)))
    schema = StructType.fromJson(json.loads(table.data_schema_json))
    out: dict[str, DedupeCounts] = {}
    for start in range(0, len(units), MEASURE_BATCH):
        batch = units[start:start + MEASURE_BATCH]
        reads = [s.read.schema(schema).format(table.format).load([f"{u.location.rstrip('/')}/{f.name}" for f in u.listing.files])
                 .select(F.lit(i).alias("__lk_unit"), *_cols(columns.dedupe_columns))
                 for i, u in enumerate(batch)]
        df = reduce(lambda a, b: a.unionByName(b), reads)
        got = {int(r["__lk_unit"]): r for r in _dedupe_aggregate(df, columns, ("__lk_unit",)).collect()}
        for i, u in enumerate(batch):
            r = got.get(i)  # no row: the unit's files hold no rows
            out[u.spec] = DedupeCounts(*(int(r[k] or 0) if r is not None else 0 for k in ("rows", "keys", "deletes")))
    return out


def _dedupe(df: Any, columns: RewriteColumns, files: int, obs: Any) -> Any:
    """The latest version of each key, deletes dropped; a row with a NULL
    key is a key of its own (``null_key``: kept as it is, never a tie).
    ``obs`` observes, in the same pass, the input rows, distinct keys, keys
    whose latest version is a delete, and ties on the ordering column. One
    shuffle: by key into ``files`` partitions, which the window reuses, so
    each output file holds whole keys."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    keys = _cols(columns.keys)
    order = F.col(quote_column(columns.order_by or ""))
    # NULL ordering values count as the oldest version.
    w = Window.partitionBy(*keys).orderBy(order.desc_nulls_last())
    # Rows of one key with the same ordering value: identical rows are one
    # version (kept once); rows that differ make the latest version ambiguous.
    same = Window.partitionBy(*keys, order)
    row = F.to_json(F.struct(*_cols(df.columns)), content_check.JSON_OPTIONS)  # timestamps in microseconds
    deleted = is_deleted(columns)
    ranked = (df.repartition(max(1, files), *keys)
              .withColumn("__lk_nk", null_key(columns.keys))
              .withColumn("__lk_rn", F.when(F.col("__lk_nk"), F.lit(1)).otherwise(F.row_number().over(w)))
              .withColumn("__lk_tie", (F.col("__lk_rn") == 1) & ~F.col("__lk_nk")
                          & (F.min(row).over(same) != F.max(row).over(same)))
              .withColumn("__lk_del", deleted))
    first = F.col("__lk_rn") == 1
    metrics = [
        F.count(F.lit(1)).alias("rows"),
        F.sum(F.when(first, 1).otherwise(0)).alias("keys"),
        F.sum(F.when(first & F.col("__lk_del"), 1).otherwise(0)).alias("deletes"),
        F.sum(F.when(F.col("__lk_tie"), 1).otherwise(0)).alias("ties"),
    ]
    ranked = ranked.observe(obs, *metrics)
    return ranked.where(first & ~F.col("__lk_del")).drop("__lk_nk", "__lk_rn", "__lk_tie", "__lk_del")


def _write_native(spark: Any, fs: Any, table: TableInfo, unit: Unit, settings: Settings, codec: dict[str, Any],
                  columns: RewriteColumns, slots: int = 1, batch: Any = None,
                  into_existing: bool = False) -> WriteResult:
    from pyspark.sql import Observation
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType
    import json

    fmt = table.format
    s = unit_session(spark)
    # Pack whole files into read splits sized so that each read task writes
    # one file of about the target size. With minPartitionNum=1 Spark does
    # not shrink splits to spread small inputs over all cores, so the number
    # of read tasks (= output files) follows the data size; the split size
    # accounts for the bytes the merged rows no longer need (per-file
    # footers and indexes, see formats.payload_fraction) and is the smallest
    # with which Spark's packing makes that many files (even files). Sorted
    # and deduplicated files are written whole: joined pieces would not be
    # one sorted run, and dedupe's files come from its own shuffle.
    pieces_ok = not columns.sorted and not columns.dedupe
    sizes = [f.size for f in unit.rewrite_files]
    payload = float(codec.get("payload_fraction") or 1.0)
    # a file above max_file_size_mb (planner.split_rule) is cut into files of about the target size
    split_bound = settings.max_file_bytes if unit.decision.split else 0
    layout = write_layout(sizes, settings.target_file_bytes, payload, slots if pieces_ok else 1,
                          settings.min_piece_bytes, split_bound)
    notes = []
    if layout.pieces > 1:
        joinable, why = join_support(spark, fmt)
        if not joinable:  # this Spark cannot join pieces: whole files, one task each
            layout = write_layout(sizes, settings.target_file_bytes, payload, 1, settings.min_piece_bytes,
                                  split_bound)
            notes.append(f"not written in pieces: {why}")
    s.conf.set("spark.sql.files.maxPartitionBytes", str(layout.split_bytes))
    s.conf.set("spark.sql.files.openCostInBytes", "1")
    s.conf.set("spark.sql.files.minPartitionNum", "1")
    s.conf.set("spark.sql.files.ignoreCorruptFiles", "false")
    # The planned files are given one by one; above this threshold Spark
    # would launch a distributed job just to stat them again (profiled: the
    # largest fixed cost of a 1,000-file unit). Statted on the driver instead.
    s.conf.set("spark.sql.sources.parallelPartitionDiscovery.threshold", str(max(32, len(unit.rewrite_files) + 1)))
    s.conf.set("spark.sql.files.ignoreMissingFiles", "false")
    if fmt == "parquet":
        s.conf.set("spark.sql.parquet.writeLegacyFormat", "true" if codec.get("legacy") else "false")
        if codec.get("timestamp_type"):  # the unit's own physical type (unit_formats); a session conf, not an
            # option: ParquetFileFormat.prepareWrite sets it from the session's SQL conf over any writer option
            s.conf.set("spark.sql.parquet.outputTimestampType", codec["timestamp_type"])
    schema = StructType.fromJson(json.loads(table.data_schema_json))
    paths = read_paths(unit)  # the directory when every file there is rewritten; minor: the fragments by name
    obs = Observation("lk_" + uuid.uuid4().hex[:12])
    df = s.read.schema(schema).format(fmt).load(paths) if paths else s.createDataFrame([], schema)
    if paths and paths[0] == unit.location.rstrip("/"):
        _check_read_files(df, unit)
    if batch is not None:  # merge: the batch's rows of this unit next to its own
        df = df.unionByName(batch(s))
    merged_input = df
    before: dict[str, int] = {}
    if columns.dedupe:
        before = _dedupe_counts(df, columns)
        kept = before["keys"] - before["deletes"]
        share = kept / before["rows"] if before["rows"] else 0.0
        # merge: the batch's bytes for this unit count too (``batch.bytes``, an estimate)
        extra = int(getattr(batch, "bytes", 0) or 0) if batch is not None else 0
        files = max(1, target_file_count(int((unit.stats.bytes + extra) * share), settings.target_file_bytes))
        df = _dedupe(df, columns, files, obs)
    else:
        if columns.zorder:  # range-partitioned into the planned files by z-value (zorder.py), sorted in each
            types = {n.lower(): t for n, t in table.data_columns}
            df = zorder_rows(df, [(c, types[c.lower()]) for c in columns.zorder], layout.files)
        # observed after the z-order's range shuffle: its sampling job runs the plan below the shuffle again
        df = df.observe(obs, *(content_check.metrics(df) if settings.verify == "content"
                               else [F.count(F.lit(1)).alias("rows")]))
    kept_obs = None
    if columns.dedupe and settings.verify == "content":  # the checksum of the rows the dedupe keeps
        kept_obs = Observation("lk_" + uuid.uuid4().hex[:12])
        df = df.observe(kept_obs, *content_check.metrics(df))
    if columns.sort_by:
        df = df.sortWithinPartitions(*_sort_cols(columns.sort_by))
    writer = df.write.mode("append" if into_existing else "errorifexists").format(fmt)
    name = spark_codec_name(fmt, codec.get("codec"))
    if name:
        writer = writer.option("compression", name)
    log.info("%s: writing %d files (%d bytes) into %s as %s/%s, about %d file(s)%s from read splits of %d bytes",
             unit.spec or table.full_name, unit.stats.files, unit.stats.bytes, unit.staging, fmt, name,
             layout.files, f" in {layout.pieces} pieces each" if layout.pieces > 1 else "", layout.split_bytes)
    writer.save(unit.staging)
    if layout.pieces > 1:
        join_pieces(spark, fs, fmt, unit.staging, layout)
    # The write pass itself counts what it read from exactly the planned
    # files (corrupt or vanished files fail the job instead of being
    # skipped), so no separate counting pass over the source is needed.
    got = obs.get
    rows = int(got["rows"])
    if not columns.dedupe:
        return WriteResult(rows_source=rows, notes=notes,
                           content=content_check.figures(got) if settings.verify == "content" else None)
    result = WriteResult(rows_source=rows, keys_source=int(got["keys"] or 0), deletes=int(got["deletes"] or 0),
                         notes=notes, content=content_check.figures(kept_obs.get) if kept_obs is not None else None)
    if batch is not None and kept_obs is not None:
        expected = _expected_merge(merged_input, columns)
        if expected is not None and expected != result.content:
            raise LakekeeperError(
                "verification_failed",
                f"merge: the rows written {result.content} are not the expected merged content {expected} (the "
                f"latest version of each key of the original and batch rows, deletes dropped)")
    ties = int(got["ties"] or 0)
    if ties:
        raise LakekeeperError(
            "dedupe_tie",
            f"dedupe: {ties} key(s) have two or more different rows with the same latest {columns.order_by}; "
            f"which one is the latest version is ambiguous, so the partition is not rewritten")
    seen = {"rows": rows, "keys": result.keys_source, "deletes": result.deletes}
    if seen != before:  # the files changed between the two reads, or a reader disagrees with itself
        raise LakekeeperError("verification_failed",
                              f"dedupe: the counting read saw {before}, the rewrite saw {seen}")
    log.info("%s: dedupe read %d rows, %d keys, %d deleted", unit.spec or table.full_name, rows,
             result.keys_source, result.deletes)
    return result


def _check_read_files(df: Any, unit: Unit) -> None:
    """A directory read (``planner.read_paths``) takes the files its listing
    found when the read was built (the scan uses that listing): they must be
    the planned ones. A file that came and went again before the check
    before the swap would otherwise be in the copy without being in either
    listing that check compares."""
    from urllib.parse import unquote

    uris = string_list(df.sparkSession._jvm, df._jdf.inputFiles())  # one gateway call, not two per file
    read = {unquote(uri.rstrip("/").rsplit("/", 1)[-1]) for uri in uris}
    planned = {f.name for f in unit.rewrite_files}
    if read != planned:
        added, removed = sorted(read - planned), sorted(planned - read)
        raise LakekeeperError("concurrent_write", f"{unit.location} changed before it was read (added {added[:3]}, "
                                                  f"removed {removed[:3]}); nothing was swapped")


def _expected_merge(df: Any, columns: RewriteColumns) -> dict[str, Any] | None:
    """The content checksum (content.py) of the expected result of a merge,
    computed independently of the rewrite's window: per key the greatest
    ``struct(order, other columns)`` (a NULL order is the oldest), each row
    with a NULL key as it is (``null_key``), deletes dropped. None when a
    column cannot be compared (maps)."""
    from pyspark.sql import functions as F

    if any(f.dataType.simpleString().startswith("map") or "map<" in f.dataType.simpleString() for f in df.schema.fields):
        return None
    keys = {k.lower() for k in columns.keys}
    order = columns.order_by or ""
    rest = [c for c in df.columns if c.lower() not in keys and c.lower() != order.lower()]
    best = df.where(key_present(columns.keys)).groupBy(*_cols(columns.keys)).agg(
        F.max(F.struct(F.col(quote_column(order)).alias("__lk_o"), *_cols(rest))).alias("__lk_best"))
    latest = best.select(*[F.col(quote_column(c)) if c.lower() in keys else
                           (F.col("__lk_best.__lk_o").alias(c) if c.lower() == order.lower()
                            else F.col("__lk_best." + quote_column(c)).alias(c)) for c in df.columns])
    kept = latest.unionByName(df.where(null_key(columns.keys))).where(~is_deleted(columns))
    return content_check.checksum(kept)


def join_pieces(spark: Any, fs: Any, fmt: str, staging: str, layout: WriteLayout) -> None:
    """Join the pieces a write left in ``staging`` into ``layout.files``
    files of about equal size (``planner.group_pieces``), each by copying
    the pieces' stripes or row groups behind one footer
    (``compat.file_joins.join_files``). A joined file is written under a hidden
    name, its pieces deleted, then it is renamed to its first piece's name;
    a failure anywhere leaves only the staging directory to discard, and
    verification counts the rows of what is there."""
    pieces = sorted(fs.list_dir(staging).files, key=lambda f: f.name)  # data files: hidden names excluded
    base = staging.rstrip("/")
    groups = group_pieces([f.size for f in pieces], layout.files)
    for group in groups:
        first = pieces[group[0]].name
        if len(group) == 1:
            continue
        inputs = [f"{base}/{pieces[i].name}" for i in group]
        hidden = f"{base}/.{first}.joining"
        join_files(spark, fmt, inputs, hidden)
        for uri in inputs:
            fs.delete(uri, recursive=False)
        fs.rename(hidden, f"{base}/{first}")
    log.info("%s: joined %d pieces into %d file(s)", staging, len(pieces), len(groups))


def _serde_source(table: TableInfo, unit: Unit, scratch: Any) -> str:
    """The table (in the table's database) to read a text/Avro unit from:
    the table itself when it is not partitioned (its directory is the
    unit), else the unit's scratch table over exactly the partition's
    directory with its own descriptor (``content.UnitTable``). Never the
    table filtered on the partition's values: ``hour = '09'`` on an INT
    column also selects ``hour=9``, a sibling partition whose rows would be
    written into this one."""
    if not table.is_partitioned:
        return table.name
    if scratch is None:
        raise ValueError("a partition of a text or Avro table is read through its scratch table")
    return scratch.over(unit.location)


def _write_hive_serde(spark: Any, table: TableInfo, unit: Unit, codec: dict[str, Any], source: str,
                      sort_by: tuple[str, ...] = (), with_content: bool = True) -> WriteResult:
    """``source``: the table (in the table's database) holding exactly the unit's rows (``_serde_source``)."""
    s = unit_session(spark)
    c = codec.get("codec")
    if table.format == "text":
        s.conf.set("hive.exec.compress.output", "true" if c else "false")
        if c:
            s.conf.set("mapreduce.output.fileoutputformat.compress.codec", c)
    else:  # avro
        compressed = bool(c and c != "null")
        s.conf.set("hive.exec.compress.output", "true" if compressed else "false")
        if compressed:
            s.conf.set("avro.output.codec", c)
    cols = [quote_column(n) for n, _type in table.data_columns]
    src = s.table(qualified(table.db, source)).select(*cols)
    # Text and Avro have no row counts in metadata: one aggregate pass counts
    # the rows (and with verify "content" takes their checksum on the way).
    content = content_check.checksum(src) if with_content else None
    rows_source = content["rows"] if content is not None else int(src.count())
    view = "lk_unit_source"
    src.createOrReplaceTempView(view)
    # The unit's own descriptor: a partition keeps the SerDe, formats and
    # properties it was created with; every property its readers' SerDe is
    # initialised with (table properties too, e.g. serialization.null.format,
    # serialization.encoding) goes onto the write, layered as they layer it.
    storage = None if write_with_table_descriptor() else unit.storage  # test hook: the table's instead
    desc = storage or table
    props = reader_properties(table, storage)
    if table.format == "avro":
        # The Avro SerDe names records after the output; give it the writer
        # schema of the existing files so the new files carry the same one.
        props["avro.schema.literal"] = codec["schema"]
    prop_sql = ", ".join(f"{sql_string_literal(k)}={sql_string_literal(v)}" for k, v in sorted(props.items()))
    n = max(1, unit.decision.target_files)
    # SORT BY sorts the rows of each write task, after the repartition: every file is sorted.
    sort_sql = ", ".join(quote_column(c) + (" DESC" if desc else "") for c, desc in map(sort_key, sort_by))
    sort_clause = f" SORT BY {sort_sql}" if sort_by else ""
    log.info("%s: writing %d files into %s through %s (%s descriptor)", unit.spec or table.full_name,
             unit.stats.files, unit.staging, desc.serde, "its own" if storage is not None else "the table's")
    s.sql(
        f"INSERT OVERWRITE DIRECTORY {sql_path_literal(unit.staging)} "
        f"ROW FORMAT SERDE {sql_string_literal(desc.serde or '')} WITH SERDEPROPERTIES ({prop_sql}) "
        f"STORED AS INPUTFORMAT {sql_string_literal(desc.input_format or '')} "
        f"OUTPUTFORMAT {sql_string_literal(desc.output_format or '')} "
        f"SELECT /*+ REPARTITION({n}) */ {', '.join(cols)} FROM {view}{sort_clause}"
    )
    s.catalog.dropTempView(view)
    return WriteResult(rows_source=rows_source, content=content)
