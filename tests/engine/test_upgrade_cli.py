"""lakekeeper 0.0.x's command lines and config files, as today's engine
reads them (docs/upgrading-from-0.0.x.md); no Spark.

The 0.0.x side comes from the 0.0.6 wheel as PyPI serves it
(``lakekeeper-0.0.6-py3-none-any.whl``, which scripts/bootstrap downloads): its config keys are the
fields of its ``config.py`` ``LakekeeperConfig`` and its ``generate-config``
template is its ``cli.py`` ``_YAML_TEMPLATE`` (both read from the source with
``ast``, nothing of it run), and its spark-submit command is built by its own
``utils/spark.py`` ``build_spark_submit_command`` (imported from the wheel:
it imports nothing but ``logging``).
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

# downloaded by scripts/bootstrap (requirements.txt, "# legacy-wheel"), hash-checked by pip
WHEEL = Path(os.environ.get("LAKEKEEPER_CACHE") or Path.home() / ".cache" / "lakekeeper") / "legacy" / \
    "lakekeeper-0.0.6-py3-none-any.whl"
ROOT = Path(__file__).resolve().parents[2]
SCRIPT = str(ROOT / "spark_app" / "run_lakekeeper.py")

# The seed's (0.0.x README) Scenario 2 config file.
SEED_CONFIG = """\
block_size_mb: 128
compaction_ratio_threshold: 10.0
log_level: INFO
spark_submit:
  enabled: true
  master: yarn
  deploy_mode: client
  principal: myuser@MY.REALM.COM
  keytab: /etc/security/keytabs/myuser.keytab
  queue: data-engineering
  archives: /opt/lakekeeper_env.tar.gz#lakekeeper_env
  python_env: ./lakekeeper_env/bin/python
  executor_memory: 4g
  num_executors: 10
  executor_cores: 2
  driver_memory: 2g
  script_path: /opt/lakekeeper/run_lakekeeper.py
  extra_conf:
    spark.yarn.kerberos.relogin.period: 1h
"""
# The seed's command lines (after ``lakekeeper``).
SEED_COMMANDS = [
    "analyze --database mydb",
    "compact --table mydb.events",
    "rollback --table mydb.events",
    "cleanup --database mydb --older-than 7d",
    "--config-file {cfg} analyze --database mydb",
    "--config-file {cfg} compact --table mydb.events",
    "--config-file {cfg} compact --tables mydb.events,mydb.users",
    "--config-file {cfg} compact --database mydb",
    "--config-file {cfg} rollback --table mydb.events",
    "--config-file {cfg} cleanup --database mydb --older-than 7d",
    "analyze --tables mydb.events,mydb.users",
    "analyze --table mydb.events --block-size 256 --ratio-threshold 5",
    "compact --database mydb --block-size 256 --ratio-threshold 5",
    "compact --database mydb --dry-run",
    "-c {cfg} compact -d mydb",
    "compact -t mydb.events -c {cfg}",
    "compact -t mydb.events --sort-columns date,user_id --analyze-stats",
    "compact -t mydb.events --no-analyze-stats --log-level DEBUG",
]


def _wheel_source(name: str) -> ast.Module:
    with zipfile.ZipFile(WHEEL) as zf:
        return ast.parse(zf.read(f"lakekeeper/{name}").decode("utf-8"))


def _legacy_config_keys() -> list[str]:
    """The fields of 0.0.6's LakekeeperConfig: every key its config file took."""
    (cls,) = [n for n in _wheel_source("config.py").body if isinstance(n, ast.ClassDef) and n.name == "LakekeeperConfig"]
    return [n.target.id for n in cls.body if isinstance(n, ast.AnnAssign)]


def _legacy_template() -> str:
    (node,) = [n for n in _wheel_source("cli.py").body if isinstance(n, ast.Assign)
               and any(getattr(t, "id", "") == "_YAML_TEMPLATE" for t in n.targets)]
    return ast.literal_eval(node.value)


@pytest.fixture
def legacy_spark_utils():
    sys.path.insert(0, str(WHEEL))
    try:
        from lakekeeper.config import SparkSubmitConfig
        from lakekeeper.utils.spark import build_spark_submit_command

        yield SparkSubmitConfig, build_spark_submit_command
    finally:
        sys.path.remove(str(WHEEL))
        for name in [m for m in sys.modules if m == "lakekeeper" or m.startswith("lakekeeper.")]:
            del sys.modules[name]


