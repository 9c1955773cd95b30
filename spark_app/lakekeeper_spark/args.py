"""The command line: the engine's parser and ``parse_args`` (validated
arguments, settings and the tables). The flags of the command/flag contract
(which command takes which flag, of which type) come from flags.py, the
engine's copy of the one table (scripts/flag_contract.py); the run's own
flags (selection, config file, result file, Spark in plain python mode) are
declared here. See docs/engine-contract.md.
"""

from __future__ import annotations

import argparse
import time
from typing import Any, Callable

from . import __version__
from .flags import COMMANDS, ENGINE_FLAGS
from .policy.config import MODES, build_settings, config_file_values, parse_properties, read_config_file
from .policy.names import parse_table_list, parse_table_name, validate_ident
from .policy.retention import missing_policy, policy_of
from .policy.upgrade import STATISTICS_NOTE, legacy_notes_and_values, sort_by_of_legacy
from .report.errors import UsageError
from .storage.layout import is_run_id


# The engine's own words for the contract flags (flags.py): (metavar, help) by dest.
HELP: dict[str, tuple[str | None, str | None]] = {
    "block_size_mb": ("MB", None),
    "compaction_ratio_threshold": (None, None),
    "target_file_size_mb": ("MB", None),
    "backup_prefix": (None, None),
    "older_than": (None, "cleanup: keep backups younger than this (30m, 12h, 7d), or 'all' to keep none on "
                         "that account; cleanup needs this or --keep-last"),
    "keep_last": (None, "cleanup: keep the N newest backups of each partition (N >= 1)"),
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
    "order": (None, "compact: which tables and partitions start first - default (as named or listed; with a "
                    "deadline the most useful first), bytes-asc, bytes-desc, files-asc or files-desc (smallest, "
                    "largest, fewest or most files first)"),
    "verify": (None, "compact: content (default: row checksums of the copy read back as readers decode it) "
                     "or rows (row counts, schema and codec from metadata only), or sample (content for a "
                     "seeded random share of each table's units, --verify-sample, at least one; rows for the "
                     "others)"),
    "verify_sample": ("F", "compact, verify sample: the share of each table's units verified by content "
                           "(0 < F <= 1, default 0.1; at least one unit)"),
    "queues": ("G=Q[,G=Q]", "analyze/compact: Amoro optimizer group -> YARN queue, for tables whose "
                            "self-optimizing.group names one (a group not named is a queue of its name); "
                            "reported as each table's queue"),
    "retries": ("N", "compact: try a partition that failed for a reason that passes (Metastore or NameNode "
                     "unreachable, lost executors, IO timeouts) again up to N times, each from the state "
                     "recovery left (default 2; 0: never); a verification mismatch is never tried again"),
    "retry_backoff": ("SECONDS", "compact: wait this long before the first retry, twice as long before each "
                                 "next (default 10, at most 300)"),
    "allow_by_name_projection": (None, "compact: compact Parquet/ORC units whose files' columns drift from the "
                                       "table's (renamed, dropped, reordered columns, other types) by name, as "
                                       "Spark reads them, instead of refusing them (schema_drift)"),
    "allow_owner_change": (None, "compact, HDFS: compact units whose files or directory belong to another owner or "
                                 "group than this run (not the HDFS superuser) can give its copy anyway, with a "
                                 "warning, instead of refusing them (ownership)"),
    "allow_replicated": (None, "compact/analyze: treat tables with Hive replication properties (repl.*: a replica "
                               "that REPL LOAD keeps) like any other, instead of refusing them (replicated)"),
    "fail_on_refused": (None, "a table refused (left alone: managed, transactional, excluded, replicated, a "
                              "backup...) fails the run (exit code 1) as a failed one does; by default it is "
                              "reported refused with its reason and the run succeeds (docs/statuses.md)"),
    "lease_timeout": (None, "compact/rollback/cleanup/recover: a table's lease without heartbeat for this long is "
                            "stale and is taken over (default 30m; a holder on this host whose process is gone: "
                            "at once)"),
    "progress_file": ("FILE", "append progress records (JSON lines: start, tables, table, working, end) to this "
                              "local file while the run goes on"),
    "result_uri": ("URI", "also write the JSON result to this Hadoop URI (a relative path: in the user's home "
                          "directory on the default filesystem), mode 0600; what a launcher reads back when the "
                          "driver runs elsewhere (spark-submit --deploy-mode cluster)"),
    "break_lease": (None, "recover: take over the table's lease even if it looks live (its holder is known "
                          "to be dead, e.g. its host is lost)"),
    "orphans": (None, "cleanup: also remove the staging copies (.<dir>.lk_staging_<run>) of killed runs that no "
                      "journal and no live run accounts for, whose live directory is there (analyze's reconcile "
                      "lists them as removable); nothing else"),
    "mode": (None, "analyze/compact: " + ", ".join(MODES) + " (default ratio, the reference rule)"),
    "min_input_files": (None, "minor: fragment files needed (default 12)"),
    "fragment_ratio": (None, "fragment: smaller than target size x this (default 0.125)"),
    "min_target_ratio": (None, "undersized: smaller than target size x this (default 0.75)"),
    "max_file_size_mb": ("MB", "analyze/compact: split a file above this size into files of about the target "
                               "size (default 0: off; at least 1.5 x the target)"),
    "where": (None, "analyze/compact/rollback: partition filter, e.g. \"dt >= '2024-09-01' AND region IN "
                    "('eu','us')\""),
    "history": ("N", "analyze: return the table's N newest history records (default 20; 0: none)"),
    "sort_by": ("COL[ DESC][,COL]", "compact: sort the rows inside each written file by these data columns "
                                    "(each ascending, or largest first with DESC); zorder(a,b): a Z-order over up "
                                    "to four columns (Parquet, ORC)"),
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
    "tier_older_than": ("DURATION", "compact: tiering - a partition whose newest file is older than this (30d) is "
                                    "written under --tier-storage-policy and/or --tier-ec-policy as it is compacted"),
    "tier_storage_policy": ("POLICY", "compact: tiering - the HDFS storage policy (COLD, WARM, ALL_SSD...) given to "
                                      "the compacted copy of a partition older than --tier-older-than"),
    "tier_erasure_coding_policy": ("POLICY", "compact: tiering - the HDFS erasure coding policy (RS-6-3-1024k...) "
                                             "given to the compacted copy of a partition older than "
                                             "--tier-older-than"),
}
# The contract's value types (flags.py) as argparse reads them.
TYPES: dict[str, Callable[[str], Any] | None] = {
    "float": float, "int": int, "str": None, "lower": str.lower, "upper": str.upper,
}
# Contract flags of which one at most is given.
EXCLUSIVE = (("pin", "unpin"),)
# Contract flags that are not settings (build_settings) but the run's own.
NOT_SETTINGS = ("progress_file", "result_uri")


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
    # compact --analysis-file analyzes first: analyze's flags (history, the backups' verdicts) apply to it too
    applies = (args.command, "analyze") if args.command == "compact" and args.analysis_file else (args.command,)
    for _option, flag, dest, _kind, commands, _render in ENGINE_FLAGS:
        if dest != "where" and getattr(args, dest) is not None and not set(applies) & set(commands):
            return f"{flag} only applies to {_listed(commands)}"
    return None


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    # one of them (or, as lakekeeper 0.0.x read it, the config file's table, tables or database key)
    sel = common.add_mutually_exclusive_group()
    sel.add_argument("--table", "-t", help="one table: <database>.<table>")
    sel.add_argument("--tables", help="comma-separated list of <database>.<table>")
    sel.add_argument("--database", "-d", help="every table of a database")
    common.add_argument("--config-file", "-c",
                        help="YAML file with the reference configuration keys (also accepted before the command, "
                             "as lakekeeper 0.0.x took it)")
    common.add_argument("--dry-run", action="store_true", default=None, dest="dry_run")
    _contract_flags(common)
    # lakekeeper 0.0.x's compact flags (policy/upgrade.py)
    common.add_argument("--sort-columns", dest="legacy_sort_columns", metavar="COL[,COL]",
                        help="compact, deprecated (lakekeeper 0.0.x): --sort-by")
    common.add_argument("--analyze-stats", "--no-analyze-stats", dest="legacy_analyze_stats", action="store_true",
                        default=None, help="compact, deprecated (lakekeeper 0.0.x): ignored; " + STATISTICS_NOTE)
    common.add_argument("--result-file", help="also write the JSON result to this local file")
    common.add_argument("--analysis-file", metavar="FILE",
                        help="compact: first analyze the selected tables as the analyze command would and write its "
                             "JSON result to this file (a local path, or a URI such as hdfs://...: a cluster-mode "
                             "driver's), then wait for --go-file (report/handoff.py)")
    common.add_argument("--go-file", metavar="FILE",
                        help="compact --analysis-file: the file (local path or URI) that says which of the analyzed tables to "
                             'compact ({"tables": [...]}) or to stop ({"stop": "why"})')
    common.add_argument("--go-timeout", metavar="SECONDS", type=float, default=3600.0,
                        help="compact --analysis-file: without a go file after this long, compact nothing and end "
                             "(default 3600)")
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
    p.add_argument("--config-file", "-c", dest="global_config_file", metavar="CONFIG_FILE",
                   help="the config file, before the command as lakekeeper 0.0.x took it (one given after the "
                        "command wins)")
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


