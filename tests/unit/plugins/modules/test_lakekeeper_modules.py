# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The modules' plumbing on the target, with a stub engine.

The stub only echoes its command line into a JSON document shaped as in
docs/engine-contract.md; the real engine is exercised by tests/e2e. These
tests cover what happens around it: reading config_file on the target,
environment, check mode, failures, the cached application.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import shlex
import signal
import stat
import sys
import tarfile
import threading
import time

import pytest
import yaml

from ansible.module_utils import basic
try:  # ansible-core 2.19 and newer
    from ansible.module_utils.testing import patch_module_args
except ImportError:  # 2.16 to 2.18 (the ansible-2.16 lane): the module arguments as AnsibleModule reads them
    import contextlib

    from ansible.module_utils.common.text.converters import to_bytes

    @contextlib.contextmanager
    def patch_module_args(args):
        saved = basic._ANSIBLE_ARGS
        basic._ANSIBLE_ARGS = to_bytes(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
        try:
            yield
        finally:
            basic._ANSIBLE_ARGS = saved

from ansible_collections.lakekeeper.hive.plugins.module_utils import _lakekeeper_app as _app_utils
from ansible_collections.lakekeeper.hive.plugins.module_utils import _lakekeeper_argv
from ansible_collections.lakekeeper.hive.plugins.module_utils import _lakekeeper_catalog
from ansible_collections.lakekeeper.hive.plugins.modules import lakekeeper_analyze
from ansible_collections.lakekeeper.hive.plugins.modules import lakekeeper_cleanup
from ansible_collections.lakekeeper.hive.plugins.modules import lakekeeper_compact
from ansible_collections.lakekeeper.hive.plugins.modules import lakekeeper_rollback

MODULES = dict(lakekeeper_analyze=lakekeeper_analyze, lakekeeper_cleanup=lakekeeper_cleanup,
               lakekeeper_compact=lakekeeper_compact, lakekeeper_rollback=lakekeeper_rollback)
CASES_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "test_lakekeeper_modules.yaml")
with open(CASES_FILE) as _handle:
    CASES = yaml.safe_load(_handle)

HIVE_SITE = """<?xml version="1.0"?>
<configuration>
  <property><name>hive.metastore.uris</name><value>%s</value></property>
</configuration>
"""

STUB_ENGINE = r"""#!/usr/bin/env python3
import json, os, sys
argv = sys.argv[1:]
command = argv[0]
dry = '--dry-run' in argv
behaviour = os.environ.get('STUB_BEHAVIOUR', 'ok')
if behaviour == 'usage':
    sys.stderr.write('usage: run_lakekeeper.py ...\nrun_lakekeeper.py: error: bad\n')
    sys.exit(2)
if behaviour == 'hang':  # a long run, to be stopped
    open(os.environ['STUB_FS'] + '.running', 'w').close()
    __import__('time').sleep(120)
table = argv[argv.index('--table') + 1] if '--table' in argv else 'db.t'
status = {'analyze': 'analyzed', 'compact': 'planned' if dry else 'compacted', 'rollback': 'rolled_back',
          'recover': 'recovered', 'cleanup': 'cleaned'}[command]
changed = command != 'analyze' and not dry and behaviour != 'nochange'
t = {'table': table, 'status': status, 'reason': 'stub', 'changed': changed,
     'would_change': command != 'analyze' and behaviour != 'nochange',
     'partitions': [{'spec': '', 'files_before': 60, 'files_after': 60 if dry else 1, 'target_files': 1,
                     'status': 'planned' if dry else 'compacted'}]}
failed = behaviour == 'fail'
if behaviour == 'many':  # a run that compacted 12 partitions of 52
    t['partitions'] = [{'spec': 'dt=%02d' % i, 'files_before': 9 if i < 12 else 1, 'files_after': 1, 'target_files': 1,
                        'bytes_before': 900, 'status': 'compacted' if i < 12 else 'skipped'} for i in range(52)]
if behaviour == 'locked':
    changed = False
    t.update(status='locked', code='locked', changed=False, reason='the table is being worked on by run R0; '
             'nothing was done', lease_holder={'run_id': 'R0', 'host': 'edge01'})
if failed:
    t.update(status='failed', reason='row count mismatch', changed=False, backup_table='db.__bkp_t_1')
doc = {'command': command, 'run_id': 'R1', 'dry_run': dry, 'changed': changed and not failed, 'failed': failed,
       'msg': 'stub %s' % command, 'tables': [t]}
if os.environ.get('STUB_RUNTIME'):
    doc['runtime'] = {'spark': '4.0.1', 'scala': '2.13.16', 'python': '3.11.2'}
if os.environ.get('STUB_ECHO'):
    with open(os.environ['STUB_ECHO'], 'w') as f:
        json.dump({'argv': argv, 'cwd': os.getcwd(), 'env': {k: os.environ.get(k) for k in (
            'SPARK_HOME', 'HADOOP_CONF_DIR', 'KRB5CCNAME', 'PYSPARK_PYTHON')}}, f)
sys.stderr.write('INFO Submitted application application_1_0002\n')
if '--result-file' in argv:
    with open(argv[argv.index('--result-file') + 1], 'w') as f:
        json.dump(doc, f)
if '--result-uri' in argv and behaviour != 'no_result':  # cluster mode: the "HDFS" of STUB_FS
    path = os.path.join(os.environ['STUB_FS'], argv[argv.index('--result-uri') + 1])
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        json.dump(doc, f)
print('some log line on stdout')
print(json.dumps(doc))
sys.exit(1 if failed else 0)
"""

# A spark-submit stand-in: runs the first *.py argument with python, drops the flags before it.
STUB_SPARK_SUBMIT = r"""#!/usr/bin/env python3
import json, os, subprocess, sys
args = sys.argv[1:]
if args == ['--version']:  # the banner of the version probe, on stderr; counted in STUB_SUBMIT_LOG.version
    with open(os.environ['STUB_SUBMIT_LOG'] + '.version', 'a') as f:
        f.write('probe\n')
    if not os.environ.get('STUB_SPARK_VERSION'):
        sys.exit(1)
    sys.stderr.write('Welcome to\n   /___/ .__/\\_,_/_/ /_/\\_\\   version %s\n      /_/\n\n'
                     'Using Scala version 2.13.16, OpenJDK 64-Bit Server VM, 17.0.15\n' % os.environ['STUB_SPARK_VERSION'])
    sys.exit(0)
i = next(n for n, a in enumerate(args) if a.endswith('.py'))
with open(os.environ['STUB_SUBMIT_LOG'], 'w') as f:
    json.dump(args[:i], f)
if '--properties-file' in args[:i]:
    props = args[args.index('--properties-file') + 1]
    with open(os.environ['STUB_SUBMIT_LOG'] + '.properties', 'w') as f:
        json.dump({'mode': oct(os.stat(props).st_mode & 0o777), 'text': open(props).read()}, f)
if '--deploy-mode' in args and args[args.index('--deploy-mode') + 1] == 'cluster':
    # YARN cluster mode as spark-submit logs it: the driver's output stays in its container
    zipped = args[args.index('--py-files') + 1]
    with open(os.environ['STUB_SUBMIT_LOG'] + '.zip', 'w') as f:
        json.dump(__import__('zipfile').ZipFile(zipped).namelist(), f)
    sys.stderr.write('INFO YarnClientImpl: Submitted application application_1700000000000_0007\n'
                     'INFO Client: Application report for application_1700000000000_0007 (state: RUNNING)\n')
    rc = subprocess.call([sys.executable] + args[i:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if rc:
        sys.stderr.write('ERROR Client: Application diagnostics message: User application exited with status %d\n'
                         % rc)
        sys.exit(1)
    sys.exit(0)
sys.exit(subprocess.call([sys.executable] + args[i:]))
"""

