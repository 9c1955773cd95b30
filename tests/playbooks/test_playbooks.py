# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The collection's playbooks (playbooks/*.yml) run for real with
``ansible-playbook``, inventory-driven like on a cluster: an edge host in
group ``lakekeeper_edge`` runs the engine, an ingestion host in group
``lakekeeper_ingestion`` is paused, both in the cluster group named by
``lakekeeper_cluster``. Extra variables are passed as ``-e k=v`` strings, the
way an AWX survey passes them.

* ``test_lifecycle_playbook_embedded``: the embedded default (local Spark,
  Derby Metastore in a state dir; one JVM at a time): the lifecycle playbook
  of tests/e2e (each module on its own, with the built and installed
  collection) on a database of its own, lc (the tables of both embedded tests
  are made by one Spark process, the fixture embedded_tables).
* ``test_playbooks_embedded``: the same Metastore, then analyze.yml (as the collection
  playbook lakekeeper.hive.analyze), compact.yml failing after the pause (the
  ingestion is resumed anyway), compact.yml for real with a Kerberos ticket
  from a real KDC and a real stand-in ingestion process stopped with SIGSTOP
  during the window (one Spark application: its driver analyzes, then
  compacts after the pause), compact.yml with nothing to compact (no driver
  left behind), rollback.yml on one table, compact.yml whose pre-flight
  fails on it (no driver left behind), cleanup.yml with a 1s
  retention, rollback.yml refusing a database, rollback.yml in recover mode as
  a dry run; then on database fl (``fleet``): compact.yml with a window
  already over (nothing started), with the delete-ratio trigger of
  ``lakekeeper_dedupe`` over a database holding a replica (passed over), a
  batch merged into one table and the same batch again (not_needed), the rows
  read back, and analyze.yml with the replica allowed and the run history in
  the report's timeline.
* ``test_example_inventory``: what the role makes of
  playbooks/inventory/example (ingestion hosts per cluster, settings, survey
  strings), and --syntax-check of the four playbooks with it.
* ``test_playbooks_on_the_testbed``: spark-submit to the test bed's Spark
  standalone master, tables on HDFS through the Metastore service, the
  executors' Python shipped by the python_env role: the engine CLI itself
  under spark-submit on a third table (its output contract, the runtime it
  reports, FAIR pools; the whole CLI sequence runs on each older Spark lane,
  tests/testbed/test_engine_on_testbed.py), compact.yml (the pre-flight
  reading real HDFS quotas, a 2h window, a replica in the database passed
  over, pb.items' tiering property moving its 2024 partition to WARM with the
  space saved in the summary), a second Spark process reads the tables through
  the Metastore and sees the same rows, rollback.yml, cleanup.yml with "all" (every unpinned backup), a batch
  on HDFS merged into mg.orders by compact.yml, analyze.yml with the run history (the cleanup's record) and a
  table's own delete-ratio trigger (table properties), and a last read (the merge row for row).

Run: ``.venv/bin/python -m pytest tests/playbooks`` (``-m 'not testbed'`` for
the embedded part only). Each JVM start costs 10-20 s on a quiet machine, so
each test runs few playbooks and checks several things per run.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import select
import signal
import struct
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone

import cpu_meter  # pylint: disable=import-error
import pytest

from e2e_helpers import run_lifecycle  # pylint: disable=import-error
from engine_submit import check_cluster_run, submit_engine  # pylint: disable=import-error

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
BIN = os.path.dirname(os.path.abspath(sys.executable))
PLAYBOOKS = os.path.join(ROOT, "playbooks")
CREATE_TABLES = os.path.join(ROOT, "tests", "e2e", "create_tables.py")
STANDIN = os.path.join(HERE, "ingest_standin.py")
RECAP = re.compile(r"^(\S+)\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.M)
TIMINGS = cpu_meter.TIMINGS


@dataclass
class Run:
    rc: int
    output: str
    seconds: float
    stats: dict = field(default_factory=dict)
    recap: dict = field(default_factory=dict)

    def __str__(self):
        return "ansible-playbook rc=%d after %.0fs\n%s" % (self.rc, self.seconds, self.output[-12000:])

    def summary(self, host):
        return self.stats.get("lakekeeper_summary", {}).get(host, {})


# the playbooks' default retention keeps each partition's newest backup and any backup younger
# than an hour (roles/maintenance, test_maintenance_retention.py): these runs clean what they just made
NO_DEFAULT_RETENTION = '{"lakekeeper_keep_last": "", "lakekeeper_grace_period": ""}'


def run_playbook(playbook, inventory, collections_dir, workdir, extra=(), timeout=1500, env=None, options=()):
    """ansible-playbook PLAYBOOK (a path or a collection playbook FQCN) with
    ``-e k=v`` extra variables (and ``options``, e.g. ``--check``); returns a
    Run with the set_stats of the run."""
    return start_playbook(playbook, inventory, collections_dir, workdir, extra, env, options).finish(timeout)


class Started:
    """An ansible-playbook run going on in the background (``finish`` waits for it)."""

    def __init__(self, playbook, extra, proc):
        self.playbook, self.extra, self.proc, self.started = playbook, extra, proc, time.time()
        self.cpu = cpu_meter.cpu_now()

    def finish(self, timeout=1500):
        try:
            out = self.proc.communicate(timeout=timeout)[0]
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out = self.proc.communicate()[0]
            raise AssertionError("ansible-playbook %s timed out after %ss:\n%s" % (self.playbook, timeout, out[-8000:]))
        run = Run(self.proc.returncode, out, time.time() - self.started)
        for line in out.splitlines():
            if line.strip().startswith("RUN: "):
                run.stats = json.loads(line.strip()[len("RUN: "):])
        for m in RECAP.finditer(out):
            run.recap[m.group(1)] = {"ok": int(m.group(2)), "changed": int(m.group(3)), "failed": int(m.group(5))}
        line = cpu_meter.record("%s %s" % (os.path.basename(self.playbook), " ".join(self.extra)[:70]), run.seconds,
                                self.cpu)
        sys.stdout.write("%s\n" % line)
        return run


def start_playbook(playbook, inventory, collections_dir, workdir, extra=(), env=None, options=()):
    argv = [os.path.join(BIN, "ansible-playbook"), "-i", str(inventory), playbook, *options]
    for item in extra:  # "k=v", or JSON for values with spaces (AWX passes extra variables as JSON/YAML)
        argv += ["-e", item]
    full_env = dict(os.environ)
    full_env.pop("ANSIBLE_CONFIG", None)
    full_env.update({
        "PATH": BIN + os.pathsep + full_env.get("PATH", ""),
        "ANSIBLE_COLLECTIONS_PATH": collections_dir,
        "ANSIBLE_SHOW_CUSTOM_STATS": "1",
        "ANSIBLE_NOCOLOR": "1", "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_RETRY_FILES_ENABLED": "0",
        "ANSIBLE_DEPRECATION_WARNINGS": "0", "ANSIBLE_LOCALHOST_WARNING": "0",
        "ANSIBLE_LOCAL_TEMP": str(workdir / "ansible-local"), "ANSIBLE_REMOTE_TEMP": str(workdir / "ansible-remote"),
        "SPARK_LOCAL_IP": "127.0.0.1", "PYTHONUNBUFFERED": "1",
    })
    full_env.update(env or {})
    proc = subprocess.Popen(argv, cwd=str(workdir), env=full_env, stdout=subprocess.PIPE,  # pylint: disable=consider-using-with
                            stderr=subprocess.STDOUT, text=True)
    return Started(playbook, list(extra), proc)


def wait_for(path, started, timeout=900):
    """Until ``path`` exists (a pause point reached by the run ``started``)."""
    deadline = time.time() + timeout
    while not path.exists():
        if started.proc.poll() is not None or time.time() > deadline:
            run = started.finish(1)
            raise AssertionError("the run never reached %s:\n%s" % (path.name, run))
        time.sleep(0.5)


def listing(top, hidden=False):
    """{path relative to top: size} of the files under top (hidden ones, and
    everything under hidden directories, only with hidden=True)."""
    out = {}
    for d, dirs, files in os.walk(top):
        if not hidden:
            dirs[:] = [x for x in dirs if not x.startswith((".", "_"))]
        for f in files:
            if hidden or not f.startswith((".", "_")):
                p = os.path.join(d, f)
                out[os.path.relpath(p, top)] = os.path.getsize(p)
    return out


def data_files(top):
    return {k: v for k, v in listing(top).items() if k.endswith(".parquet")}


def directories(top):
    return sorted(os.path.relpath(os.path.join(d, x), top) for d, dirs, _f in os.walk(top) for x in dirs)


def write_inventory(path, edge_vars, ingest_vars, cluster):
    """One cluster: edge host ``edge`` and ingestion host ``ingest``, both
    local connections, in the cluster group ``cluster``."""
    path.write_text(json.dumps({"all": {
        "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable},
        "children": {
            "lakekeeper_edge": {"hosts": {"edge": edge_vars}},
            "lakekeeper_ingestion": {"hosts": {"ingest": ingest_vars}},
            cluster: {"hosts": {"edge": {}, "ingest": {}}, "vars": {"lakekeeper_cluster": cluster}},
        }}}, indent=1))
    return path


def check_report(report_dir, cluster):
    """The HTML report analyze.yml wrote on the controller for the cluster:
    both tables ranked by the files a compaction removes, the histogram of
    file sizes now and projected, and the backups section; nothing fetched."""
    assert sorted(os.listdir(str(report_dir))) == ["lakekeeper-%s.html" % cluster]
    html = (report_dir / ("lakekeeper-%s.html" % cluster)).read_text()
    assert "<script" not in html and "http://" not in html.replace("http://www.w3.org/2000/svg", "")
    ranked = html[html.index('id="tables"'):html.index('id="partitions"')]
    rows = re.findall(r'<tr class="todo"><td>(\d+)</td><td>(e2e\.\w+)</td>.*?<td class="n">(\d+)</td>\s*<td>yes', ranked,
                      re.S)
    assert sorted(r[1] for r in rows) == ["e2e.clicks", "e2e.events"], ranked
    saved = [int(r[2]) for r in rows]
    assert saved == sorted(saved, reverse=True) and sum(saved) == 117, rows  # 120 files -> 3
    assert re.search(r'<b id="files-saved">117</b>', html)
    parts = html[html.index('id="partitions"'):html.index('id="histogram"')]
    # clicks has two partitions to compact; the module listed one (max_partitions_listed 1), the other is counted
    assert parts.count("<td>e2e.clicks</td>") == 1 and parts.count("<td>(table)</td>") == 1, parts
    assert "1 more partition(s) to compact not shown." in parts, parts
    svg = html[html.index("<svg"):html.index("</svg>")]
    assert "&lt; 64 KB: 120 file(s) now" in svg and svg.count('class="after"') == svg.count('class="before"') == 8
    backups = html[html.index('id="backups"'):]
    assert "No backups: nothing pending cleanup." in backups and '<b id="backups-pending">0 of 0</b>' in html


def process_state(pid):
    return subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], stdout=subprocess.PIPE, text=True,
                          check=False).stdout.strip()


