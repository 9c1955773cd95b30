"""What every command does first: load a table from the catalog, decide if
we may touch it, and list and plan its units."""

from __future__ import annotations

import dataclasses
import logging
from types import SimpleNamespace
from typing import Any

from .context import Context
from .legacy import is_legacy_backup
from ..report.errors import Refused, UsageError, java_message
from ..storage.formats import detect_format, largest_piece_bytes, reader_properties, unfaithful_properties
from ..storage.layout import BACKUP_OF_PROPERTY, SCRATCH_OF_PROPERTY, parse_hidden_name, split_path
from ..report.model import Decision, Listing, TableInfo, TablePlan
from ..policy.planner import oversized, plan_table
from ..policy.table_policy import apply_policy, policy_sources, table_policy

log = logging.getLogger(__name__)


def check_eligible(info: TableInfo) -> None:
    """EXTERNAL, non-transactional, non-bucketed tables in a supported format."""
    full = info.full_name
    if info.table_type == "VIEW":
        raise Refused("view", f"{full} is a view; only external tables are compacted")
    if info.properties.get(SCRATCH_OF_PROPERTY):
        raise Refused("verify_scratch", f"{full} is a scratch table of a running verification "
                                        f"(of {info.properties[SCRATCH_OF_PROPERTY]}); it is dropped after the read")
    source = info.properties.get(BACKUP_OF_PROPERTY)
    if source:  # whatever its name: the prefix may have changed since it was made
        raise Refused("backup_table", f"{full} is the lakekeeper backup of {source}; "
                                      f"rollback and cleanup of {source} manage it")
    props = {k.lower(): str(v).lower() for k, v in info.properties.items()}
    if props.get("transactional") == "true" or "transactional_properties" in props:
        raise Refused("transactional_table", f"{full} is transactional (ACID/insert-only); its files belong to Hive")
    if info.table_type != "EXTERNAL":
        raise Refused("managed_table", f"{full} is a {info.table_type} table; only EXTERNAL tables are compacted")
    if info.num_buckets > 0:
        raise Refused("bucketed_table", f"{full} is bucketed ({info.num_buckets} buckets); rewriting would break bucketing")
    if info.format is None:
        raise Refused(
            "unsupported_format",
            f"{full} uses an unsupported storage format (serde {info.serde}, input {info.input_format}, "
            f"provider {info.provider}); supported: parquet, orc, avro, text",
        )
    if not info.location:
        raise Refused("no_location", f"{full} has no location")
    if info.is_partitioned and any(c.lower().startswith(("_", ".")) for c, _type in info.partition_columns):
        raise Refused("hidden_partition_column", f"{full} has a partition column starting with '_' or '.'")


def check_rewritable(info: TableInfo) -> None:
    """Table properties a text rewrite cannot honour (compact and analyze
    only: rollback, cleanup and recover of such a table still work)."""
    unfaithful = unfaithful_properties(info.format or "", reader_properties(info), info.data_columns)
    if unfaithful:
        raise Refused(unfaithful[0], f"{info.full_name}: {unfaithful[1]}")


def resolve_storage(ctx: Context, info: TableInfo, p: TablePlan) -> None:
    """Each partition to compact is read and written with its own storage
    descriptor (``Unit.storage``), which may differ from the table's: its
    SerDe properties, formats or SerDe as they were when it was created,
    if the table's changed later without CASCADE. A partition whose format
    is not the table's, or whose properties a rewrite cannot honour, is
    refused (decision ``refuse`` with a code), nothing of it touched. One
    Metastore call per partition to compact, or one for all of them from
    ``catalog.BULK_STORAGE`` partitions on (``Catalog.partition_storages``)."""
    if not info.is_partitioned or (info.provider or "").lower() in ("parquet", "orc"):
        return  # the table's own descriptor (checked by check_rewritable), or a Spark data source table
    todo = list(p.to_compact)
    for u, storage in zip(todo, ctx.catalog.partition_storages(info, [u.partition or {} for u in todo])):
        fmt = detect_format(storage)
        why = None
        if fmt != info.format:
            why = ("partition_format",
                   f"partition {u.spec} is stored as {fmt or 'an unsupported format'} (serde {storage.serde}, "
                   f"input {storage.input_format}), the table as {info.format}: it is not rewritten with the "
                   f"table's format")
        else:
            why = unfaithful_properties(fmt, reader_properties(info, storage), info.data_columns)
            if why:
                why = (why[0], f"partition {u.spec}: {why[1]}")
        if why:
            u.decision = Decision("refuse", why[1], u.stats.files, u.decision.rule, code=why[0])
        else:
            u.storage = storage


def with_policy(ctx: Context, info: TableInfo) -> tuple[Context, dict[str, str]]:
    """The table's own context: its ``lakekeeper.*`` table properties over
    the run's settings (policy.py), and that policy (empty without one)."""
    policy = table_policy(info.properties)
    if not policy:
        return ctx, policy
    return dataclasses.replace(ctx, settings=apply_policy(ctx.settings, policy, policy_sources(info.properties))), policy