# An hdfs stand-in on the local directory STUB_FS: dfs -cat and dfs -rm, each call logged with its credentials.
STUB_HDFS = r"""#!/usr/bin/env python3
import json, os, sys
args = sys.argv[1:]
with open(os.environ['STUB_FS'] + '.calls', 'a') as f:
    f.write(json.dumps({'args': args, 'KRB5CCNAME': os.environ.get('KRB5CCNAME'),
                        'HADOOP_PROXY_USER': os.environ.get('HADOOP_PROXY_USER')}) + '\n')
path = os.path.join(os.environ['STUB_FS'], args[-1])
if args[:2] == ['dfs', '-cat']:
    if not os.path.exists(path):
        sys.stderr.write("cat: `%s': No such file or directory\n" % args[-1])
        sys.exit(1)
    sys.stdout.write(open(path).read())
elif args[:2] == ['dfs', '-rm']:  # as FsShell: every path named; with -f a missing one is no error
    code = 0
    for name in [a for a in args[2:] if not a.startswith('-')]:
        try:
            os.remove(os.path.join(os.environ['STUB_FS'], name))
        except FileNotFoundError:
            if '-f' not in args:
                sys.stderr.write("rm: `%s': No such file or directory\n" % name)
                code = 1
    sys.exit(code)
"""


class ExitJson(Exception):
    pass


class FailJson(Exception):
    pass


@pytest.fixture(autouse=True)
def exits(monkeypatch):
    # the module's warnings, returned as AnsibleModule.exit_json returns them (ansible-core sends them to
    # its Display instead once controller code is loaded in the process, as the action plugin's tests do)
    warnings = []
    monkeypatch.setattr(basic.AnsibleModule, "warn", lambda self, warning, **kwargs: warnings.append(warning))

    def exit_json(self, **kwargs):
        kwargs.setdefault("failed", False)
        if warnings:
            kwargs["warnings"] = list(warnings)
        raise ExitJson(kwargs)

    def fail_json(self, msg, **kwargs):
        kwargs.update(failed=True, msg=msg)
        raise FailJson(kwargs)

    monkeypatch.setattr(basic.AnsibleModule, "exit_json", exit_json)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", fail_json)


def write_exe(path, text):
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


@pytest.fixture
def engine(tmp_path):
    return write_exe(tmp_path / "run_lakekeeper.py", STUB_ENGINE)


def run(module, args, tmp_path, check_mode=False, diff=False, internal=None):
    """The module's main() with these arguments; ``internal``: what the action
    plugin passes in the environment (LAKEKEEPER_ANSIBLE_APP)."""
    del _app_utils._INTERNAL[:]  # read once per module run, as in a real one
    if internal is None:
        os.environ.pop(_app_utils.INTERNAL_ENV, None)
    else:
        os.environ[_app_utils.INTERNAL_ENV] = json.dumps(internal)
    args = dict(args)
    args.setdefault("python", sys.executable)
    args.setdefault("state_dir", str(tmp_path / "state"))
    args.update(_ansible_check_mode=check_mode, _ansible_diff=diff, _ansible_remote_tmp=str(tmp_path / "rtmp"),
                _ansible_keep_remote_files=False)
    with patch_module_args(args):
        with pytest.raises((ExitJson, FailJson)) as info:
            module.main()
    return info.value.args[0]


def test_compact_sort_by_and_dedupe_refused(engine, tmp_path):
    # the flags of a valid sort_by and dedupe: case compact_sort_by_and_dedupe of test_lakekeeper_modules.yaml
    res = run(lakekeeper_compact, dict(table="db.events", spark_submit=dict(script_path=engine),
                                       dedupe=dict(keys=["id"], order_by="ver", delete_marker_value="D")), tmp_path)
    assert res["failed"] is True and "delete_marker" in res["msg"]
    res = run(lakekeeper_compact, dict(table="db.events", spark_submit=dict(script_path=engine),
                                       dedupe=dict(keys=["id"])), tmp_path)
    assert res["failed"] is True and "order_by" in res["msg"]
    res = run(lakekeeper_compact, dict(table="db.events", spark_submit=dict(script_path=engine),
                                       sort_by=["a b"]), tmp_path)
    assert res["failed"] is True and "sort_by must be a column name" in res["msg"]
    # the delete-ratio trigger: a number in (0, 1] (case compact_dedupe_trigger_ratio: its flag)
    res = run(lakekeeper_compact, dict(table="db.events", spark_submit=dict(script_path=engine),
                                       dedupe=dict(keys=["id"], order_by="ver", trigger_ratio=1.5)), tmp_path)
    assert res["failed"] is True and "dedupe.trigger_ratio must be a number greater than 0 and at most 1" in res["msg"]
    res = run(lakekeeper_compact, dict(table="db.events", spark_submit=dict(script_path=engine),
                                       dedupe=dict(keys=["id"], order_by="ver", trigger_ratio="often")), tmp_path)
    assert res["failed"] is True and "trigger_ratio" in res["msg"]


def test_min_piece_mb_is_a_compact_option(engine, tmp_path):
    # compact's flag: case compact_min_piece_mb of test_lakekeeper_modules.yaml
    res = run(lakekeeper_analyze, dict(table="db.t", min_piece_mb=4, spark_submit=dict(script_path=engine)), tmp_path)
    assert res["failed"] is True and "min_piece_mb" in res["msg"]


@pytest.mark.parametrize("module,args", [
    (lakekeeper_compact, dict(mode="mega")),
    (lakekeeper_rollback, dict(min_input_files=3)),  # (where applies: a rollback of some partitions)
    (lakekeeper_cleanup, dict(mode="smart")),
    (lakekeeper_compact, dict(history=5)),  # analyze's
])
def test_compaction_options_only_where_they_apply(engine, tmp_path, module, args):
    res = run(module, dict(table="db.t", spark_submit=dict(script_path=engine), **args), tmp_path)
    assert res["failed"] is True


