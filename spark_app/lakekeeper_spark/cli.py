"""The engine's entry point (``main``): one command over the tables, and the
JSON result (see docs/engine-contract.md). The command line itself: args.py.

Human logs go to stderr. The JSON document is the only thing written to
stdout (and to ``--result-file`` when given); anything else that tries to
print to stdout during the run is sent to stderr.
"""

from __future__ import annotations

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
from .args import parse_args
from .report.errors import LakekeeperError, UsageError, innermost_cause, java_message, root_cause
from .protocol.faults import parking_enabled, run_parking
from .policy.order import DEFAULT as DEFAULT_ORDER
from .report.history import RECORDED_COMMANDS
from .report.results import run_failed
from .storage.layout import backup_table_pattern, new_run_id
from .storage.legacy import legacy_backup_pattern
from .report.progress import Progress

log = logging.getLogger("lakekeeper")


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
        legacy_name = legacy_backup_pattern(ctx.settings.backup_prefix)  # lakekeeper 0.0.x's backups
        tables = [f"{database}.{t}" for t in ctx.catalog.list_tables(database)
                  if not backup_name.match(t) and not legacy_name.match(t)]
        if command == "cleanup":  # the backups of tables dropped since are cleaned too (never leaked)
            from .catalog.backup import dropped_tables

            tables += dropped_tables(ctx.catalog, database)
    if command == "compact" and ctx.settings.deadline and not ctx.settings.dry_run and ctx.budget is None:
        from .policy.budget import Budget, parse_deadline

        ctx = dataclasses.replace(ctx, budget=Budget(parse_deadline(ctx.settings.deadline, time.time())))
    if command == "compact" and len(tables) > 1 and ctx.settings.order != DEFAULT_ORDER:
        tables = _by_order(ctx, tables)  # the order asked for (order.py), deadline or not
    elif ctx.budget is not None and len(tables) > 1:
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
        tctx = dataclasses.replace(ctx, run_id=table_run_id(), lease=None, loaded={})
        fence = None
        try:
            try:
                if command in LEASED_COMMANDS and not ctx.settings.dry_run:
                    tctx.lease = _take_lease(tctx, command, name)
                    fence = _fence(tctx, name) if tctx.lease is not None else None
                res = handlers[command](tctx, name)
            except LakekeeperError as exc:
                res = error_result(name, exc, tctx.run_id)
                if getattr(exc, "holder", None) is not None:
                    res["lease_holder"] = exc.holder
                if getattr(exc, "partial", None):  # the error came after units had changed
                    res.update(exc.partial, changed=True)
                if exc.code == "lease_lost" or _lost_meanwhile(tctx, res):
                    # stop at once: the table's holder now finishes the journal
                    res["changed"] = bool(res.get("changed")) or bool(fence is not None and fence.changed)
                elif exc.status not in ("refused", "locked") and exc.code != "not_found":
                    _recover_after_error(tctx, command, name, res)
            except Exception as exc:  # noqa: BLE001 - one table's failure must not stop the others
                log.exception("%s %s failed", command, name)
                res = table_result(name, "failed", root_cause(exc), code="error", run_id=tctx.run_id)
                if _lost_meanwhile(tctx, res):
                    res["changed"] = bool(fence is not None and fence.changed)
                else:
                    _recover_after_error(tctx, command, name, res)
        finally:
            if tctx.lease is not None:
                tctx.lease.release()
        if tctx.lease is not None and tctx.lease.taken_over:
            res["lease_taken_over"] = tctx.lease.taken_over
        res["seconds"] = round(time.time() - started, 3)
        if facts is not None:  # a record of its own, written once the lease is given up: not fenced
            _record_history(dataclasses.replace(tctx, fs=ctx.fs, catalog=ctx.catalog), command, name, res, started,
                            facts)
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