def waiting_drivers(state_dir):
    """The engine processes of this test's state dir that analyzed first and
    may still wait for their go (lakekeeper_compact analyze_first)."""
    found = []
    for pid in os.listdir("/proc"):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as handle:
                argv = handle.read().split(b"\0")
        except (OSError, ValueError):
            continue
        if b"--analysis-file" in argv and str(state_dir).encode() in argv:
            found.append((pid, b" ".join(argv)[:300]))
    return found


def run_id_time(run_id):
    return datetime.strptime(run_id.split("-")[0], "%Y%m%dT%H%M%S").replace(tzinfo=timezone.utc).timestamp()


# --------------------------------------------------------------------------- embedded


@pytest.fixture(scope="module")
def embedded_tables(tmp_path_factory):
    """One Spark process makes the tables of both embedded tests in one Derby Metastore: database e2e (and
    fl, wt) for the playbooks, the same tables in database lc for the lifecycle playbook. The tests run one
    after the other (one JVM at a time on a Derby database) and touch different databases."""
    root = tmp_path_factory.mktemp("embedded")
    state_dir, data_dir = root / "state", root / "data"
    started, cpu = time.time(), cpu_meter.cpu_now()
    res = subprocess.run([sys.executable, CREATE_TABLES, str(state_dir), str(data_dir), "lc", "fleet:fl", "wt"],
                         stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=900, check=False,
                         env=dict(os.environ, SPARK_LOCAL_IP="127.0.0.1"))
    assert res.returncode == 0, res.stdout[-5000:]
    summary = json.loads(res.stdout.strip().splitlines()[-1])
    for tables in (summary, summary["more"]["lc"]):
        assert tables["events"]["rows"] == 6000 and tables["clicks"]["rows"] == 3000, summary
    cpu_meter.record("create_tables.py", time.time() - started, cpu)
    return state_dir, data_dir, summary


@pytest.mark.e2e
def test_lifecycle_playbook_embedded(embedded_tables, collection_path, tmp_path):
    """The modules one by one (tests/e2e/playbooks/lifecycle.yml), the built collection, database lc: a test
    of its own (282 CPU s and 560 s at load 10-15, beside 815 CPU s for the playbooks), so that neither test's
    time limit holds both on a loaded machine."""
    state_dir, data_dir, _summary = embedded_tables
    cpu = cpu_meter.cpu_now()
    seconds = run_lifecycle(collection_path, tmp_path / "lifecycle", state_dir, data_dir / "lc", "lc")
    cpu_meter.record("lifecycle.yml (database lc)", seconds, cpu)


