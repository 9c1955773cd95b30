"""Merge mode of compact (``--merge-from``): the batch's I/O.

- ``prepare_merge``: locate the batch (a directory URI, or a non-partitioned
  table whose directory is read), refuse a batch or a table holding a file
  Hive reads and Spark skips (``unreadable_file``, ``storage.readers``: the
  batch would merge without its rows, the key check would not see its
  keys), take its identity, check its columns, route its rows to the
  table's partitions (one aggregate), refuse keys that would move between
  partitions (one more job: the batch's latest version of each key against
  a keys-only read of every partition of the table), and set the
  decisions: the partitions the batch touches are rewritten, the others
  left alone. Partitions a run already merged this batch into (the
  applied-batch record) are skipped.
- ``batch_rows``: the batch rows of one unit, read by the rewrite next to
  the unit's own files (the dedupe then keeps the latest version of each key).
- the applied-batch record (after the swaps, or by recovery, from the run's
  journal, the partitions merged are added to the batch's record in the
  table's journal directory): protocol/merge_record.py.

Pure rules: policy/merge_rules.py.
"""

from __future__ import annotations

import dataclasses
import logging
from functools import reduce
from typing import Any

from .columns import RewriteColumns
from ..catalog.context import Context
from ..report.errors import Refused
from ..protocol.merge_record import load_record, record_dir
from ..policy.merge_rules import (BATCH_EMPTY, BATCH_LAYOUT, BATCH_SCHEMA, BatchPart, Routing, apply_merge_decisions,
                                  applied_specs, batch_identity, check_batch_schema, moved_keys_refusal, record_name, route,
                                  spec_string)
from ..report.model import FileEntry, TableInfo, TablePlan
from ..storage.readers import UNREADABLE_FILE, unreadable_files, unreadable_reason
from ..policy.names import quote_column

log = logging.getLogger(__name__)

SPEC = "__lk_spec"
# Units whose keys one job of the moved-key check reads (a union of their reads).
KEY_READ_BATCH = 200


@dataclasses.dataclass
class MergePlan:
    source: str  # the batch directory (qualified)
    fmt: str
    files: list[FileEntry]
    identity: str
    record_uri: str
    routing: Routing
    partition_columns: list[str]
    batch_rows: int

    def unit_rows(self, info: TableInfo, spec: str, partition: dict[str, str] | None) -> "BatchRows":
        """What the rewrite of the unit ``spec`` reads of the batch."""
        part = self.routing.todo.get(spec)
        share = part.rows / self.batch_rows if part is not None and self.batch_rows else 0.0
        return BatchRows(self, info, partition, int(sum(f.size for f in self.files) * share))

    def paths(self) -> list[str]:
        return [f"{self.source.rstrip('/')}/{f.name}" for f in self.files]

    def journal_doc(self) -> dict[str, Any]:
        return {"identity": self.identity, "source": self.source, "record": self.record_uri,
                "files": [list(f.key()) for f in self.files]}

    def result(self) -> dict[str, Any]:
        return {"source": self.source, "identity": self.identity, "record": self.record_uri,
                "batch_rows": self.batch_rows, "already_applied": list(self.routing.already),
                "partitions": {s: p.to_dict() for s, p in sorted(self.routing.todo.items())}}


def _source(ctx: Context, info: TableInfo) -> tuple[str, str]:
    """(qualified directory, format) of ``--merge-from``."""
    text = str(ctx.settings.merge_from or "").strip()
    if "://" in text or text.startswith("/"):
        return ctx.fs.qualify(text), info.format or ""
    db, _sep, name = text.partition(".")
    if not db or not name:
        raise Refused(BATCH_LAYOUT, f"merge_from {text!r} is neither a directory URI nor a db.table name")
    b = ctx.catalog.get_table(db, name)
    if b.is_partitioned or not b.location:
        raise Refused(BATCH_LAYOUT, f"the batch table {text} is partitioned or has no location: give a "
                                    f"non-partitioned table (its one directory is the batch) or a directory URI")
    if b.format != info.format:
        raise Refused(BATCH_LAYOUT, f"the batch table {text} is {b.format}, {info.full_name} is {info.format}")
    return ctx.fs.qualify(b.location), b.format or ""