def test_the_seed_command_lines_parse(tmp_path):
    from lakekeeper_spark.args import parse_args

    cfg = tmp_path / "lakekeeper.yaml"
    cfg.write_text(SEED_CONFIG)
    for line in SEED_COMMANDS:
        args, settings, tables = parse_args(line.format(cfg=cfg).split())
        assert args.command == next(w for w in line.split() if w in ("analyze", "compact", "rollback", "cleanup"))
        assert args.table or args.tables or args.database, line
        if "{cfg}" in line:
            assert args.config_file == str(cfg), line
    args, settings, _t = parse_args(f"--config-file {cfg} cleanup --database mydb --older-than 7d".split())
    assert settings.older_than_seconds == 7 * 86400 and settings.block_size_mb == 128
    args, settings, _t = parse_args("compact -t mydb.events --sort-columns date,user_id --analyze-stats".split())
    assert settings.sort_by == ["date", "user_id"] and len(args.deprecations) == 2, args.deprecations
    assert any("--sort-by" in n for n in args.deprecations) and any("statistics" in n for n in args.deprecations)


def test_every_0_0_x_config_key_is_read_or_refused_by_its_new_name(tmp_path):
    from lakekeeper_spark.args import parse_args
    from lakekeeper_spark.report.errors import UsageError

    keys = _legacy_config_keys()
    assert keys == ["block_size_mb", "compaction_ratio_threshold", "backup_prefix", "dry_run", "log_level",
                    "config_file", "database", "table", "tables", "spark_submit", "sort_columns",
                    "analyze_after_compaction"], keys
    # 0.0.6's generated template, as it writes it
    template = tmp_path / "template.yaml"
    template.write_text(_legacy_template())
    args, settings, _t = parse_args(["-c", str(template), "compact", "--table", "mydb.events"])
    assert settings.block_size_mb == 128 and settings.backup_prefix == "__bkp", settings
    assert [n for n in args.deprecations if "analyze_after_compaction" in n], args.deprecations

    every = tmp_path / "every.yaml"
    every.write_text("block_size_mb: 64\ncompaction_ratio_threshold: 5\nbackup_prefix: __bkp\ndry_run: true\n"
                     "log_level: debug\nconfig_file: other.yaml\ndatabase: mydb\nanalyze_after_compaction: true\n"
                     "sort_columns:\n  mydb.events: [date, user_id]\n  otherdb.logs: [year]\n"
                     "spark_submit:\n  enabled: false\n")
    args, settings, tables = parse_args(["-c", str(every), "analyze"])  # the selection from the file, as 0.0.x
    assert args.database == "mydb" and tables == [] and settings.dry_run and settings.block_size_mb == 64
    notes = "\n".join(args.deprecations)
    for key in ("config_file", "database", "analyze_after_compaction", "sort_columns"):
        assert key in notes, (key, notes)
    # sort_columns: one table's entry is its sort_by; in a run of many tables it is refused by its new names
    args, settings, _t = parse_args(["-c", str(every), "compact", "-t", "mydb.events"])
    assert settings.sort_by == ["date", "user_id"], settings.sort_by
    args, settings, _t = parse_args(["-c", str(every), "compact", "-t", "mydb.other"])
    assert settings.sort_by == [], settings.sort_by
    with pytest.raises(UsageError, match="lakekeeper.sort_by"):
        parse_args(["-c", str(every), "compact"])  # the file's database: mydb.events is among its tables
    args, settings, _t = parse_args(["-c", str(every), "compact", "--tables", "mydb.a,mydb.b"])
    assert settings.sort_by == [] and any("names no table" in n for n in args.deprecations)
    # still refused: unknown keys (0.0.x ignored them), no selection anywhere, 0.0.x flags outside compact
    (tmp_path / "typo.yaml").write_text("block_size: 64\n")
    with pytest.raises(UsageError, match="unknown key"):
        parse_args(["-c", str(tmp_path / "typo.yaml"), "analyze", "-d", "mydb"])
    with pytest.raises(UsageError, match="one of the arguments --table --tables --database is required"):
        parse_args(["analyze"])
    with pytest.raises(UsageError, match="only applies to compact"):
        parse_args(["analyze", "-d", "mydb", "--sort-columns", "a"])
    with pytest.raises(UsageError, match="only applied with --table"):
        parse_args(["compact", "-d", "mydb", "--sort-columns", "a"])