# 17 playbook runs and their drivers, about 815 CPU s on a slow machine: 1,665 s at load 10-15 (22b9423's clean
# run), near the suite's 1800 s limit; each playbook run keeps its own 1500 s limit for a hang
@pytest.mark.timeout(3600)
@pytest.mark.e2e
def test_playbooks_embedded(embedded_tables, collections_dir, kdc, tmp_path):
    state_dir, data_dir, summary = embedded_tables
    originals = {t: data_files(str(data_dir / t)) for t in ("events", "clicks")}
    original_dirs = {t: directories(str(data_dir / t)) for t in ("events", "clicks")}
    assert [len(originals["events"]), len(originals["clicks"])] == [60, 60]

    principal, keytab = kdc.add_principal("lakekeeper-playbooks")
    ccache = tmp_path / "krb5cc_playbooks"
    ticks = tmp_path / "ticks.log"
    pipeline_state = tmp_path / "pipeline-state"
    standin = subprocess.Popen([sys.executable, STANDIN, str(ticks)])  # pylint: disable=consider-using-with
    pid = str(standin.pid)
    try:
        edge_vars = {
            "lakekeeper_state_dir": str(state_dir),
            "lakekeeper_app_cache_dir": str(tmp_path / "app-cache"),
            "lakekeeper_run_record_dir": str(tmp_path / "runs"),  # not the shared ~/.lakekeeper/runs
            "lakekeeper_spark_submit": {"master": "local[2]", "extra_conf": {
                "spark.sql.shuffle.partitions": "4", "spark.ui.showConsoleProgress": "false"}},
            "lakekeeper_environment": {"SPARK_LOCAL_IP": "127.0.0.1"},
            "lakekeeper_kinit_principal": principal,
            "lakekeeper_kinit_keytab": str(keytab),
            "kinit_krb5_config": kdc.env["KRB5_CONFIG"],
            "kinit_ccache": "FILE:%s" % ccache,
            "lakekeeper_report_dir": str(tmp_path / "reports"),
        }
        ingest_vars = {
            "pipeline_state_dir": str(pipeline_state),
            "pipeline_drain_poll": 0.2,
            "pipeline_drain_timeout": 30,
            "pipeline_hooks_no_log": False,
            "pipeline_hooks": [{
                "name": "standin",
                "pause": {"command": ["kill", "-STOP", pid]},
                "resume": {"command": ["kill", "-CONT", pid]},
                "paused": {"command": ["ps", "-o", "stat=", "-p", pid], "expect": {"stdout": "^T"}},
                "idle": {"command": ["ps", "-o", "stat=", "-p", pid], "expect": {"stdout": "^T"}},
            }],
        }
        inventory = write_inventory(tmp_path / "inventory.json", edge_vars, ingest_vars, "local")
        state_file = pipeline_state / "pipeline-lakekeeper-local.json"

        # -- analyze.yml, as a collection playbook: report only -------------------------------
        # (one partition per table in the modules' results: the report counts the other one of clicks)
        run = run_playbook("lakekeeper.hive.analyze", inventory, collections_dir, tmp_path,
                           ["lakekeeper_database=e2e", "lakekeeper_max_partitions_listed=1"])
        assert run.rc == 0, run
        analyzed_in = run.seconds
        s = run.summary("edge")
        assert run.stats["lakekeeper_tables_to_compact"] == 2, run
        assert run.stats["lakekeeper_files_before"] == 120 and run.stats["lakekeeper_files_after"] == 3, run
        assert run.stats["lakekeeper_hosts_failed"] == 0
        assert s["action"] == "analyze" and s["cluster"] == "local" and s["ok"], s
        assert sorted(t["table"] for t in s["tables"] if t["status"] == "to_compact") == ["e2e.clicks", "e2e.events"]
        assert s["preflight"]["ok"] and sorted(s["preflight"]["checked"]) == ["e2e.clicks", "e2e.events"], s
        assert s["ingestion"]["paused"] == {} and not state_file.exists()
        # the Kerberos ticket; and on the controller the report's directory and file; nothing else
        assert run.recap["edge"]["changed"] == 3, run
        assert kdc.klist("FILE:%s" % ccache).returncode == 0
        assert {t: data_files(str(data_dir / t)) for t in originals} == originals
        check_report(tmp_path / "reports", "local")
        assert run.stats["lakekeeper_reports"] == ["edge:%s" % (tmp_path / "reports" / "lakekeeper-local.html")], run

        # -- compact.yml failing after the pause: the ingestion is resumed anyway ---------------
        run = run_playbook(os.path.join(PLAYBOOKS, "compact.yml"), inventory, collections_dir, tmp_path,
                           ["lakekeeper_database=e2e", "lakekeeper_pause_first=true",
                            "lakekeeper_kinit_keytab=%s" % (tmp_path / "missing.keytab")])
        assert run.rc == 2, run
        s = run.summary("edge")
        assert run.stats["lakekeeper_hosts_failed"] == 1 and not s["ok"], run
        assert "missing.keytab" in s["error"], s
        assert s["ingestion"]["paused"]["ingest"]["hooks"] == ["standin"], s
        assert s["ingestion"]["resumed"]["ingest"]["hooks"] == ["standin"], s
        assert not state_file.exists() and not process_state(pid).startswith("T")
        assert re.search(r"compact failed on edge: .*missing\.keytab", run.output), run
        assert {t: data_files(str(data_dir / t)) for t in originals} == originals

        # the async limit of the next run must leave room for a Spark start, an analysis and a table compacted:
        # 2.5 times what this analysis took (a Spark start and an analysis) on this machine, at least 150 s
        # (a fixed 100 s was passed on a slow machine at load 10: 107 s for the analysis above)
        background_runs(inventory, collections_dir, tmp_path, data_dir / "wt", state_file, pid,
                        async_limit=max(150, int(2.5 * analyzed_in)))

        # -- compact.yml: tables as an AWX survey string, names without the database -------------
        run = run_playbook(os.path.join(PLAYBOOKS, "compact.yml"), inventory, collections_dir, tmp_path,
                           ["lakekeeper_database=e2e", '{"lakekeeper_tables": "events, clicks"}'])
        finished = time.time()
        assert run.rc == 0, run
        s = run.summary("edge")
        assert [run.stats["lakekeeper_tables_%s" % k] for k in ("compacted", "skipped", "failed")] == [2, 0, 0], run
        assert run.stats["lakekeeper_files_before"] == 120 and run.stats["lakekeeper_files_after"] == 3, run
        assert run.stats["lakekeeper_bytes_before"] > 0 and run.stats["lakekeeper_bytes_after"] > 0
        assert sorted(b.split(".")[1].rsplit("_", 3)[0] for b in run.stats["lakekeeper_backup_tables"]) == \
            ["__bkp_clicks", "__bkp_events"], run.stats
        assert all(b.startswith("edge:e2e.__bkp_") for b in run.stats["lakekeeper_backup_tables"])
        assert len(data_files(str(data_dir / "events"))) == 1 and len(data_files(str(data_dir / "clicks"))) == 2
        # one Spark application (issue 49): the compaction's driver made the analysis (the same run id) and
        # compacted once the play's go came, after the pause; no driver is left once the play has ended
        assert s["applications"] == 1 and s["handoff"]["outcome"] == "go", s
        assert sorted(s["handoff"]["tables"]) == ["e2e.clicks", "e2e.events"], s["handoff"]
        assert not waiting_drivers(state_dir)
        # the stand-in was stopped from before the compaction started until after it had run
        window = s["ingestion"]
        assert window["paused"]["ingest"]["hooks"] == ["standin"] and window["paused_seconds"] > 0, window
        engine_started = run_id_time(s["run_id"])
        compaction_started = s["handoff"]["go_at"]
        assert engine_started <= window["paused_at"] <= compaction_started <= window["resumed_at"], window
        time.sleep(0.5)
        stamps = [float(x) for x in ticks.read_text().split()]
        assert not [t for t in stamps if window["paused_at"] + 0.5 < t < compaction_started], "ticks while paused"
        assert any(t < window["paused_at"] for t in stamps) and any(t > finished for t in stamps)
        assert not state_file.exists()
        # the pipeline role runs delegated from the edge node: its messages name the ingestion host
        assert "Paused on ingest" in run.output and "Resumed on ingest" in run.output, run
        assert "Paused on edge" not in run.output and "Resumed on edge" not in run.output, run

        # -- compact.yml again: nothing to compact; the application that analyzed is told to stop and has ended
        # when the play ends (nothing paused, nothing compacted)
        run = run_playbook(os.path.join(PLAYBOOKS, "compact.yml"), inventory, collections_dir, tmp_path,
                           ["lakekeeper_database=e2e"])
        assert run.rc == 0, run
        s = run.summary("edge")
        assert s["applications"] == 1 and s["counts"]["compacted"] == 0 and s["ingestion"]["paused"] == {}, s
        assert re.search(r"Wait for the compaction's application to end \(told to stop, there is nothing to "
                         r"compact\)\] \**\s*\nok: \[edge\]", run.output), run
        assert not waiting_drivers(state_dir)

        # -- analyze.yml again: the report lists the backups the compaction kept, and a copy of it
        # stays on the edge node (where it outlives an AWX job), named in the job's artifacts --------
        edge_reports = tmp_path / "edge-reports"
        run = run_playbook("lakekeeper.hive.analyze", inventory, collections_dir, tmp_path,
                           ["lakekeeper_database=e2e", "lakekeeper_report_copy_to=%s" % edge_reports])
        assert run.rc == 0, run
        html = (tmp_path / "reports" / "lakekeeper-local.html").read_text()
        assert (edge_reports / "lakekeeper-local.html").read_text() == html
        assert run.stats["lakekeeper_reports"] == ["edge:%s" % (edge_reports / "lakekeeper-local.html")], run
        backups = html[html.index('id="backups"'):]
        rows = re.findall(r"<tr><td>(e2e\.\w+)</td><td>(e2e\.__bkp_\w+)</td>", backups)
        assert sorted(r[0] for r in rows) == ["e2e.clicks", "e2e.events"], backups
        assert all(b.startswith(t.replace("e2e.", "e2e.__bkp_") + "_") for t, b in rows), rows
        assert re.search(r'<b id="backups-pending">\d of 2</b>', html), html
        assert "No backups" not in backups and run.stats["lakekeeper_tables_to_compact"] == 0, run

        # -- rollback.yml: one named table, with the ingestion paused -----------------------------
        run = run_playbook(os.path.join(PLAYBOOKS, "rollback.yml"), inventory, collections_dir, tmp_path,
                           ["lakekeeper_tables=e2e.events"])
        assert run.rc == 0, run
        s = run.summary("edge")
        assert run.stats["lakekeeper_tables_rolled_back"] == 1 and s["action"] == "rollback", run
        assert s["tables"][0]["table"] == "e2e.events" and s["tables"][0]["backup_table"].startswith("e2e.__bkp_events")
        assert s["ingestion"]["resumed"]["ingest"]["hooks"] == ["standin"] and not state_file.exists()
        assert data_files(str(data_dir / "events")) == originals["events"]

        # -- compact.yml whose pre-flight fails (a margin no filesystem has): the application that analyzed is
        # told to stop and has ended when the play ends; the rolled-back table stays as it is
        run = run_playbook(os.path.join(PLAYBOOKS, "compact.yml"), inventory, collections_dir, tmp_path,
                           ["lakekeeper_tables=e2e.events", "lakekeeper_preflight_margin_ratio=1000000000"])
        assert run.rc == 2, run
        s = run.summary("edge")
        assert not s["ok"] and "Not enough room" in s["error"], s
        assert s["applications"] == 1 and s["ingestion"]["paused"] == {}, s
        assert re.search(r"Wait for the compaction's application to end \(told to stop\)\] \**\s*\nok: \[edge\]",
                         run.output), run
        assert not waiting_drivers(state_dir)
        assert data_files(str(data_dir / "events")) == originals["events"]

        # -- cleanup.yml: retention 1s over the database (the clicks backup goes) ----------------
        run = run_playbook(os.path.join(PLAYBOOKS, "cleanup.yml"), inventory, collections_dir, tmp_path,
                           ["lakekeeper_database=e2e", "lakekeeper_older_than=1s", NO_DEFAULT_RETENTION])
        assert run.rc == 0, run
        s = run.summary("edge")
        assert run.stats["lakekeeper_tables_cleaned"] == 1 and run.stats["lakekeeper_tables_skipped"] == 1, run
        assert run.stats["lakekeeper_freed_bytes"] > 0
        assert [b.split(":")[1].rsplit("_", 3)[0] for b in run.stats["lakekeeper_backup_tables"]] == \
            ["e2e.__bkp_clicks"], run.stats
        assert s["ingestion"]["paused"] == {}
        # nothing left but the data and the table's run history (<journal dir>/history), which outlives cleanup
        left = directories(str(data_dir / "clicks"))
        assert [d for d in left if not re.match(r"\.lakekeeper(/history)?$", d)] == original_dirs["clicks"], left
        assert ".lakekeeper/history" in left, left
        assert len(data_files(str(data_dir / "clicks"))) == 2

        # -- rollback.yml refuses a database without named tables (nothing runs) ----------------
        run = run_playbook(os.path.join(PLAYBOOKS, "rollback.yml"), inventory, collections_dir, tmp_path,
                           ["lakekeeper_database=e2e"])
        assert run.rc == 2 and "a rollback restores named tables only" in run.output, run
        assert run.stats == {}  # failed before the run started: no summary

        # -- rollback.yml in recover mode over the database, as a dry run ------------------------
        ticks_before = len(ticks.read_text().split())
        run = run_playbook(os.path.join(PLAYBOOKS, "rollback.yml"), inventory, collections_dir, tmp_path,
                           ["lakekeeper_database=e2e", "lakekeeper_rollback_mode=recover", "lakekeeper_dry_run=true"])
        assert run.rc == 0, run
        s = run.summary("edge")
        assert s["action"] == "recover" and s["dry_run"], s
        assert s["counts"] == {"recovered": 0, "skipped": 2, "refused": 0, "failed": 0}, s
        assert s["ingestion"]["would_pause"] == ["ingest"] and s["ingestion"]["paused"] == {}, s
        assert not state_file.exists() and len(ticks.read_text().split()) > ticks_before + 10
        assert run.recap["edge"]["changed"] == 0, run

        fleet(inventory, collections_dir, tmp_path, state_dir, data_dir / "fl", summary["more"]["fl"])
    finally:
        standin.send_signal(signal.SIGCONT)
        standin.kill()
        standin.wait()
        sys.stdout.write("\n".join(["timings:"] + TIMINGS) + "\n")