def _legacy_flags(args: argparse.Namespace, overrides: dict[str, Any], sort_columns: dict[str, list[str]]) -> None:
    """lakekeeper 0.0.x's compact flags and its config file's sort_columns,
    as today's settings (policy/upgrade.py), with their deprecation notes."""
    for dest, flag in (("legacy_sort_columns", "--sort-columns"), ("legacy_analyze_stats", "--analyze-stats")):
        if getattr(args, dest) is not None and args.command != "compact":
            raise UsageError(f"{flag} only applies to compact")
    if args.legacy_analyze_stats is not None:
        args.deprecations.append(f"--analyze-stats/--no-analyze-stats (lakekeeper 0.0.x) is ignored: {STATISTICS_NOTE}")
    if args.legacy_sort_columns is not None:
        if args.sort_by is not None:
            raise UsageError("--sort-columns (lakekeeper 0.0.x) is --sort-by: give one of them")
        if not args.table:  # 0.0.6 applied it only with --table
            raise UsageError("--sort-columns (lakekeeper 0.0.x) only applied with --table; today: --sort-by")
        overrides["sort_by"] = args.legacy_sort_columns
        args.deprecations.append("--sort-columns (lakekeeper 0.0.x) is deprecated: --sort-by")
        return  # 0.0.6: the command line's sort wins over the file's sort_columns
    tables = [args.table] if args.table else [t.strip() for t in (args.tables or "").split(",") if t.strip()]
    cols, note = sort_by_of_legacy(sort_columns, args.command, tables, args.database, args.config_file or "")
    if note:
        args.deprecations.append(note)
    if cols and overrides.get("sort_by") is None:
        overrides["sort_by"] = cols


