"""compact: per table, per unit that needs it:

write staging -> verify -> re-check the live listing -> swap -> repoint the
backup, each step journaled first. A failing unit leaves its original
untouched and its staging removed; other units go on. The swapped units'
Metastore statistics are written in groups (``PendingStatistics``).

Why one file of more than 500 lines: it is one flow, the command's steps in
their order (a unit's steps are journaled one after the other here); what
they call lives in the layers below (catalog, protocol, rewrite).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
from typing import Any, Callable

from ..catalog.backup import BackupInProgress, PendingRepoints, create_backup, repoint
from ..policy.batching import DEFAULT_BATCH_UNITS, BatchPlan, UnitBatch, codec_key, plan_batches
from ..policy.batching import why_not as not_batchable
from ..policy.budget import DEADLINE, benefit
from ..policy.order import DEFAULT as DEFAULT_ORDER
from ..policy.order import ordered
from ..rewrite.columns import RewriteColumns, resolve_columns
from ..catalog.context import Context, JobSlot, run_unit_jobs
from ..rewrite.delete_ratio import apply_delete_ratio
from ..report.errors import LakekeeperError, Refused, UsageError, java_message, root_cause
from ..rewrite.content import compare as compare_content
from ..rewrite.content import UnitTable, staged_checksum
from ..protocol.faults import alter_batch_value, alter_staged_value, fault_point, tamper_staging, wrong_staging_ec
from ..storage.group_commit import RecentCheck
from ..storage.formats import file_columns, file_facts, payload_fraction, spark_codec_name
from ..storage.hdfs_checks import carry_attributes, prepare_staging
from ..storage.hdfs_checks import check_units as check_hdfs_units
from ..protocol.journal import Journal
from ..rewrite.merge import MergePlan, prepare_merge
from ..protocol.merge_record import record_applied
from ..policy.merge_rules import ALREADY_APPLIED
from ..report.model import Decision, TableInfo, TablePlan, Unit
from ..policy.names import sql_path_literal
from ..protocol.recovery import PendingStatistics, recover_table, settle_unit, update_statistics
from ..report.results import partition_result, table_result
from ..rewrite.batch import discard as discard_batch
from ..rewrite.batch import write_batch
from ..rewrite.rewrite import WriteResult, write_staging
from ..rewrite.verify import kept_rows
from ..rewrite.schema_drift import CODE as SCHEMA_DRIFT
from ..rewrite.schema_drift import check_units as check_schema_drift
from ..policy.replication import check_replication
from ..policy.retries import backoff_seconds, retry_summary, transient_cause
from ..storage.layout import batch_root
from ..storage.space import space_check
from ..protocol.swap import adopt_late_files, check_unchanged, move_kept, swap_in
from ..policy.queues import queue_facts
from ..policy.table_policy import excluded, exclusion_reason, policy_sources
from ..policy.verify_sample import choose_sample, sample_seed
from ..catalog.tables import check_rewritable, leftovers, load_table, plan, resolve_storage, with_policy
from ..rewrite.unit_formats import read_facts
from ..rewrite.unit_formats import resolve_units as resolve_unit_formats
from ..rewrite.values import check_units as check_values
from ..rewrite.tiering import finish_tiering, plan_tiering, tier_totals
from ..rewrite.verify import verify_staging

log = logging.getLogger(__name__)


def compact_table(ctx: Context, full_name: str) -> dict[str, Any]:
    if ctx.budget is not None and ctx.budget.passed():  # no table started after the window
        return table_result(full_name, "skipped", f"deadline: {ctx.budget.refusal(0)}", code=DEADLINE,
                            run_id=ctx.run_id)
    info = load_table(ctx, full_name)
    ctx, policy = with_policy(ctx, info)  # the table owner's lakekeeper.* properties
    if excluded(policy):
        raise Refused("excluded", exclusion_reason(full_name, info.properties))
    queue = queue_facts(info.properties, ctx.settings.queues)  # its YARN queue (lakekeeper.queue, Amoro's group)
    check_replication(info, ctx.settings.allow_replicated)  # repl.* properties: a replica of Hive replication
    check_rewritable(info)  # text properties a rewrite cannot honour
    columns = resolve_columns(ctx.settings, info)  # sort_by / dedupe columns: refused before anything runs
    recovered = [] if ctx.settings.dry_run else recover_table(ctx, info)
    p = plan(ctx, info)
    merge: MergePlan | None = None
    if ctx.settings.merge_from and columns is not None:
        # merge mode: the partitions the batch touches are rewritten with its rows, the others left alone
        merge = prepare_merge(ctx, info, p, columns)
    else:
        apply_delete_ratio(ctx, info, p, columns)  # dedupe trigger_ratio: units the size rule skips, measured
    apply_quiet_period(p, ctx.settings.quiet_period_seconds)
    resolve_storage(ctx, info, p)  # each partition's own descriptor; refuses what a rewrite would change
    # HDFS: open files, encryption zone roots, erasure coding, snapshottable directories, owners this run cannot
    # keep: refused or skipped before anything is written; storage policy, xattrs, replication carried later
    check_hdfs_units(ctx.fs, p, ctx.settings,
                     f"{p.journal_dir}/.owner-probe-{ctx.run_id}" if ctx.lease is not None else None)
    # tiering: units whose newest file is old enough get their copy written under the tier's policies; a policy
    # the NameNode does not know or has not enabled refuses the table here, before anything is written
    plan_tiering(ctx.fs, p, ctx.settings, info.format)
    # One footer/header per write job of each unit's files (a file that is not in the table's format fails
    # here, before anything is written): its columns, codec, Parquet layout, Avro writer schema.
    facts = read_facts(info.format or "", p.to_compact, lambda uri: file_facts(ctx.spark, info.format or "", uri))

    def read_columns(uri: str) -> list[tuple[str, str]]:
        known = facts.get(uri)
        return known["columns"] if known is not None else file_columns(ctx.spark, info.format or "", uri)

    # Files whose columns are not the table's (renamed/dropped columns): refused before anything is written.
    drift_notes = check_schema_drift(info, p.units, read_columns, ctx.settings.allow_by_name_projection)
    # Each unit's own codec, layout and writer schema; a unit whose files disagree is refused (mixed_files).
    codecs, codec_notes = resolve_unit_formats(info, p.units, facts)
    # Timestamps Spark cannot carry (nanoseconds, INT64 types it does not write): refused (unsupported_values).
    check_values(ctx.spark, info, p.units, facts)
    todo = start_order(ctx, p.to_compact)
    drifted = [u for u in p.units if u.decision.code == SCHEMA_DRIFT]
    if drifted and not todo:
        first = drifted[0]
        raise Refused(SCHEMA_DRIFT, f"{len(drifted)} unit(s) refused: {first.spec or full_name}: "
                                    f"{first.decision.reason}")
    skipped = [_not_compacted(u) for u in p.units if u not in todo]
    refused = [r for r in skipped if r["status"] == "refused"]
    # units left for a reason that passes (quiet period, open files...): the table is skipped, not "not needed"
    passed_over = [r for r in skipped if r["status"] == "skipped"]
    known = set(Journal.run_ids(ctx.fs, p.journal_dir)) | {ctx.run_id}
    base = dict(run_id=ctx.run_id, location=info.location, format=info.format, recovered=recovered,
                leftovers=leftovers(ctx, p, known))
    base["mode"] = ctx.settings.mode
    base["order"] = ctx.settings.order
    base.update(queue)
    sampled: set[str] | None = None
    if ctx.settings.verify == "sample" and todo:  # content for a seeded share of the units, rows for the others
        seed = sample_seed(ctx.run_id, full_name)
        chosen = choose_sample([u.spec for u in todo], ctx.settings.verify_sample, seed)
        sampled = set(chosen)
        base["verify"] = "sample"
        base["verify_sample"] = {"fraction": ctx.settings.verify_sample, "seed": seed, "units": len(todo),
                                 "sampled": chosen}
    if ctx.settings.max_file_bytes:  # the split bound this table ran with (the run's, or its lakekeeper.* own)
        base["max_file_size_mb"] = ctx.settings.max_file_size_mb
    if columns is not None and columns.sorted:
        base["sort"] = columns.sort_result()  # {strategy: linear|zorder, columns}
    if len(todo) > 1:
        base["start_order"] = [u.spec for u in todo]
    if merge is not None:
        base["merge"] = merge.result()
    if policy:
        base["policy"] = policy
    sources = policy_sources(info.properties)  # read from Amoro's self-optimizing.* properties
    if sources:
        base["policy_from"] = sources
    if ctx.settings.where:
        base["where"] = ctx.settings.where
    if merge is not None and not merge.routing.todo:  # every partition of this batch was merged before
        return table_result(full_name, "not_needed", f"batch already applied: {merge.source} was merged into "
                                                     f"{len(merge.routing.already)} partition(s) before "
                                                     f"(record {merge.record_uri})",
                            changed=bool(recovered), code=ALREADY_APPLIED, partitions=_ordered(p, skipped), **base)
    if ctx.settings.dry_run:
        parts = [partition_result(u, "planned", u.decision.reason, **_merge_part(merge, u)) for u in todo] + skipped
        return table_result(
            full_name,
            "planned" if todo else ("refused" if refused else ("skipped" if passed_over else "not_needed")),
            f"would compact {len(todo)} of {len(p.units)} unit(s)" if todo
            else _skip_reason(p, ctx.settings.where, passed_over[0] if passed_over else None),
            changed=False,
            would_change=bool(todo),
            partitions=_ordered(p, parts),
            **({"code": refused[0]["code"]} if refused and not todo else
               {"code": passed_over[0]["code"]} if passed_over and not todo else {}),
            **base,
        )
    if not todo:
        if refused:  # nothing else to do: the table is refused for what its units hold
            return table_result(full_name, "refused", refused[0]["reason"], changed=bool(recovered),
                                partitions=_ordered(p, skipped), code=refused[0]["code"], **base)
        if passed_over:  # left for now (quiet period, open files, nested layout): a later run may compact it
            return table_result(full_name, "skipped", _skip_reason(p, ctx.settings.where, passed_over[0]),
                                changed=bool(recovered), partitions=_ordered(p, skipped),
                                code=passed_over[0]["code"], **base)
        return table_result(full_name, "not_needed", _skip_reason(p, ctx.settings.where), changed=bool(recovered),
                            partitions=_ordered(p, skipped), **base)

    space = space_check(ctx.fs, todo)
    if not space["ok"]:
        raise LakekeeperError("insufficient_space", "not enough room for the compacted copy: "
                              + "; ".join(space["problems"]) + "; nothing was written")
    if space["warnings"]:
        for w in space["warnings"]:
            log.warning("%s: %s", full_name, w)
        base["warnings"] = space["warnings"]
    for path in [info.location or ""] + [x for u in todo for x in (u.location, u.old)]:
        try:  # every path that goes into the backup table's DDL, checked before anything is written
            sql_path_literal(path)
        except UsageError as exc:
            raise Refused("unsafe_path", f"{exc}; nothing was written") from exc
    payload = 1.0
    if info.format in ("parquet", "orc"):  # a few footers: how much smaller merged rows get
        sample = [(f"{u.location}/{f.name}", f.size) for u in todo for f in u.rewrite_files]
        payload = payload_fraction(ctx.spark, info.format, sample)
    log.info("%s: %s files, codecs %s, payload %.2f", full_name, info.format,
             sorted({str(codecs[u.spec].get("codec")) for u in todo}), payload)
    journal = Journal(ctx.fs, p.journal_dir, ctx.run_id)
    with journal:  # its unit record file closed when the table is done (or failed)
        journal.start(dict(_journal_doc(info, p, todo), **({"merge": merge.journal_doc()} if merge is not None else {})))
        journal.table_step("creating_backup")

        def make_backup() -> None:
            create_backup(ctx.catalog, info, p, todo)
            journal.table_step("compacting")

        # The units start writing while the backup table is made; none swaps before it exists.
        backup = BackupInProgress(make_backup)
        slots = unit_slots(ctx, len(todo))
        stats = PendingStatistics(ctx, info)  # the swapped units' Metastore figures, written in groups
        exists = backup_check(ctx, p)
        # a partitioned table's backup partitions: repointed in groups after their units' swaps
        repoints = PendingRepoints(ctx.catalog, p) if info.is_partitioned else None
        batches = plan_unit_batches(ctx, info, todo, codecs, payload, columns, merge)
        runs = {b.number: BatchRun(lambda b=b: _run_batch(ctx, info, journal, todo, b, codecs, backup))
                for b in batches.batches}
        batch_of = {i: runs[b.number] for i, b in batches.batch_of().items()}
        jobs = [(lambda job, i=i, u=u: _compact_unit(_unit_verify(ctx, u, sampled), info, p, journal, i, u,
                                                     dict(codecs[u.spec], payload_fraction=payload), columns, backup,
                                                     slots, merge, stats=stats, exists=exists, repoints=repoints,
                                                     job=job, batch=batch_of.get(i)))
                for i, u in enumerate(todo)]
        done = run_unit_jobs(ctx, jobs)
        tried_again = retry_summary(done)  # units tried again after a failure that passes (policy/retries.py)
        if tried_again:
            base["retries"], base["retry_causes"] = tried_again["count"], tried_again["causes"]
        split = sum(int(r.get("files_split") or 0) for r in done if r["status"] == "compacted")
        if split:  # files above max_file_size_mb split into files of about the target size (planner.split_rule)
            base["files_split"] = split
        not_repointed = repoints.flush() if repoints is not None else []
        stats.flush()
        if merge is not None:  # the partitions merged: this batch never goes into them again
            try:
                record_applied(ctx.fs, merge.journal_doc(), [r["spec"] for r in done if r["status"] == "compacted"],
                               ctx.run_id, info.full_name)
            except Exception as exc:  # noqa: BLE001 - after the swaps: the run's recovery records them
                raise after_swaps(exc, p, done, skipped, [r for r in done if r["status"] == "compacted"]) from exc
        for u, r in zip(todo, done):
            if r["status"] == "compacted":
                for notes in (drift_notes, codec_notes):
                    if u.spec in notes:
                        r.setdefault("notes", []).extend(notes[u.spec])
        error = backup.settle()
        if error is not None:  # nothing was swapped: the table fails as a whole (and is recovered, cli)
            raise error
        swapped = [r for r in done if r["status"] == "compacted"]
        failed = [r for r in done if r["status"] == "failed"]
        deferred = [r for r in done if r.get("code") == DEADLINE and r["status"] == "skipped"]
        if deferred:
            base["deferred"] = len(deferred)
        pending = [r for r in done if r.get("pending_recovery")]
        try:
            return _finish_table(ctx, info, p, journal, full_name, todo, done, skipped, swapped, failed, pending,
                                 recovered, base, not_repointed)
        except Exception as exc:  # noqa: BLE001 - after the swaps: say what changed
            if not swapped:
                raise
            raise after_swaps(exc, p, done, skipped, swapped) from exc


def _unit_verify(ctx: Context, u: Unit, sampled: set[str] | None) -> Context:
    """``verify: sample``: the unit's own context, verified by content when
    it is in the sample (policy/verify_sample.py), by rows otherwise."""
    if sampled is None:
        return ctx
    verify = "content" if u.spec in sampled else "rows"
    return dataclasses.replace(ctx, settings=dataclasses.replace(ctx.settings, verify=verify))


def batch_units_setting(ctx: Context) -> int:
    """Units a batch holds at most: ``spark.lakekeeper.batch.units`` (``--conf``), 0 or 1 for none."""
    try:
        return int(ctx.spark.conf.get("spark.lakekeeper.batch.units", str(DEFAULT_BATCH_UNITS)))
    except (TypeError, ValueError):
        return DEFAULT_BATCH_UNITS


# Test hooks under which every unit is written on its own (they alter one unit's own staged copy).
_PER_UNIT_HOOKS = ("alter_staged_value", "tamper_staging", "table_descriptor")


def plan_unit_batches(ctx: Context, info: TableInfo, todo: list[Unit], codecs: dict[str, dict[str, Any]],
                      payload: float, columns: RewriteColumns | None, merge: MergePlan | None) -> BatchPlan:
    """The table's batches (``policy/batching.py``): none when the run sorts,
    dedupes, merges, verifies rows only or has a deadline."""
    settings = ctx.settings
    table_wide = None
    if merge is not None or (columns is not None and (columns.dedupe or columns.sorted)):
        table_wide = "sort, dedupe or merge"
    elif settings.verify != "content":
        table_wide = f"verify: {settings.verify}"
    elif ctx.budget is not None:
        table_wide = "a deadline (units in benefit order, each timed)"
    elif not info.is_partitioned:
        table_wide = "not partitioned"
    elif os.environ.get("LAKEKEEPER_FAULT_AT") in _PER_UNIT_HOOKS or os.environ.get("LAKEKEEPER_WRONG_STAGING_EC"):
        table_wide = "a test hook on one unit's staging"

    def reason(u: Unit) -> str | None:
        return table_wide or not_batchable(info.format, info.location or "", u, settings.target_file_bytes,
                                           payload, settings.min_piece_bytes)

    plan = plan_batches(todo, reason, lambda u: codec_key(codecs[u.spec]), batch_units_setting(ctx))
    for line in plan.lines(todo) if plan.batches else []:
        log.info("%s: %s", info.full_name, line)
    return plan


class BatchRun:
    """One batch's write, shared by its units: the first of them to ask runs
    it (in its job slot), the others wait for it. ``result(spec)``: the
    unit's ``WriteResult``, or None when the batch failed (the unit is then
    written on its own: a bad unit fails alone). A lost lease is raised."""

    def __init__(self, run: Callable[[], dict[str, WriteResult]]):
        self._run = run
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._started = False
        self.results: dict[str, WriteResult] | None = None
        self.error: BaseException | None = None

    def result(self, spec: str) -> WriteResult | None:
        with self._lock:
            lead, self._started = not self._started, True
        if lead:
            try:
                self.results = self._run()
            except Exception as exc:  # noqa: BLE001 - its units go on one by one
                self.error = exc
            finally:
                self._done.set()
        else:
            self._done.wait()
        if isinstance(self.error, LakekeeperError) and self.error.code == "lease_lost":
            raise self.error
        return None if self.results is None else self.results.get(spec)


def _run_batch(ctx: Context, info: TableInfo, journal: Journal, todo: list[Unit], batch: UnitBatch,
               codecs: dict[str, dict[str, Any]], backup: BackupInProgress | None) -> dict[str, WriteResult]:
    """Write a batch (``rewrite/batch.py``) into its root, recorded in the
    journal first; on failure the root and its renamed stagings are removed."""
    units = [todo[i] for i in batch.units]
    first = batch.units[0]
    root = batch_root(info.location or "", ctx.run_id, batch.number)
    if backup is not None and backup.failed():
        backup.wait()
    if ctx.lease is not None:
        ctx.lease.check(max_age=0)
    journal.add_batch_root(root)
    codec = codecs[units[0].spec]
    name = spark_codec_name(info.format, codec.get("codec"))
    started = time.time()
    try:
        out = write_batch(ctx.spark, ctx.fs, info, units, codec, root, cores=ctx.cores(),
                          step=lambda step, when: fault_point(step, when, info.full_name, first),
                          alter=lambda d: alter_batch_value(ctx.spark, ctx.fs, info, d, name))
    except BaseException as exc:
        log.warning("%s: batch %d (%d units) failed, its units are written one by one: %s", info.full_name,
                    batch.number, len(units), exc if isinstance(exc, LakekeeperError) else root_cause(exc))
        try:
            discard_batch(ctx.fs, root, units)
        except Exception:  # noqa: BLE001 - recovery removes what the journal names
            log.warning("%s: could not remove batch %s", info.full_name, root, exc_info=True)
            raise exc
        raise
    log.info("%s: batch %d: %d units written and read back in %.1f s", info.full_name, batch.number, len(units),
             time.time() - started)
    return out


# A swapped unit's backup partition that could not be repointed at its original (``PendingRepoints``).
BACKUP_NOT_REPOINTED = "backup_not_repointed"


def after_swaps(exc: Exception, p: TablePlan, done: list[dict[str, Any]], skipped: list[dict[str, Any]],
                swapped: list[dict[str, Any]]) -> LakekeeperError:
    """An error once units were swapped: a failed result that still says
    ``changed: true`` and lists the units that did change (``partial``,
    merged into the result by the CLI)."""
    code, message = (exc.code, exc.message) if isinstance(exc, LakekeeperError) else ("error", root_cause(exc))
    err = LakekeeperError(code, f"{message} (after {len(swapped)} unit(s) had been swapped; they stay compacted)")
    err.partial = {"partitions": _ordered(p, done + skipped), "backup_table": p.backup_table}  # type: ignore[attr-defined]
    return err


# How old a passing check of the backup table's existence may be at a unit's swap (seconds).
BACKUP_CHECK_MAX_AGE = 1.0


def backup_check(ctx: Context, p: TablePlan) -> RecentCheck:
    """The backup table's existence check of the units about to swap: a
    check that passed and began at most ``BACKUP_CHECK_MAX_AGE`` before a
    unit asked answers for it; else a new one, shared by the units that ask
    while it is made. About one Metastore call a second however many units
    swap, instead of one a unit."""
    db, name = p.backup_table.split(".")
    return RecentCheck(lambda: ctx.catalog.table_exists(db, name), BACKUP_CHECK_MAX_AGE)


def recheck_before_swap(ctx: Context, p: TablePlan, exists: RecentCheck) -> None:
    """Right before a unit's swap: this run still holds the table's lease,
    and its backup table still exists (a swap without it would leave the
    originals unreachable for rollback and cleanup). ``exists``: the
    table's shared check (``backup_check``)."""
    if ctx.lease is not None:
        ctx.lease.check(max_age=0)  # read now: the swap is the step readers see
    if not exists.ask():
        raise LakekeeperError("backup_missing", f"the backup table {p.backup_table} of this run no longer exists "
                                                f"(dropped by hand or by another command); not swapping")