def wait_for_reads(directory, count, timeout):
    """Until the files in ``directory`` have been read ``count`` times (inotify's IN_ACCESS: a read that
    returned data), or ``timeout`` seconds; returns the reads counted. Unread identical events are merged
    by the kernel, so this may count fewer reads than were made, never more."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
    assert fd >= 0, "inotify_init1: %s" % os.strerror(ctypes.get_errno())
    try:
        wd = libc.inotify_add_watch(fd, os.fsencode(str(directory)), 0x00000001)  # IN_ACCESS
        assert wd >= 0, "inotify_add_watch %s: %s" % (directory, os.strerror(ctypes.get_errno()))
        seen, deadline = 0, time.time() + timeout
        while seen < count and time.time() < deadline:
            if not select.select([fd], [], [], 1.0)[0]:
                continue
            data = os.read(fd, 65536)
            at = 0
            while at + 16 <= len(data):
                _wd, mask, _cookie, size = struct.unpack_from("iIII", data, at)
                seen += bool(mask & 0x00000001)
                at += 16 + size
        return seen
    finally:
        os.close(fd)


def background_runs(inventory, collections_dir, tmp_path, data, state_file, pid, async_limit):
    """compact.yml in the background (async): a job its async limit stops,
    then a job polled over a thousand times; the ingestion is resumed after both."""
    pause = tmp_path / "pause-wt"
    pause.mkdir()
    originals = {t: data_files(str(data / t)) for t in ("events", "clicks")}
    hold = {"LAKEKEEPER_PAUSE_AT": "table:compacting@wt.clicks", "LAKEKEEPER_PAUSE_DIR": str(pause)}

    # -- the async limit passes while wt.clicks is being compacted: async_wrapper kills the job; the
    # play ends, the ingestion is resumed, and the summary says what each table was left in ------------
    run = run_playbook(os.path.join(PLAYBOOKS, "compact.yml"), inventory, collections_dir, tmp_path,
                       ["lakekeeper_database=wt", "lakekeeper_async=%d" % async_limit, "lakekeeper_poll_seconds=2"],
                       env=hold)
    assert run.rc == 2, run
    s = run.summary("edge")
    by = {t["table"]: t for t in s["tables"]}
    assert by["wt.events"]["status"] == "compacted", by  # finished before the limit (its progress record)
    assert by["wt.clicks"]["status"] == "failed" and "Timeout exceeded" in by["wt.clicks"]["reason"], by
    assert "interrupted while being worked on" in by["wt.clicks"]["reason"], by
    assert s["ingestion"]["resumed"]["ingest"]["hooks"] == ["standin"], s
    assert not state_file.exists() and not process_state(pid).startswith("T")
    assert (pause / "wt.clicks.table_compacting.paused").exists()
    assert len(data_files(str(data / "events"))) == 1
    assert data_files(str(data / "clicks")) == originals["clicks"]  # readers see it unchanged
    (pause / "wt.clicks.table_compacting.paused").unlink()

    # -- a long background job polled every 5 ms: over a thousand polls in one task (a task file
    # that included itself once per poll hit Python's recursion limit), every progress line shown,
    # the ingestion resumed; the journal the killed job left on wt.clicks is finished or undone first
    # the job's own async directory: each check of the wait reads its results file there (one `cat`)
    async_dir = tmp_path / "async-wt"
    async_dir.mkdir()
    started = start_playbook(os.path.join(PLAYBOOKS, "compact.yml"), inventory, collections_dir, tmp_path,
                             ["lakekeeper_database=wt", "lakekeeper_async=900", "lakekeeper_poll_seconds=0.005"],
                             env=dict(hold, ANSIBLE_ASYNC_DIR=str(async_dir)))
    try:
        wait_for(pause / "wt.clicks.table_compacting.paused", started)
        # the thousand polls all come after the go now (the Spark start and the analysis come before the
        # compaction's wait in one application): held until the results file has been read a thousand times
        # (a check is a shell command: 926 checks in 47 s on a slow machine at load 12; a fixed 30 s hold
        # was too short there, a fixed 90 s kept a quick machine checking for a minute more than needed)
        reads = wait_for_reads(async_dir, 1000, 600)
        TIMINGS.append("wt held for %d reads of its results file" % reads)
    finally:
        (pause / "wt.clicks.table_compacting.resume").write_text("go")
    run = started.finish()
    assert run.rc == 0, run
    s = run.summary("edge")
    assert s["counts"]["compacted"] == 1 and s["counts"]["failed"] == 0, s
    assert s["background"]["checks"] >= 1000, s["background"]
    shown = [line for line in run.output.splitlines() if line.startswith("edge | [")]
    assert len(shown) == s["background"]["progress_lines"] and shown, (s["background"], shown)
    assert shown[0].endswith("compact started (run %s)" % s["run_id"]) or "compact started" in shown[0], shown
    assert any(line.endswith("wt.clicks: started (0 of 1 done)") for line in shown), shown
    assert any(": compacted in " in line and "wt.clicks" in line for line in shown), shown
    assert shown[-1].endswith("compact finished: compact: 1 compacted"), shown
    assert s["ingestion"]["resumed"]["ingest"]["hooks"] == ["standin"], s
    assert not state_file.exists() and not process_state(pid).startswith("T")
    assert len(data_files(str(data / "clicks"))) < len(originals["clicks"])


def versioned(dt, ids, ver=1, op="I"):
    """Rows as create_tables.py writes them: [id, v, ver, op, dt]."""
    return [[i, "%s%d-%d" % (dt, i, ver), ver, op, dt] for i in ids]


def fleet(inventory, collections_dir, tmp_path, state_dir, data, made):
    """The fleet and merge capabilities through the playbooks, on database fl
    (tables made by create_tables.py ``fleet:fl``): a window already over, the
    delete-ratio trigger with a replica refused, a batch merged and merged
    again, then analyze.yml with the run history in the report."""
    def parts(table):
        return {d: sorted(f for f in files) for d, files in
                ((d, data_files(str(data / table / d))) for d in sorted(os.listdir(str(data / table)))
                 if d.startswith("dt="))}

    dedupe = {"keys": ["id"], "order_by": "ver", "delete_marker": "op", "delete_marker_value": "D"}
    before = {t: parts(t) for t in ("orders", "versions")}
    assert [len(f) for f in before["orders"].values()] == [10, 10, 10], before
    assert [len(f) for f in before["versions"].values()] == [1, 1], before
    replica_files = data_files(str(data / "replica"))
    assert len(replica_files) == 20 and made["batch"]["rows"] == 45, made

    # -- compact.yml with a window that is already over: nothing is started, everything is left for the next
    run = run_playbook(os.path.join(PLAYBOOKS, "compact.yml"), inventory, collections_dir, tmp_path,
                       ["lakekeeper_database=fl", "lakekeeper_deadline=2000-01-01T00:00:00Z"])
    assert run.rc == 0, run
    s = run.summary("edge")
    records = {t["table"]: t for t in s["tables"]}
    assert records["fl.orders"]["status"] == "skipped" and "deadline" in records["fl.orders"]["reason"], records
    assert records["fl.replica"]["status"] == "refused" and "repl.last.id" in records["fl.replica"]["reason"], records
    assert run.stats["lakekeeper_tables_compacted"] == 0, run
    assert {t: parts(t) for t in ("orders", "versions")} == before

    # -- compact.yml over the database: dedupe with the delete-ratio trigger (an AWX survey's JSON), a 2h window
    run = run_playbook(os.path.join(PLAYBOOKS, "compact.yml"), inventory, collections_dir, tmp_path,
                       ["lakekeeper_database=fl", "lakekeeper_deadline=2h",
                        json.dumps({"lakekeeper_dedupe": dict(dedupe, trigger_ratio=0.02)})])
    assert run.rc == 0, run
    s = run.summary("edge")
    records = {t["table"]: t for t in s["tables"]}
    assert sorted(run.stats["lakekeeper_compacted_tables"]) == ["edge:fl.orders", "edge:fl.versions"], run
    # the replica is passed over (refused, in a database run too: not a failure), its files untouched
    assert records["fl.replica"]["status"] == "refused" and "repl.last.id" in records["fl.replica"]["reason"], records
    assert data_files(str(data / "replica")) == replica_files
    # versions: dt=a (4.8 % superseded, one file: no size rule selects it) rewritten by the trigger, dt=b left alone
    after = parts("versions")
    assert len(after["dt=a"]) == 1 and after["dt=a"] != before["versions"]["dt=a"], after
    assert after["dt=b"] == before["versions"]["dt=b"], after
    assert "compacted 1 of 2 unit(s)" in run.output, run
    assert [len(f) for f in parts("orders").values()] == [1, 1, 1]
    compacted = parts("orders")

    # -- compact.yml merging a batch into one table (inserts, updates, deletes), then the same batch again
    batch = ["lakekeeper_tables=fl.orders", "lakekeeper_merge_from=file://%s" % made["batch"]["location"],
             json.dumps({"lakekeeper_dedupe": dedupe})]
    run = run_playbook(os.path.join(PLAYBOOKS, "compact.yml"), inventory, collections_dir, tmp_path, batch)
    assert run.rc == 0, run
    assert run.stats["lakekeeper_compacted_tables"] == ["edge:fl.orders"], run
    merged = parts("orders")
    assert merged["dt=c"] == compacted["dt=c"], merged  # the batch does not touch dt=c: not rewritten
    assert merged["dt=a"] != compacted["dt=a"] and merged["dt=b"] != compacted["dt=b"], merged
    assert run.recap["edge"]["changed"] >= 1, run
    run = run_playbook(os.path.join(PLAYBOOKS, "compact.yml"), inventory, collections_dir, tmp_path, batch)
    assert run.rc == 0, run
    (record,) = run.summary("edge")["tables"]
    assert record["status"] == "not_needed" and "batch already applied" in record["reason"], record
    assert parts("orders") == merged

    # -- what a reader sees: the batch applied once, the superseded versions gone, the replica whole
    res = subprocess.run([sys.executable, CREATE_TABLES, str(state_dir), str(data.parent), "--read", "fl.orders",
                          "fl.versions"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         timeout=900, check=False, env=dict(os.environ, SPARK_LOCAL_IP="127.0.0.1"))
    assert res.returncode == 0, res.stdout[-5000:]
    rows = json.loads(res.stdout.strip().splitlines()[-1])

    def key(r):
        return [str(x) for x in r]

    orders = (versioned("a", range(0, 20), 2) + versioned("a", range(20, 310)) + versioned("b", range(1000, 1010), 2)
              + versioned("b", range(1015, 1300)) + versioned("c", range(2000, 2300)))
    assert rows["fl.orders"] == sorted(orders, key=key)
    versions = versioned("a", range(0, 50), 2) + versioned("a", range(50, 1000)) + versioned("b", range(1000, 2000))
    assert rows["fl.versions"] == sorted(versions, key=key)

    # -- analyze.yml: the replica allowed, the history of each table in the result and the report's timeline
    run = run_playbook("lakekeeper.hive.analyze", inventory, collections_dir, tmp_path,
                       ["lakekeeper_database=fl", "lakekeeper_allow_replicated=true", "lakekeeper_history=5"])
    assert run.rc == 0, run
    records = {t["table"]: t for t in run.summary("edge")["tables"]}
    assert records["fl.replica"]["status"] == "to_compact", records
    html = (tmp_path / "reports" / "lakekeeper-local.html").read_text()
    section = html[html.index('id="history"'):]
    assert sorted(re.findall(r'<h3 class="history-table">([^<]+)</h3>', section)) == ["fl.orders", "fl.versions"]
    orders_runs = section[section.index(">fl.orders</h3>"):]
    orders_runs = orders_runs[:orders_runs.index("</table>")]
    # newest first: the merge (2 partitions: 2 files -> 2), the database compaction (30 -> 3); the runs that
    # changed nothing (the window over, the batch again) left no record
    runs = re.findall(r"<td>(compact)</td>\s*<td><span[^>]*>(\w+)</span>.*?\s*<td class=\"n\">(\d+) &rarr; (\d+)</td>",
                      orders_runs, re.S)
    assert runs == [("compact", "compacted", "2", "2"), ("compact", "compacted", "30", "3")], orders_runs


# --------------------------------------------------------------------------- example inventory

PROBE = textwrap.dedent(
    """
    - name: What the maintenance role makes of the example inventory
      hosts: lakekeeper_edge
      gather_facts: false
      vars_files:
        - MAPPING_FILE
      tasks:
        - name: Map the lakekeeper_* variables that are set (those without a role default)
          ansible.builtin.import_tasks: MAPPING_TASKS

        - name: Start a compaction run (selection and ingestion hosts are checked)
          ansible.builtin.include_role:
            name: lakekeeper.hive.maintenance
            tasks_from: _start
            public: true
          vars:
            _maintenance_start_action: compact
            _maintenance_start_pauses: true

        - name: Show the result
          ansible.builtin.debug:
            msg: "PROBE {{ {'ingestion': _maintenance_ingestion_hosts, 'run_id': _maintenance_pipeline_run_id,
                            'tables': _maintenance_tables, 'queue': maintenance_spark_submit.queue,
                            'principal': _maintenance_kinit_principal, 'margin': maintenance_preflight_margin_ratio,
                            'ship_env': maintenance_python_env | bool} | to_json }}"
    """
)


@pytest.mark.e2e
def test_example_inventory(collections_dir, tmp_path):
    """The example inventory, through the playbooks' mapping of the lakekeeper_*
    variables: each edge node gets its own cluster's ingestion
    hosts and settings, survey-style table strings are parsed; the four
    playbooks pass --syntax-check with it. Nothing connects to the hosts."""
    inventory = os.path.join(PLAYBOOKS, "inventory", "example")
    probe = tmp_path / "probe.yml"
    probe.write_text(PROBE.replace("MAPPING_FILE", os.path.join(PLAYBOOKS, "vars", "maintenance.yml"))
                     .replace("MAPPING_TASKS", os.path.join(PLAYBOOKS, "tasks", "maintenance.yml")))
    run = run_playbook(str(probe), inventory, collections_dir, tmp_path,
                       ['{"lakekeeper_tables": "sales.orders, items\\nsales.orders", "lakekeeper_database": "sales"}'])
    assert run.rc == 0, run
    seen = {}
    for host, doc in re.findall(r'ok: \[(\S+)\] => \{\s+"msg": "PROBE (.*)"\s*\}', run.output):
        seen[host] = json.loads(doc.encode().decode("unicode_escape"))
    assert seen["edge01.paris.example.com"] == {
        "ingestion": ["ingest01.paris.example.com", "ingest02.paris.example.com"], "run_id": "lakekeeper-paris",
        "tables": ["sales.orders", "sales.items"], "queue": "maintenance", "principal": "lakekeeper@PARIS.EXAMPLE.COM",
        "margin": 0.1, "ship_env": False}, seen
    assert seen["edge01.lyon.example.com"]["ingestion"] == ["etl01.lyon.example.com"]
    assert seen["edge01.lyon.example.com"]["principal"] == "svc_lakekeeper@LYON.EXAMPLE.COM"
    assert seen["edge01.lyon.example.com"]["ship_env"] is True
    for name in ("compact", "analyze", "rollback", "cleanup"):
        res = subprocess.run([os.path.join(BIN, "ansible-playbook"), "--syntax-check", "-i", inventory,
                              os.path.join(PLAYBOOKS, name + ".yml")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, check=False, env=dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_dir))
        assert res.returncode == 0, res.stdout


# --------------------------------------------------------------------------- test bed

TABLES = textwrap.dedent(
    """
    import json, sys
    from pyspark.sql import SparkSession
    spark = SparkSession.builder.master("local[2]").enableHiveSupport().getOrCreate()
    jvm = spark._jvm
    fs = jvm.org.apache.hadoop.fs.FileSystem.get(spark._jsc.hadoopConfiguration())
    P = jvm.org.apache.hadoop.fs.Path
    # pb.orders and pb.items for the playbooks, pb.replica a replica (REPL LOAD's repl.last.id) that they pass
    # over; cli.events for the engine CLI under spark-submit; mg.orders and the batch /lk-mg/batch-1 to merge
    TABLES = {"pb.orders": "/lk-pb/orders", "pb.items": "/lk-pb/items", "cli.events": "/lk-cli/events",
              "pb.replica": "/lk-pb/replica"}
    VERSIONED = "id BIGINT, v STRING, ver INT, op STRING"
    if sys.argv[1] == "create":
        for i, (name, location) in enumerate(TABLES.items()):
            spark.sql(f"CREATE DATABASE IF NOT EXISTS {name.split('.')[0]}")
            spark.sql(f"DROP TABLE IF EXISTS {name}")
            props = " TBLPROPERTIES ('repl.last.id'='4711')" if name == "pb.replica" else ""
            spark.sql(f"CREATE EXTERNAL TABLE {name} (id BIGINT, v STRING) PARTITIONED BY (dt STRING) "
                      f"STORED AS PARQUET LOCATION '{location}'{props}")
            for j, dt in enumerate(["2024-01-01", "2024-01-02"]):
                lo = (i * 2 + j) * 5000
                spark.range(lo, lo + 5000).selectExpr("id", "cast(id as string) v").repartition(40) \\
                    .createOrReplaceTempView("src")
                spark.sql(f"INSERT INTO {name} PARTITION (dt='{dt}') SELECT * FROM src")
        # pb.items' owner tiers its partitions older than 30 days to WARM (DISK and ARCHIVE; the bed's DataNodes
        # have DISK, which WARM falls back to); its files of dt=2024-01-01 were written on that day, those of
        # dt=2024-01-02 today (a backfill re-ran it)
        spark.sql("ALTER TABLE pb.items SET TBLPROPERTIES ('lakekeeper.tier.older_than'='30d', "
                  "'lakekeeper.tier.storage_policy'='WARM')")
        then = 1704153600000  # 2024-01-02T00:00:00Z
        for f in fs.listStatus(P("/lk-pb/items/dt=2024-01-01")):
            fs.setTimes(f.getPath(), then, then)
        # quotas the pre-flight reads: room for the copies, on the tables' parent
        fs.setQuota(P("/lk-pb"), 100000, 512 * 1024 * 1024)
        spark.sql("CREATE DATABASE IF NOT EXISTS mg")
        spark.sql("DROP TABLE IF EXISTS mg.orders")
        spark.sql(f"CREATE EXTERNAL TABLE mg.orders ({VERSIONED}) PARTITIONED BY (dt STRING) STORED AS PARQUET "
                  f"LOCATION '/lk-mg/orders'")
        for dt, lo in (("a", 0), ("b", 1000), ("c", 2000)):
            spark.createDataFrame([(k, f"{dt}{k}-1", 1, "I") for k in range(lo, lo + 300)], VERSIONED) \\
                .repartition(10).createOrReplaceTempView("src")
            spark.sql(f"INSERT INTO mg.orders PARTITION (dt='{dt}') SELECT * FROM src")
        # mg.versions: one file per partition; its owner's policy (table properties): dedupe by id, latest ver,
        # rewritten once 2 % of a partition's rows are superseded (dt=a: 50 of 1050)
        spark.sql("DROP TABLE IF EXISTS mg.versions")
        spark.sql(f"CREATE EXTERNAL TABLE mg.versions ({VERSIONED}) PARTITIONED BY (dt STRING) STORED AS PARQUET "
                  f"LOCATION '/lk-mg/versions' TBLPROPERTIES ('lakekeeper.dedupe.keys'='id', "
                  f"'lakekeeper.dedupe.order_by'='ver', 'lakekeeper.dedupe.trigger_ratio'='0.02')")
        for dt, rows in (("a", [(k, f"a{k}-1", 1, "I") for k in range(1000)] + [(k, f"a{k}-2", 2, "I") for k in range(50)]),
                         ("b", [(k, f"b{k}-1", 1, "I") for k in range(1000, 2000)])):
            spark.createDataFrame(rows, VERSIONED).repartition(1).createOrReplaceTempView("src")
            spark.sql(f"INSERT INTO mg.versions PARTITION (dt='{dt}') SELECT * FROM src")
        # the batch: 10 inserts and 20 updates for dt=a, 10 updates and 5 deletes (op = 'D') for dt=b
        batch = [(k, f"a{k}-1", 1, "I", "a") for k in range(300, 310)] + [(k, f"a{k}-2", 2, "I", "a") for k in range(20)]
        batch += [(k, f"b{k}-2", 2, "I", "b") for k in range(1000, 1010)]
        batch += [(k, f"b{k}-2", 2, "D", "b") for k in range(1010, 1015)]
        spark.createDataFrame(batch, VERSIONED + ", dt STRING").repartition(2).write.mode("overwrite") \\
            .parquet("/lk-mg/batch-1")
    def storage_policy(path):
        try:
            return fs.getStoragePolicy(P(path)).getName()
        except Exception:  # a Hadoop 2.7 NameNode: the id in the status
            ids = {int(x.getId()): str(x.getName()) for x in fs.getAllStoragePolicies()}
            return ids.get(int(fs.getClient().getFileInfo(path).getStoragePolicy()))
    out = {}
    spark.sql("REFRESH TABLE mg.orders")
    out["mg.orders"] = sorted([list(r) for r in spark.table("mg.orders").collect()], key=lambda r: [str(x) for x in r])
    out["mg.files"] = {p.getPath().getName(): sorted(f.getPath().getName() for f in fs.listStatus(p.getPath())
                                                     if f.getPath().getName().endswith(".parquet"))
                       for p in fs.listStatus(P("/lk-mg/orders")) if p.getPath().getName().startswith("dt=")}
    for name, location in TABLES.items():
        spark.sql(f"REFRESH TABLE {name}")
        row = spark.sql(f"SELECT count(*) AS n, sum(id) AS s, count(distinct v) AS d FROM {name}").first()
        files, hidden = {}, []
        for part in fs.listStatus(P(location)):
            pn = part.getPath().getName()
            if pn.startswith("."):
                hidden.append(pn)
                continue
            if not part.isDirectory():
                continue
            files[pn] = sorted(f.getPath().getName() for f in fs.listStatus(part.getPath())
                               if f.getPath().getName().endswith(".parquet"))
        out[name.split(".")[1] if name.startswith("pb.") else name] = {
            "rows": row.n, "sum": row.s, "distinct": row.d, "files": files, "hidden": sorted(hidden),
            "partitions": sorted(r[0] for r in spark.sql(f"SHOW PARTITIONS {name}").collect()),
            "storage": {pn: storage_policy(f"{location}/{pn}") for pn in files}}
    print(json.dumps(out))
    """
)


# a chain of playbooks and drivers (about 450 CPU s on a slow machine): 1,314 s at load 10 in CI, where the
# suite's 1800 s limit is near; each playbook run keeps its own 1500 s limit for a hang
@pytest.mark.timeout(3600)
@pytest.mark.testbed
@pytest.mark.e2e
def test_playbooks_on_the_testbed(collections_dir, testbed, tmp_path):
    script = tmp_path / "tables.py"
    script.write_text(TABLES)

    def tables(action):
        started = time.time()
        p = testbed.run_python(script, action)
        TIMINGS.append("test bed %s (second Spark process): %.0fs" % (action, time.time() - started))
        assert p.returncode == 0, p.stderr[-5000:]
        return json.loads(p.stdout.strip().splitlines()[-1])

    before = tables("create")
    assert before["orders"]["rows"] == 10000 and before["items"]["rows"] == 10000
    assert before["cli.events"]["rows"] == 10000
    assert [len(f) for f in before["orders"]["files"].values()] == [40, 40]
    same = ("rows", "sum", "distinct", "partitions")

    hooks_log = tmp_path / "hooks.log"
    conf = str(testbed.conf_dir)
    edge_vars = {
        "lakekeeper_spark_submit": {
            "enabled": True,
            "master": testbed.master_url,
            "python_env": testbed.python,          # the executors' Python (spark.pyspark.python)
            "executor_memory": "512m",
            "extra_conf": {"spark.ui.showConsoleProgress": "false", "spark.sql.shuffle.partitions": "4"},
        },
        "lakekeeper_spark_home": str(testbed.spark_home),
        "lakekeeper_hadoop_conf_dir": conf,
        "lakekeeper_environment": {"SPARK_CONF_DIR": conf, "SPARK_LOCAL_IP": "127.0.0.1"},
        "lakekeeper_python": testbed.python,        # the driver's Python
        "lakekeeper_app_cache_dir": str(tmp_path / "app-cache"),
        "lakekeeper_run_record_dir": str(tmp_path / "runs"),  # not the shared ~/.lakekeeper/runs
        "lakekeeper_preflight_margin_ratio": 0.5,
        # ship the executors' Python: built once by the python_env role (PyYAML from PyPI, venv-pack),
        # published in a local directory, used as --archives ...#lakekeeper_env and ./lakekeeper_env/bin/python
        "lakekeeper_python_env": True,
        "python_env_dest": str(tmp_path / "env"),
        "python_env_interpreter": testbed.python,
    }
    ingest_vars = {
        "pipeline_state_dir": str(tmp_path / "pipeline-state"),
        "pipeline_hooks": [{"name": "loader",
                            "pause": {"command": ["sh", "-c", "echo pause >> %s" % hooks_log]},
                            "resume": {"command": ["sh", "-c", "echo resume >> %s" % hooks_log]}}],
    }
    inventory = write_inventory(tmp_path / "inventory.json", edge_vars, ingest_vars, "testbed")

    def spark_apps():
        """{application id: name} of every application the standalone master registered."""
        log = testbed.run_dir / "logs" / "spark-master.log"
        text = log.read_text(errors="replace") if log.exists() else ""
        return dict((app, name) for name, app in re.findall(r"Registered app (\S+) with ID (app-\S+)", text))

    try:
        # -- the engine CLI under spark-submit on the standalone cluster, as a cluster runs it ----
        doc, output = submit_engine(testbed, tmp_path, "compact", "--table", "cli.events")
        check_cluster_run(doc, output)
        (t,) = doc["tables"]
        assert t["status"] == "compacted" and t["location"].startswith("hdfs://"), t
        assert [p["files_after"] for p in t["partitions"]] == [1, 1], t
        apps_before = set(spark_apps())

        # -- compact.yml: spark-submit to the standalone master, tables on HDFS; the compaction runs
        # in the background (async), polled every 3 s, its progress printed at each poll ----------
        run = run_playbook(os.path.join(PLAYBOOKS, "compact.yml"), inventory, collections_dir, tmp_path,
                           ["lakekeeper_database=pb", "lakekeeper_async=1800", "lakekeeper_poll_seconds=3",
                            "lakekeeper_deadline=2h"])
        assert run.rc == 0, run
        s = run.summary("edge")
        # the replica in the database is passed over, untouched
        (replica,) = [t for t in s["tables"] if t["table"] == "pb.replica"]
        assert replica["status"] == "refused" and "repl.last.id" in replica["reason"], replica
        progress = re.findall(r"\[\d\d:\d\d:\d\d, \+[^]]+\] (.+?)\"?,?$", run.output, re.M)
        assert progress and progress[0].startswith("compact started (run "), run
        assert any(sorted(p[len("compact: 2 table(s): "):].split(", ")) == ["pb.items", "pb.orders"]
                   for p in progress if p.startswith("compact: 2 table(s): ")), progress
        assert sorted(p.split(":")[0] for p in progress if ": compacted in " in p) == ["pb.items", "pb.orders"], progress
        assert progress[-1] == "compact finished: compact: 2 compacted", progress
        assert "TASK [lakekeeper.hive.maintenance : Wait for the compaction to finish, printing its progress" \
            in run.output, run
        assert all("edge | [" in line for line in run.output.splitlines() if ": compacted in " in line), run
        assert "TASK [lakekeeper.hive.maintenance : Remove the progress file and the run's record" in run.output, run
        assert run.stats["lakekeeper_tables_compacted"] == 2 and run.stats["lakekeeper_tables_failed"] == 0, run
        assert run.stats["lakekeeper_files_before"] == 160 and run.stats["lakekeeper_files_after"] == 4, run
        assert sorted(run.stats["lakekeeper_compacted_tables"]) == ["edge:pb.items", "edge:pb.orders"], run
        runs = {r["table"]: r for r in run.stats["lakekeeper_runs"]}  # what a later job undoes a run by
        assert runs["pb.orders"]["status"] == "compacted" and runs["pb.orders"]["run_id"], runs
        assert runs["pb.orders"]["run_id"] != runs["pb.items"]["run_id"], runs  # a run id per table
        # the play's one engine run (analysis and compaction in one application, roles/maintenance
        # tasks/_analyze_first.yml) was a Spark application of the standalone master (named by the
        # module), and its executors unpacked the shipped Python environment. Other parts of the suite
        # submit their own applications to the shared bed's master meanwhile.
        new_apps = {app: name for app, name in spark_apps().items() if app not in apps_before}
        ours = {name.split("-")[1]: app for app, name in new_apps.items()
                if re.match(r"lakekeeper-(analyze|compact)-pb", name)}
        assert sorted(ours) == ["compact"], new_apps
        assert s["applications"] == 1, s
        work = testbed.run_dir / "spark" / "work"
        assert list(work.glob(ours["compact"] + "/*/lakekeeper_env/bin/python")), (ours, new_apps)
        env_built = (tmp_path / "env" / "lakekeeper_env.tar.gz").stat().st_mtime
        # the pre-flight compared real HDFS quota figures of /lk-pb (with the 50 % margin)
        checks = [c for t in s["preflight"]["tables"] for c in t["checks"]]
        assert s["preflight"]["ok"] and s["preflight"]["margin_ratio"] == 0.5, s["preflight"]
        assert {c["kind"] for c in checks if c["path"].endswith("/lk-pb")} == {"space_quota", "namespace_quota"}, checks
        assert all(c["needed"] > 0 and c["ok"] for c in checks), checks
        assert hooks_log.read_text().split() == ["pause", "resume"]
        # pb.items' tiering property: its partition written in 2024 compacted under WARM, the space reported;
        # the one a backfill re-wrote today compacted as before
        items = [t for t in s["tables"] if t["table"] == "pb.items"][0]
        assert items["tiered"] == 1 and set(items["tiering"]) == {"dt=2024-01-01"}, items
        tier = items["tiering"]["dt=2024-01-01"]
        assert tier["storage_policy"] == "WARM" and "erasure_coding_policy" not in tier and tier["age_days"] > 300, tier
        assert tier["space_before"] > tier["space_after"] > 0, tier  # 40 small files -> 1
        assert tier["space_saved"] == tier["space_before"] - tier["space_after"] == items["tier_space_saved"], tier
        assert not [t for t in s["tables"] if t["table"] == "pb.orders"][0].get("tiered"), s["tables"]

        # -- a second Spark process reads through the Metastore service: same rows, fewer files -
        after = tables("read")
        for name in ("orders", "items"):
            assert {k: after[name][k] for k in ("rows", "sum", "distinct", "partitions")} == \
                {k: before[name][k] for k in ("rows", "sum", "distinct", "partitions")}, (name, after[name])
            assert [len(f) for f in after[name]["files"].values()] == [1, 1], after[name]
        assert before["items"]["storage"] == {"dt=2024-01-01": "HOT", "dt=2024-01-02": "HOT"}, before["items"]
        assert after["items"]["storage"] == {"dt=2024-01-01": "WARM", "dt=2024-01-02": "HOT"}, after["items"]
        assert after["orders"]["storage"] == before["orders"]["storage"], after["orders"]
        assert {k: after["cli.events"][k] for k in same} == {k: before["cli.events"][k] for k in same}
        assert [len(f) for f in after["cli.events"]["files"].values()] == [1, 1], after["cli.events"]

        # -- rollback.yml of one table's run (its run id from the compaction job's artifacts) and,
        # overlapping it, cleanup.yml on both tables (two AWX jobs at once):
        # the rollback waits right before its first swap while the cleanup runs; the cleanup drops
        # the other table's backup and leaves the table being rolled back alone (its lease: locked)
        pause = tmp_path / "pause"
        pause.mkdir()
        rollback = start_playbook(os.path.join(PLAYBOOKS, "rollback.yml"), inventory, collections_dir, tmp_path,
                                  ["lakekeeper_tables=pb.orders", "lakekeeper_run_id=" + runs["pb.orders"]["run_id"]],
                                  env={"LAKEKEEPER_PAUSE_AT": "rolling_back@pb.orders#0",
                                       "LAKEKEEPER_PAUSE_DIR": str(pause), "LAKEKEEPER_PAUSE_TIMEOUT": "900"})
        try:
            wait_for(pause / "pb.orders.rolling_back.paused", rollback)
            run = run_playbook(os.path.join(PLAYBOOKS, "cleanup.yml"), inventory, collections_dir, tmp_path,
                               ["lakekeeper_tables=pb.orders,pb.items", "lakekeeper_older_than=all",
                                NO_DEFAULT_RETENTION])
        finally:
            (pause / "pb.orders.rolling_back.resume").write_text("go")
        assert run.rc == 0, run
        assert run.stats["lakekeeper_tables_cleaned"] == 1 and run.stats["lakekeeper_freed_bytes"] > 0, run
        assert run.stats["lakekeeper_tables_locked"] == 1, run
        assert "pb.orders was left alone: the table is being worked on by run" in " ".join(run.output.split()), run
        run = rollback.finish()
        assert run.rc == 0, run
        assert run.stats["lakekeeper_tables_rolled_back"] == 1, run
        assert run.stats["lakekeeper_runs"][0]["table"] == "pb.orders", run
        assert run.stats["lakekeeper_summary"]["edge"]["tables"][0]["status"] == "rolled_back", run
        assert hooks_log.read_text().split() == ["pause", "resume", "pause", "resume"]
        assert (tmp_path / "env" / "lakekeeper_env.tar.gz").stat().st_mtime == env_built  # not rebuilt

        # -- compact.yml merging a batch on HDFS into one table, then analyze.yml with its run history
        dedupe = {"keys": ["id"], "order_by": "ver", "delete_marker": "op", "delete_marker_value": "D"}
        run = run_playbook(os.path.join(PLAYBOOKS, "compact.yml"), inventory, collections_dir, tmp_path,
                           ["lakekeeper_tables=mg.orders",
                            "lakekeeper_merge_from=%s/lk-mg/batch-1" % testbed.hdfs_uri.rstrip("/"),
                            json.dumps({"lakekeeper_dedupe": dedupe})])
        assert run.rc == 0, run
        assert run.stats["lakekeeper_compacted_tables"] == ["edge:mg.orders"], run
        run = run_playbook("lakekeeper.hive.analyze", inventory, collections_dir, tmp_path,
                           ["lakekeeper_tables=mg.orders,pb.items,mg.versions", "lakekeeper_history=5",
                            "lakekeeper_report_dir=%s" % (tmp_path / "reports")])
        assert run.rc == 0, run
        # mg.versions: its own delete-ratio trigger (table properties) selects dt=a, measured on HDFS
        records = {t["table"]: t for t in run.summary("edge")["tables"]}
        assert records["mg.versions"]["status"] == "to_compact", records
        assert "1 of 2 unit(s) need compaction" in records["mg.versions"]["reason"], records
        html = (tmp_path / "reports" / "lakekeeper-testbed.html").read_text()
        section = html[html.index('id="history"'):]
        assert sorted(re.findall(r'<h3 class="history-table">([^<]+)</h3>', section)) == ["mg.orders", "pb.items"]
        assert "dropped pb.__bkp_items_" in section, section  # the cleanup's record outlives the backup

        final = tables("read")
        assert final["mg.files"]["dt=c"] == before["mg.files"]["dt=c"], final["mg.files"]  # not in the batch
        assert [len(final["mg.files"][d]) for d in ("dt=a", "dt=b")] == [1, 1], final["mg.files"]
        merged = ([[k, "a%d-2" % k, 2, "I", "a"] for k in range(20)] + [[k, "a%d-1" % k, 1, "I", "a"] for k in range(20, 310)]
                  + [[k, "b%d-2" % k, 2, "I", "b"] for k in range(1000, 1010)]
                  + [[k, "b%d-1" % k, 1, "I", "b"] for k in range(1015, 1300)]
                  + [[k, "c%d-1" % k, 1, "I", "c"] for k in range(2000, 2300)])
        assert final["mg.orders"] == sorted(merged, key=lambda r: [str(x) for x in r])
        assert final["orders"]["files"] == before["orders"]["files"], final["orders"]  # the original files
        assert final["items"]["storage"] == after["items"]["storage"], final["items"]  # the cleanup kept the tier
        assert final["orders"]["rows"] == 10000 and final["orders"]["sum"] == before["orders"]["sum"]
        assert [len(f) for f in final["items"]["files"].values()] == [1, 1], final["items"]
        assert final["items"]["rows"] == 10000 and final["items"]["sum"] == before["items"]["sum"]
        assert not [h for h in final["items"]["hidden"] if "lk_old" in h], final["items"]
        # the playbooks over database pb and table pb.* left cli.events as the CLI run made it
        assert final["cli.events"] == after["cli.events"], final["cli.events"]
    finally:
        sys.stdout.write("\n".join(["timings:"] + TIMINGS) + "\n")