def _handoff_refusal(args: argparse.Namespace, settings: Any) -> str | None:
    """Why --analysis-file/--go-file cannot be used as given, or None."""
    if not (args.analysis_file or args.go_file):
        return None
    if args.command != "compact":
        return "--analysis-file and --go-file only apply to compact"
    if not (args.analysis_file and args.go_file):
        return "--analysis-file and --go-file go together (the analysis written, then the go waited for)"
    if settings.dry_run:
        return "--analysis-file is not for a dry run (a dry-run compaction is its own analysis)"
    if not 0 < args.go_timeout < float("inf"):  # also NaN
        return f"--go-timeout must be a number of seconds greater than 0, got {args.go_timeout}"
    return None


def parse_args(argv: list[str]) -> tuple[argparse.Namespace, Any, list[str]]:
    """Validated arguments, settings, and the explicit table list (empty for --database)."""
    args = _parser().parse_args(argv)
    args.config_file = args.config_file or args.global_config_file
    args.deprecations = []
    file_data = read_config_file(args.config_file) if args.config_file else {}
    file_values = config_file_values(file_data, args.config_file) if args.config_file else {}
    legacy: dict[str, Any] = {"selection": None, "sort_columns": {}}
    if file_data:
        notes, legacy = legacy_notes_and_values(file_data, args.config_file)
        args.deprecations += notes
    if not (args.table or args.tables or args.database):
        if legacy["selection"] is None:
            raise UsageError("one of the arguments --table --tables --database is required (or, as lakekeeper "
                             "0.0.x took it, a table, tables or database key in the config file)")
        setattr(args, *legacy["selection"])
    overrides = {dest: getattr(args, dest) for _o, _f, dest, _k, _c, _r in ENGINE_FLAGS if dest not in NOT_SETTINGS}
    overrides["dry_run"] = args.dry_run
    _legacy_flags(args, overrides, legacy["sort_columns"])
    settings = build_settings(file_values, overrides)
    handoff = _handoff_refusal(args, settings)
    if handoff:
        raise UsageError(handoff)
    misapplied = _misapplied(args)
    if misapplied:
        raise UsageError(misapplied)
    if args.command == "cleanup" and not (settings.pin or settings.unpin or settings.orphans):
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