def test_cleanup_without_a_retention_policy_refused(engine, tmp_path, monkeypatch):
    """Deleting every backup must be asked for (older_than: all): without a
    policy the module fails before running anything."""
    echo = tmp_path / "echo.json"
    monkeypatch.setenv("STUB_ECHO", str(echo))
    for args in (dict(database="db"), dict(table="db.t", grace_period="1h")):
        res = run(lakekeeper_cleanup, dict(args, spark_submit=dict(script_path=engine)), tmp_path)
        assert res["failed"] is True and "needs a retention policy" in res["msg"] and "older_than: all" in res["msg"]
        assert not echo.exists()
    # keep_last 0 is refused too (it keeps the newest backups of each partition: at least 1)
    res = run(lakekeeper_cleanup, dict(table="db.t", keep_last=0, spark_submit=dict(script_path=engine)), tmp_path)
    assert res["failed"] is True and "keep_last must be at least 1" in res["msg"] and not echo.exists()
    # orphans: false is no policy either
    res = run(lakekeeper_cleanup, dict(table="db.t", orphans=False, spark_submit=dict(script_path=engine)), tmp_path)
    assert res["failed"] is True and "needs a retention policy" in res["msg"] and not echo.exists()
    # keep_last 1, a pin, a config file (the engine reads its policy) or orphans alone (the backups are left
    # alone) run the engine
    for args in (dict(keep_last=1), dict(pin="r1"), dict(config_file=str(tmp_path / "lk.yaml")), dict(orphans=True)):
        (tmp_path / "lk.yaml").write_text("older_than: 7d\n")
        res = run(lakekeeper_cleanup, dict(args, table="db.t", spark_submit=dict(script_path=engine)), tmp_path)
        assert res["failed"] is False and echo.exists(), res
        echo.unlink()


def test_second_run_unchanged(engine, tmp_path, monkeypatch):
    monkeypatch.setenv("STUB_BEHAVIOUR", "nochange")
    res = run(lakekeeper_compact, dict(table="db.events", spark_submit=dict(script_path=engine)), tmp_path)
    assert res["changed"] is False
    res = run(lakekeeper_compact, dict(table="db.events", spark_submit=dict(script_path=engine)), tmp_path,
              check_mode=True)
    assert res["changed"] is False


def test_analyze_never_changes(engine, tmp_path):
    res = run(lakekeeper_analyze, dict(database="db", spark_submit=dict(script_path=engine)), tmp_path,
              check_mode=True)
    assert res["changed"] is False and res["tables"][0]["would_change"] is False


def test_a_long_partition_list_is_cut_in_the_result_but_not_for_refresh_or_diff(engine, tmp_path, monkeypatch):
    monkeypatch.setenv("STUB_BEHAVIOUR", "many")
    seen = tmp_path / "refresh.json"
    refresh = [sys.executable, "-c", "import json, sys; json.dump(sys.argv[1:], open(%r, 'w'))" % str(seen),
               "{partitions}"]
    args = dict(table="db.events", spark_submit=dict(script_path=engine), refresh_command=refresh)
    res = run(lakekeeper_compact, dict(args, max_partitions_listed=5), tmp_path, diff=True)
    table = res["tables"][0]
    # the 12 compacted partitions are listed past the limit of 5; the 40 skipped ones are counted
    assert [p["status"] for p in table["partitions"]] == ["compacted"] * 12
    assert table["partitions_not_listed"] == {"partitions": 40, "to_compact": 0, "files": 40, "bytes": 36000}
    assert json.loads(seen.read_text()) == [",".join("dt=%02d" % i for i in range(12))]
    assert len(res["diff"]["before"]["db.events"]["partitions"]) == 52
    # by default (10,000) every entry is returned
    whole = run(lakekeeper_compact, args, tmp_path)["tables"][0]
    assert len(whole["partitions"]) == 52 and "partitions_not_listed" not in whole


def test_engine_failure(engine, tmp_path, monkeypatch):
    monkeypatch.setenv("STUB_BEHAVIOUR", "fail")
    res = run(lakekeeper_compact, dict(table="db.t", spark_submit=dict(script_path=engine)), tmp_path)
    assert res["failed"] is True and res["rc"] == 1
    assert res["msg"] == ("lakekeeper compact failed (rc=1): stub compact -- db.t: failed: row count mismatch "
                          "(left in place: backup table db.__bkp_t_1)")
    assert res["stderr_lines"] == ["INFO Submitted application application_1_0002"]
    assert res["application_id"] == "application_1_0002"  # returned on failure too
    assert res["stdout_lines"][0] == "some log line on stdout"
    assert res["cmd"] and res["tables"][0]["status"] == "failed"


def test_usage_error_without_json(engine, tmp_path, monkeypatch):
    monkeypatch.setenv("STUB_BEHAVIOUR", "usage")
    res = run(lakekeeper_compact, dict(table="db.t", spark_submit=dict(script_path=engine)), tmp_path)
    assert res["failed"] is True and res["rc"] == 2
    assert res["msg"] == ("lakekeeper compact failed (rc=2): the engine printed no JSON result: "
                          "run_lakekeeper.py: error: bad")
    assert res["tables"] == []


def fake_spark_home(tmp_path, version, defaults=None):
    """A SPARK_HOME with what tells its version (jars/spark-core_<scala>-<version>.jar) and a spark-defaults.conf."""
    home = tmp_path / ("spark-%s" % version)
    (home / "jars").mkdir(parents=True)
    (home / "jars" / ("spark-core_2.1%d-%s.jar" % (2 if version < "4" else 3, version))).write_bytes(b"")
    (home / "conf").mkdir()
    if defaults is not None:
        (home / "conf" / "spark-defaults.conf").write_text(defaults)
    return home


CLUSTER_DEFAULTS = "# the cluster's\nspark.eventLog.enabled true\nspark.ssl.keyPassword from-defaults\n"