def _summaries(ctx: Any, tables: list[str]) -> list[dict[str, Any] | None]:
    """One content summary of each table's location (file count, length),
    None for a table that cannot be looked at (its own run says why)."""
    from .catalog.context import bounded_map

    def summary(name: str) -> dict[str, Any] | None:
        try:
            db, table = name.split(".")
            location = ctx.catalog.get_table(db, table).location
            return ctx.fs.content_summary(ctx.fs.qualify(location or ""))
        except Exception:  # noqa: BLE001 - the table's own run says what is wrong with it
            return None

    return bounded_map(summary, tables, 8, "lakekeeper-summary")


def _by_order(ctx: Any, tables: list[str]) -> list[str]:
    """Tables in the run's ``order`` (order.py) by one content summary of
    each; a table that cannot be looked at keeps its place after the others."""
    from .policy.order import ordered

    summaries = dict(zip(tables, _summaries(ctx, tables)))
    out = ordered(tables, ctx.settings.order, lambda t: (summaries[t] or {}).get("file_count"),
                  lambda t: (summaries[t] or {}).get("length"))
    log.info("order %s: tables %s", ctx.settings.order, ", ".join(
        f"{t} ({(summaries[t] or {}).get('file_count', '?')} files, {(summaries[t] or {}).get('length', '?')} bytes)"
        for t in out))
    return out


