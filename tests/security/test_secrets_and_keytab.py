"""Secrets and keytabs through the real modules (one ansible-playbook -vvv
run, see conftest.module_run).

A password-like ``extra_conf`` value (``spark.hadoop.fs.s3a.secret.key``) and
a password in the module's ``environment`` go through a failing and a
succeeding engine run at log level DEBUG: neither may appear in the
playbook's output, in the registered results, in the module's ``cmd``, or in
what the module sends to syslog (captured with a sitecustomize that records
``syslog.syslog`` calls, since this machine has no /dev/log).

Secret-looking extra_conf values travel in a 0600 properties file
(``--properties-file``), never on the command line; keytabs are checked
before anything is launched.
"""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from security_cases import SECRETS

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(1800)


def _cmd_module():
    spec = importlib.util.spec_from_file_location(
        "_lakekeeper_argv", REPO / "plugins" / "module_utils" / "_lakekeeper_argv.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_secrets_never_in_output_results_or_cmd(module_run):
    out = module_run["stdout"] + module_run["stderr"]
    assert "-vvv" in out or "ansible-playbook" in out or module_run["stdout"], "no output at all"
    for secret in SECRETS:
        assert secret not in out, f"secret {secret[:6]}... printed by ansible-playbook -vvv"
        assert secret not in module_run["result_files"], "secret in a registered result"
    ok, failing = module_run["results"]["secret_ok"], module_run["results"]["secret_failing"]
    assert ok and not ok.get("failed"), (ok, module_run["stdout"][-3000:])
    assert failing and failing.get("failed"), failing
    assert failing.get("stderr_lines"), "the failing run returns the engine's stderr (DEBUG): it must be clean"
    for res in (ok, failing):
        # the secret conf travels in a 0600 properties file, not on the command line
        assert "spark.hadoop.fs.s3a.secret.key" not in res["cmd"], res["cmd"]
        assert "--properties-file" in res["cmd"], res["cmd"]
        for secret in SECRETS:
            assert secret not in json.dumps(res)


def test_secrets_not_sent_to_syslog(module_run):
    """AnsibleModule logs its invocation to syslog/journald on the managed
    host before the module can add the extra_conf secrets to no_log_values."""
    text = module_run["syslog"]
    assert "Invoked with" in text, "the syslog capture saw nothing"
    leaked = [s[:6] + "..." for s in SECRETS if s in text]
    assert not leaked, f"secret values {leaked} are in the module's syslog invocation message"


def test_a_world_readable_keytab_is_refused(module_run):
    res = module_run["results"]["world_readable_keytab"]
    assert res and res.get("failed") and "readable" in str(res.get("msg", "")), res


def test_secret_values_stay_off_the_engine_command_line():
    cmd = _cmd_module()
    ss = cmd.resolve_spark_submit({"master": "local[1]", "extra_conf": {"spark.hadoop.fs.s3a.secret.key": SECRETS[0]}})
    argv = cmd.build_command("analyze", ["--database", "default"], ss, "/app/run_lakekeeper.py",
                             python="/usr/bin/python3", state_dir="/tmp/state", result_file="/tmp/r.json")
    assert not any(SECRETS[0] in a for a in argv), argv