@pytest.mark.parametrize("version, load_flag", [("3.5.1", False), ("3.3.4", False), ("4.0.1", True)])
def test_config_file_spark_submit_merged_on_the_target(engine, tmp_path, monkeypatch, version, load_flag):
    submit = write_exe(tmp_path / "spark-submit", STUB_SPARK_SUBMIT)
    spark_home = fake_spark_home(tmp_path, version, CLUSTER_DEFAULTS)
    monkeypatch.delenv("SPARK_CONF_DIR", raising=False)
    monkeypatch.setenv("STUB_SUBMIT_LOG", str(tmp_path / "submit.json"))
    config = tmp_path / "lakekeeper.yaml"
    keytab = tmp_path / "myuser.keytab"
    keytab.write_bytes(b"\x05\x02")
    keytab.chmod(0o600)
    config.write_text(
        "block_size_mb: 128\n"
        "spark_submit:\n"
        "  enabled: true\n"
        "  master: yarn\n"
        "  deploy_mode: client\n"
        "  principal: myuser@MY.REALM.COM\n"
        "  keytab: %s\n"
        "  queue: data-engineering\n"
        "  script_path: %s\n"
        "  extra_conf:\n"
        "    spark.yarn.kerberos.relogin.period: 1h\n"
        "    spark.ssl.keyPassword: from-config\n" % (keytab, engine))
    hadoop_conf = tmp_path / "hadoop-conf"
    hadoop_conf.mkdir()
    (hadoop_conf / "hive-site.xml").write_text(HIVE_SITE % "thrift://ms.example.com:9083")
    res = run(lakekeeper_compact, dict(
        table="db.events", config_file=str(config), spark_submit_path=submit, state_dir=None,
        spark_home=str(spark_home), hadoop_conf_dir=str(hadoop_conf), environment={"KRB5CCNAME": "/tmp/cc"},
        spark_submit=dict(queue="urgent", extra_conf={"spark.ssl.keyPassword": "hunter22"})), tmp_path)
    assert res["failed"] is False
    flags = json.loads((tmp_path / "submit.json").read_text())
    props_file = flags[flags.index("--properties-file") + 1]
    cmd = shlex.split(res["cmd"])
    run_id = cmd[cmd.index("--new-run-id") + 1]
    expected = ["--master", "yarn", "--deploy-mode", "client", "--name", "lakekeeper-compact-db.events-" + run_id,
                "--principal", "myuser@MY.REALM.COM",
                "--keytab", str(keytab), "--conf", "spark.yarn.queue=urgent",
                "--conf", "spark.yarn.kerberos.relogin.period=1h",
                "--properties-file", props_file]
    expected += ["--load-spark-defaults"] if load_flag else []
    expected += ["--conf", "spark.pyspark.driver.python=%s" % sys.executable]
    assert flags == expected
    props = json.loads((tmp_path / "submit.json.properties").read_text())
    if load_flag:  # Spark 4 reads spark-defaults.conf too
        assert props == {"mode": "0o600", "text": "spark.ssl.keyPassword=hunter22\n"}
    else:  # on 3.x the file replaces spark-defaults.conf: it carries it, then the secrets (the last key wins)
        assert props == {"mode": "0o600", "text": CLUSTER_DEFAULTS + "\n# lakekeeper: secret extra_conf\n"
                         "spark.ssl.keyPassword=hunter22\n"}
    assert "keyPassword" not in res["cmd"] and "hunter22" not in res["cmd"]
    result_file = cmd[-1]
    # no --state-dir: not asked for in spark-submit mode
    assert cmd == [submit] + flags + [engine, "compact", "--table", "db.events", "--config-file", str(config),
                                      "--new-run-id", run_id, "--require-metastore", "--result-file", result_file]
    # the Metastore the driver will read: the hive-site.xml in HADOOP_CONF_DIR (hadoop_conf_dir)
    assert res["catalog"]["kind"] == "metastore" and res["catalog"]["uris"] == "thrift://ms.example.com:9083"
    assert res["catalog"]["source"] == str(hadoop_conf / "hive-site.xml")
    assert os.path.dirname(props_file) == os.path.dirname(result_file)
    assert res["script"] == engine


@pytest.mark.parametrize("probed, load_flag", [("4.1.0", True), ("3.4.4", False), (None, False)])
def test_spark_version_probed_when_spark_home_does_not_tell(engine, tmp_path, monkeypatch, probed, load_flag):
    """A spark-submit whose SPARK_HOME has no jars/RELEASE to read: one ``spark-submit --version``; when
    that fails too, the version is unknown and the file carries spark-defaults.conf (right on every line)."""
    (tmp_path / "bin").mkdir()
    submit = write_exe(tmp_path / "bin" / "spark-submit", STUB_SPARK_SUBMIT)
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text("spark.eventLog.enabled true\n")
    monkeypatch.setenv("STUB_SUBMIT_LOG", str(tmp_path / "submit.json"))
    monkeypatch.delenv("SPARK_HOME", raising=False)
    if probed:
        monkeypatch.setenv("STUB_SPARK_VERSION", probed)
    res = run(lakekeeper_compact, dict(
        table="db.t", spark_submit_path=submit, environment={"SPARK_CONF_DIR": str(conf)},
        spark_submit=dict(enabled=True, master="local[1]", script_path=engine,
                          extra_conf={"spark.hadoop.fs.s3a.secret.key": "s3cr3t-value"})), tmp_path)
    assert res["failed"] is False, res
    assert (tmp_path / "submit.json.version").read_text() == "probe\n"  # one probe
    flags = json.loads((tmp_path / "submit.json").read_text())
    assert ("--load-spark-defaults" in flags) is load_flag
    text = json.loads((tmp_path / "submit.json.properties").read_text())["text"]
    assert text.endswith("spark.hadoop.fs.s3a.secret.key=s3cr3t-value\n")
    assert text.startswith("spark.eventLog.enabled true\n") is not load_flag
    assert "s3cr3t-value" not in res["cmd"]


def test_no_probe_without_a_secret(engine, tmp_path, monkeypatch):
    (tmp_path / "bin").mkdir()
    submit = write_exe(tmp_path / "bin" / "spark-submit", STUB_SPARK_SUBMIT)
    monkeypatch.setenv("STUB_SUBMIT_LOG", str(tmp_path / "submit.json"))
    res = run(lakekeeper_compact, dict(table="db.t", spark_submit_path=submit,
                                       spark_submit=dict(enabled=True, master="local[1]", script_path=engine)),
              tmp_path)
    assert res["failed"] is False, res
    assert not (tmp_path / "submit.json.version").exists()


@pytest.mark.parametrize("python, extra_conf, refused", [
    (None, {}, True),  # python_env alone: the driver would run ./lakekeeper_env/bin/python here
    ("./lakekeeper_env/bin/python", {}, True),
    (None, {"spark.pyspark.driver.python": "./lakekeeper_env/bin/python"}, True),
    ("python", {}, False),  # the python option: this host's interpreter (the test's, on PATH or absolute)
    (None, {"spark.pyspark.driver.python": sys.executable}, False),
])
def test_archive_python_for_a_client_mode_driver_refused(engine, tmp_path, monkeypatch, python, extra_conf, refused):
    (tmp_path / "bin").mkdir()
    submit = write_exe(tmp_path / "bin" / "spark-submit", STUB_SPARK_SUBMIT)
    monkeypatch.setenv("STUB_SUBMIT_LOG", str(tmp_path / "submit.json"))
    monkeypatch.delenv("PYSPARK_DRIVER_PYTHON", raising=False)
    res = run(lakekeeper_compact, dict(
        table="db.t", spark_submit_path=submit, python=sys.executable if python == "python" else python,
        spark_submit=dict(enabled=True, master="yarn", deploy_mode="client", script_path=engine,
                          archives="hdfs:///apps/lakekeeper_env.tar.gz#lakekeeper_env",
                          python_env="./lakekeeper_env/bin/python", extra_conf=extra_conf)), tmp_path, check_mode=True)
    if refused:
        assert res["failed"] is True
        assert "./lakekeeper_env/bin/python" in res["msg"] and "Set the python option" in res["msg"], res["msg"]
        assert "inside the archive hdfs:///apps/lakekeeper_env.tar.gz#lakekeeper_env" in res["msg"]
        assert not (tmp_path / "submit.json").exists()  # nothing started
    else:
        assert res["failed"] is False, res
        assert "--dry-run" in shlex.split(res["cmd"])  # check mode still returns the command


