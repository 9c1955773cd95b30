# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""A run's YARN application: its id in spark-submit's log, the Hadoop client
commands, and stopping it when the task is stopped (_lakekeeper_yarn).

The stop tests run real process trees: a spark-submit stand-in (a process
group leader with a "driver" child, as a client-mode spark-submit and its
python) and a yarn stand-in that records the kill; the module is this
process (signals) or a child python running the same code (SIGKILL, the
controller gone), killed as async_wrapper and ansible-playbook kill it."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from ansible_collections.lakekeeper.hive.plugins.module_utils import _lakekeeper_yarn as yarn

APP = "application_1764000000000_0042"

# Lines of spark-submit's log (stderr) as Spark and Hadoop write them: the message texts of Spark's
# resource-managers/yarn Client.scala (3.3 to 4.x: "Submitting application $appId to ResourceManager",
# "Application report for $appId (state: $state)", "Application diagnostics message: $err") and Hadoop's
# YarnClientImpl ("Submitted application {}"), with Spark's default log4j2 layout (3.3+) and its JSON
# structured layout (4.x, spark.log.structuredLogging.enabled).
REQUESTING = "26/11/22 01:30:00 INFO Client: Requesting a new application from cluster with 1 NodeManagers"
SUBMIT_LOG = [
    "26/11/22 01:30:00 INFO Client: Submitting application %s to ResourceManager" % APP,
    "26/11/22 01:30:00 INFO YarnClientImpl: Submitted application %s" % APP,
    "26/11/22 01:30:01 INFO Client: Application report for %s (state: ACCEPTED)" % APP,
    '{"ts":"2026-11-22T01:30:00.412Z","level":"INFO","msg":"Submitted application %s","logger":"YarnClientImpl"}'
    % APP,
    '{"ts":"2026-11-22T01:30:00.398Z","level":"INFO","msg":"Submitting application %s to ResourceManager",'
    '"context":{"app_id":"%s"},"logger":"Client"}' % (APP, APP),
]
NOT_THE_APPLICATION = [
    REQUESTING,
    "26/11/22 01:30:05 INFO Client: \n\t tracking URL: http://rm:8088/proxy/%s/" % APP,
    '"python_prefix": "/data/yarn/nm/usercache/etl/appcache/%s/container_01/env"' % APP,
    "26/11/22 01:30:00 INFO Client: Uploading resource file:/tmp/x.zip -> hdfs://nn/user/etl/.sparkStaging/%s/x.zip"
    % APP,
]


@pytest.mark.parametrize("line", SUBMIT_LOG)
def test_application_id_from_spark_submit_log(line):
    assert yarn.application_id_in(line) == APP


@pytest.mark.parametrize("line", NOT_THE_APPLICATION)
def test_an_id_elsewhere_is_not_the_application(line):
    assert yarn.application_id_in(line) is None


def test_a_second_submission_replaces_the_application_id():
    """A client-mode driver whose context failed to start and was started once more (the engine's
    session.py) submits a second application: that one runs, and is the one to kill and to return; a
    report line naming the first one again does not take it back."""
    second = APP[:-2] + "43"
    submitting, submitted, report = SUBMIT_LOG[:3]
    log = "\n".join([submitting, submitted, report, "ERROR SparkContext: Error initializing SparkContext.",
                     SUBMIT_LOG[4].replace(APP, second), submitted.replace(APP, second),
                     report.replace(APP, second), report])
    run = yarn.Supervised(["true"], {})
    read, write = os.pipe()
    run._pipe = write  # pylint: disable=protected-access  # what the watchdog is told, in order
    run._read_stderr(io.BytesIO((log + "\n").encode()))  # pylint: disable=protected-access
    os.close(write)
    with os.fdopen(read, "rb") as told:
        assert told.read().decode().split("\n") == ["app " + APP, "app " + second, ""]
    assert run.application_id == second
    assert yarn.application_id_in(log) == second and yarn.application_id_in(report) == APP


def test_driver_exit_status_from_the_diagnostics():
    log = "\n".join([
        "26/11/22 01:31:00 INFO Client: Application report for %s (state: FINISHED)" % APP,
        "26/11/22 01:31:00 INFO Client: \n\t client token: N/A\n\t diagnostics: User application exited with "
        "status 1\n\t ApplicationMaster host: 10.0.0.7",
        "26/11/22 01:31:00 ERROR Client: Application diagnostics message: User application exited with status 3",
        'Exception in thread "main" org.apache.spark.SparkException: Application %s finished with failed status'
        % APP])
    assert yarn.driver_exit_status(log) == 3
    assert yarn.driver_exit_status("INFO Client: Application report for %s (state: FINISHED)" % APP) is None


