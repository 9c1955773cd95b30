# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The modules on a real YARN (the Hadoop 3.5 test bed: HDFS, YARN's
ResourceManager and NodeManager, the Hive Metastore service), run by
``ansible-playbook`` (tests/testbed/playbooks/yarn.yml), with the executors'
(and in cluster mode the driver's) Python from the python_env role
(venv-pack; conda-pack needs a conda environment, and conda is not
installable on these machines: not run here).

One test, in phases that share the bed, each ansible-playbook run serving
many assertions (a YARN application costs 30-80 s here):

1. four tables on HDFS through the Metastore (one Spark process), their
   content (rows, sums, a hash of every row) read once;
2. client mode: compact -> rollback -> compact -> cleanup of yn.client_t,
   the driver on the "edge node" with the bed's python, the executors with
   the packed environment: every module returns its YARN application id;
3. cluster mode: compact -> cleanup of yn.cluster_t (rollback and a second
   compaction launch the same way as the first: CLUSTER_STEPS), the driver in a YARN container
   with the packed environment (its python prefix in the NodeManager's
   appcache), the config file shipped with --files (its backup_prefix), the
   result read back from HDFS and removed; the compaction is one application
   that analyzes first and waits for the play's go (analyze_first, as the
   maintenance role runs it), its analysis and go relayed by the module
   between the edge node's files and the driver's on HDFS;
4. a cancelled run: ansible-playbook gets SIGTERM while a cluster-mode
   compaction of yn.term_t waits after its last swap (a test pause point of
   the engine): the module kills the YARN application (ApplicationReport
   state KILLED) and spark-submit;
5. a killed module: the client-mode module process compacting yn.kill_t gets
   SIGKILL after its first swap: its watchdog kills the YARN application and
   the engine's processes;
6. the next run recovers yn.kill_t from its journal and compacts what is
   left; then the maintenance role itself (compact.yml) in cluster mode
   on yn.role_t and yn.term_t: one application for the analysis and the
   compaction, yn.term_t named in the go for its unfinished run alone (it
   needs no compaction) and that run recovered;
7. one read of the five tables: the same content as before, one file per
   partition; YARN's list of the applications (finished ones SUCCEEDED, the
   two stopped KILLED); nothing left in the result directory on HDFS.

Run: ``.venv/bin/python -m pytest tests/testbed/test_yarn_playbooks.py``
(a bed of its own without Spark standalone, about 20 s to start), or with
``LAKEKEEPER_TESTBED_JSON=<bed>/testbed.json`` on a running Hadoop 3.5 bed
with YARN (``scripts/testbed up --no-spark``).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import cpu_meter  # pylint: disable=import-error
import pytest

from testbed.bed import Testbed

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
PLAYBOOK = Path(__file__).resolve().parent / "playbooks" / "yarn.yml"
APP_ID = re.compile(r"^application_\d+_\d{4,}$")
TABLES = ("client_t", "cluster_t", "term_t", "kill_t", "role_t")
COMPACT_YML = ROOT / "playbooks" / "compact.yml"
TIMINGS = cpu_meter.TIMINGS  # printed at the end of the run (tests/conftest.py)

pytestmark = [pytest.mark.testbed, pytest.mark.e2e, pytest.mark.timeout(3600)]