REPO = os.path.abspath(os.path.join(os.path.dirname(CASES_FILE), "..", "..", "..", ".."))


def _documented_examples(mode="client"):
    """(where, module args) of the documented spark-submit examples that ship a packed Python
    (python_env) in ``mode``: lakekeeper_compact's EXAMPLES and the README's first example."""
    examples = []
    for task in yaml.safe_load(lakekeeper_compact.EXAMPLES):
        args = task.get("lakekeeper.hive.lakekeeper_compact") or {}
        submit = args.get("spark_submit") or {}
        if submit.get("python_env") and (submit.get("deploy_mode") or "client") == mode:
            examples.append(("lakekeeper_compact EXAMPLES: %s" % task["name"], args))
    if mode != "client":
        return examples
    with open(os.path.join(REPO, "README.md")) as handle:
        first = re.search(r"```yaml\n(.*?)```", handle.read(), re.S).group(1)
    for play in yaml.safe_load(first):
        for task in play.get("tasks") or []:
            args = task.get("lakekeeper.hive.lakekeeper_compact") or {}
            if (args.get("spark_submit") or {}).get("python_env"):
                examples.append(("README.md, first example: %s" % task["name"], args))
    return examples


def _last_conf(argv, key):
    values = [a.partition("=")[2] for a in _lakekeeper_argv.flag_values(argv, "--conf") if a.partition("=")[0] == key]
    return values[-1] if values else None


def test_documented_examples_give_the_driver_a_python_of_the_edge_node():
    """The reference configuration and the README's first example set python_env (the executors'
    ./lakekeeper_env/bin/python); their argv, built by the module's builder, must give the client-mode
    driver, which runs on the submitting host, an interpreter of that host (an absolute path), not the
    archive's relative path."""
    examples = _documented_examples()
    assert {where.split(":")[0] for where, _args in examples} == {"lakekeeper_compact EXAMPLES",
                                                                  "README.md, first example"}
    for where, args in examples:
        ss = _lakekeeper_argv.resolve_spark_submit(_lakekeeper_argv.merge_spark_submit(args["spark_submit"]))
        assert ss["enabled"] and ss.get("deploy_mode") in (None, "client"), where
        argv = _lakekeeper_argv.build_command(
            "compact", _lakekeeper_argv.selector_args(args.get("table"), args.get("tables"), args.get("database")),
            ss, "/app/run_lakekeeper.py", spark_submit="/opt/spark/bin/spark-submit", python=args.get("python"),
            result_file="/tmp/r.json")
        # what Spark's PythonRunner runs for the driver: spark.pyspark.driver.python, else spark.pyspark.python
        driver = _last_conf(argv, "spark.pyspark.driver.python") or _last_conf(argv, "spark.pyspark.python")
        assert driver and os.path.isabs(driver), "%s: the driver would run %r on the edge node" % (where, driver)
        assert _last_conf(argv, "spark.pyspark.python") == "./lakekeeper_env/bin/python", where  # the executors'
        assert _lakekeeper_argv.archive_driver_python(ss, args.get("python")) is None, where


def test_documented_cluster_mode_example_gives_the_driver_the_packed_python():
    """lakekeeper_compact's cluster-mode example: its driver runs python_env in its YARN container (the AM's
    environment and spark.pyspark.python), the engine's package and config file go with it, and no python of
    the edge node is asked for."""
    ((where, args),) = _documented_examples("cluster")
    ss = _lakekeeper_argv.resolve_spark_submit(_lakekeeper_argv.merge_spark_submit(args["spark_submit"]))
    argv = _lakekeeper_argv.build_command(
        "compact", _lakekeeper_argv.selector_args(args.get("table")), ss, "/app/run_lakekeeper.py",
        spark_submit="/opt/spark/bin/spark-submit", config_file=args["config_file"], run_id="20261122T013000-3f9a1c",
        py_files="/tmp/m/lakekeeper_spark.zip", result_file="/tmp/m/r.json")
    assert _last_conf(argv, "spark.yarn.appMasterEnv.PYSPARK_PYTHON") == "./lakekeeper_env/bin/python", where
    assert _last_conf(argv, "spark.pyspark.python") == "./lakekeeper_env/bin/python", where
    assert _last_conf(argv, "spark.pyspark.driver.python") is None and "python" not in args, where
    assert argv[argv.index("--py-files") + 1] == "/tmp/m/lakekeeper_spark.zip", where
    assert argv[argv.index("--result-uri") + 1] == ".lakekeeper/results/20261122T013000-3f9a1c.json", where


def test_documented_example_without_python_is_what_the_module_refuses():
    """The same example without its python option is the misconfiguration the module refuses."""
    where, args = _documented_examples()[0]
    ss = _lakekeeper_argv.resolve_spark_submit(_lakekeeper_argv.merge_spark_submit(args["spark_submit"]))
    assert _lakekeeper_argv.archive_driver_python(ss, None) == ("./lakekeeper_env/bin/python",
                                                                "spark_submit.python_env"), where


@pytest.fixture
def cluster(engine, tmp_path, monkeypatch):
    """A cluster-mode setting: spark-submit and hdfs stand-ins, the engine's package beside the stub engine,
    a Metastore in HADOOP_CONF_DIR, the stand-in "HDFS" in STUB_FS, a kinit stand-in on PATH."""
    package = tmp_path / "lakekeeper_spark"
    (package / "commands").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "commands" / "compact.py").write_text("")
    (package / "__pycache__").mkdir()
    (package / "__pycache__" / "x.pyc").write_bytes(b"")
    for path in (package / "__init__.py", package / "commands" / "compact.py"):
        os.utime(path, (0, 0))  # as the cached application's files are (its archive's times): before ZIP's 1980
    (tmp_path / "bin").mkdir()
    submit = write_exe(tmp_path / "bin" / "spark-submit", STUB_SPARK_SUBMIT)
    hdfs = write_exe(tmp_path / "bin" / "hdfs", STUB_HDFS)
    write_exe(tmp_path / "bin" / "kinit", '#!/bin/sh\necho "$@" >> %s\n' % (tmp_path / "kinit.calls"))
    monkeypatch.setenv("PATH", "%s:%s" % (tmp_path / "bin", os.environ["PATH"]))
    monkeypatch.setenv("STUB_SUBMIT_LOG", str(tmp_path / "submit.json"))
    monkeypatch.setenv("STUB_FS", str(tmp_path / "fs"))
    hadoop_conf = tmp_path / "hadoop-conf"
    hadoop_conf.mkdir()
    (hadoop_conf / "hive-site.xml").write_text(HIVE_SITE % "thrift://ms.example.com:9083")
    return dict(spark_submit_path=submit, hdfs_binary=hdfs, hadoop_conf_dir=str(hadoop_conf), state_dir=None,
                python=None, spark_submit=dict(enabled=True, master="yarn", deploy_mode="cluster",
                                               script_path=engine, archives="/opt/env.tar.gz#env",
                                               python_env="./env/bin/python", result_dir="results"))


