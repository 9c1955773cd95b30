# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The four playbooks (compact, analyze, rollback, cleanup.yml) of the built
and installed collection, run by the real ``ansible-playbook`` with the
collection-wide lakekeeper_* variables left unset, with a few set, and with
wrongly typed ones: through the maintenance role's argument validation and
its logic to the modules and a stand-in engine (argv_engine.py: the output
contract, no Spark), which logs the arguments it was given.

Runs in the main pytest (ansible-core of requirements.txt) and on the
ansible-core 2.16 lane (scripts/ansible_lanes.py LANE_TESTS): 2.16 renders a
variable mapped to ``omit`` or null as a string (the omit placeholder, '')
before the role's arguments are checked, so every typed option the playbooks
left unset was refused there (no playbook ran on 2.16).

Each playbook runs once for three hosts of the same inventory (local
connections, in parallel): ``unset`` (only the selection), ``set`` (typed
options given as AWX/-e strings) and ``bad`` (a wrongly typed value and a
value outside the choices: refused by the role's argument validation on
every line). compact.yml also runs in check mode.

Run: ``.venv/bin/python -m pytest tests/playbooks/test_playbooks_unset.py``.
"""

from __future__ import annotations

import json
import os
import sys

import pytest

from test_playbooks import run_playbook  # pylint: disable=import-error

HERE = os.path.dirname(os.path.abspath(__file__))
ARGV_ENGINE = os.path.join(HERE, "argv_engine.py")

SET = {
    "lakekeeper_block_size_mb": "64", "lakekeeper_parallelism": "2", "lakekeeper_mode": "smart",
    "lakekeeper_verify": "rows", "lakekeeper_history": "3", "lakekeeper_allow_replicated": "true",
    "lakekeeper_log_level": "DEBUG", "lakekeeper_quiet_period": "2h", "lakekeeper_max_partitions_listed": "5",
    "lakekeeper_dedupe": {"keys": ["id"], "order_by": "ts"}, "lakekeeper_async": "0",
    "lakekeeper_pause_guard_seconds": "600", "lakekeeper_order": "bytes-asc", "lakekeeper_max_file_size_mb": "256",
}
# the modules run the stand-in engine with their own interpreter when lakekeeper_python is not set, and check
# that it imports pyspark: the project's (the ansible-core lanes' virtualenvs have no pyspark)
ENGINE_PYTHON = os.environ.get("LAKEKEEPER_ENGINE_PYTHON") or sys.executable
BAD = {"lakekeeper_block_size_mb": "big", "lakekeeper_mode": "bogus", "lakekeeper_pause_guard_seconds": "soon"}


def _inventory(tmp_path, selection):
    hosts = {}
    for name, extra in (("unset", {}), ("set", SET), ("bad", BAD)):
        hosts[name] = {
            "ansible_connection": "local", "ansible_python_interpreter": ENGINE_PYTHON,
            "lakekeeper_spark_submit": {"script_path": ARGV_ENGINE},
            "lakekeeper_environment": {"ARGV_ENGINE_ARGV": str(tmp_path / ("%s.argv" % name)),
                                       "ARGV_ENGINE_SECONDS": "0"},
            "lakekeeper_state_dir": str(tmp_path / name / "state"),
            "lakekeeper_run_record_dir": str(tmp_path / name / "runs"),
            # no ingestion hosts in this inventory; the pause itself is the pipeline role's tests'
            "lakekeeper_pause_ingestion": False,
            **selection, **extra,
            **({"lakekeeper_report_dir": str(tmp_path / "reports-set")} if name == "set" else {}),
        }
    path = tmp_path / "inventory.json"
    path.write_text(json.dumps({"all": {"children": {"lakekeeper_edge": {"hosts": hosts}}}}, indent=1))
    return path


def _argv(tmp_path, host):
    path = tmp_path / ("%s.argv" % host)
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _play(name, tmp_path, collection_path, selection, check=False):
    inventory = _inventory(tmp_path, selection)
    run = run_playbook("lakekeeper.hive.%s" % name, inventory, collection_path, tmp_path,
                       options=["--check"] if check else [], env={"PWD": str(tmp_path)})
    # the wrongly typed values are refused before anything runs, on every ansible-core line
    assert run.recap.get("bad", {}).get("failed") == 1, run
    assert "Validation of arguments failed" in run.output and "maintenance_block_size_mb" in run.output, run
    if name in ("compact", "analyze"):  # entry points with maintenance_mode
        assert "value of maintenance_mode must be one of" in run.output, run
    if name == "compact":
        assert "argument 'maintenance_pause_guard_seconds' is of type" in run.output, run
    assert _argv(tmp_path, "bad") == [], run
    for host in ("unset", "set"):
        assert run.recap.get(host, {}).get("failed") == 0, (host, run)
        summary = run.summary(host)
        assert summary.get("ok") is True and not summary.get("error"), (host, summary, run)
    return run


def _flags(argv):
    return {a for a in argv if a.startswith("--")}


# options the role passes only when set: none of them reaches the engine from the unset host
UNSET_FLAGS = {"--block-size", "--ratio-threshold", "--target-file-size", "--backup-prefix", "--log-level",
               "--parallelism", "--mode", "--verify", "--quiet-period", "--deadline", "--order", "--where", "--history",
               "--allow-replicated", "--fail-on-refused", "--sort-by", "--dedupe-keys", "--merge-from", "--pin",
               "--unpin", "--max-file-size-mb"}


def _value(argv, flag):
    return argv[argv.index(flag) + 1]


@pytest.mark.e2e
@pytest.mark.parametrize("check", [False, True], ids=["run", "check"])
def test_compact(collection_path, tmp_path, check):
    _play("compact", tmp_path, collection_path, {"lakekeeper_database": "db"}, check=check)
    unset, given = _argv(tmp_path, "unset"), _argv(tmp_path, "set")
    # in the background (unset: async's default) one application analyzes, then compacts (analyze_first); in the
    # foreground (set: lakekeeper_async 0) and in check mode an analysis, then a compaction
    assert [a[0] for a in unset] == (["analyze", "compact"] if check else ["compact"]), unset
    assert [a[0] for a in given] == ["analyze", "compact"], given
    for argv in unset:
        assert not _flags(argv) & UNSET_FLAGS, argv
        # check mode plans only; otherwise the compaction really ran (in the background, waited for)
        assert ("--dry-run" in argv) == check, argv
    if not check:
        assert "--progress-file" in unset[0] and "--analysis-file" in unset[0] and "--go-file" in unset[0], unset
    assert not any("--analysis-file" in argv for argv in given), given
    analyze, compact = given
    for argv in given:
        assert _value(argv, "--block-size") in ("64", "64.0") and _value(argv, "--parallelism") == "2", argv
        assert _value(argv, "--mode") == "smart" and _value(argv, "--log-level") == "DEBUG", argv
        assert _value(argv, "--max-file-size-mb") in ("256", "256.0"), argv  # a survey's string, as a float
        assert "--allow-replicated" in argv and _value(argv, "--dedupe-keys") == "id", argv
    assert _value(analyze, "--history") == "3", analyze
    assert _value(compact, "--verify") == "rows" and _value(compact, "--quiet-period") == "2h", compact
    assert _value(compact, "--order") == "bytes-asc" and "--order" not in analyze, given
    assert "--merge-from" not in compact and "--progress-file" not in compact, compact  # lakekeeper_async 0


@pytest.mark.e2e
def test_analyze(collection_path, tmp_path):
    _play("analyze", tmp_path, collection_path, {"lakekeeper_database": "db"})
    [unset], [given] = _argv(tmp_path, "unset"), _argv(tmp_path, "set")
    assert unset[0] == "analyze" and not _flags(unset) & UNSET_FLAGS, unset
    assert _value(given, "--mode") == "smart" and _value(given, "--history") == "3", given
    # the report on the controller: lakekeeper_report_dir unset - lakekeeper-reports in the directory
    # ansible-playbook runs in ($PWD)
    assert os.listdir(str(tmp_path / "lakekeeper-reports")) == ["lakekeeper-unset.html"]
    assert os.listdir(str(tmp_path / "reports-set")) == ["lakekeeper-set.html"]


@pytest.mark.e2e
def test_rollback(collection_path, tmp_path):
    _play("rollback", tmp_path, collection_path, {"lakekeeper_tables": "db.events"})
    [unset], [given] = _argv(tmp_path, "unset"), _argv(tmp_path, "set")
    assert unset[0] == "rollback" and not _flags(unset) & (UNSET_FLAGS | {"--run-id"}), unset
    assert _value(given, "--parallelism") == "2" and _value(given, "--log-level") == "DEBUG", given


@pytest.mark.e2e
def test_cleanup(collection_path, tmp_path):
    _play("cleanup", tmp_path, collection_path, {"lakekeeper_database": "db"})
    [unset], [given] = _argv(tmp_path, "unset"), _argv(tmp_path, "set")
    assert unset[0] == "cleanup" and not _flags(unset) & UNSET_FLAGS, unset
    # the role's retention defaults
    assert (_value(unset, "--older-than"), _value(unset, "--keep-last"), _value(unset, "--grace-period")) == \
        ("7d", "1", "1h"), unset
    assert _value(given, "--parallelism") == "2", given