READ_TABLES = textwrap.dedent("""
    import json, sys
    from pyspark.sql import SparkSession
    spark = SparkSession.builder.master("local[2]").enableHiveSupport().getOrCreate()
    fs = spark._jvm.org.apache.hadoop.fs.FileSystem.get(spark._jsc.hadoopConfiguration())
    P = spark._jvm.org.apache.hadoop.fs.Path
    names = sys.argv[2].split(",")
    if sys.argv[1] == "create":
        spark.sql("CREATE DATABASE IF NOT EXISTS yn")
        for i, name in enumerate(names):
            spark.sql(f"DROP TABLE IF EXISTS yn.{name}")
            fs.delete(P(f"/lk-yn/{name}"), True)  # an external table's files outlive it (a bed used before)
            spark.sql(f"CREATE EXTERNAL TABLE yn.{name} (id BIGINT, v STRING) PARTITIONED BY (dt STRING) "
                      f"STORED AS PARQUET LOCATION '/lk-yn/{name}'")
            for j, dt in enumerate(["2024-01-01", "2024-01-02"]):
                lo = (i * 2 + j) * 5000
                spark.range(lo, lo + 5000).selectExpr("id", "cast(id as string) v").repartition(20) \\
                    .createOrReplaceTempView("src")
                spark.sql(f"INSERT INTO yn.{name} PARTITION (dt='{dt}') SELECT * FROM src")
    out = {}
    for name in names:
        spark.sql(f"REFRESH TABLE yn.{name}")
        row = spark.sql(f"SELECT count(*) AS n, sum(id) AS s, count(DISTINCT v) AS d, "
                        f"sum(hash(id, v, dt)) AS h FROM yn.{name}").first()
        files = {}
        for part in fs.listStatus(P(f"/lk-yn/{name}")):
            pn = part.getPath().getName()
            if part.isDirectory() and not pn.startswith((".", "_")):
                files[pn] = len([f for f in fs.listStatus(part.getPath()) if f.getPath().getName().endswith(".parquet")])
        out[name] = {"rows": row.n, "sum": row.s, "distinct": row.d, "hash": row.h, "files": files,
                     "partitions": sorted(r[0] for r in spark.sql(f"SHOW PARTITIONS yn.{name}").collect())}
    print(json.dumps(out))
""")


@pytest.fixture(scope="module")
def bed(tmp_path_factory):
    """A Hadoop 3.5 test bed with YARN: the running one named by LAKEKEEPER_TESTBED_JSON (or the suite's
    LAKEKEEPER_TESTBED_SHARED), else one of its own without Spark standalone (YARN runs the applications)."""
    named = os.environ.get("LAKEKEEPER_TESTBED_JSON") or os.environ.get("LAKEKEEPER_TESTBED_SHARED")
    if named:
        found = Testbed.load(named)
        found.check_alive()
        if not found.yarn_rm:
            pytest.skip("the test bed %s has no YARN (a Hadoop 3.5 bed started with YARN is needed)" % named)
        yield found
        return
    own = Testbed.start(tmp_path_factory.mktemp("yarn-bed"), watchdog=True, spark=False)
    try:
        yield own
    finally:
        own.stop()


def timed(what, func, *args, **kwargs):
    started = time.time()
    try:
        return func(*args, **kwargs)
    finally:
        TIMINGS.append("%s: %.0f s" % (what, time.time() - started))