def load_table(ctx: Context, full_name: str) -> TableInfo:
    """The table as the Metastore describes it, checked eligible. Within a
    table's run (``ctx.loaded``), loaded once: the lease, the command and
    the history record work on the same description (one ``getTable``
    where there were three), each caller its own copy."""
    if ctx.loaded is not None and full_name in ctx.loaded:
        return dataclasses.replace(ctx.loaded[full_name])
    db, name = full_name.split(".")
    info = ctx.catalog.get_table(db, name)
    check_eligible(info)
    if is_legacy_backup(info, ctx.settings.backup_prefix):  # never compacted: its files are another's originals
        raise Refused("backup_table", f"{info.full_name} is a lakekeeper 0.0.x backup (named so); rollback and "
                                      f"cleanup of the table it backs up manage it")
    info.location = ctx.fs.qualify(info.location or "")
    if ctx.loaded is not None:
        ctx.loaded[full_name] = dataclasses.replace(info)
    return info


def where_selection(ctx: Context, info: TableInfo, parts: list[Any]) -> list[Any]:
    """The partitions the ``where`` filter selects (evaluated in Python on
    the Metastore's partition values; nothing of it reaches SQL). A filter
    that does not fit the table refuses the table."""
    from ..policy.partition_filter import select_partitions

    try:
        keep = select_partitions(ctx.settings.where, info.full_name, [c for c, _t in info.partition_columns],
                                 [c for c, _t in info.data_columns], [p.spec for p in parts])
    except UsageError as exc:
        raise Refused("invalid_where", str(exc)) from exc
    return [p for p, k in zip(parts, keep) if k]


def selected_partitions(ctx: Context, info: TableInfo) -> list[Any]:
    """The partitions to look at: every one, or with ``where`` the ones it
    selects, chosen on the Metastore's partition names (one call) so that a
    filter picking a few partitions of many reads only those
    (``Catalog.partitions_named``). The filter is evaluated again on what
    the Metastore returns, which is what decides."""
    if not ctx.settings.where:
        return ctx.catalog.list_partitions(info)
    specs = ctx.catalog.partition_specs(info)
    marks = [SimpleNamespace(spec=s) for s in specs]
    chosen = [m.spec for m in where_selection(ctx, info, marks)]
    return where_selection(ctx, info, ctx.catalog.partitions_named(info, chosen, total=len(specs)))


def list_units(ctx: Context, info: TableInfo) -> list[tuple[str, dict[str, str] | None, str, Listing]]:
    if not info.is_partitioned:
        where_selection(ctx, info, [])  # refuses a filter on a non-partitioned table
        listing = ctx.fs.list_dir(info.location or "")
        return [("", None, info.location or "", listing)]
    parts = selected_partitions(ctx, info)
    locations = [ctx.fs.qualify(p.location) if p.location else "" for p in parts]
    listings = ctx.fs.list_dirs([loc for loc in locations if loc])
    units = []
    for p, loc in zip(parts, locations):
        listing = listings.get(loc) or Listing(path=loc, exists=False)
        units.append((p.spec_str, p.spec, loc, listing))
    return units


def plan(ctx: Context, info: TableInfo) -> TablePlan:
    units = list_units(ctx, info)
    return plan_table(info, units, ctx.settings, ctx.run_id, oversized_pieces(ctx, info, units))


def oversized_pieces(ctx: Context, info: TableInfo,
                     units: list[tuple[str, dict[str, str] | None, str, Listing]]) -> dict[str, dict[str, int]]:
    """With a split bound, on Parquet and ORC: the largest row group or
    stripe of each file above it (one footer read each; such files are few),
    location -> name -> bytes, so that the planner splits only the files a
    rewrite can cut below the bound (``planner.split_rule``). A footer that
    cannot be read is left out: the rewrite reads that file and says why."""
    if not ctx.settings.max_file_bytes or info.format not in ("parquet", "orc"):
        return {}
    out: dict[str, dict[str, int]] = {}
    for _spec, _part, loc, listing in units:
        for f in oversized(listing.files, ctx.settings):
            try:
                out.setdefault(loc, {})[f.name] = largest_piece_bytes(ctx.spark, info.format,
                                                                      f"{loc.rstrip('/')}/{f.name}")
            except Exception as exc:  # noqa: BLE001 - planned as splittable; the write fails it if unreadable
                log.warning("%s: footer of %s/%s not read: %s", info.full_name, loc, f.name, java_message(exc))
    return out


def leftovers(ctx: Context, p: TablePlan, known_runs: set[str]) -> list[dict[str, str]]:
    """Hidden Lakekeeper directories next to the table's units that no
    journal accounts for (e.g. copied around by hand, or from a crash of a
    version without journals). Reported, never touched."""
    parents = sorted({split_path(u.location)[0] for u in p.units if u.location})
    lives = {u.location.rstrip("/") for u in p.units}
    found = []
    for parent in parents:
        for name, is_dir in ctx.fs.list_names(parent):
            parsed = parse_hidden_name(name)
            if not parsed or not is_dir:
                continue
            live, tag, run = parsed
            if f"{parent}/{live}" in lives and run not in known_runs:
                found.append({"path": f"{parent}/{name}", "kind": tag, "run_id": run,
                              "reason": "not recorded in any journal of this table; left untouched"})
    return found