def _finish_table(ctx: Context, info: TableInfo, p: TablePlan, journal: Journal, full_name: str, todo: list[Unit],
                  done: list[dict[str, Any]], skipped: list[dict[str, Any]], swapped: list[dict[str, Any]],
                  failed: list[dict[str, Any]], pending: list[dict[str, Any]], recovered: list[dict[str, Any]],
                  base: dict[str, Any], not_repointed: list[tuple[Unit, str]] | None = None) -> dict[str, Any]:
    for root in journal.table_record().get("batch_roots") or []:  # a failed batch's root its run could not remove
        if ctx.fs.exists(root):
            ctx.fs.delete(root)
    if not_repointed:  # swapped, their backup partitions not at their originals: recovery finishes them
        by_spec = {u.spec: message for u, message in not_repointed}
        for r in done:
            if r["spec"] in by_spec:
                r["pending_recovery"] = True
                r.setdefault("warnings", []).append(
                    f"its backup partition could not be repointed at the original files ({by_spec[r['spec']]}); "
                    f"the next command on the table (or recover) finishes it")
    elif not swapped and not pending:  # nothing to keep: no backup, no journal
        db, name = p.backup_table.split(".")
        ctx.catalog.drop_table(db, name)
        journal.table_step("finished", backup_table=None)
        journal.remove()
    else:
        journal.table_step("finished")
    # (each unit wrote its own figures right after its swap; these are units finished by recovery)
    update_statistics(ctx, info, [(u, r) for u, r in zip(todo, done) if r["status"] == "compacted"
                                  and "statistics" not in r and "statistics_error" not in r])
    ctx.catalog.refresh(info.db, info.name)

    parts = _ordered(p, done + skipped)
    deferred = base.get("deferred") or 0
    if failed:
        status = "failed"
        reason = f"{len(failed)} of {len(todo)} unit(s) failed: {failed[0]['reason']}"
        code = failed[0].get("code")
    elif not_repointed:
        status, code = "failed", BACKUP_NOT_REPOINTED
        reason = (f"{len(not_repointed)} of {len(swapped)} swapped unit(s) are compacted, but their backup partitions "
                  f"could not be repointed at the original files ({not_repointed[0][1]}); the run stays open and "
                  f"the next command on the table (or recover) finishes it")
    elif deferred and not swapped and not pending:
        status, code = "skipped", DEADLINE
        reason = f"deadline: {deferred} unit(s) left for the next window"
    else:
        status = "compacted"
        drifted = [u for u in p.units if u.decision.code == SCHEMA_DRIFT]
        reason = f"compacted {len(swapped)} of {len(p.units)} unit(s)" + (
            f"; {len(drifted)} refused ({SCHEMA_DRIFT})" if drifted else "") + (
            f"; {deferred} left for the next window ({DEADLINE})" if deferred else "")
        code = None
    base.update(tier_totals(parts))  # tiering: partitions compacted under a tier's policy, the space saved
    return table_result(
        full_name,
        status,
        reason,
        changed=bool(swapped) or bool(recovered),
        partitions=parts,
        backup_table=p.backup_table if swapped or pending else None,
        code=code,
        **base,
    )