def _calls(path):
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_cluster_mode(cluster, tmp_path):
    """The driver runs in YARN: the module ships the engine's package and the config file, reads the result the
    driver wrote to the cluster's filesystem with the Hadoop client (hdfs_binary) and removes it."""
    config = tmp_path / "lakekeeper.yaml"
    config.write_text("block_size_mb: 64\n")
    res = run(lakekeeper_compact, dict(cluster, table="db.events", config_file=str(config)), tmp_path)
    assert res["failed"] is False, res
    assert res["tables"][0]["status"] == "compacted" and res["changed"] is True and res["rc"] == 0
    assert res["application_id"] == "application_1700000000000_0007"
    cmd = shlex.split(res["cmd"])
    run_id = cmd[cmd.index("--new-run-id") + 1]
    assert res["result_uri"] == "results/%s.json" % run_id and cmd[cmd.index("--result-uri") + 1] == res["result_uri"]
    assert "--result-file" not in cmd and "spark.pyspark.driver.python" not in res["cmd"]
    assert cmd[cmd.index("--files") + 1] == "%s#lakekeeper-config.yaml" % config
    assert cmd[cmd.index("--config-file") + 1] == "lakekeeper-config.yaml"
    assert "spark.yarn.appMasterEnv.PYSPARK_PYTHON=./env/bin/python" in cmd
    # the engine's package, Python files only, as the driver imports it from --py-files
    assert json.loads((tmp_path / "submit.json.zip").read_text()) == ["lakekeeper_spark/__init__.py",
                                                                      "lakekeeper_spark/commands/compact.py"]
    calls = _calls(tmp_path / "fs.calls")
    assert [c["args"] for c in calls] == [["dfs", "-cat", res["result_uri"]],
                                          ["dfs", "-rm", "-f", "-skipTrash", res["result_uri"]]]
    assert not (tmp_path / "fs" / res["result_uri"]).exists()
    assert not (tmp_path / "kinit.calls").exists()  # no keytab: the environment's ticket cache, if any


def test_cluster_mode_failed_table_keytab_and_proxy_user(cluster, tmp_path, monkeypatch):
    """The driver's own exit code comes from the application's diagnostics; the result is read with a ticket of
    the keytab's principal (a private cache) as the proxy user, like the application."""
    monkeypatch.setenv("STUB_BEHAVIOUR", "fail")
    keytab = tmp_path / "etl.keytab"
    keytab.write_bytes(b"\x05\x02")
    keytab.chmod(0o600)
    cluster["spark_submit"].update(principal="etl@EXAMPLE.COM", keytab=str(keytab), proxy_user="analyst")
    res = run(lakekeeper_compact, dict(cluster, table="db.t"), tmp_path)
    assert res["failed"] is True and res["rc"] == 1
    assert res["msg"].startswith("lakekeeper compact failed (rc=1): stub compact -- db.t: failed: row count mismatch")
    assert res["application_id"] == "application_1700000000000_0007"
    kinit = (tmp_path / "kinit.calls").read_text().split()
    assert kinit[:4] == ["-k", "-t", str(keytab), "-c"] and kinit[-1] == "etl@EXAMPLE.COM"
    calls = _calls(tmp_path / "fs.calls")
    assert {c["KRB5CCNAME"] for c in calls} == {kinit[4]} and kinit[4].startswith("FILE:")
    assert {c["HADOOP_PROXY_USER"] for c in calls} == {"analyst"}


def test_cluster_mode_without_a_result(cluster, tmp_path, monkeypatch):
    """A driver that wrote no result (it died, or never started): the failure says where its log is."""
    monkeypatch.setenv("STUB_BEHAVIOUR", "no_result")
    res = run(lakekeeper_compact, dict(cluster, table="db.t"), tmp_path)
    assert res["failed"] is True and res["tables"] == []
    assert res["msg"].startswith("lakekeeper compact failed (rc=0): the engine printed no JSON result")
    assert res["msg"].endswith("(the driver ran in YARN: its log is in yarn logs -applicationId "
                               "application_1700000000000_0007)")
    assert res["result_fetch"]["rc"] == 1 and "No such file or directory" in res["result_fetch"]["stderr_lines"][0]


def test_a_stopped_task_kills_its_application(cluster, tmp_path, monkeypatch):
    """SIGTERM to the module while a cluster-mode application runs (an AWX job cancelled): the module kills it
    with yarn_binary, stops spark-submit, removes the run's result file on the cluster (nothing reads it after a
    stop), and fails with what it did and the application id."""
    monkeypatch.setenv("STUB_BEHAVIOUR", "hang")
    yarn = write_exe(tmp_path / "bin" / "yarn", '#!/bin/sh\necho "$@" >> %s\n' % (tmp_path / "yarn.calls"))
    running = tmp_path / "fs.running"

    def stop_when_running():
        deadline = time.time() + 60
        while not running.exists() and time.time() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)  # spark-submit's log has named the application by now
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=stop_when_running, daemon=True).start()
    started = time.time()
    res = run(lakekeeper_compact, dict(cluster, table="db.t", yarn_binary=yarn), tmp_path)
    assert time.time() - started < 60  # not the engine's 120 s
    assert res["failed"] is True and res["application_id"] == "application_1700000000000_0007"
    assert res["msg"].startswith("lakekeeper compact cancelled: received SIGTERM; killed the YARN application "
                                 "application_1700000000000_0007 (rc 0); stopped the engine's process group"), res["msg"]
    kill, stop, remove = res["cancelled"]["actions"]
    assert kill["cmd"] == "%s application -kill application_1700000000000_0007" % yarn and kill["rc"] == 0
    assert stop["action"] == "stop_engine" and stop["signal"] == "SIGTERM"
    assert (tmp_path / "yarn.calls").read_text().split() == ["application", "-kill", "application_1700000000000_0007"]
    assert "removed the run's files on the cluster (rc 0)" in res["msg"], res["msg"]
    assert (remove["action"], remove["files"], remove["rc"]) == ("remove_files", [res["result_uri"]], 0), remove
    # no result read, only the run's file removed
    assert [c["args"] for c in _calls(tmp_path / "fs.calls")] == [["dfs", "-rm", "-f", "-skipTrash", res["result_uri"]]]


