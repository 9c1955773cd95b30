"""Command line and the JSON result (see docs/engine-contract.md).

Human logs go to stderr. The JSON document is the only thing written to
stdout (and to ``--result-file`` when given); anything else that tries to
print to stdout during the run is sent to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import logging
import os
import sys
import threading
import time
from typing import Any, Callable

from . import __version__
from .flags import COMMANDS, ENGINE_FLAGS
from .policy.config import MODES, build_settings, load_config_file, parse_properties
from .report.errors import LakekeeperError, UsageError, innermost_cause, java_message, root_cause
from .protocol.faults import parking_enabled, run_parking
from .report.history import RECORDED_COMMANDS
from .storage.layout import backup_table_pattern, is_run_id, new_run_id
from .policy.names import parse_table_list, parse_table_name, validate_ident
from .report.progress import Progress
from .policy.retention import missing_policy, policy_of

log = logging.getLogger("lakekeeper")



# The engine's own words for the contract flags (flags.py): (metavar, help) by dest.
HELP: dict[str, tuple[str | None, str | None]] = {
    "block_size_mb": ("MB", None),
    "compaction_ratio_threshold": (None, None),
    "target_file_size_mb": ("MB", None),
    "backup_prefix": (None, None),
    "older_than": (None, "cleanup: keep backups younger than this (30m, 12h, 7d), or 'all' to keep none on "
                         "that account; cleanup needs this or --keep-last"),
    "keep_last": (None, "cleanup: keep the N newest backups of each table"),
    "grace_period": (None, "cleanup: never delete a backup younger than this (30m, 1h, 1d)"),
    "pin": ("RUN_ID", "cleanup: pin the backup of this run (never cleaned)"),
    "unpin": ("RUN_ID", "cleanup: unpin the backup of this run"),
    "rollback_run": ("RUN_ID", "rollback: restore the backup of this run instead of the newest (refused when a "
                               "later run changed the same partitions)"),
    "log_level": (None, None),
    "min_piece_mb": ("MB", "compact: when a partition's files are fewer than the cores, write each as pieces of at "
                           "least this size on parallel tasks and join them (default 8; 0: never)"),
    "quiet_period": (None, "compact: skip partitions with a file younger than this (30s, 10m, 1h)"),
    "parallelism": (None, "units (partitions, tables) whose Spark jobs run at the same time in the application "
                          "(default: one a core of the application, between 4 and 16); from 2, as many more "
                          "(at most 8 more) may be swapping after their last job"),
    "deadline": (None, "compact: the end of the maintenance window - a duration from now (90m, 2h), a time of "
                       "day (05:30, UTC, the next one) or an ISO time (2026-11-26T05:30:00Z); the most useful "
                       "work first, no unit started that would not end before it, what is left reported "
                       "(code deadline)"),
    "verify": (None, "compact: content (default: row checksums of the copy read back as readers decode it) "
                     "or rows (row counts, schema and codec from metadata only)"),
    "allow_by_name_projection": (None, "compact: compact Parquet/ORC units whose files' columns drift from the "
                                       "table's (renamed, dropped, reordered columns, other types) by name, as "
                                       "Spark reads them, instead of refusing them (schema_drift)"),
    "allow_owner_change": (None, "compact, HDFS: compact units whose files or directory belong to another owner or "
                                 "group than this run (not the HDFS superuser) can give its copy anyway, with a "
                                 "warning, instead of refusing them (ownership)"),
    "allow_replicated": (None, "compact/analyze: treat tables with Hive replication properties (repl.*: a replica "
                               "that REPL LOAD keeps) like any other, instead of refusing them (replicated)"),
    "lease_timeout": (None, "compact/rollback/cleanup/recover: a table's lease without heartbeat for this long is "
                            "stale and is taken over (default 30m; a holder on this host whose process is gone: "
                            "at once)"),
    "progress_file": ("FILE", "append progress records (JSON lines: start, tables, table, working, end) to this "
                              "local file while the run goes on"),
    "break_lease": (None, "recover: take over the table's lease even if it looks live (its holder is known "
                          "to be dead, e.g. its host is lost)"),
    "mode": (None, "analyze/compact: " + ", ".join(MODES) + " (default ratio, the reference rule)"),
    "min_input_files": (None, "minor: fragment files needed (default 12)"),
    "fragment_ratio": (None, "fragment: smaller than target size x this (default 0.125)"),
    "min_target_ratio": (None, "undersized: smaller than target size x this (default 0.75)"),
    "where": (None, "analyze/compact/rollback: partition filter, e.g. \"dt >= '2024-09-01' AND region IN "
                    "('eu','us')\""),
    "history": ("N", "analyze: return the table's N newest history records (default 20; 0: none)"),
    "sort_by": ("COL[ DESC][,COL]", "compact: sort the rows inside each written file by these data columns "
                                    "(each ascending, or largest first with DESC)"),
    "dedupe_keys": ("COL[,COL]", "compact: keep only the latest version of each key (per partition)"),
    "dedupe_order_by": ("COL", "compact --dedupe-keys: the column whose largest value is the latest version"),
    "dedupe_delete_marker": ("COL", "compact --dedupe-keys: a key whose latest version has this marker set is "
                                    "dropped"),
    "dedupe_delete_value": ("VALUE", "the --dedupe-delete-marker value that marks a delete (default: a boolean "
                                     "true)"),
    "dedupe_trigger_ratio": ("RATIO", "compact --dedupe-keys: also rewrite a partition the size rule skips when "
                                      "this share (0 < RATIO <= 1) of its rows are superseded versions or delete "
                                      "markers"),
    "merge_from": ("URI|DB.TABLE", "compact --dedupe-keys: merge this batch (a directory of data files with the "
                                   "table's columns, partition columns included, or a non-partitioned table) into "
                                   "the partitions its rows belong to; only those are rewritten"),
}
# The contract's value types (flags.py) as argparse reads them.
TYPES: dict[str, Callable[[str], Any] | None] = {"float": float, "int": int, "str": None, "lower": str.lower,
                                                  "upper": str.upper}
# Contract flags of which one at most is given.
EXCLUSIVE = (("pin", "unpin"),)
# Contract flags that are not settings (build_settings) but the run's own.
NOT_SETTINGS = ("progress_file",)


def _contract_flags(common: argparse.ArgumentParser) -> None:
    """The flags of the command/flag contract (flags.py), in its order."""
    groups = {dest: common.add_mutually_exclusive_group() for names in EXCLUSIVE for dest in names[:1]}
    groups.update({dest: groups[names[0]] for names in EXCLUSIVE for dest in names[1:]})
    for _option, flag, dest, kind, _commands, _render in ENGINE_FLAGS:
        metavar, text = HELP[dest]
        extra: dict[str, Any] = {"help": text} if text else {}
        if metavar:
            extra["metavar"] = metavar
        if kind == "switch":
            extra.update(action="store_true", default=None)
        elif TYPES[kind] is not None:
            extra["type"] = TYPES[kind]
        groups.get(dest, common).add_argument(flag, dest=dest, **extra)


def _listed(names: tuple[str, ...]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _misapplied(args: argparse.Namespace) -> str | None:
    """Why a contract flag given does not apply to the command (flags.py:
    the commands that take it), or None. ``where`` is checked on the settings
    (a config file may set it too)."""
    for _option, flag, dest, _kind, commands, _render in ENGINE_FLAGS:
        if dest != "where" and getattr(args, dest) is not None and args.command not in commands:
            return f"{flag} only applies to {_listed(commands)}"
    return None


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    sel = common.add_mutually_exclusive_group(required=True)
    sel.add_argument("--table", help="one table: <database>.<table>")
    sel.add_argument("--tables", help="comma-separated list of <database>.<table>")
    sel.add_argument("--database", help="every table of a database")
    common.add_argument("--config-file", "-c", help="YAML file with the reference configuration keys")
    common.add_argument("--dry-run", action="store_true", default=None, dest="dry_run")
    _contract_flags(common)
    common.add_argument("--result-file", help="also write the JSON result to this local file")
    common.add_argument("--state-dir", help="embedded Metastore and warehouse directory (plain python mode)")
    common.add_argument("--new-run-id", dest="new_run_id", metavar="RUN_ID",
                        help="the run id of this application (its first table's run), chosen by the launcher "
                             "so that the application's name can carry it (the modules pass it under "
                             "spark-submit); default: a new one")
    common.add_argument("--require-metastore", action="store_true", dest="require_metastore",
                        help="refuse to start when the driver has no Hive Metastore configured (it would "
                             "otherwise use a private embedded catalog); the modules pass it under spark-submit")
    common.add_argument("--master", help="Spark master in plain python mode (default local[*])")
    common.add_argument("--conf", action="append", default=[], metavar="K=V", help="extra Spark conf (plain python mode)")
    common.add_argument("--properties-file", metavar="FILE",
                        help="extra Spark conf from a java properties file, e.g. secrets kept off the "
                             "command line (plain python mode)")
    p = argparse.ArgumentParser(prog="run_lakekeeper.py", description="Safe compaction of Hive external tables")
    p.add_argument("--version", action="version", version=f"lakekeeper-spark {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    helps = {
        "analyze": "report file counts, sizes and what compaction would do (no writes)",
        "compact": "compact tables that need it (backup, staging, verify, swap)",
        "rollback": "restore a table from its most recent backup",
        "cleanup": "remove backups (original files and backup tables)",
        "recover": "finish or undo runs that were interrupted",
    }
    for name in COMMANDS:
        sub.add_parser(name, parents=[common], help=helps[name])
    return p


def parse_args(argv: list[str]) -> tuple[argparse.Namespace, Any, list[str]]:
    """Validated arguments, settings, and the explicit table list (empty for --database)."""
    args = _parser().parse_args(argv)
    file_values = load_config_file(args.config_file) if args.config_file else {}
    overrides = {dest: getattr(args, dest) for _o, _f, dest, _k, _c, _r in ENGINE_FLAGS if dest not in NOT_SETTINGS}
    overrides["dry_run"] = args.dry_run
    settings = build_settings(file_values, overrides)
    misapplied = _misapplied(args)
    if misapplied:
        raise UsageError(misapplied)
    if args.command == "cleanup" and not (settings.pin or settings.unpin):
        missing = missing_policy(policy_of(settings))
        if missing:  # refused before Spark starts: deleting every backup must be asked for
            raise UsageError(missing)
    if settings.deadline is not None:
        from .policy.budget import parse_deadline

        parse_deadline(settings.deadline, time.time())  # a bad value stops the run before Spark starts
    if args.new_run_id is not None and not is_run_id(args.new_run_id):
        raise UsageError(f"--new-run-id must look like 20240101T000000-a1b2c3 (UTC time, six hex digits), "
                         f"got {args.new_run_id!r}")
    if settings.merge_from is not None and not args.table:
        raise UsageError("--merge-from merges one batch into one table: give --table, not --tables or --database")
    where_commands = next(c for _o, _f, dest, _k, c, _r in ENGINE_FLAGS if dest == "where")
    if settings.where is not None and args.command not in where_commands:
        raise UsageError(f"where only applies to {_listed(where_commands)}; {args.command} works on whole "
                         f"backups and runs, not on a selection of partitions")
    tables: list[str] = []
    if args.table:
        db, t = parse_table_name(args.table)
        tables = [f"{db}.{t}"]
    elif args.tables:
        tables = parse_table_list(args.tables)
    else:
        args.database = validate_ident(args.database, "database name")
    for item in args.conf:
        if "=" not in item:
            raise UsageError(f"--conf expects K=V, got {item!r}")
    args.extra_conf = dict(item.split("=", 1) for item in args.conf)
    if args.properties_file:
        try:
            with open(args.properties_file, encoding="utf-8") as fh:
                args.extra_conf.update(parse_properties(fh.read()))
        except OSError as exc:
            raise UsageError(f"cannot read properties file {args.properties_file}: {exc.strerror}") from exc
    return args, settings, tables


def _run_tables(ctx: Any, command: str, tables: list[str], database: str | None,
                progress: Progress | None = None) -> list[dict[str, Any]]:
    from .commands.analyze import analyze_table
    from .commands.cleanup import cleanup_table
    from .commands.compact import compact_table
    from .commands.recover import recover_command
    from .commands.rollback import rollback_table
    from .catalog.context import bounded_map, unit_pool
    from .report.results import error_result, table_result

    handlers: dict[str, Callable[[Any, str], dict[str, Any]]] = {
        "analyze": analyze_table,
        "compact": compact_table,
        "rollback": rollback_table,
        "cleanup": cleanup_table,
        "recover": recover_command,
    }
    database_mode = database is not None
    if database_mode:
        if not ctx.catalog.database_exists(database):
            return [table_result(database, "failed", f"database {database} does not exist", code="not_found")]
        backup_name = backup_table_pattern(ctx.settings.backup_prefix)
        tables = [f"{database}.{t}" for t in ctx.catalog.list_tables(database) if not backup_name.match(t)]
    if command == "compact" and ctx.settings.deadline and not ctx.settings.dry_run and ctx.budget is None:
        from .policy.budget import Budget, parse_deadline

        ctx = dataclasses.replace(ctx, budget=Budget(parse_deadline(ctx.settings.deadline, time.time())))
    if ctx.budget is not None and len(tables) > 1:
        tables = _by_benefit(ctx, tables)  # the worst tables first: what the deadline leaves matters least
    progress = progress or Progress(None, command, ctx.run_id)
    progress.tables(tables)

    ctx.job_slots()  # made now: the tables' contexts below share the one budget
    facts = None
    if command in RECORDED_COMMANDS and not ctx.settings.dry_run:
        from .report.history import run_facts

        facts = run_facts(ctx.spark, ctx.fs)  # who and where, for the tables' history records
    issued: set[str] = set()
    issued_lock = threading.Lock()

    def table_run_id() -> str:
        """Each table its own run id (the first the application's): two
        tables over one location must never share staging or journal names."""
        with issued_lock:
            run_id = ctx.run_id if ctx.run_id not in issued else new_run_id()
            while run_id in issued:
                run_id = new_run_id()
            issued.add(run_id)
            return run_id

    def run_one(name: str) -> dict[str, Any]:
        progress.table_started(name)
        res = run_table(name)
        progress.table_finished(res)
        return res

    def run_table(name: str) -> dict[str, Any]:
        started = time.time()
        log.info("%s %s", command, name)
        tctx = dataclasses.replace(ctx, run_id=table_run_id(), lease=None)
        try:
            try:
                if command in LEASED_COMMANDS and not ctx.settings.dry_run:
                    tctx.lease = _take_lease(tctx, command, name)
                res = handlers[command](tctx, name)
            except LakekeeperError as exc:
                res = error_result(name, exc, tctx.run_id)
                if getattr(exc, "holder", None) is not None:
                    res["lease_holder"] = exc.holder
                if getattr(exc, "partial", None):  # the error came after units had changed
                    res.update(exc.partial, changed=True)
                if database_mode and exc.status == "refused":
                    res["status"] = "skipped"  # a database run passes over what it may not touch
                elif exc.status not in ("refused", "locked") and exc.code != "not_found":
                    _recover_after_error(tctx, command, name, res)
            except Exception as exc:  # noqa: BLE001 - one table's failure must not stop the others
                log.exception("%s %s failed", command, name)
                res = table_result(name, "failed", root_cause(exc), code="error", run_id=tctx.run_id)
                _recover_after_error(tctx, command, name, res)
        finally:
            if tctx.lease is not None:
                tctx.lease.release()
        if tctx.lease is not None and tctx.lease.taken_over:
            res["lease_taken_over"] = tctx.lease.taken_over
        res["seconds"] = round(time.time() - started, 3)
        if facts is not None:
            _record_history(tctx, command, name, res, started, facts)
        log.info("%s %s: %s (%s)", command, name, res["status"], res["reason"])
        return res

    if parking_enabled():
        return run_parking(ctx, tables, run_one)
    # Tables of one run share the application: up to `parallelism` of them
    # are worked on at once, and their units draw from the same budget of
    # `parallelism` concurrent Spark jobs (context.run_unit_jobs) on the
    # run's unit threads (context.unit_pool), so a table with few units does
    # not leave executors idle.
    with unit_pool(ctx) as run_ctx:
        ctx = run_ctx  # run_table's contexts are made from it: they share its unit threads
        return bounded_map(run_one, tables, ctx.settings.parallelism, "lakekeeper-table")


LEASED_COMMANDS = ("compact", "rollback", "cleanup", "recover")


def _by_benefit(ctx: Any, tables: list[str]) -> list[str]:
    """Tables in order of benefit (budget.table_benefit: small files removed
    per MB rewritten, from one content summary of each table's location);
    a table that cannot be looked at keeps its place after the others."""
    from .policy.budget import table_benefit
    from .catalog.context import bounded_map

    def score(name: str) -> float:
        try:
            db, table = name.split(".")
            location = ctx.catalog.get_table(db, table).location
            cs = ctx.fs.content_summary(ctx.fs.qualify(location or ""))
            return table_benefit(cs["file_count"], cs["length"], ctx.settings.target_file_bytes)
        except Exception:  # noqa: BLE001 - the table's own run says what is wrong with it
            return -1.0

    scores = bounded_map(score, tables, 8, "lakekeeper-benefit")
    order = sorted(range(len(tables)), key=lambda i: (-scores[i], i))
    log.info("deadline: tables by benefit: %s", ", ".join(f"{tables[i]} ({scores[i]:.1f})" for i in order))
    return [tables[i] for i in order]


def _record_history(ctx: Any, command: str, name: str, res: dict[str, Any], started: float,
                    facts: dict[str, Any]) -> None:
    """The run's record in the table's history, once its outcome is known
    (``history_record``: where it went). Best effort: a record that cannot
    be written is reported (``history_error``), never fails the run."""
    from .report.history import build_record, should_record, write_record
    from .storage.layout import history_dir
    from .catalog.tables import load_table

    if not should_record(command, res, ctx.settings.dry_run):
        return
    try:
        info = load_table(ctx, name)
    except LakekeeperError:  # not a table of ours (a view, a managed table): no history to keep
        return
    except Exception as exc:  # noqa: BLE001
        res["history_error"] = java_message(exc)
        return
    try:
        record = build_record(command, res, started, time.time(), facts)
        res["history_record"] = write_record(ctx.fs, history_dir(info), record)
    except Exception as exc:  # noqa: BLE001 - the run's outcome stands; only its record is missing
        log.warning("%s: could not write the history record: %s", name, java_message(exc))
        res["history_error"] = java_message(exc)


def _take_lease(ctx: Any, command: str, name: str) -> Any:
    """The table's lease (lease.py), before anything (its recovery
    included) is done to it; raises ``LeaseHeld`` (status ``locked``)."""
    from .storage.layout import journal_dir
    from .protocol.lease import acquire
    from .catalog.tables import load_table

    info = load_table(ctx, name)
    return acquire(ctx.fs, journal_dir(info), ctx.run_id, name, command, ctx.settings.lease_timeout_seconds,
                   break_lease=command == "recover" and ctx.settings.break_lease)


def _recover_after_error(ctx: Any, command: str, name: str, res: dict[str, Any]) -> None:
    """A table whose run stopped on an unexpected error after it had started
    writing: settle what this run left right away (the next run would
    otherwise), so a failure leaves the table as it was."""
    if command not in ("compact", "rollback") or ctx.settings.dry_run:
        return
    from .protocol.journal import Journal
    from .storage.layout import journal_dir
    from .protocol.recovery import recover_table
    from .catalog.tables import load_table

    try:
        info = load_table(ctx, name)
        if ctx.run_id not in Journal.run_ids(ctx.fs, journal_dir(info)):
            return
        actions = recover_table(ctx, info)
        res["recovered_after_error"] = actions
        if command == "rollback" and any(a.get("action") == "rolled_back" for a in actions):
            # a rollback is settled forward: the units it had not restored yet are restored now
            res["changed"] = True
    except Exception as exc:  # noqa: BLE001 - the next run's automatic recovery will try again
        log.exception("%s: recovery after the error failed", name)
        res["recovery_after_error_failed"] = java_message(exc)


def _summary(command: str, results: list[dict[str, Any]]) -> str:
    counts: dict[str, int] = {}
    for r in results:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    parts = ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "no tables"
    return f"{command}: {parts}"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    real_stdout = _reserve_stdout()
    # force: under spark-submit the root logger already has a handler that
    # writes to stdout, which would corrupt the JSON document.
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, force=True,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("py4j").setLevel(logging.WARNING)
    doc: dict[str, Any] = {"lakekeeper_version": __version__, "changed": False, "failed": True, "tables": []}
    code = 0
    result_file = None
    progress = None
    try:
        try:
            args, settings, tables = parse_args(argv)
        except UsageError as exc:
            doc.update(command=argv[0] if argv else None, msg=str(exc))
            code = 2
            raise _Done() from exc
        result_file = args.result_file
        logging.getLogger().setLevel(settings.log_level)
        run_id = args.new_run_id or new_run_id()
        doc.update(command=args.command, run_id=run_id, dry_run=settings.dry_run)
        progress = Progress(args.progress_file, args.command, run_id)
        progress.start()
        with contextlib.redirect_stdout(sys.stderr):
            try:
                from .catalog.catalog import Catalog
                from .catalog.context import Context
                from .storage.fs import HadoopFS
                from .session import build_session, metastore_in_use, no_metastore_message

                from .compat import runtime, unsupported_reason

                spark = build_session(args.master, args.state_dir, args.extra_conf, log_level=settings.log_level)
                doc["runtime"] = runtime(spark).to_dict()
                unsupported = unsupported_reason(runtime(spark))
                if unsupported:
                    raise UsageError(unsupported)
                doc["catalog"] = metastore_in_use(spark)
                if args.require_metastore and doc["catalog"]["kind"] == "embedded":
                    raise UsageError(no_metastore_message(doc["catalog"]))
                ctx = Context(spark=spark, fs=HadoopFS(spark), catalog=Catalog(spark), settings=settings, run_id=run_id)
            except Exception as exc:  # noqa: BLE001
                log.exception("the engine could not start")
                doc["msg"] = f"the engine could not start: {str(exc).splitlines()[0] if str(exc) else repr(exc)}"
                code = 3
                raise _Done() from exc
            try:  # the Metastore: fail once, clearly, instead of once per table
                ctx.catalog.database_exists("default")
            except Exception as exc:  # noqa: BLE001
                log.exception("the Hive Metastore is unreachable")
                doc["msg"] = f"the engine could not start: the Hive Metastore is unreachable: {_metastore_reason(exc, spark)}"
                code = 3
                raise _Done() from exc
            results = _run_tables(ctx, args.command, tables, args.database, progress)
            _stop_quietly(spark)
        failed = any(r["status"] in ("failed", "refused") for r in results)
        doc.update(
            tables=results,
            changed=any(r.get("changed") for r in results),
            would_change=any(r.get("would_change") for r in results),
            failed=failed,
            msg=_summary(args.command, results),
        )
        code = 1 if failed else 0
    except _Done:
        pass
    if progress is not None:
        progress.end(doc)
    text = document_text(doc)
    if result_file:
        with open(result_file, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
    real_stdout.write(text + "\n")
    real_stdout.flush()
    return code


READABLE_DOCUMENT_BYTES = 1 << 20


def document_text(doc: dict[str, Any]) -> str:
    """The result document as JSON: indented for reading while it is under
    ``READABLE_DOCUMENT_BYTES``, compact past that. (Indented output goes
    through Python's slow encoder: for 100,000 partitions, a 91 MB document,
    5.4 s against 1.2 s compact, which is also 51 MB.)"""
    text = json.dumps(doc, default=str)
    return json.dumps(doc, indent=2, default=str) if len(text) < READABLE_DOCUMENT_BYTES else text


def _stop_quietly(spark: Any) -> None:
    """Stop Spark before the document is printed, so that its shutdown
    logging (which Spark 3.3's default log4j2 configuration sends to stdout
    under spark-submit) comes before the document, not after it."""
    try:
        spark.stop()
    except Exception:  # noqa: BLE001 - the results are complete; a failing stop changes nothing
        log.warning("stopping Spark failed", exc_info=True)


def _reserve_stdout() -> Any:
    """The JSON document's channel. Everything else that writes to file
    descriptor 1 - the JVM that plain-python mode starts as a child (Spark
    3.3's default log4j2 configuration logs to stdout), native code - is sent
    to stderr at the descriptor level; the document goes to a duplicate of
    the original stdout."""
    sys.stdout.flush()
    try:
        saved = os.dup(1)
        os.dup2(2, 1)
    except OSError:  # no real descriptors (e.g. an embedding host): keep the Python object
        return sys.stdout
    return os.fdopen(saved, "w", encoding="utf-8", closefd=True)


def _metastore_reason(exc: Exception, spark: Any = None) -> str:
    """Where the Metastore was looked for, and the innermost cause of the
    failure (e.g. ``java.net.ConnectException: Connection refused``)."""
    where = ""
    try:
        uris = spark._jsc.hadoopConfiguration().get("hive.metastore.uris") if spark is not None else None
        where = f"{uris}: " if uris else "embedded Derby: "
    except Exception:  # noqa: BLE001
        pass
    text = " ".join((innermost_cause(exc) or java_message(exc)).split())
    return (where + text)[:400]


class _Done(Exception):
    pass