def start_order(ctx: Context, todo: list[Unit]) -> list[Unit]:
    """The units to compact in the order they start: the ``order`` asked
    for (order.py, by each unit's files and bytes), else with a deadline the
    most small files removed per byte rewritten first, else the plan's."""
    if ctx.settings.order != DEFAULT_ORDER:
        return ordered(todo, ctx.settings.order, lambda u: u.stats.files, lambda u: u.stats.bytes)
    if ctx.budget is not None:
        return sorted(todo, key=lambda u: -benefit(u.stats.files, u.decision.target_files, u.stats.bytes))
    return list(todo)


def _not_compacted(u: Unit) -> dict[str, Any]:
    """A unit left alone (docs/statuses.md): refused (``code``), skipped for
    a reason that passes (a skip with a ``code``: quiet period, open files,
    nested layout, schema drift), or not needed (the plan found nothing to
    do: too few or large enough files, no data)."""
    if u.decision.action == "refuse":
        return partition_result(u, "refused", u.decision.reason, code=u.decision.code)
    return partition_result(u, "skipped" if u.decision.code else "not_needed", u.decision.reason)


def unit_slots(ctx: Context, units: int) -> int:
    """Task slots each unit of a table can count on: the application's
    cores (``Context.cores``: on YARN its executors as configured, not only
    those registered when the run starts) shared by the units that run at
    once."""
    cores = ctx.cores()
    return max(1, cores // max(1, min(ctx.settings.parallelism, units)))


def _compact_unit(
    ctx: Context, info: TableInfo, p: TablePlan, journal: Journal, idx: int, u: Unit, codec: dict[str, Any],
    columns: RewriteColumns | None = None, backup: BackupInProgress | None = None, slots: int = 1,
    merge: MergePlan | None = None, *, stats: PendingStatistics, exists: RecentCheck,
    repoints: PendingRepoints | None = None, job: JobSlot | None = None, batch: BatchRun | None = None,
) -> dict[str, Any]:
    """One unit, start to end, tried again (``retries``, policy/retries.py)
    after a failure that passes: only once its failed attempt was settled by
    recovery's own state machine (``_undo_unit``) back to its original, its
    staging removed; a failure after the swap began that recovery completed,
    or could not settle, is never tried again. A retry writes the unit on its
    own (not with its batch), after ``retry_backoff`` seconds doubled each
    time, without its job slot while it waits; its backup partition, which
    the settling dropped, is added back first."""
    causes: list[str] = []
    while True:
        result = _compact_unit_once(ctx, info, p, journal, idx, u, codec, columns, backup, slots, merge,
                                    stats=stats, exists=exists, repoints=repoints, job=job, batch=batch)
        cause = result.pop(_TRANSIENT, None)
        if cause is None or len(causes) >= ctx.settings.retries:
            break
        causes.append(cause)
        wait = backoff_seconds(len(causes), ctx.settings.retry_backoff)
        log.warning("%s %s: %s failure (%s); retry %d of %d in %.0f s", info.full_name, u.spec or "(table)", cause,
                    result["reason"], len(causes), ctx.settings.retries, wait)
        if job is not None:
            job.release()
        time.sleep(wait)
        if job is not None:
            job.take()
        try:
            _restore_backup_partition(ctx, info, p, u)
        except Exception as exc:  # noqa: BLE001 - the unit stays as settled (original live): failed, not retried
            causes.pop()
            result["reason"] += f"; not tried again: its backup partition could not be added back ({java_message(exc)})"
            log.error("%s %s: %s", info.full_name, u.spec, result["reason"])
            break
        batch = None
    if causes:
        result["retries"] = len(causes)
        result["retry_causes"] = causes
        if result["status"] == "failed":
            result["reason"] += f" (after {len(causes)} retr{'y' if len(causes) == 1 else 'ies'}: {', '.join(causes)})"
    return result


# A failed attempt's result key (popped by _compact_unit): the transient cause it may be tried again for.
_TRANSIENT = "_transient"


def _restore_backup_partition(ctx: Context, info: TableInfo, p: TablePlan, u: Unit) -> None:
    """Before a retry: the unit's backup partition, which settling its failed
    attempt dropped (recovery.settle_unit), added back as ``create_backup``
    made it (pointing at the live directory until the swap repoints it)."""
    if not info.is_partitioned:
        return
    db, name = p.backup_table.split(".")
    if not ctx.catalog.table_exists(db, name):
        return  # never made: the attempt's backup.wait() fails it again, as the first did
    ctx.catalog.add_partitions(db, name, [(u.partition or {}, u.location)])
    ctx.catalog.writer(db, name).forget(u.partition or {})


def _compact_unit_once(
    ctx: Context, info: TableInfo, p: TablePlan, journal: Journal, idx: int, u: Unit, codec: dict[str, Any],
    columns: RewriteColumns | None = None, backup: BackupInProgress | None = None, slots: int = 1,
    merge: MergePlan | None = None, *, stats: PendingStatistics, exists: RecentCheck,
    repoints: PendingRepoints | None = None, job: JobSlot | None = None, batch: BatchRun | None = None,
) -> dict[str, Any]:
    """One attempt at a unit. ``job``: its hold on one of the run's job
    slots, given back after its last Spark job (the staged copy's
    verification), before the steps around the swap. A failed attempt's
    result holds ``_TRANSIENT`` (the cause) when the failure passes and the
    unit was settled back to its original."""
    fs = ctx.fs
    rows_before = rows_after = None
    started = time.time()
    # text/Avro: the scratch table the unit is read through, then its staged copy (dropped in any case)
    scratch = UnitTable(ctx.catalog, info, u, p.run_id)
    try:
        late_for = ctx.budget.refusal(u.stats.bytes) if ctx.budget is not None else None
        if late_for:  # started now, it would end after the window: nothing written, settled as never begun
            raise LakekeeperError(DEADLINE, late_for)
        if backup is not None and backup.failed():
            backup.wait()  # raises: no point writing a copy that cannot be swapped in
        journal.unit_mark(idx, "writing_staging")  # the plan names the staging: recovered as planned, no record
        if ctx.lease is not None:  # Spark writes the staging, not the fenced adapters: checked before it starts
            ctx.lease.check(max_age=0)
        columns = columns or RewriteColumns()
        batched = batch.result(u.spec) if batch is not None else None  # written (and read back) with its batch
        if batched is not None:
            written = batched
            rows_before = written.rows_source
            extra = {"verified": "content", "content_checksum": written.content["content"]}
        else:
            rows = None if merge is None else merge.unit_rows(info, u.spec, u.partition)
            prepared = prepare_staging(fs, u)  # HDFS: the unit's own erasure coding policy, where not its parent's
            prepared = wrong_staging_ec(fs, info.full_name, u.staging) or prepared  # test hook: a wrong policy
            written = write_staging(ctx.spark, fs, info, u, ctx.settings, codec, columns, slots, scratch, rows,
                                    into_existing=prepared)
            rows_before = written.rows_source
            extra = _dedupe_result(written) if columns.dedupe else {}
            extra.update(_merge_part(merge, u))
            if written.notes:  # what this Spark could not do for the unit (done the plain way instead)
                extra["notes"] = list(written.notes)
            extra.update(_verify_content(ctx, info, p, u, written, codec, scratch))
        scratch.close()
        tamper_staging(fs, u.staging)  # test hook: a bad copy
        journal.unit_mark(idx, "verifying")  # recovered as planned: no record needed
        staged, rows_after = verify_staging(ctx.spark, fs, info, u, written.rows_expected, codec, columns.keys)
        rows_kept = kept_rows(ctx.spark, info, u)  # minor mode: the kept files' rows (their footers), for numRows
        if job is not None:  # no Spark job after this: the next unit writes while this one swaps
            job.release()
        carried = carry_attributes(fs, u, set())  # HDFS: storage policy, xattrs, replication (of the new files)
        if carried:
            extra["carried"] = carried
        extra.update(finish_tiering(fs, u))  # tiering: the new files' storage policy checked, the space consumed
        warnings = fs.copy_permissions(u.location, u.staging, keep_owner=u.hdfs is None or u.hdfs.keep_owner)
        if u.hdfs is not None and u.hdfs.owner_note:
            warnings.append(u.hdfs.owner_note)
        if backup is not None:
            backup.wait()
        recheck_before_swap(ctx, p, exists)
        check_unchanged(fs, u)
        moved = move_kept(fs, journal, idx, u, staged)  # minor mode: the kept files, by rename (journaled first)
        swap_in(fs, journal, idx, u, staged)  # ``staged``: the verified new files, journaled as compacted
        late = adopt_late_files(fs, u, u.listing)
        journal.unit_mark(idx, "repointing_backup")  # recovered from the directories, as moving_aside: no record
        if repoints is None:  # a table: its backup now (a partition: with its group, after its done record)
            repoint(ctx.catalog, info, p, u)
        # the partition's rows after and before (the kept files' too), for the statistics of a rollback:
        # before is unknown when the source rows were not only the partition's (a merge's batch rows)
        whole = None if rows_kept is None else rows_after + rows_kept
        journal.unit_step(idx, "done", files_after=len(staged.files), rows=whole,
                          rows_original=None if rows_kept is None or merge is not None else rows_before + rows_kept)
        if repoints is not None:
            repoints.add(u)
        result = partition_result(
            u,
            "compacted",
            f"{u.stats.files} files -> {len(staged.files) + len(moved)}"
            + _rewrite_note(u, len(staged.files), len(moved)),
            files_after=len(staged.files) + len(moved) + len(late),
            bytes_after=staged.total_bytes + sum(m["length"] for m in moved),
            rows_before=rows_before,
            rows_after=rows_after,
            late_files=late,
            warnings=warnings,
            **extra,
        )
        if u.decision.rewrite is not None or u.decision.split:  # the kept files were moved, none copied
            result.update(files_moved=len(moved), files_copied=0, rows_kept=rows_kept)
        stats.add(u, result)  # its Metastore figures, written with its group (while other units still write)
        if ctx.budget is not None:
            ctx.budget.record(u.stats.bytes, time.time() - started)
        return result
    except Exception as exc:  # noqa: BLE001 - every failure leaves the original in place
        if isinstance(exc, LakekeeperError) and exc.code == "lease_lost":
            raise  # another run holds the table now: nothing more is changed, its journal is theirs to finish
        scratch.close()
        if isinstance(exc, LakekeeperError):
            code, message = exc.code, exc.message
        else:
            code, message = "write_failed", root_cause(exc)
        log.log(logging.INFO if code == DEADLINE else logging.ERROR, "%s %s: %s: %s", info.full_name,
                u.spec or "(table)", code, message)
        if backup is not None:
            backup.settle()
        left, state = _undo_unit(ctx, p, journal, idx, u, code, message)
        if state == "vanished":  # whatever step noticed it first
            code, message = "source_vanished", (f"{u.location} disappeared during the run (its partition dropped "
                                                f"or its directory deleted); nothing to compact")
        if state == "compacted":  # the error came after the swap; recovery finished it
            return partition_result(u, "compacted", f"{u.stats.files} files compacted; {message}; {left}",
                                    rows_before=rows_before, rows_after=rows_after, warnings=[message])
        if code == DEADLINE and state == "original":
            return partition_result(u, "skipped", f"deadline: {message}", code=DEADLINE)
        failed = partition_result(u, "failed", f"{message}; {left}", code=code, rows_before=rows_before,
                                  rows_after=rows_after, pending_recovery=state == "pending")
        cause = transient_cause(exc) if state == "original" and code != DEADLINE else None
        if cause is not None:
            failed[_TRANSIENT] = cause
        return failed


def _rewrite_note(u: Unit, written: int, moved: int) -> str:
    """What a compaction that kept files, or split some, did with which files
    (``written``: the new files, ``moved``: the kept files moved by rename)."""
    split = len(u.decision.split)
    if not moved and not split:
        return ""
    what = (f"{len(u.rewrite_files)} file(s) rewritten into {written}, {split} of them above "
            f"max_file_size split" if split else f"{len(u.rewrite_files)} fragment files rewritten into "
                                                 f"{written}")
    return f" ({u.decision.rule}: {what}" + (f", {moved} kept unchanged, moved by rename)" if moved else ")")


def _verify_content(ctx: Context, info: TableInfo, p: TablePlan, u: Unit, written: Any,
                    codec: dict[str, Any], scratch: UnitTable | None = None) -> dict[str, Any]:
    """``verify: content``: the staged copy, read back as readers will read
    it, has the checksum of the rows written (content.py); before the kept
    files of minor mode are moved in by rename (their bytes never move:
    checked by presence and length, ``swap.move_kept``)."""
    alter_staged_value(ctx.spark, ctx.fs, info, u.staging, spark_codec_name(info.format, codec.get("codec")))  # test hook
    if written.content is None:
        return {"verified": "rows"}
    got = staged_checksum(ctx.spark, ctx.fs, ctx.catalog, info, u, p.run_id, scratch)
    compare_content(written.content, got)
    return {"verified": "content", "content_checksum": got["content"]}


def _merge_part(merge: MergePlan | None, u: Unit) -> dict[str, Any]:
    """Merge mode: what the batch holds for the unit (``merge_rules.BatchPart``)."""
    part = merge.routing.todo.get(u.spec) if merge is not None else None
    return {"merge": part.to_dict()} if part is not None else {}


def _dedupe_result(written: Any) -> dict[str, Any]:
    """rows_before = rows_after + duplicates_dropped + deletes_dropped."""
    keys = written.keys_source or 0
    return {"keys_before": keys, "duplicates_dropped": written.rows_source - keys,
            "deletes_dropped": written.deletes or 0}


def _undo_unit(ctx: Context, p: TablePlan, journal: Journal, idx: int, u: Unit, code: str,
               message: str) -> tuple[str, str]:
    """Settle a failed unit with the same state machine as ``recover``
    (whatever step it failed at). Returns (what is where, state) with state
    ``original`` (original data live, staging removed), ``vanished`` (the
    source directory was gone before the move aside: staging removed), ``compacted`` (the
    swap had happened: compacted data live, backup at the original) or
    ``pending`` (could not settle: nothing deleted, the journal stays for
    ``recover``)."""
    db, name = p.backup_table.split(".")
    entry = _journal_doc_unit(idx, u)
    try:
        backup = (db, name, ctx.catalog.table_exists(db, name))
        action, swapped = settle_unit(ctx, journal, entry, journal.record(idx), backup, code=code, reason=message)
    except Exception as exc:  # noqa: BLE001
        log.exception("could not settle %s after the failure", u.location)
        return (f"ATTENTION: not settled ({java_message(exc)}); live {u.location}, original {u.old}, "
                f"staging {u.staging} kept as they are; run recover", "pending")
    if swapped:
        return f"compacted data live at {u.location}, original kept at {u.old} for the backup", "compacted"
    if action and action["action"] == "source_vanished":
        return "its staged copy was removed", "vanished"
    if action and action["action"] == "restored_original":
        return f"original data moved back to {u.location}", "original"
    return f"original data untouched at {u.location}", "original"


def apply_quiet_period(p: TablePlan, quiet_seconds: int | None, now: float | None = None) -> None:
    """Skip units whose newest file is younger than the quiet period: a
    writer may still be adding files there."""
    if not quiet_seconds:
        return
    now_ms = (now if now is not None else time.time()) * 1000
    for u in p.units:
        if u.decision.action != "compact" or not u.listing.files:
            continue
        age = (now_ms - max(f.mtime for f in u.listing.files)) / 1000
        if age < quiet_seconds:
            u.decision = Decision(
                "skip", f"newest file is {max(age, 0):.0f}s old, within the quiet period of {quiet_seconds}s "
                        f"(a writer may still be active)", u.decision.target_files, u.decision.rule,
                code=QUIET_PERIOD)


def _journal_doc_unit(i: int, u: Unit) -> dict[str, Any]:
    return {
        "index": i,
        "spec": u.spec,
        "partition": u.partition,
        "location": u.location,
        "staging": u.staging,
        "old": u.old,
        "files": u.listing.fingerprint(),
        "rule": u.decision.rule,
        "rewrite": list(u.decision.rewrite) if u.decision.rewrite is not None else None,  # None: every file
    }


def _journal_doc(info: TableInfo, p: TablePlan, todo: list[Unit]) -> dict[str, Any]:
    return {
        "command": "compact",
        "table": info.full_name,
        "location": info.location,
        "partitioned": info.is_partitioned,
        "format": info.format,
        "backup_table": p.backup_table,
        "units": [_journal_doc_unit(i, u) for i, u in enumerate(todo)],
    }


QUIET_PERIOD = "quiet_period"


def _skip_reason(p: TablePlan, where: str | None = None, first: dict[str, Any] | None = None) -> str:
    if len(p.units) == 1:
        return p.units[0].decision.reason
    if first is not None:  # the first unit skipped for a reason
        return f"{first['spec'] or p.units[0].spec}: {first['reason']}"
    if not p.units:
        return "no partition matches the where filter" if where else "no partitions"
    return f"none of {len(p.units)} partitions needs compaction"


def _ordered(p: TablePlan, parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    order = {u.spec: i for i, u in enumerate(p.units)}
    return sorted(parts, key=lambda d: order.get(d["spec"], 0))