@pytest.mark.parametrize("change, message", [
    (dict(progress_file="/tmp/progress.jsonl"), "progress_file is a file on the host that runs the driver"),
    (dict(state_dir="/tmp/state"), "state_dir is an embedded catalog"),
    (dict(spark_submit=dict(master="local[2]")), "master must be yarn"),
    (dict(spark_submit=dict(extra_conf={"spark.yarn.submit.waitAppCompletion": "false"})), "waitAppCompletion"),
    (dict(hdfs_binary="/nonexistent/hdfs"), "hdfs_binary /nonexistent/hdfs is not an executable file"),
])
def test_cluster_mode_refusals(cluster, tmp_path, change, message):
    args = dict(cluster, table="db.t")
    for key, value in change.items():
        if key == "spark_submit":
            args["spark_submit"] = dict(args["spark_submit"], **value)
        else:
            args[key] = value
    res = run(lakekeeper_compact, args, tmp_path)
    assert res["failed"] is True and message in res["msg"], res["msg"]
    assert not (tmp_path / "submit.json").exists()  # nothing started


def test_cluster_mode_from_spark_defaults_and_python_ignored(cluster, tmp_path, monkeypatch):
    """spark-defaults.conf may make spark-submit's default cluster mode: the module sees it as spark-submit
    does. The python option (a client-mode driver's) is then not used, with a warning."""
    conf = tmp_path / "spark-conf"
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text("spark.submit.deployMode cluster\n")
    args = dict(cluster, table="db.t", python=sys.executable, environment={"SPARK_CONF_DIR": str(conf)})
    del args["spark_submit"]["deploy_mode"]
    res = run(lakekeeper_compact, args, tmp_path)
    assert res["failed"] is False, res
    assert "--result-uri" in res["cmd"] and "spark.pyspark.driver.python" not in res["cmd"]
    assert any("python (%s) is the Python of a client-mode driver" % sys.executable in w for w in res["warnings"])


@pytest.mark.parametrize("args, match", [
    (dict(), "one of the following is required: table, tables, database"),
    (dict(table="db.t", database="db"), "mutually exclusive"),
    (dict(table="events"), "DB.TABLE"),
    (dict(tables=["db.t", "x"]), "DB.TABLE"),
])
def test_selector_validation(engine, tmp_path, args, match):
    args["spark_submit"] = dict(script_path=engine)
    res = run(lakekeeper_compact, args, tmp_path)
    assert res["failed"] is True and match in res["msg"]


def test_missing_config_file(engine, tmp_path):
    res = run(lakekeeper_compact, dict(table="db.t", config_file=str(tmp_path / "nope.yaml"),
                                       spark_submit=dict(script_path=engine)), tmp_path)
    assert res["failed"] is True and "not found on the target" in res["msg"]


def test_without_action_plugin_and_script_path(tmp_path):
    res = run(lakekeeper_compact, dict(table="db.t"), tmp_path)
    assert res["failed"] is True and "action plugin" in res["msg"]


def test_cached_application_unpacked_then_reused(tmp_path):
    root = tmp_path / "spark_app"
    (root / "lakekeeper_spark").mkdir(parents=True)
    (root / "lakekeeper_spark" / "__init__.py").write_text("")
    (root / "run_lakekeeper.py").write_text(STUB_ENGINE)
    # The action plugin's archive format (tests/unit/plugins/plugin_utils checks the real one); the module
    # only compares the marker with the checksum it is given.
    sha = hashlib.sha256(STUB_ENGINE.encode()).hexdigest()
    archive = tmp_path / "app.tar.gz"
    with tarfile.open(str(archive), "w:gz") as handle:
        handle.add(str(root / "lakekeeper_spark"), arcname="lakekeeper_spark")
        handle.add(str(root / "run_lakekeeper.py"), arcname="run_lakekeeper.py")
    cache = tmp_path / "cache"
    res = run(lakekeeper_compact, dict(table="db.t", app_cache_dir=str(cache)), tmp_path,
              internal=dict(sha256=sha, archive=str(archive)))
    assert res["failed"] is False
    app_dir = cache / ("app-%s" % sha[:12])
    assert res["script"] == str(app_dir / "run_lakekeeper.py")
    # Second run: no archive (the action plugin saw the marker), the cache is used as is.
    res = run(lakekeeper_compact, dict(table="db.t", app_cache_dir=str(cache)), tmp_path,
              internal=dict(sha256=sha))
    assert res["failed"] is False and res["script"] == str(app_dir / "run_lakekeeper.py")
    # A cache that does not match its name is refused.
    (app_dir / ".lakekeeper_app.sha256").write_text("0" * 64)
    res = run(lakekeeper_compact, dict(table="db.t", app_cache_dir=str(cache)), tmp_path,
              internal=dict(sha256=sha))
    assert res["failed"] is True and "does not match" in res["msg"]
    os.remove(str(app_dir / ".lakekeeper_app.sha256"))
    res = run(lakekeeper_compact, dict(table="db.t", app_cache_dir=str(cache)), tmp_path,
              internal=dict(sha256=sha))
    assert res["failed"] is True and "missing" in res["msg"]


def _fill(value, names):
    """``value`` with the case file's placeholders replaced."""
    if isinstance(value, dict):
        return dict((k, _fill(v, names)) for k, v in value.items())
    if isinstance(value, list):
        return [_fill(v, names) for v in value]
    if isinstance(value, str):
        for name, text in names.items():
            value = value.replace("{%s}" % name, text)
    return value


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_case(case, engine, tmp_path, monkeypatch):
    """One case of test_lakekeeper_modules.yaml: the exact argv, environment and result."""
    echo = tmp_path / "echo.json"
    submit_log = tmp_path / "submit.json"
    monkeypatch.setenv("STUB_ECHO", str(echo))
    for key, value in (case.get("stub_env") or {}).items():
        monkeypatch.setenv(key, value)
    args = copy.deepcopy(case["args"])
    args["spark_submit"] = dict(args.get("spark_submit") or {}, script_path=engine)
    names = dict(python=sys.executable, engine=engine, state_dir=str(tmp_path / "state"))
    if case.get("spark_submit"):
        names["spark_submit"] = write_exe(tmp_path / "spark-submit", STUB_SPARK_SUBMIT)
        monkeypatch.setenv("STUB_SUBMIT_LOG", str(submit_log))
        args["spark_submit_path"] = names["spark_submit"]
    res = run(MODULES[case["module"]], args, tmp_path, check_mode=case.get("check_mode", False),
              diff=case.get("diff", False), internal=case.get("internal"))
    assert res["failed"] is False, res
    cmd = shlex.split(res["cmd"])
    # the module's private tmpdir: its result file, and the secret properties file beside it
    result_file = cmd[cmd.index("--result-file") + 1]
    assert os.path.basename(result_file) == "lakekeeper-result.json"
    assert os.path.dirname(os.path.dirname(result_file)) == str(tmp_path / "rtmp")
    names.update(result_file=result_file,
                 properties_file=os.path.join(os.path.dirname(result_file), "lakekeeper-secret.properties"))
    if case.get("spark_submit"):  # the module chose the application's run id: the engine and the name carry it
        run_id = cmd[cmd.index("--new-run-id") + 1]
        assert re.match(r"^\d{8}T\d{6}-[0-9a-f]{6}$", run_id), run_id
        names["run_id"] = run_id
    else:
        assert "--new-run-id" not in cmd
    expected_cmd = _fill(case["cmd"], names)
    assert cmd == expected_cmd
    received = json.loads(echo.read_text())
    script_at = expected_cmd.index(engine)
    assert received["argv"] == expected_cmd[script_at + 1:]
    if "engine" in case:
        expected = _fill(case["engine"], names)
        assert received["env"] == expected["env"]
        assert received["cwd"] == expected["cwd"]
    if case.get("spark_submit"):
        assert json.loads(submit_log.read_text()) == _fill(case["submit"], names)
        assert expected_cmd[1:script_at] == _fill(case["submit"], names)
    for key, value in _fill(case.get("result") or {}, names).items():
        assert res[key] == value, key
    for key in case.get("absent") or []:
        assert key not in res, key
    if "statuses" in case:
        assert [t["status"] for t in res["tables"]] == case["statuses"]
    for warning in case.get("warns") or []:
        assert warning in res.get("warnings", []), res.get("warnings")