def _spec_column(partition_columns: list[str]) -> Any:
    """The partition spec text of each batch row (NULL when a value is), as
    ``merge_rules.spec_string`` spells it: the label of a row in Spark jobs."""
    from pyspark.sql import functions as F

    if not partition_columns:
        return F.lit("")
    parts: list[Any] = []
    for i, c in enumerate(partition_columns):
        parts += ([F.lit("/")] if i else []) + [F.lit(f"{c}="), F.col(quote_column(c)).cast("string")]
    return F.concat(*parts)


def _read_batch(session: Any, plan: MergePlan) -> Any:
    return session.read.format(plan.fmt).load(plan.paths()).withColumn(SPEC, _spec_column(plan.partition_columns))


def batch_rows(session: Any, plan: MergePlan, info: TableInfo, partition: dict[str, str] | None) -> Any:
    """The batch's rows for the unit of ``partition`` (its values as the
    catalog has them; None: a non-partitioned table), as the table's data
    columns. A filter on each partition column's text (as routed: its spec
    is ``spec_string`` of these values), which the reader can push down."""
    from pyspark.sql import functions as F

    df = session.read.format(plan.fmt).load(plan.paths())
    for c in plan.partition_columns:
        df = df.where(F.col(quote_column(c)).cast("string") == F.lit((partition or {})[c]))
    return df.select(*[F.col(quote_column(n)) for n, _t in info.data_columns])


@dataclasses.dataclass
class BatchRows:
    """``rewrite.write_staging``'s ``batch``: called with the unit's session,
    the batch rows of one unit; ``bytes``: their share of the batch's bytes
    (by rows), which sizes the output."""

    plan: MergePlan
    info: TableInfo
    partition: dict[str, str] | None
    bytes: int

    def __call__(self, session: Any) -> Any:
        return batch_rows(session, self.plan, self.info, self.partition)


def prepare_merge(ctx: Context, info: TableInfo, p: TablePlan, columns: RewriteColumns) -> MergePlan:
    from pyspark.sql import functions as F

    full = info.full_name
    source, fmt = _source(ctx, info)
    if source.rstrip("/") == (info.location or "").rstrip("/") or source.startswith((info.location or "").rstrip("/") + "/"):
        raise Refused(BATCH_LAYOUT, f"the batch {source} is inside {full}'s own location")
    listing = ctx.fs.list_dir(source)
    if not listing.exists:
        raise Refused(BATCH_LAYOUT, f"the batch directory {source} does not exist")
    if listing.subdirs:
        raise Refused(BATCH_LAYOUT, f"the batch directory {source} has subdirectories ({', '.join(listing.subdirs[:3])}): "
                                    f"a batch is a flat directory of data files, partition columns as ordinary columns")
    files = sorted(listing.files, key=lambda f: f.name)
    unreadable = unreadable_files([f.name for f in files])
    if unreadable:  # read through Spark, the batch would merge without their rows
        raise Refused(UNREADABLE_FILE, f"{full}: " + unreadable_reason(f"the batch directory {source}", unreadable,
                                                                       "nothing was merged"))
    refused = [u for u in p.units if u.decision.code == UNREADABLE_FILE]
    if refused:  # the moved-key check reads every partition's keys: it would not see theirs
        raise Refused(UNREADABLE_FILE, f"{full}: a merge reads the keys of every partition, and {len(refused)} "
                                       f"partition(s) cannot be read whole: {refused[0].decision.reason}")
    identity = batch_identity(source, files)
    record_uri = f"{record_dir(p.journal_dir)}/{record_name(identity)}"
    pcols = [c for c, _t in info.partition_columns]
    if not files:
        raise Refused(BATCH_EMPTY, f"the batch directory {source} holds no data files; nothing to merge")
    plan = MergePlan(source, fmt, files, identity, record_uri, Routing({}, []), pcols, 0)
    record = load_record(ctx.fs, record_dir(p.journal_dir), identity)
    batch = _read_batch(ctx.spark, plan)
    why = check_batch_schema(info.data_columns + info.partition_columns,
                             [(f.name, f.dataType.simpleString()) for f in batch.schema.fields if f.name != SPEC])
    if why:
        raise Refused(BATCH_SCHEMA, f"{full}: the batch {source} does not have the table's columns: {why}; nothing was merged")
    by_values = [F.col(quote_column(c)).cast("string").alias(c) for c in pcols]
    counts: dict[str | None, int] = {}
    for r in batch.groupBy(*by_values).agg(F.count(F.lit(1)).alias("__lk_rows")).collect():
        spec = spec_string(pcols, [r[c] for c in pcols])
        counts[spec] = counts.get(spec, 0) + int(r["__lk_rows"])
    plan.batch_rows = sum(counts.values())
    routing = route(counts, [u.spec for u in p.units], applied_specs(record), full)
    plan.routing = routing
    if routing.todo:
        batch = batch.where(F.col(SPEC).isin(list(routing.todo)))
        routing.todo = _key_check(ctx, info, p, batch, columns, routing)
    apply_merge_decisions(p.units, routing)
    log.info("%s: batch %s (%s, %d rows): %d partition(s) to merge, %d merged before", full, source, identity,
             plan.batch_rows, len(routing.todo), len(routing.already))
    return plan