def test_the_spark_submit_section_is_launched_as_0_0_6_built_it(tmp_path, legacy_spark_utils):
    import yaml

    from lakekeeper_spark.launcher import build_command, spark_submit_section, submit_if_configured

    SparkSubmitConfig, build_spark_submit_command = legacy_spark_utils
    cfg = tmp_path / "lakekeeper.yaml"
    cfg.write_text(SEED_CONFIG)
    argv = ["--config-file", str(cfg), "compact", "--database", "mydb"]
    ss = spark_submit_section(str(cfg))
    cmd, notes = build_command(ss, SCRIPT, argv)
    section = yaml.safe_load(SEED_CONFIG)["spark_submit"]
    section.update(script_path=SCRIPT, extra_conf={**section["extra_conf"],
                                                   "spark.yarn.appMasterEnv.LAKEKEEPER_SUBMITTED": "1"})
    assert cmd == build_spark_submit_command(SparkSubmitConfig.from_dict(section), argv) + ["--require-metastore"]
    assert any("/opt/lakekeeper/run_lakekeeper.py" in n for n in notes), notes

    # cluster mode: the config file shipped and named by its base name, the engine package as --py-files
    cluster = dict(ss, deploy_mode="cluster")
    cmd, _notes = build_command(cluster, SCRIPT, argv, engine_zip=lambda: "/tmp/engine.zip")
    section.update(deploy_mode="cluster", extra_files=[str(cfg)], py_files=["/tmp/engine.zip"])
    assert cmd == build_spark_submit_command(SparkSubmitConfig.from_dict(section),
                                             ["--config-file", "lakekeeper.yaml", "compact", "--database", "mydb"]) \
        + ["--require-metastore"]

    calls = []

    def run(cmd, env, check):
        assert check is False
        calls.append((cmd, env))
        return subprocess.CompletedProcess(cmd, 5)

    assert submit_if_configured(argv, SCRIPT, environ={}, run=run) == 5
    assert calls[0][0][0] == "spark-submit" and calls[0][1]["LAKEKEEPER_SUBMITTED"] == "1"
    assert submit_if_configured(argv, SCRIPT, environ={"LAKEKEEPER_SUBMITTED": "1"}, run=run) is None  # the driver
    assert submit_if_configured(argv[2:], SCRIPT, environ={}, run=run) is None  # no config file: the engine
    # the engine's own Spark asked for (the modules' embedded mode): not launched
    assert submit_if_configured(argv + ["--state-dir", "/tmp/x"], SCRIPT, environ={}, run=run) is None
    assert submit_if_configured(argv + ["--master=local[2]"], SCRIPT, environ={}, run=run) is None
    (tmp_path / "off.yaml").write_text("spark_submit:\n  enabled: false\n  master: yarn\n")
    assert submit_if_configured(["-c", str(tmp_path / "off.yaml"), "analyze", "-d", "x"], SCRIPT, {}, run) is None
    assert len(calls) == 1


def test_run_lakekeeper_py_launches_a_crontab_line_of_0_0_x(tmp_path):
    """``python run_lakekeeper.py --config-file x compact --database mydb``,
    a real process, through a symbolic link named ``lakekeeper``, with a
    stand-in spark-submit (submit_command, as 0.0.6 had it) that records its
    argv and exits 7."""
    record = tmp_path / "argv.json"
    fake = tmp_path / "fake-spark-submit"
    fake.write_text(f"#!{sys.executable}\nimport json, os, sys\n"
                    f"json.dump({{'argv': sys.argv[1:], 'env': os.environ.get('LAKEKEEPER_SUBMITTED')}}, "
                    f"open({str(record)!r}, 'w'))\nsys.exit(7)\n")
    fake.chmod(0o755)
    cfg = tmp_path / "lakekeeper.yaml"
    cfg.write_text(SEED_CONFIG.replace("  enabled: true\n", f"  enabled: true\n  submit_command: {fake}\n"))
    link = tmp_path / "bin" / "lakekeeper"
    link.parent.mkdir()
    link.symlink_to(SCRIPT)
    env = {k: v for k, v in os.environ.items() if k not in ("LAKEKEEPER_SUBMITTED", "PYSPARK_GATEWAY_PORT")}
    proc = subprocess.run([sys.executable, str(link), "--config-file", str(cfg), "compact", "--database", "mydb"],
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    assert proc.returncode == 7, proc.stderr
    seen = json.loads(record.read_text())
    assert seen["env"] == "1" and seen["argv"][:4] == ["--master", "yarn", "--deploy-mode", "client"], seen
    assert seen["argv"][-7:] == [SCRIPT, "--config-file", str(cfg), "compact", "--database", "mydb",
                                 "--require-metastore"], seen
    assert "launching via spark-submit" in proc.stderr and proc.stdout == "", (proc.stdout, proc.stderr)