@pytest.mark.parametrize("section, match", [
    ("  num_executors: ten\n", "spark_submit.num_executors must be an integer, got 'ten'"),
    ("  deploy_mode: remote\n", "value of deploy_mode must be one of: client, cluster, got: remote"),
    ("  extra_conf: spark.a=b\n", "spark_submit.extra_conf must be a mapping, got str"),
])
def test_config_file_spark_submit_validated_with_the_module_spec(engine, tmp_path, section, match):
    config = tmp_path / "lakekeeper.yaml"
    config.write_text("spark_submit:\n" + section)
    res = run(lakekeeper_compact, dict(table="db.t", config_file=str(config), spark_submit=dict(script_path=engine)),
              tmp_path)
    assert res["failed"] is True and match in res["msg"]


# ------------------------------------------------------------------ which catalog


@pytest.fixture
def bare_host(tmp_path, monkeypatch):
    """A host without Hive configuration in the usual package places."""
    monkeypatch.setattr(_lakekeeper_catalog, "HOST_HIVE_CONF_DIRS", (str(tmp_path / "etc-hive-conf"),))
    for name in ("SPARK_CONF_DIR", "HADOOP_CONF_DIR", "HIVE_CONF_DIR", "YARN_CONF_DIR", "SPARK_HOME"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "etc-hive-conf"


def test_cluster_master_without_metastore_fails_before_starting(engine, tmp_path, monkeypatch, bare_host):
    echo = tmp_path / "echo.json"
    monkeypatch.setenv("STUB_ECHO", str(echo))
    monkeypatch.setenv("STUB_SUBMIT_LOG", str(tmp_path / "submit.json"))
    submit = write_exe(tmp_path / "spark-submit", STUB_SPARK_SUBMIT)
    # the example inventory's old way: --files hive-site.xml, which a client-mode driver never reads
    res = run(lakekeeper_compact, dict(table="db.t", state_dir=None, spark_submit_path=submit, spark_submit=dict(
        enabled=True, master="yarn", script_path=engine, extra_files=["/etc/hive/conf/hive-site.xml"])), tmp_path)
    assert res["failed"] is True and "cmd" not in res
    assert res["msg"].startswith("spark_submit is enabled without state_dir, so the engine needs the cluster's Hive "
                                 "Metastore, and no Metastore configuration was found"), res["msg"]
    assert "Put the cluster's hive-site.xml in SPARK_CONF_DIR or HADOOP_CONF_DIR" in res["msg"]
    assert "--files hive-site.xml does not reach a client-mode driver" in res["msg"]
    assert not echo.exists() and not (tmp_path / "submit.json").exists()  # nothing started
    # the same with the cluster's hive-site.xml in SPARK_CONF_DIR (through the environment option): it runs,
    # and the engine is told to check what its driver really loaded
    conf = tmp_path / "spark-conf"
    conf.mkdir()
    (conf / "hive-site.xml").write_text(HIVE_SITE % "thrift://ms:9083")
    res = run(lakekeeper_compact, dict(table="db.t", state_dir=None, spark_submit_path=submit,
                                       environment={"SPARK_CONF_DIR": str(conf)},
                                       spark_submit=dict(enabled=True, master="yarn", script_path=engine)), tmp_path)
    assert res["failed"] is False, res
    assert res["catalog"]["kind"] == "metastore" and res["catalog"]["source"] == str(conf / "hive-site.xml")
    assert "--require-metastore" in json.loads(echo.read_text())["argv"]


def test_plain_python_on_a_host_with_hive_configuration(engine, tmp_path, monkeypatch, bare_host):
    echo = tmp_path / "echo.json"
    monkeypatch.setenv("STUB_ECHO", str(echo))
    # no Hive configuration on the host: the embedded catalog, and the result says why
    res = run(lakekeeper_analyze, dict(table="db.t", state_dir=None, spark_submit=dict(script_path=engine)), tmp_path)
    assert res["failed"] is False, res
    assert res["catalog"]["kind"] == "embedded" and res["catalog"]["reason"] == (
        "spark_submit is not enabled and this host has no Hive configuration")
    assert "--require-metastore" not in json.loads(echo.read_text())["argv"]
    echo.unlink()
    # an edge node: /etc/hive/conf/hive-site.xml exists, spark_submit was forgotten
    bare_host.mkdir()
    (bare_host / "hive-site.xml").write_text(HIVE_SITE % "thrift://ms:9083")
    res = run(lakekeeper_analyze, dict(table="db.t", state_dir=None, spark_submit=dict(script_path=engine)), tmp_path)
    assert res["failed"] is True and not echo.exists()
    assert res["msg"].startswith("spark_submit is not enabled, so the engine would run with a private embedded "
                                 "catalog"), res["msg"]
    assert "this host has a Hive configuration (%s)" % (bare_host / "hive-site.xml") in res["msg"]
    # asked for on purpose: state_dir
    res = run(lakekeeper_analyze, dict(table="db.t", spark_submit=dict(script_path=engine)), tmp_path)
    assert res["failed"] is False and res["catalog"]["reason"] == "state_dir was given", res
    # the cluster's hive-site.xml on the driver's class path (SPARK_CONF_DIR), no spark-submit: a local driver
    # on the cluster's Metastore, which the engine checks it really loaded
    conf = tmp_path / "spark-conf"
    conf.mkdir()
    (conf / "hive-site.xml").write_text(HIVE_SITE % "thrift://ms:9083")
    res = run(lakekeeper_analyze, dict(table="db.t", state_dir=None, environment={"SPARK_CONF_DIR": str(conf)},
                                       spark_submit=dict(script_path=engine)), tmp_path)
    assert res["failed"] is False and res["catalog"]["kind"] == "metastore", res
    assert "--require-metastore" in json.loads(echo.read_text())["argv"]