def _by_benefit(ctx: Any, tables: list[str]) -> list[str]:
    """Tables in order of benefit (budget.table_benefit: small files removed
    per MB rewritten, from one content summary of each table's location);
    a table that cannot be looked at keeps its place after the others."""
    from .policy.budget import table_benefit

    scores = [-1.0 if cs is None else table_benefit(cs["file_count"], cs["length"], ctx.settings.target_file_bytes)
              for cs in _summaries(ctx, tables)]
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
    included) is done to it; raises ``LeaseHeld`` (status ``locked``).
    None: the cleanup of a dropped table whose journal directory is gone."""
    from .storage.layout import journal_dir
    from .protocol.lease import acquire
    from .catalog.tables import load_table

    try:
        where = journal_dir(load_table(ctx, name))
    except LakekeeperError as exc:
        if command != "cleanup" or exc.code != "not_found":
            raise
        from .commands.cleanup import dropped_journal_dir

        # a dropped table's backups: the lease where its compactions took it, if that directory is
        # still there (else nothing on the filesystem is shared with a compaction: no lease)
        where = dropped_journal_dir(ctx, name)
        if where is None:
            return None
    return acquire(ctx.fs, where, ctx.run_id, name, command, ctx.settings.lease_timeout_seconds,
                   break_lease=command == "recover" and ctx.settings.break_lease)


def _fence(tctx: Any, name: str) -> Any:
    """From the lease on, the table's run sees the filesystem and the
    catalog through fenced views (protocol/fence.py): each step that changes
    the table first proves the run still holds the lease."""
    from .protocol.fence import Fence, fenced_catalog, fenced_fs

    fence = Fence(tctx.lease.check, name)
    tctx.fs = fenced_fs(tctx.fs, fence)
    tctx.catalog = fenced_catalog(tctx.catalog, fence)
    return fence


def _lost_meanwhile(tctx: Any, res: dict[str, Any]) -> bool:
    """A run that failed because another run changed the table under it
    (a guard found the original or the staging gone) may have lost its
    lease while it was stopped: then that is what it reports, ``lease_lost``
    with the error it met, and it touches nothing more (no recovery after
    the error: the journal belongs to the table's holder now)."""
    if tctx.lease is None:
        return False
    try:
        tctx.lease.check()
    except LakekeeperError as lost:
        if lost.code != "lease_lost":
            raise
        res.update(status="failed", code="lease_lost", reason=f"{lost.message} (it had stopped at: {res['reason']})")
        return True
    return False


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


def _outcome(doc: dict[str, Any], command: str, results: list[dict[str, Any]], settings: Any) -> bool:
    """The command's results in its document (``tables``, ``changed``,
    ``failed``, ``msg``...); returns whether the run failed."""
    failed = run_failed(results, settings.fail_on_refused)  # refused: reported, fails only on request
    doc.update(
        tables=results,
        changed=any(r.get("changed") for r in results),
        would_change=any(r.get("would_change") for r in results),
        failed=failed,
        msg=_summary(command, results),
    )
    if command == "compact":
        doc["order"] = settings.order  # the order the tables started in (order.py)
        # units tried again after a failure that passes, over all tables (policy/retries.py)
        doc["retries"] = sum(int(r.get("retries") or 0) for r in results)
    return failed


def _analyze_then_compact(ctx: Any, args: Any, tables: list[str], progress: Progress,
                          doc: dict[str, Any]) -> list[dict[str, Any]]:
    """compact --analysis-file (report/handoff.py): the analysis the analyze
    command would make, in this application, written whole to the analysis
    file as the analyze command's document; then the go file waited for, and
    the tables it names compacted as the compact command compacts them.
    ``doc['handoff']`` says what the go was. The analysis shares the
    application's run id (it writes nothing)."""
    from .report.handoff import files_for, handoff_names, wait_for_go

    analyzed = _run_tables(ctx, "analyze", tables, args.database)
    analysis = {k: doc[k] for k in ("lakekeeper_version", "deprecations", "runtime", "catalog") if k in doc}
    analysis.update(command="analyze", run_id=ctx.run_id, dry_run=False)
    _outcome(analysis, "analyze", analyzed, ctx.settings)
    # a URI, or any name in cluster mode (--result-uri): the cluster's filesystem (a cluster-mode driver has no
    # file of the launcher's host)
    cluster = bool(getattr(args, "result_uri", None))
    analysis_file, go_file = handoff_names(args.analysis_file, args.go_file, ctx.fs, cluster)
    files_for(analysis_file, ctx.fs, cluster).write_atomic(analysis_file, document_text(analysis) + "\n")
    log.info("analysis written to %s; waiting up to %g s for %s", analysis_file, args.go_timeout, go_file)
    waited = time.time()
    go = wait_for_go(go_file, args.go_timeout, [t["table"] for t in analyzed],
                     read=files_for(go_file, ctx.fs, cluster).read)
    doc["handoff"] = dict(go.to_dict(), analysis_file=analysis_file, go_file=go_file,
                          waited_seconds=round(time.time() - waited, 3), go_at=round(time.time(), 3))
    log.info("go: %s", doc["handoff"])
    if not go.tables:
        return []
    return _run_tables(ctx, "compact", go.tables, None, progress)


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
    result_uri = _flag_value(argv, "--result-uri")  # known even when the command line is refused
    hadoop = None  # (jvm, Hadoop configuration) of the session, for result_uri
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
        for note in args.deprecations:  # lakekeeper 0.0.x's keys and flags (policy/upgrade.py)
            log.warning("%s", note)
        if args.deprecations:
            doc["deprecations"] = list(args.deprecations)
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
                hadoop = (spark._jvm, spark._jsc.hadoopConfiguration())  # still usable once Spark is stopped
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
                doc["msg"] = f"the engine could not start: {_start_reason(exc)}"
                code = 3
                raise _Done() from exc
            try:  # the Metastore: fail once, clearly, instead of once per table
                ctx.catalog.database_exists("default")
            except Exception as exc:  # noqa: BLE001
                log.exception("the Hive Metastore is unreachable")
                doc["msg"] = f"the engine could not start: the Hive Metastore is unreachable: {_metastore_reason(exc, spark)}"
                code = 3
                raise _Done() from exc
            try:  # before any thread lists a partition (compat/hive_client.py)
                ctx.catalog.settle_authorization()
            except Exception as exc:  # noqa: BLE001 - Hive sets it up on first need again, as it would have
                log.warning("the Hive client's session authorization could not be set up ahead: %s", exc)
            if args.analysis_file:  # analyze first, then the go (report/handoff.py): one application
                results = _analyze_then_compact(ctx, args, tables, progress, doc)
            else:
                results = _run_tables(ctx, args.command, tables, args.database, progress)
            _stop_quietly(spark)
        failed = _outcome(doc, args.command, results, settings)
        if doc.get("handoff", {}).get("outcome") == "invalid":
            failed = doc["failed"] = True
            doc["msg"] = f"compact: nothing compacted: {doc['handoff']['reason']}"
        elif doc.get("handoff", {}).get("outcome") in ("stop", "timeout"):
            doc["msg"] = f"compact: nothing compacted: {doc['handoff']['reason']}"
        code = 1 if failed else 0
    except _Done:
        pass
    if progress is not None:
        progress.end(doc)
    text = document_text(doc)
    if result_file:
        with open(result_file, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
    if result_uri:
        write_result_uri(result_uri, text + "\n", hadoop)
    real_stdout.write(text + "\n")
    real_stdout.flush()
    return code


READABLE_DOCUMENT_BYTES = 1 << 20


def _flag_value(argv: list[str], flag: str) -> str | None:
    """The value of ``flag`` (``flag V`` or ``flag=V``) in the raw command line, or None."""
    for i, arg in enumerate(argv):
        if arg.startswith(flag + "="):
            return arg[len(flag) + 1:]
        if arg == flag and i + 1 < len(argv):
            return argv[i + 1]
    return None


def write_result_uri(uri: str, text: str, hadoop: Any = None) -> bool:
    """The result document to a Hadoop URI (``--result-uri``), for a launcher
    that cannot read the driver's stdout or local files: under
    ``spark-submit --deploy-mode cluster`` the driver runs in a YARN
    container. Written through the session's Hadoop client (``hadoop``: its
    JVM and configuration), else, when the run stopped before Spark started
    (a refused command line), through the JVM that spark-submit started
    this process from, with the cluster configuration on its class path. The
    file is readable by its owner only and appears whole (mode 0600, a new
    parent directory 0700, renamed into place: ``storage.fs.write_private``).
    A relative URI is resolved in the user's home directory on the default
    filesystem. Best effort: a failure is logged and the run's
    exit code stays."""
    from .session import under_spark_submit
    from .storage.fs import write_private

    try:
        if hadoop is not None:
            jvm, conf = hadoop
        elif under_spark_submit():
            from pyspark.java_gateway import launch_gateway

            jvm = launch_gateway().jvm
            conf = jvm.org.apache.hadoop.conf.Configuration()
        else:
            log.warning("no Hadoop client to write the result to %s (Spark did not start)", uri)
            return False
        path = jvm.org.apache.hadoop.fs.Path(uri)
        fs = path.getFileSystem(conf)
        write_private(jvm, fs, path, text)
        log.info("result written to %s", fs.makeQualified(path).toString())
        return True
    except Exception:  # noqa: BLE001 - the launcher reports the missing result with the exit code
        log.exception("could not write the result to %s", uri)
        return False


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


def _start_reason(exc: Exception) -> str:
    """What stopped the engine's start: a Py4J error's first line only says
    which Java call failed ("An error occurred while calling
    None.org.apache.spark.api.java.JavaSparkContext."); the Java exception
    and its innermost cause say why."""
    if getattr(exc, "java_exception", None) is None and "\n" not in str(exc).strip():
        return str(exc) if str(exc) else repr(exc)
    first, prefix = (str(exc).splitlines() or [""])[0].strip(), "An error occurred while calling "
    called = first[len(prefix):].rstrip(".").removeprefix("None.") if first.startswith(prefix) else ""
    reason = " ".join(root_cause(exc).split())
    if reason.startswith(prefix):  # no Java exception object: its headline is the trace's ": <class>: ..." line
        heads = [ln[2:].strip() for ln in str(exc).splitlines() if ln.startswith(": ")]
        reason = heads[0] if heads else reason
    return (f"{reason} (calling {called})" if called else reason)[:600]


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