def tables(bed, tmp_path, action):
    script = tmp_path / "tables.py"
    script.write_text(READ_TABLES)
    done = timed("tables %s (a Spark process)" % action, bed.run_python, script, action, ",".join(TABLES))
    assert done.returncode == 0, done.stderr[-5000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def hadoop(bed, *args, timeout=180):
    """A Hadoop client class through the bed's Spark (spark-class), with its client configuration."""
    return subprocess.run([str(bed.spark_home / "bin" / "spark-class"), *args], env=bed.env(base=dict(os.environ)),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout, check=False)


def applications(bed):
    """{application id: (name, state, final state)} of every application YARN knows."""
    done = hadoop(bed, "org.apache.hadoop.yarn.client.cli.ApplicationCLI", "application", "-list", "-appStates",
                  "ALL")
    assert done.returncode == 0, done.stderr[-3000:]
    apps = {}
    for line in done.stdout.splitlines():
        cells = line.split()
        if cells and APP_ID.match(cells[0]):
            apps[cells[0]] = (cells[1], cells[5], cells[6])
    return apps


def application_state(bed, app_id):
    done = hadoop(bed, "org.apache.hadoop.yarn.client.cli.ApplicationCLI", "application", "-status", app_id)
    report = dict(re.findall(r"^\s*([\w-]+) : (.*?)\s*$", done.stdout, re.M))
    return report.get("State"), report.get("Final-State")


def processes():
    """{pid: (parent pid, session id, command line)} of this host's processes."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as handle:
                stat = handle.read().rsplit(")", 1)[1].split()
            with open("/proc/%s/cmdline" % name, "rb") as handle:
                cmdline = handle.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except (OSError, IndexError):
            continue
        if stat[0] != "Z":
            out[int(name)] = (int(stat[1]), int(stat[3]), cmdline)
    return out


def descendants(pid):
    procs = processes()
    found, todo = set(), [pid]
    while todo:
        parent = todo.pop()
        for child, (ppid, _sid, _cmd) in procs.items():
            if ppid == parent and child not in found:
                found.add(child)
                todo.append(child)
    return {p: procs[p][2] for p in found if p in procs}


def engine_processes(marker):
    """The processes of an engine run: those whose command line names its application cache directory (the
    spark-submit JVM and a client-mode driver; not the module, whose command line is ansible's)."""
    return {pid: cmd for pid, (_ppid, _sid, cmd) in processes().items() if marker in cmd and "AnsiballZ" not in cmd}


def wait_until(predicate, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(1)
    raise AssertionError("timed out after %ss waiting for %s" % (timeout, what))


class Runs:
    """The ansible-playbook runs of the test: one inventory, one collection, the bed's settings."""

    def __init__(self, bed, tmp_path):
        self.bed, self.tmp, self.started = bed, tmp_path, []
        collections = tmp_path / "collections" / "ansible_collections" / "lakekeeper"
        collections.mkdir(parents=True)
        os.symlink(str(ROOT), str(collections / "hive"))
        self.inventory = tmp_path / "inventory.ini"
        self.inventory.write_text("edge ansible_connection=local ansible_python_interpreter=%s\n" % sys.executable)
        # YARN and the bed's services for spark-submit; the Python settings are the modules' (python, python_env)
        self.conf = {k: v for k, v in bed.yarn_confs().items()
                     if "PYSPARK_PYTHON" not in k and not k.startswith("spark.pyspark.")}
        self.conf.update({"spark.ui.showConsoleProgress": "false", "spark.sql.shuffle.partitions": "4"})

    def variables(self, name, tables, mode, steps=(), pause=None, config_file=None, analyze_first=False):
        environment = {"SPARK_CONF_DIR": str(self.bed.conf_dir), "SPARK_LOCAL_IP": "127.0.0.1"}
        conf = dict(self.conf)
        if pause:  # the engine's test pause point, in the driver's environment (cluster mode: its container's)
            hook = {"LAKEKEEPER_PAUSE_AT": pause, "LAKEKEEPER_PAUSE_DIR": str(self.tmp / "pause"),
                    "LAKEKEEPER_PAUSE_TIMEOUT": "900"}
            if mode == "cluster":
                conf.update(("spark.yarn.appMasterEnv.%s" % k, v) for k, v in hook.items())
            else:
                environment.update(hook)
        variables = {
            "yarn_env_dest": str(self.tmp / "env"), "yarn_env_interpreter": str(self.bed.python),
            "yarn_spark_submit": {"enabled": True, "master": "yarn", "deploy_mode": mode, "extra_conf": conf},
            "yarn_spark_home": str(self.bed.spark_home), "yarn_conf_dir": str(self.bed.conf_dir),
            "yarn_environment": environment, "yarn_app_cache_dir": str(self.tmp / ("app-cache-" + name)),
            "yarn_tables": ["yn." + t for t in tables], "yarn_steps": list(steps),
            "yarn_results_file": str(self.tmp / ("results-%s.json" % name)),
        }
        if mode == "client":
            variables["yarn_driver_python"] = str(self.bed.python)  # the edge node's interpreter
        if config_file:
            variables["yarn_config_file"] = str(config_file)
        if analyze_first:
            handoff = self.tmp / ("handoff-" + name)
            handoff.mkdir()
            variables.update(yarn_analyze_first=True, yarn_handoff_dir=str(handoff))
        path = self.tmp / ("vars-%s.json" % name)
        path.write_text(json.dumps(variables, indent=1))
        return path

    def environment(self, **more):
        """ansible-playbook's environment: this collection, no ansible.cfg, plain output."""
        env = dict(os.environ)
        env.pop("ANSIBLE_CONFIG", None)
        env.update({
            "PATH": "%s%s%s" % (BIN, os.pathsep, env.get("PATH", "")),
            "ANSIBLE_COLLECTIONS_PATH": str(self.tmp / "collections"), "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_RETRY_FILES_ENABLED": "0", "ANSIBLE_DEPRECATION_WARNINGS": "0",
            "ANSIBLE_LOCALHOST_WARNING": "0", "ANSIBLE_LOCAL_TEMP": str(self.tmp / "ansible-local"),
            "ANSIBLE_REMOTE_TEMP": str(self.tmp / "ansible-remote"), "PYTHONUNBUFFERED": "1",
        }, **more)
        return env

    def start(self, name, *args, **kwargs):
        argv = [str(BIN / "ansible-playbook"), "-i", str(self.inventory), "-e",
                "@%s" % self.variables(name, *args, **kwargs), str(PLAYBOOK)]
        env = self.environment()
        log = open(self.tmp / ("ansible-%s.log" % name), "w")  # pylint: disable=consider-using-with
        proc = subprocess.Popen(argv, cwd=str(self.tmp), env=env, stdout=log, stderr=subprocess.STDOUT)
        proc.log, proc.name, proc.started = log, name, time.time()
        self.started.append(proc)
        return proc

    def stop(self):
        """A run a failed assertion left going: SIGTERM (its module stops its application), then SIGKILL."""
        for proc in self.started:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=120)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()

    def finish(self, proc, timeout=1800):
        try:
            proc.wait(timeout=timeout)
        finally:
            proc.log.close()
            TIMINGS.append("ansible-playbook %s: %.0f s" % (proc.name, time.time() - proc.started))
        output = (self.tmp / ("ansible-%s.log" % proc.name)).read_text()
        path = self.tmp / ("results-%s.json" % proc.name)
        return proc.returncode, output, json.loads(path.read_text()) if path.exists() else None

    def run(self, name, *args, **kwargs):
        return self.finish(self.start(name, *args, **kwargs))

    def compact_yml(self, name, tables, mode):
        """The collection's compact.yml (the maintenance role) on this bed: the edge host in lakekeeper_edge,
        no ingestion host to pause; returns (rc, output, the run's set_stats)."""
        edge = {
            "lakekeeper_spark_submit": {"enabled": True, "master": "yarn", "deploy_mode": mode,
                                        "extra_conf": self.conf},
            "lakekeeper_spark_home": str(self.bed.spark_home), "lakekeeper_hadoop_conf_dir": str(self.bed.conf_dir),
            "lakekeeper_environment": {"SPARK_CONF_DIR": str(self.bed.conf_dir), "SPARK_LOCAL_IP": "127.0.0.1"},
            "lakekeeper_app_cache_dir": str(self.tmp / ("app-cache-" + name)),
            "lakekeeper_run_record_dir": str(self.tmp / "runs"),
            "lakekeeper_python_env": True, "python_env_dest": str(self.tmp / "env"),  # the archive built before
            "python_env_interpreter": str(self.bed.python),
        }
        inventory = self.tmp / ("inventory-%s.json" % name)
        inventory.write_text(json.dumps({"all": {
            "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable},
            "children": {"lakekeeper_edge": {"hosts": {"edge": edge}},
                         "yarnbed": {"hosts": {"edge": {}}, "vars": {"lakekeeper_cluster": "yarnbed"}}}}}))
        argv = [str(BIN / "ansible-playbook"), "-i", str(inventory), str(COMPACT_YML),
                "-e", "lakekeeper_tables=%s" % ",".join("yn." + t for t in tables),
                "-e", "lakekeeper_async=1200", "-e", "lakekeeper_poll_seconds=5",
                "-e", "lakekeeper_pause_ingestion=false"]  # no ingestion host here (the role refuses that otherwise)
        env = self.environment(ANSIBLE_SHOW_CUSTOM_STATS="1")  # the RUN: line of set_stats
        started = time.time()
        done = subprocess.run(argv, cwd=str(self.tmp), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, timeout=1800, check=False)
        TIMINGS.append("ansible-playbook %s (compact.yml): %.0f s" % (name, time.time() - started))
        stats = [json.loads(line.strip()[len("RUN: "):]) for line in done.stdout.splitlines()
                 if line.strip().startswith("RUN: ")]
        return done.returncode, done.stdout, stats[-1] if stats else {}


def failure(output):
    """A failed playbook's message: the exceptions and their causes the JVMs
    printed (the module's stderr is long: its root cause comes before the
    stack trace's end), then the output's end."""
    causes = [line.strip() for line in re.split(r'\\n|\\t|", "|\n', output)
              if re.search(r"(Exception|Error)\b.*:|^Caused by", line.strip())]
    return "\n".join(dict.fromkeys(causes[:40])) + "\n...\n" + output[-6000:]


def flag(cmd, name):
    """The value of ``name`` in a result's shell-quoted ``cmd``."""
    argv = shlex.split(cmd)
    return argv[argv.index(name) + 1]


LIFECYCLE = ("rollback", "compact_again", "cleanup")
# cluster mode: compact and cleanup (the module that reads back what its own earlier run left), each
# module's result through HDFS; rollback and a second compaction go the same way as the first (the
# launcher, not the module, makes the deploy mode): two YARN applications fewer (about 400 s here)
CLUSTER_STEPS = ("cleanup",)
STATUSES = {"compact": "compacted", "rollback": "rolled_back", "compact_again": "compacted", "cleanup": "cleaned"}


def check_lifecycle(results, mode, steps=LIFECYCLE):
    """compact, then ``steps`` (of rollback, compact_again, cleanup) of one table: each a YARN application
    of its own, in the deploy mode asked for; returns the application ids."""
    ids = []
    for step in ("compact",) + tuple(steps):
        status = STATUSES[step]
        res = results[step]
        assert res["failed"] is False and res["rc"] == 0, (step, res.get("msg"))
        assert [t["status"] for t in res["tables"]] == [status], (step, res["tables"])
        assert APP_ID.match(res["application_id"]), (step, res.get("application_id"))
        assert flag(res["cmd"], "--deploy-mode") == mode, res["cmd"]
        assert res["catalog"]["kind"] == "metastore", res["catalog"]
        prefix = res["runtime"]["python_prefix"]
        if mode == "cluster":
            # the driver ran in a container of the application, with the shipped environment
            assert re.search(r"/appcache/%s/container_[\d_]+/lakekeeper_env$" % res["application_id"], prefix), prefix
            assert res["result_uri"] == ".lakekeeper/results/%s.json" % res["run_id"], res.get("result_uri")
            assert "--result-file" not in res["cmd"] and "--py-files" in res["cmd"]
        else:
            assert prefix == sys.prefix, prefix  # the edge node's interpreter (the bed's python)
            assert "result_uri" not in res and "--result-file" in res["cmd"]
        ids.append(res["application_id"])
    assert len(set(ids)) == 1 + len(steps), ids
    partitions = results["compact"]["tables"][0]["partitions"]
    assert [(p["files_before"], p["files_after"]) for p in partitions] == [(20, 1), (20, 1)], partitions
    removed = results["cleanup"]["tables"][0]["backups_removed"]
    last = "compact_again" if "compact_again" in steps else "compact"
    assert [b["backup_table"] for b in removed] == [results[last]["tables"][0]["backup_table"]], removed
    return ids


def test_yarn_client_and_cluster_mode_with_cancels(bed, tmp_path):
    runs = Runs(bed, tmp_path)
    (tmp_path / "pause").mkdir()
    try:
        before = tables(bed, tmp_path, "create")
        assert [before[t]["files"] for t in TABLES] == [{"dt=2024-01-01": 20, "dt=2024-01-02": 20}] * len(TABLES)

        # -- 2. client mode: the driver here, the executors with the packed environment ------------------
        rc, output, results = runs.run("client", ["client_t"], "client", steps=LIFECYCLE)
        assert rc == 0, failure(output)
        client_ids = check_lifecycle(results, "client")
        assert (tmp_path / "env" / "lakekeeper_env.tar.gz").is_file()
        assert flag(results["compact"]["cmd"], "--archives") == "%s#lakekeeper_env" % (tmp_path / "env" / "lakekeeper_env.tar.gz")

        # -- 3. cluster mode: the driver in YARN, the config file shipped, the result through HDFS -------
        config = tmp_path / "lakekeeper.yaml"
        config.write_text("backup_prefix: __ybk\n")
        rc, output, results = runs.run("cluster", ["cluster_t"], "cluster", steps=CLUSTER_STEPS, config_file=config,
                                       analyze_first=True)
        assert rc == 0, failure(output)
        cluster_ids = check_lifecycle(results, "cluster", CLUSTER_STEPS)
        # one application analyzed, then compacted what the play named: the analysis and the go went through
        # the driver's files on HDFS, relayed by the module (removed with the result: see the last check)
        compact, analysis = results["compact"], results["analysis"]
        assert [(t["table"], t["needs_compaction"]) for t in analysis["tables"]] == [("yn.cluster_t", True)], analysis
        assert analysis["run_id"] == compact["run_id"] and analysis["finished"] == 0, analysis
        run_files = "/.lakekeeper/results/%s" % compact["run_id"]
        assert compact["handoff"]["outcome"] == "go" and compact["handoff"]["tables"] == ["yn.cluster_t"], compact
        assert compact["handoff"]["analysis_file"].startswith("hdfs://") and \
            compact["handoff"]["analysis_file"].endswith(run_files + ".analysis.json"), compact["handoff"]
        relay = compact["handoff_relay"]
        assert relay["analysis_relayed"] and relay["go_relayed"] and relay["errors"] == [] and relay["looks"] >= 1, \
            relay
        assert relay["go_file"] == ".lakekeeper/results/%s.go.json" % compact["run_id"], relay
        assert flag(compact["cmd"], "--analysis-file") == ".lakekeeper/results/%s.analysis.json" % compact["run_id"]
        assert results["compact"]["tables"][0]["backup_table"].startswith("yn.__ybk_cluster_t_")  # from the config
        assert flag(results["compact"]["cmd"], "--files") == "%s#lakekeeper-config.yaml" % config
        assert "ok: [edge]" in output.split("TASK [lakekeeper.hive.python_env : Export the archive")[1][:300]

        # -- 4. ansible-playbook stopped (SIGTERM, as AWX cancels a job) during a cluster-mode compaction ---
        # (after the last partition's swap: its journal not ended, nothing left to compact - see 6b)
        proc = runs.start("term", ["term_t"], "cluster", pause="moving_in:after@yn.term_t#1")
        wait_until(lambda: (tmp_path / "pause" / "yn.term_t.moving_in_after.paused").exists() or proc.poll() is not None,
                   900, "the cluster-mode compaction's pause point")
        assert proc.poll() is None, runs.finish(proc)[1][-8000:]
        ((term_id, term_name),) = [(a, name) for a, (name, state, _f) in applications(bed).items()
                                   if name.startswith("lakekeeper-compact-yn.term_t-") and state == "RUNNING"]
        term_run = term_name[len("lakekeeper-compact-yn.term_t-"):]
        submit = engine_processes(str(tmp_path / "app-cache-term"))
        assert submit, "no spark-submit of the run"
        proc.send_signal(signal.SIGTERM)
        rc, output, _results = runs.finish(proc, timeout=120)
        assert rc != 0, output[-5000:]
        assert wait_until(lambda: application_state(bed, term_id) == ("KILLED", "KILLED"), 180,
                          "the application %s KILLED" % term_id)
        wait_until(lambda: not engine_processes(str(tmp_path / "app-cache-term")), 120, "the end of spark-submit")

        # -- 5. the module SIGKILLed (as async_wrapper at a timeout) during a client-mode compaction ---------
        proc = runs.start("kill", ["kill_t"], "client", pause="moving_in:after@yn.kill_t#0")
        wait_until(lambda: (tmp_path / "pause" / "yn.kill_t.moving_in_after.paused").exists() or proc.poll() is not None,
                   900, "the client-mode compaction's pause point")
        assert proc.poll() is None, runs.finish(proc)[1][-8000:]
        # the module: the python running AnsiballZ_lakekeeper_compact.py (not the shells around it); its
        # watchdog: a copy of it in a session of its own, no longer under ansible-playbook
        (module_pid,) = [p for p, cmd in descendants(proc.pid).items()
                         if cmd.split()[1:2] and cmd.split()[1].endswith("/AnsiballZ_lakekeeper_compact.py")]
        _ppid, module_sid, module_cmd = processes()[module_pid]
        watchdogs = [p for p, (_ppid, sid, cmd) in processes().items()
                     if cmd == module_cmd and p != module_pid and sid != module_sid]
        assert len(watchdogs) == 1 and watchdogs[0] not in descendants(proc.pid), watchdogs
        engine = engine_processes(str(tmp_path / "app-cache-kill"))
        assert any("SparkSubmit" in cmd for cmd in engine.values()) and any(
            "run_lakekeeper.py" in cmd and "java" not in cmd.split()[0] for cmd in engine.values()), engine
        (kill_id,) = [a for a, (name, state, _f) in applications(bed).items()
                      if name.startswith("lakekeeper-compact-yn.kill_t-") and state == "RUNNING"]
        os.kill(module_pid, signal.SIGKILL)
        rc, output, results = runs.finish(proc, timeout=300)
        assert rc != 0 and results["compact"]["failed"] is True, output[-5000:]
        assert wait_until(lambda: application_state(bed, kill_id) == ("KILLED", "KILLED"), 180,
                          "the application %s KILLED by the watchdog" % kill_id)
        wait_until(lambda: not engine_processes(str(tmp_path / "app-cache-kill")), 120,
                   "the end of spark-submit and the driver")
        wait_until(lambda: watchdogs[0] not in processes(), 60, "the watchdog's end")

        # -- 6. the next run recovers the killed run's table from its journal (and compacts what is left) -----
        rc, output, results = runs.run("recover", ["kill_t"], "client")
        assert rc == 0, failure(output)
        res = results["compact"]
        assert APP_ID.match(res["application_id"])
        (table,) = res["tables"]
        assert table["recovered"], table  # it had the stopped run's journal
        assert table["lease_taken_over"], table  # whose holder was gone
        assert table["status"] in ("compacted", "skipped", "not_needed"), table

        # -- 6b. the maintenance role (compact.yml) in cluster mode: one application analyzes, waits for the
        # play's go (after the pre-flight) and compacts, the hand-over relayed through HDFS; yn.term_t needs no
        # compaction, but its cancelled run is unfinished (pending_recovery): the play names it too, and the
        # compaction's recovery finishes that run ------------------------------------------------------------
        rc, output, stats = runs.compact_yml("role", ["role_t", "term_t"], "cluster")
        assert rc == 0, failure(output)
        summary = stats["lakekeeper_summary"]["edge"]
        assert summary["ok"] and summary["applications"] == 1, summary
        (app,) = summary["application_list"]
        assert app["what"] == "analysis and compaction" and sorted(app["tables"]) == ["yn.role_t", "yn.term_t"], app
        assert summary["handoff"]["outcome"] == "go", summary["handoff"]
        assert sorted(summary["handoff"]["tables"]) == ["yn.role_t", "yn.term_t"], summary["handoff"]
        assert summary["handoff"]["go_file"].startswith("hdfs://"), summary["handoff"]
        by_table = {t["table"]: t for t in summary["tables"]}
        role, term = by_table["yn.role_t"], by_table["yn.term_t"]
        assert (role["status"], role["files_before"], role["files_after"], role.get("recovered")) == (
            "compacted", 40, 2, None), role
        assert term.get("recovered") == [term_run] and term["status"] in ("not_needed", "compacted"), term
        assert "TASK [lakekeeper.hive.maintenance : Wait for the analysis of the tables" in output, output[-3000:]

        # -- 7. readers see the same rows, one file a partition; YARN's record of every application --------
        after = tables(bed, tmp_path, "read")
        for name in TABLES:
            for key in ("rows", "sum", "distinct", "hash", "partitions"):
                assert after[name][key] == before[name][key], (name, key, after[name], before[name])
            assert after[name]["files"] == {"dt=2024-01-01": 1, "dt=2024-01-02": 1}, (name, after[name])
        apps = applications(bed)
        for app_id in client_ids + cluster_ids + [res["application_id"]]:
            assert apps[app_id][1:] == ("FINISHED", "SUCCEEDED"), (app_id, apps[app_id])
        assert apps[term_id][1:] == ("KILLED", "KILLED") and apps[kill_id][1:] == ("KILLED", "KILLED")
        listing = hadoop(bed, "org.apache.hadoop.fs.FsShell", "-count", ".lakekeeper/results")
        assert listing.returncode == 0 and listing.stdout.split()[:2] == ["1", "0"], listing  # one dir, no file
        # made by the first cluster-mode driver's first hand-over file (the analysis): its owner's only, as the
        # result's (the files in it are 0600: tests/engine/test_handoff.py, test_result_uri.py)
        mode = hadoop(bed, "org.apache.hadoop.fs.FsShell", "-stat", "%a", ".lakekeeper/results")
        assert mode.returncode == 0 and mode.stdout.split() == ["700"], mode
    finally:
        runs.stop()
        sys.stdout.write("\n".join(["timings:"] + TIMINGS) + "\n")
