"""Command line and the JSON result (see docs/engine-contract.md).

Human logs go to stderr. The JSON document is the only thing written to
stdout (and to ``--result-file`` when given); anything else that tries to
print to stdout during the run is sent to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import re
import sys
import time
from typing import Any, Callable

from . import __version__
from .config import build_settings, load_config_file
from .errors import LakekeeperError, UsageError
from .names import parse_table_list, parse_table_name, validate_ident
from .planner import new_run_id

log = logging.getLogger("lakekeeper")

COMMANDS = ("analyze", "compact", "rollback", "cleanup", "recover")


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    sel = common.add_mutually_exclusive_group(required=True)
    sel.add_argument("--table", help="one table: <database>.<table>")
    sel.add_argument("--tables", help="comma-separated list of <database>.<table>")
    sel.add_argument("--database", help="every table of a database")
    common.add_argument("--config-file", "-c", help="YAML file with the reference configuration keys")
    common.add_argument("--block-size", type=float, dest="block_size_mb", metavar="MB")
    common.add_argument("--ratio-threshold", type=float, dest="compaction_ratio_threshold")
    common.add_argument("--target-file-size", type=float, dest="target_file_size_mb", metavar="MB")
    common.add_argument("--backup-prefix", dest="backup_prefix")
    common.add_argument("--dry-run", action="store_true", default=None, dest="dry_run")
    common.add_argument("--older-than", dest="older_than", help="cleanup: 30m, 12h, 7d")
    common.add_argument("--log-level", dest="log_level", type=str.upper)
    common.add_argument("--result-file", help="also write the JSON result to this local file")
    common.add_argument("--state-dir", help="embedded Metastore and warehouse directory (plain python mode)")
    common.add_argument("--master", help="Spark master in plain python mode (default local[*])")
    common.add_argument("--conf", action="append", default=[], metavar="K=V", help="extra Spark conf (plain python mode)")
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
    overrides = {k: getattr(args, k) for k in (
        "block_size_mb", "compaction_ratio_threshold", "target_file_size_mb", "backup_prefix",
        "dry_run", "log_level", "older_than")}
    settings = build_settings(file_values, overrides)
    if args.older_than is not None and args.command != "cleanup":
        raise UsageError("--older-than only applies to cleanup")
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
    return args, settings, tables


def _run_tables(ctx: Any, command: str, tables: list[str], database: str | None) -> list[dict[str, Any]]:
    from .commands.analyze import analyze_table
    from .commands.cleanup import cleanup_table
    from .commands.common import error_result, table_result
    from .commands.compact import compact_table
    from .commands.recover import recover_command
    from .commands.rollback import rollback_table
    from .fs import _java_message

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
        backup_name = re.compile("^" + re.escape(ctx.settings.backup_prefix.lower()) + r"_.+_\d{8}_\d{6}_[0-9a-f]{6}$")
        tables = [f"{database}.{t}" for t in ctx.catalog.list_tables(database) if not backup_name.match(t)]
    results = []
    for name in tables:
        started = time.time()
        log.info("%s %s", command, name)
        try:
            res = handlers[command](ctx, name)
        except LakekeeperError as exc:
            res = error_result(name, exc, ctx.run_id)
            if database_mode and exc.status == "refused":
                res["status"] = "skipped"  # a database run passes over what it may not touch
        except Exception as exc:  # noqa: BLE001 - one table's failure must not stop the others
            log.exception("%s %s failed", command, name)
            res = table_result(name, "failed", _java_message(exc), code="error", run_id=ctx.run_id)
        res["seconds"] = round(time.time() - started, 3)
        log.info("%s %s: %s (%s)", command, name, res["status"], res["reason"])
        results.append(res)
    return results


def _summary(command: str, results: list[dict[str, Any]]) -> str:
    counts: dict[str, int] = {}
    for r in results:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    parts = ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "no tables"
    return f"{command}: {parts}"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    real_stdout = sys.stdout
    logging.basicConfig(stream=sys.stderr, level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    doc: dict[str, Any] = {"lakekeeper_version": __version__, "changed": False, "failed": True, "tables": []}
    code = 0
    result_file = None
    try:
        try:
            args, settings, tables = parse_args(argv)
        except UsageError as exc:
            doc.update(command=argv[0] if argv else None, msg=str(exc))
            code = 2
            raise _Done() from exc
        result_file = args.result_file
        logging.getLogger().setLevel(settings.log_level)
        run_id = new_run_id()
        doc.update(command=args.command, run_id=run_id, dry_run=settings.dry_run)
        with contextlib.redirect_stdout(sys.stderr):
            try:
                from .catalog import Catalog
                from .commands.common import Context
                from .fs import HadoopFS
                from .session import build_session

                confs = dict(item.split("=", 1) for item in args.conf)
                spark = build_session(args.master, args.state_dir, confs, log_level=settings.log_level)
                ctx = Context(spark=spark, fs=HadoopFS(spark), catalog=Catalog(spark), settings=settings, run_id=run_id)
            except Exception as exc:  # noqa: BLE001
                log.exception("the engine could not start")
                doc["msg"] = f"the engine could not start: {str(exc).splitlines()[0] if str(exc) else exc!r}"
                code = 3
                raise _Done() from exc
            results = _run_tables(ctx, args.command, tables, args.database)
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
    text = json.dumps(doc, indent=2, sort_keys=False, default=str)
    if result_file:
        with open(result_file, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
    real_stdout.write(text + "\n")
    real_stdout.flush()
    return code


class _Done(Exception):
    pass