def _key_check(ctx: Context, info: TableInfo, p: TablePlan, batch: Any, columns: RewriteColumns,
               routing: Routing) -> dict[str, BatchPart]:
    """Refuse keys that would move between partitions; else what the batch
    does to each partition (inserted / updated / deleted keys). NULL keys
    never match (``rewrite.null_key``): a batch row with a NULL key is a key
    of its own, inserted (a delete marker: an absent delete), never present
    in a partition nor moved; a table row with a NULL key matches no batch
    row."""
    import json as _json

    from pyspark.sql import Window
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    from .rewrite import is_deleted, key_present, null_key

    keys = list(columns.keys)
    kcols = [F.col(quote_column(k)) for k in keys]
    order = F.col(quote_column(columns.order_by or ""))
    # the batch's latest version of each key (across its partitions), and in how many partitions it has the key
    w = Window.partitionBy(*kcols).orderBy(F.col("__lk_o").desc_nulls_last())
    ranked = (batch.where(key_present(keys))
              .select(F.col(SPEC), *kcols, is_deleted(columns).alias("__lk_del"), order.alias("__lk_o"))
              .withColumn("__lk_n", F.size(F.collect_set(F.col(SPEC)).over(Window.partitionBy(*kcols))))
              .withColumn("__lk_rn", F.row_number().over(w)))
    latest = ranked.where(F.col("__lk_rn") == 1).drop("__lk_rn", "__lk_o").cache()
    hits_all = None
    try:
        dup = latest.where(F.col("__lk_n") > 1)
        in_batch = dup.count()
        samples = [", ".join(f"{k}={r[k]}" for k in keys) for r in dup.limit(3).collect()]
        # a keys-only read of every unit of the table that has files, labelled with its spec
        s = ctx.spark.newSession()
        s.conf.set("spark.sql.files.ignoreMissingFiles", "false")
        schema = StructType.fromJson(_json.loads(info.data_schema_json))
        units = [u for u in p.units if u.listing.exists and u.listing.files]
        found = []
        renamed = [F.col(quote_column(k)).alias(f"__lk_k{i}") for i, k in enumerate(keys)]
        for start in range(0, len(units), KEY_READ_BATCH):
            chunk = units[start:start + KEY_READ_BATCH]
            reads = [s.read.schema(schema).format(info.format).load([f"{u.location.rstrip('/')}/{f.name}" for f in u.listing.files])
                     .select(F.lit(u.spec).alias("__lk_tspec"), *renamed) for u in chunk]
            table_keys = reduce(lambda a, b: a.unionByName(b), reads)
            cond = reduce(lambda a, b: a & b, [latest[quote_column(k)] == table_keys[f"__lk_k{i}"]  # NULL: no match
                                               for i, k in enumerate(keys)])
            hits = table_keys.join(F.broadcast(latest), cond, "inner").select(
                F.col(SPEC), F.col("__lk_tspec"), F.col("__lk_del"), *[F.col(quote_column(k)) for k in keys])
            found.append(hits.groupBy(SPEC, *[quote_column(k) for k in keys]).agg(
                F.max(F.when(F.col("__lk_tspec") != F.col(SPEC), 1).otherwise(0)).alias("moved"),
                F.max(F.when(F.col("__lk_tspec") == F.col(SPEC), 1).otherwise(0)).alias("present")))
        hits_all = reduce(lambda a, b: a.unionByName(b), found) if found else None
        if hits_all is not None:
            hits_all = hits_all.groupBy(SPEC, *[quote_column(k) for k in keys]).agg(
                F.max("moved").alias("moved"), F.max("present").alias("present")).select(
                F.col(SPEC).alias("__lk_hspec"), *[F.col(quote_column(k)).alias(f"__lk_h{i}") for i, k in enumerate(keys)],
                F.col("moved"), F.col("present")).cache()
            moved = hits_all.where(F.col("moved") == 1)
            in_table = moved.count()
            samples += [", ".join(f"{k}={r[f'__lk_h{i}']}" for i, k in enumerate(keys)) + f" (batch partition {r['__lk_hspec']})"
                        for r in moved.limit(3).collect()]
        else:
            in_table = 0
        refusal = moved_keys_refusal(info.full_name, in_batch, in_table, samples)
        if refusal is not None:
            raise refusal
        # per partition: keys the batch inserts, updates, deletes (as the batch states them)
        joined = latest.select(F.col(SPEC), F.col("__lk_del"), F.lit(0).alias("present"))
        if hits_all is not None:
            cond = reduce(lambda a, b: a & b, [F.col(quote_column(k)) == F.col(quote_column(f"__lk_h{i}")) for i, k in enumerate(keys)])
            joined = latest.join(hits_all, cond & (F.col(SPEC) == F.col("__lk_hspec")), "left").select(
                F.col(SPEC), F.col("__lk_del"), F.coalesce(F.col("present"), F.lit(0)).alias("present"))
        # each batch row with a NULL key: a key of its own, in no partition
        joined = joined.unionByName(batch.where(null_key(keys)).select(
            F.col(SPEC), is_deleted(columns).alias("__lk_del"), F.lit(0).alias("present")))
        present = F.col("present")
        stats = joined.groupBy(SPEC).agg(
            F.sum(F.when((present == 0) & ~F.col("__lk_del"), 1).otherwise(0)).alias("inserted"),
            F.sum(F.when((present == 1) & ~F.col("__lk_del"), 1).otherwise(0)).alias("updated"),
            F.sum(F.when((present == 1) & F.col("__lk_del"), 1).otherwise(0)).alias("deleted"),
            F.sum(F.when((present == 0) & F.col("__lk_del"), 1).otherwise(0)).alias("absent_deletes")).collect()
        by = {r[SPEC]: r for r in stats}
        out = {}
        for spec, part in routing.todo.items():
            r = by.get(spec)
            out[spec] = BatchPart(part.rows, *(int(r[k] or 0) if r is not None else 0
                                               for k in ("inserted", "updated", "deleted", "absent_deletes")))
        return out
    finally:
        latest.unpersist()
        if hits_all is not None:
            hits_all.unpersist()