def test_hadoop_client_commands():
    hdfs, spark_class, cli = ("hdfs", "/usr/bin/hdfs"), ("spark-class", "/opt/spark/bin/spark-class"), \
        ("yarn", "/usr/bin/yarn")
    uri = ".lakekeeper/results/20261122T013000-3f9a1c.json"
    assert yarn.cat_argv(hdfs, uri) == ["/usr/bin/hdfs", "dfs", "-cat", uri]
    assert yarn.cat_argv(spark_class, uri) == ["/opt/spark/bin/spark-class", "org.apache.hadoop.fs.FsShell",
                                               "-cat", uri]
    assert yarn.rm_argv(hdfs, uri) == ["/usr/bin/hdfs", "dfs", "-rm", "-f", "-skipTrash", uri]
    assert yarn.kill_argv(cli, APP) == ["/usr/bin/yarn", "application", "-kill", APP]
    assert yarn.kill_argv(spark_class, APP) == ["/opt/spark/bin/spark-class",
                                                "org.apache.hadoop.yarn.client.cli.ApplicationCLI",
                                                "application", "-kill", APP]
    assert yarn.kinit_argv("kinit", "/k/etl.keytab", "etl@EX.COM", "/tmp/m/cc") == [
        "kinit", "-k", "-t", "/k/etl.keytab", "-c", "FILE:/tmp/m/cc", "etl@EX.COM"]
    with pytest.raises(ValueError):
        yarn.kill_argv(hdfs, APP)


def write_exe(path, text):
    path.write_text(text)
    path.chmod(0o755)
    return str(path)


def test_helpers_credentials(tmp_path):
    kinit = write_exe(tmp_path / "kinit", '#!/bin/sh\necho "$@" > %s\n[ "$KINIT_FAIL" = 1 ] && '
                                          "{ echo 'Keytab contains no suitable keys' >&2; exit 1; }\nexit 0\n"
                      % (tmp_path / "kinit.args"))
    plain = yarn.Helpers({"PATH": "/bin"})
    assert plain.environ(str(tmp_path)) == ({"PATH": "/bin"}, None)
    helpers = yarn.Helpers({"PATH": "/bin"}, kinit=kinit, keytab="/k/etl.keytab", principal="etl@EX.COM",
                           proxy_user="analyst")
    env, error = helpers.environ(str(tmp_path))
    cache = str(tmp_path / "krb5cc_lakekeeper")
    assert error is None and env == {"PATH": "/bin", "HADOOP_PROXY_USER": "analyst", "KRB5CCNAME": "FILE:" + cache}
    assert (tmp_path / "kinit.args").read_text().split() == ["-k", "-t", "/k/etl.keytab", "-c", "FILE:" + cache,
                                                             "etl@EX.COM"]
    failing = yarn.Helpers({"PATH": "/bin", "KINIT_FAIL": "1"}, kinit=kinit, keytab="/k", principal="p")
    env, error = failing.environ(str(tmp_path))
    assert "KRB5CCNAME" not in env and "rc 1: Keytab contains no suitable keys" in error
    assert yarn.Helpers({}, keytab="/k", principal="p").environ(str(tmp_path))[1] == \
        "no kinit to get a ticket from spark_submit.keytab"


# ---------------------------------------------------------------------------
# stopping real process trees
# ---------------------------------------------------------------------------

# spark-submit's stand-in: logs the application id, starts a "driver" child in its process group, records both
# pids; FAKE_TRAP: both ignore SIGTERM; FAKE_QUICK: ends at once.
FAKE_SUBMIT = r"""
import os, signal, subprocess, sys, time
here, trap = sys.argv[1], os.environ.get("FAKE_TRAP") == "1"
if trap:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
for line in %r:
    sys.stderr.write(line + "\n")
sys.stderr.flush()
if os.environ.get("FAKE_QUICK") == "1":
    print('{"command": "compact", "tables": []}')
    sys.exit(0)
code = "import signal, time\n" + ("signal.signal(signal.SIGTERM, signal.SIG_IGN)\n" if trap else "") + "time.sleep(300)"
driver = subprocess.Popen([sys.executable, "-c", code])
with open(os.path.join(here, "pids.tmp"), "w") as f:
    f.write("%%d %%d" %% (os.getpid(), driver.pid))
os.rename(os.path.join(here, "pids.tmp"), os.path.join(here, "pids"))
driver.wait()
""" % ([REQUESTING] + SUBMIT_LOG[:2],)


