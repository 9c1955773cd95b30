"""The command/flag contract has one source, ENGINE_FLAGS in
plugins/module_utils/_lakekeeper_argv.py: the modules write the engine's
argv from it, the engine (args.py) parses and checks the flags from its
generated copy, spark_app/lakekeeper_spark/flags.py. Pure: no Spark."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from lakekeeper_spark import args, flags
from lakekeeper_spark.report.errors import UsageError

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ARGV = _load("_lakekeeper_argv", ROOT / "plugins" / "module_utils" / "_lakekeeper_argv.py")
SCRIPT = _load("flag_contract", ROOT / "scripts" / "flag_contract.py")
SAMPLE = {"float": "0.5", "int": "3", "str": "x", "lower": "x", "upper": "info"}
# Values the settings accept, where the type's sample is not one.
VALUES = {"older_than": "7d", "grace_period": "1d", "quiet_period": "10m", "deadline": "2h", "lease_timeout": "30m",
          "verify": "rows", "queues": "etl=root.etl", "order": "files-desc", "mode": "ratio", "where": "dt = '1'", "sort_by": "id", "dedupe_keys": "id",
          "dedupe_order_by": "v", "dedupe_delete_marker": "d", "dedupe_trigger_ratio": "0.5",
          "rollback_run": "20240101T000000-abcdef", "pin": "20240101T000000-abcdef",
          "unpin": "20240101T000000-abcdef", "tier_older_than": "30d", "tier_storage_policy": "COLD",
          "tier_erasure_coding_policy": "XOR-2-1-1024k", "max_file_size_mb": "512"}
# Flags that need others beside them.
WITH = {"dedupe_order_by": ["--dedupe-keys=id"], "dedupe_delete_marker": ["--dedupe-keys=id", "--dedupe-order-by=v"],
        "dedupe_delete_value": ["--dedupe-keys=id", "--dedupe-order-by=v", "--dedupe-delete-marker=d"],
        "dedupe_trigger_ratio": ["--dedupe-keys=id", "--dedupe-order-by=v"],
        "dedupe_keys": ["--dedupe-order-by=v"], "merge_from": ["--dedupe-keys=id", "--dedupe-order-by=v"],
        "tier_older_than": ["--tier-storage-policy=COLD"], "tier_storage_policy": ["--tier-older-than=30d"],
        "tier_erasure_coding_policy": ["--tier-older-than=30d"]}


def test_the_engine_copy_is_generated_from_the_one_source():
    assert (ROOT / "spark_app" / "lakekeeper_spark" / "flags.py").read_text() == SCRIPT.render(), \
        "spark_app/lakekeeper_spark/flags.py is stale: run scripts/flag_contract.py"
    assert flags.ENGINE_FLAGS == ARGV.ENGINE_FLAGS and flags.COMMANDS == ARGV.COMMANDS


def test_the_engine_parser_takes_exactly_the_contract_flags():
    compact = args._parser()._subparsers._group_actions[0].choices["compact"]  # pylint: disable=protected-access
    by_flag = {a.option_strings[0]: a for a in compact._actions if a.option_strings}  # pylint: disable=protected-access
    own = {"-h", "--table", "--tables", "--database", "--config-file", "--dry-run", "--result-file", "--state-dir",
           "--new-run-id", "--require-metastore", "--master", "--conf", "--properties-file",
           "--analysis-file", "--go-file", "--go-timeout",  # compact's hand-over (report/handoff.py): handoff_args
           "--sort-columns", "--analyze-stats"}  # the last two: lakekeeper 0.0.x's, deprecated (policy/upgrade.py)
    assert set(by_flag) - own == {row[1] for row in flags.ENGINE_FLAGS}
    for _option, flag, dest, kind, commands, _render in flags.ENGINE_FLAGS:
        assert by_flag[flag].dest == dest and set(commands) <= set(flags.COMMANDS), flag
        assert (by_flag[flag].nargs == 0) == (kind == "switch"), flag
    assert set(args.HELP) == {row[2] for row in flags.ENGINE_FLAGS}


@pytest.mark.parametrize("row", flags.ENGINE_FLAGS, ids=lambda row: row[1])
def test_each_flag_is_refused_by_the_commands_that_do_not_take_it(row):
    _option, flag, dest, kind, commands, _render = row
    given = WITH.get(dest, []) + ([flag] if kind == "switch" else [f"{flag}={VALUES.get(dest, SAMPLE[kind])}"])
    for command in flags.COMMANDS:
        argv = [command, "--table", "db.t", "--older-than", "7d"] if command == "cleanup" and dest != "older_than" \
            else [command, "--table", "db.t"]
        try:
            args.parse_args(argv + given)
            refused = None
        except UsageError as exc:
            refused = str(exc)
        if command in commands:
            assert not refused or "only applies to" not in refused, (command, refused)
        else:
            assert refused and "only applies to" in refused, (command, refused)
            assert flag in refused or dest in WITH or dest == "where", (command, refused)


def test_the_modules_write_every_flag_as_the_contract_says():
    assert ARGV.ENGINE_OPTION_NAMES == tuple(r[0] for r in ARGV.ENGINE_FLAGS if r[5] not in ("rewrite", "tiering")) + (
        "sort_by", "dedupe", "merge_from", "tiering")
    assert ARGV.option_commands("tiering") == ("compact",)
    assert ARGV.option_commands("dedupe") == ("analyze", "compact") and ARGV.option_commands("sort_by") == ("compact",)
    for option, flag, _dest, kind, commands, render in ARGV.ENGINE_FLAGS:
        if render in ("rewrite", "tiering"):  # tiering: test_tiering_rules.py
            continue
        value = True if kind == "switch" else SAMPLE[kind]
        argv = ARGV.engine_args(commands[0], ["--table", "db.t"], {option: value})
        assert flag in argv or f"{flag}={value}" in argv, (option, argv)