def wait_for(predicate, timeout=20.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("timed out waiting for %s" % what)


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.fixture
def tree(tmp_path):
    """The stand-ins and the environment of a run."""
    submit = tmp_path / "spark-submit.py"
    submit.write_text(FAKE_SUBMIT)
    cli = write_exe(tmp_path / "yarn", '#!/bin/sh\necho "$@" >> %s\n' % (tmp_path / "yarn.calls"))
    hdfs = write_exe(tmp_path / "hdfs", '#!/bin/sh\necho "$@" >> %s\n' % (tmp_path / "hdfs.calls"))
    env = dict(os.environ)
    return dict(dir=tmp_path, argv=[sys.executable, str(submit), str(tmp_path)], env=env,
                helpers=yarn.Helpers(env, yarn_tool=("yarn", cli), fs_tool=("hdfs", hdfs)))


# a cluster-mode run's result and hand-over files (_lakekeeper_argv.result_uri, handoff_uris)
RUN_FILES = [".lakekeeper/results/20261201T020000-3f9a1c.json", ".lakekeeper/results/20261201T020000-3f9a1c.analysis.json",
             ".lakekeeper/results/20261201T020000-3f9a1c.go.json"]
REMOVAL = ["dfs", "-rm", "-f", "-skipTrash"] + RUN_FILES


def pids(tmp_path):
    path = tmp_path / "pids"
    return [int(p) for p in path.read_text().split()] if path.exists() else None


def test_a_signal_to_the_module_kills_the_application_and_the_engine(tree):
    """SIGTERM to the module (ansible-playbook passes it to its workers' process groups): the YARN application
    is killed first, then the engine's process group; the run returns what was done, and the module's own
    handlers are back."""
    before = signal.getsignal(signal.SIGTERM)
    run = yarn.Supervised(tree["argv"], tree["env"], helpers=tree["helpers"], cache_dir=str(tree["dir"]),
                          grace=5, poll=0.05, controller_fd=-1, remote_files=RUN_FILES)

    def stop_when_running():
        wait_for(lambda: pids(tree["dir"]) and run.application_id
                 and signal.getsignal(signal.SIGTERM) == run._on_signal,  # pylint: disable=protected-access
                 what="the engine")
        os.kill(os.getpid(), signal.SIGTERM)

    stopper = threading.Thread(target=stop_when_running, daemon=True)
    stopper.start()
    outcome = run.run()
    stopper.join()
    submit_pid, driver_pid = pids(tree["dir"])
    assert outcome.cancelled["reason"] == "received SIGTERM"
    kill, stop, remove = outcome.cancelled["actions"]
    assert kill["action"] == "kill_application" and kill["application_id"] == APP and kill["rc"] == 0
    assert (tree["dir"] / "yarn.calls").read_text().split() == ["application", "-kill", APP]
    assert stop == dict(action="stop_engine", pgid=submit_pid, signal="SIGTERM")
    # then the run's own files on the cluster, which nothing reads after a stop
    assert (remove["action"], remove["files"], remove["rc"]) == ("remove_files", RUN_FILES, 0), remove
    assert (tree["dir"] / "hdfs.calls").read_text().split() == REMOVAL
    assert outcome.application_id == APP and outcome.rc == -signal.SIGTERM
    wait_for(lambda: not alive(driver_pid), what="the driver's end")
    assert not alive(submit_pid)
    assert signal.getsignal(signal.SIGTERM) is before


def test_what_ignores_sigterm_gets_sigkill(tree):
    tree["env"]["FAKE_TRAP"] = "1"
    proc = subprocess.Popen(tree["argv"], env=tree["env"], start_new_session=True, stderr=subprocess.DEVNULL)
    submit_pid, driver_pid = wait_for(lambda: pids(tree["dir"]), what="the engine")
    started = time.monotonic()
    assert yarn.terminate_group(submit_pid, grace=1.0, proc=proc) == "SIGKILL"
    assert 1.0 <= time.monotonic() - started < 10
    wait_for(lambda: not alive(driver_pid), what="the driver's end")
    assert proc.returncode == -signal.SIGKILL
    assert yarn.terminate_group(submit_pid, grace=1.0) is None  # gone already


# The module in a child process: the same run, with the outcome on stderr at the end.
MODULE = textwrap.dedent("""
    import importlib.util, json, sys
    spec = importlib.util.spec_from_file_location("_lakekeeper_yarn", sys.argv[1])
    yarn = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(yarn)
    argv, env, cli, hdfs, files, cache, log = json.loads(sys.argv[2])
    run = yarn.Supervised(argv, env, helpers=yarn.Helpers(env, yarn_tool=("yarn", cli), fs_tool=("hdfs", hdfs)),
                          cache_dir=cache, grace=5, poll=0.05, watchdog_log=log, remote_files=files)
    outcome = run.run()
    sys.stderr.write(json.dumps(dict(rc=outcome.rc, cancelled=outcome.cancelled, app=outcome.application_id)))
""")


def watchdog_log_with(tree, text, what="the watchdog's log"):
    """The watchdog's log once it holds TEXT (read once a poll)."""
    path = tree["dir"] / "watchdog.log"

    def holding():
        log = path.read_text() if path.exists() else ""
        return log if text in log else None

    return wait_for(holding, what=what)


def told_watchdog(tree):
    """Wait until the module has read the application id from the engine's log and told the watchdog (which
    logs it): from then on the module knows the application too."""
    watchdog_log_with(tree, "watching application %s" % APP, what="the watchdog told of the application")


def start_module(tree, stdout=subprocess.DEVNULL):
    config = json.dumps([tree["argv"], tree["env"], tree["helpers"].yarn_tool[1], tree["helpers"].fs_tool[1],
                         RUN_FILES, str(tree["dir"]), str(tree["dir"] / "watchdog.log")])
    return subprocess.Popen([sys.executable, "-c", MODULE, yarn.__file__, config], stdout=stdout,
                            stderr=subprocess.PIPE, start_new_session=True)


def test_the_watchdog_stops_the_application_when_the_module_is_killed(tree):
    """SIGKILL to the module's process group (async_wrapper at an async task's timeout) cannot be caught: the
    watchdog, in a session of its own, finds the module's pipe closed and stops the application."""
    module = start_module(tree)
    submit_pid, driver_pid = wait_for(lambda: pids(tree["dir"]), what="the engine")
    told_watchdog(tree)
    os.killpg(module.pid, signal.SIGKILL)
    module.wait()
    wait_for((tree["dir"] / "yarn.calls").exists, what="the kill of the application")
    assert (tree["dir"] / "yarn.calls").read_text().split() == ["application", "-kill", APP]
    wait_for(lambda: not alive(submit_pid) and not alive(driver_pid), what="the engine's end")
    log = watchdog_log_with(tree, "done:")
    assert (tree["dir"] / "hdfs.calls").read_text().split() == REMOVAL  # the run's files on the cluster, after
    assert "the module is gone while the engine runs (process group %d, application %s)" % (submit_pid, APP) in log


def test_the_watchdog_does_nothing_after_a_normal_end(tree):
    tree["env"]["FAKE_QUICK"] = "1"
    module = start_module(tree)
    _out, err = module.communicate(timeout=60)
    assert json.loads(err.decode()) == dict(rc=0, cancelled=None, app=APP)
    log = watchdog_log_with(tree, "nothing to stop")
    assert log.endswith("the engine ended; nothing to stop\n")
    assert not (tree["dir"] / "yarn.calls").exists()
    assert not (tree["dir"] / "hdfs.calls").exists()  # the module reads and removes the run's files itself


def test_the_controller_gone(tree):
    """The connection to the controller closed (ansible-playbook gone, the SSH session dropped): the module's
    stdout has no reader any more; the module stops the application itself."""
    module = start_module(tree, stdout=subprocess.PIPE)
    submit_pid, driver_pid = wait_for(lambda: pids(tree["dir"]), what="the engine")
    told_watchdog(tree)
    module.stdout.close()
    _out, err = module.communicate(timeout=60)
    outcome = json.loads(err.decode())
    assert outcome["cancelled"]["reason"] == "the controller is gone (the module's output has no reader)"
    assert [a["action"] for a in outcome["cancelled"]["actions"]] == ["kill_application", "stop_engine", "remove_files"]
    assert (tree["dir"] / "yarn.calls").read_text().split() == ["application", "-kill", APP]
    wait_for(lambda: not alive(submit_pid) and not alive(driver_pid), what="the engine's end")
