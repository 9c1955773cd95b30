# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""A compaction job cancelled the way AWX cancels one: ``ansible-playbook``
gets SIGTERM or SIGINT while the compaction runs in the background, and no
``always:`` section runs. The pause guard (module lakekeeper_pause_guard,
armed by the pipeline role with each pause) resumes the ingestion at the
pause's expiry; without the guard it stays paused; the next run names what
the cancelled one left (the pause, the guard's work, the tables) and resumes
what is left.

Three worlds at once, each a cluster of its own (edge host + ingestion host,
local connections, a stand-in ingestion process stopped with SIGSTOP by a
hook): ``term`` (SIGTERM), ``int`` (SIGINT), ``ctl`` (SIGTERM, guard turned
off: the control that shows the check can fail). The engine is the real one
(the bundled spark_app, local Spark, an embedded Derby Metastore per world).
One Spark process creates the tables of all three databases
(tests/e2e/create_tables.py); each world gets its own copy of that state dir
(one JVM per Derby database), the data directories stay apart per database.
The cancelled compaction parks at a real engine step, ``table:compacting`` of
``<db>.clicks`` (the engine's test hook ``LAKEKEEPER_PAUSE_AT``, docs in
spark_app/lakekeeper_spark/protocol/faults.py), after ``<db>.events`` is
compacted; ``ansible-playbook`` is signalled then, and the job's async limit
stops the engine later. The next runs recover the journal the killed engine
left on clicks and compact it; the rows on disk are checked afterwards.
Six JVMs in all: the tables, then one application per compact.yml run
(three cancelled, two next runs), which analyzes and then compacts
(lakekeeper_compact analyze_first; eleven when each run was an analysis and a
compaction). Most of the wall time is
waiting for the async limit and the guard's expiry, which must leave room
for a Spark start on a loaded machine.

Run: ``.venv/bin/python -m pytest tests/playbooks/test_cancel.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pyarrow.parquet as pq
import pytest

from test_playbooks import (CREATE_TABLES, PLAYBOOKS, STANDIN, TIMINGS, data_files, process_state,  # pylint: disable=import-error
                            start_playbook, write_inventory)

# the compaction's async limit, after which the cancelled job's engine is killed: room for a Spark start and
# <db>.events compacted on a loaded 2-core machine (three JVMs at once: 100 s at load 10-20, 166 s at load 22,
# and on a slower machine at load 10, 311-329 s from the plays' start: 300 s was nearly passed)
ASYNC = 450
EXPIRY = 465   # the guard's expiry, seconds after the pause (its end): past the async limit
SPARK_ENV = {"SPARK_LOCAL_IP": "127.0.0.1"}


class World:
    """One cluster: inventory, a stand-in ingestion process, its pause record."""

    def __init__(self, root, name, tables_state, data_dir, guard=True):
        self.name, self.dir = name, root / name
        self.dir.mkdir()
        self.ticks = self.dir / "ticks.log"
        self.data = data_dir / name
        self.pause_dir = self.dir / "engine-pause"
        self.pause_dir.mkdir()
        self.parked = self.pause_dir / ("%s.clicks.table_compacting.paused" % name)
        # this world's own Derby Metastore: a copy of the one create_tables.py made (no JVM holds it now)
        shutil.copytree(str(tables_state), str(self.dir / "state"))
        self.standin = subprocess.Popen([sys.executable, STANDIN, str(self.ticks)])  # pylint: disable=consider-using-with
        pid = str(self.standin.pid)
        self.state_dir = self.dir / "pipeline-state"
        self.state_file = self.state_dir / ("pipeline-lakekeeper-%s.json" % name)
        self.report_file = self.state_dir / ("pipeline-lakekeeper-%s.guard.json" % name)
        self.runs_dir = self.dir / "runs"
        edge = {
            "lakekeeper_state_dir": str(self.dir / "state"),
            "lakekeeper_app_cache_dir": str(self.dir / "app-cache"),
            "lakekeeper_spark_submit": {"master": "local[1]", "extra_conf": {
                "spark.sql.shuffle.partitions": "2", "spark.ui.showConsoleProgress": "false"}},
            "lakekeeper_environment": SPARK_ENV,
            "lakekeeper_preflight": False,
            "lakekeeper_run_record_dir": str(self.runs_dir),
        }
        ingest = {
            "pipeline_state_dir": str(self.state_dir),
            "pipeline_drain_poll": 0.2, "pipeline_drain_timeout": 30, "pipeline_guard_poll": 0.5,
            "pipeline_hooks_no_log": False,
            "pipeline_hooks": [{
                "name": "standin",
                "pause": {"command": ["kill", "-STOP", pid]},
                "resume": {"command": ["kill", "-CONT", pid]},
                "paused": {"command": ["ps", "-o", "stat=", "-p", pid], "expect": {"stdout": "^T"}},
            }],
        }
        self.inventory = write_inventory(self.dir / "inventory.json", edge, ingest, name)
        self.extra = ["lakekeeper_database=%s" % name, "lakekeeper_async=%d" % ASYNC, "lakekeeper_poll_seconds=1",
                      "lakekeeper_pause_guard_seconds=%d" % EXPIRY] + ([] if guard else ["lakekeeper_pause_guard=false"])
        self.started = None

    def paused(self):
        return process_state(self.standin.pid).startswith("T")

    def progress(self):
        """The progress records of the compaction in the background (the file its run record names)."""
        record = self.runs_dir / ("maintenance-lakekeeper-%s.json" % self.name)
        if not record.exists():
            return []
        path = json.loads(record.read_text()).get("progress_file")
        if not path or not os.path.exists(path):
            return []
        with open(path, encoding="utf-8") as fh:
            return [json.loads(line) for line in fh if line.strip().endswith("}")]

    def events_done(self):
        return any(p.get("event") == "table" and p.get("table") == "%s.events" % self.name
                   and p.get("status") == "compacted" for p in self.progress())

    def stop(self):
        self.standin.send_signal(signal.SIGCONT)
        self.standin.kill()
        self.standin.wait()


def wait_until(check, timeout, what):
    deadline = time.time() + timeout
    while not check():
        if time.time() > deadline:
            raise AssertionError("timed out after %ss waiting for %s" % (timeout, what))
        time.sleep(0.3)


def rows_on_disk(table_dir):
    """{partition directory ('' unpartitioned): sorted ids} of the parquet files a reader of the table finds."""
    out = {}
    for rel in data_files(str(table_dir)):
        part = os.path.dirname(rel)
        out.setdefault(part, []).extend(pq.read_table(os.path.join(str(table_dir), rel), columns=["id"])
                                        .column("id").to_pylist())
    return {k: sorted(v) for k, v in out.items()}


@pytest.mark.e2e
def test_cancelled_compaction_resumes_the_ingestion(collections_dir, tmp_path):
    # -- one Spark process makes the tables of the three databases (and e2e, unused); each world copies its state
    started = time.time()
    tables_state, data_dir = tmp_path / "tables-state", tmp_path / "data"
    res = subprocess.run([sys.executable, CREATE_TABLES, str(tables_state), str(data_dir), "term", "int", "ctl"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900, check=False,
                         env=dict(os.environ, **SPARK_ENV))
    assert res.returncode == 0, res.stdout[-5000:]
    made = json.loads(res.stdout.strip().splitlines()[-1])["more"]
    TIMINGS.append("create_tables.py term int ctl: %.0fs" % (time.time() - started))
    worlds = {"term": World(tmp_path, "term", tables_state, data_dir),
              "int": World(tmp_path, "int", tables_state, data_dir),
              "ctl": World(tmp_path, "ctl", tables_state, data_dir, guard=False)}
    signals = {"term": signal.SIGTERM, "int": signal.SIGINT, "ctl": signal.SIGTERM}
    originals = {}
    for name, w in worlds.items():
        assert made[name]["events"]["rows"] == 6000 and made[name]["clicks"]["rows"] == 3000, made
        originals[name] = {t: rows_on_disk(w.data / t) for t in ("events", "clicks")}
        assert [len(data_files(str(w.data / t))) for t in ("events", "clicks")] == [60, 60], name
    try:
        # -- three compactions in the background, the real engine parking its thread of <db>.clicks at the
        # journal step table:compacting (<db>.clicks.table_compacting.paused in the world's pause dir)
        for name, w in worlds.items():
            hold = json.dumps({"lakekeeper_environment": dict(SPARK_ENV, LAKEKEEPER_PAUSE_AT="table:compacting@%s.clicks"
                                                              % name, LAKEKEEPER_PAUSE_DIR=str(w.pause_dir))})
            w.started = start_playbook(os.path.join(PLAYBOOKS, "compact.yml"), w.inventory, collections_dir, w.dir,
                                       w.extra + [hold])
        # each signalled once its play has recorded its job on the edge host, its engine has reported <db>.events
        # compacted (progress records) and parked on <db>.clicks: well before the job's async limit
        signalled, parked_at, deadline = set(), {}, time.time() + 900
        while len(signalled) < len(worlds):
            for name, w in worlds.items():
                if name in signalled:
                    continue
                assert w.started.proc.poll() is None, w.started.finish(1)
                if w.parked.exists() and w.events_done():
                    parked_at[name] = w.parked.stat().st_mtime
                    os.kill(w.started.proc.pid, signals[name])
                    signalled.add(name)
                    TIMINGS.append("%s signalled after %.0fs" % (name, time.time() - w.started.started))
            assert time.time() < deadline, "the compactions never parked: %s" % sorted(signalled)
            time.sleep(0.3)
        cancelled = {}
        for name, w in worlds.items():
            cancelled[name] = run = w.started.finish(60)
            assert run.rc != 0, run
            # the play's always: (resume) did not run: still paused, the record there with its guard's expiry
            assert w.paused(), (name, run)
            record = json.loads(w.state_file.read_text())
            assert [h["name"] for h in record["hooks"]] == ["standin"], record
            # and on the edge host the record of the compaction in the background, for the next run
            assert sorted(json.loads((w.runs_dir / ("maintenance-lakekeeper-%s.json" % name)).read_text())["tables"]) \
                == ["%s.clicks" % name, "%s.events" % name]
            if name == "ctl":
                assert "guard" not in record, record
            else:
                guard = record["guard"]
                # the expiry counts from the end of the pause: after the guard was armed, before the engine
                # started (it parked later; a causal bound, not a timing one: a busy machine's pause took 37 s)
                assert guard["seconds"] == EXPIRY, guard
                assert guard["armed_at"] <= guard["expires_at"] - EXPIRY <= parked_at[name], guard
                assert "guard armed, expires %s" % guard["expires"] not in run.output  # the summary never ran
        cancel_time = time.time()
        # -- the guard resumes term and int at the expiry; ctl (no guard) stays paused
        for name in ("term", "int"):
            w = worlds[name]
            wait_until(lambda w=w: not w.paused(), EXPIRY + 30, "the guard of %s" % name)
            wait_until(lambda w=w: w.report_file.exists() and not w.state_file.exists(), 10, "the guard's report")
            report = json.loads(w.report_file.read_text())
            assert report["resumed"]["hooks"] == ["standin"] and not report["left"]["errors"], report
            assert report["guard"]["fired_at"] >= report["guard"]["expires_at"], report
            # resumed within the expiry (plus the guard's poll and a machine busy with three plays)
            assert report["guard"]["fired_at"] - report["guard"]["expires_at"] < 10, report
        time.sleep(max(0.0, cancel_time + 3 - time.time()))
        assert worlds["ctl"].paused() and worlds["ctl"].state_file.exists(), "the control resumed without a guard"
        assert not worlds["ctl"].report_file.exists()

        # the killed job left int's tables as they were at the kill: events compacted, clicks untouched
        w = worlds["int"]
        assert len(data_files(str(w.data / "events"))) == 1
        assert {t: rows_on_disk(w.data / t) for t in ("events", "clicks")} == originals["int"]
        assert len(data_files(str(w.data / "clicks"))) == 60

        # -- the next runs: term (its guard fired) and ctl (left paused), the engine without the pause hook (and an
        # expiry that a loaded machine cannot reach before their own resume)
        nxt = {}
        for name in ("term", "ctl"):
            w = worlds[name]
            nxt[name] = start_playbook(os.path.join(PLAYBOOKS, "compact.yml"), w.inventory, collections_dir, w.dir,
                                       w.extra + ["lakekeeper_pause_guard_seconds=1800"])
        for name, started in nxt.items():
            run = started.finish(600)
            w = worlds[name]
            assert run.rc == 0, run
            s = run.summary("edge")
            earlier = s["ingestion"]["earlier"]["ingest"]
            lines = run.output[run.output.rindex("Show the summary"):]  # the summary's lines, on screen
            if name == "term":
                assert earlier["guard_fired"]["resumed"]["hooks"] == ["standin"], earlier
                assert "left_paused" not in earlier, earlier
                assert "expired at %s; its guard resumed systemd -, cron 0, hooks standin" \
                    % earlier["guard_fired"]["expires"] in lines, lines
                assert not w.report_file.exists()  # shown once
            else:
                assert earlier["left_paused"]["hooks"] == [{"name": "standin"}], earlier
                assert "guard_fired" not in earlier, earlier
                assert "an earlier run left it paused" in lines and "no guard); this run resumes it" in lines, lines
            # what the cancelled compaction left, table by table: its job (stopped by its async limit since)
            # finished wt.events and was working on wt.clicks
            er = s["earlier_run"]
            assert er["finished"] and not er.get("still_running"), er
            states = {t["table"]: t for t in er["tables"]}
            assert states["%s.events" % name]["status"] == "compacted", er
            assert states["%s.clicks" % name]["status"] == "failed", er
            assert "interrupted while being worked on (Timeout exceeded)" in states["%s.clicks" % name]["reason"], er
            assert "by an earlier run whose play never ended (cancelled or killed): %s.events compacted" % name \
                in lines, lines
            assert list(w.runs_dir.iterdir()) == []  # the earlier record forgotten, this run's own removed
            # this run paused, compacted, resumed: nothing left, the stand-in runs, this run's guard disarmed
            assert s["ingestion"]["resumed"]["ingest"]["hooks"] == ["standin"], s
            assert not w.paused() and not w.state_file.exists()
            time.sleep(1.5)  # the guard of this run ends at its next look at the record (pipeline_guard_poll 0.5 s)
            assert not w.report_file.exists() and not w.paused()
            # the journal the killed engine left on clicks finished or undone, then clicks compacted; events (compacted
            # by the cancelled run) needs nothing
            by = {t["table"]: t for t in s["tables"]}
            assert by["%s.clicks" % name]["status"] == "compacted", by
            assert by["%s.events" % name]["status"] == "not_needed", by
            assert s["counts"]["compacted"] == 1 and s["counts"]["failed"] == 0, s
            # the rows as a reader finds them on disk: the same, in fewer files
            assert {t: rows_on_disk(w.data / t) for t in ("events", "clicks")} == originals[name]
            assert len(data_files(str(w.data / "events"))) == 1 and len(data_files(str(w.data / "clicks"))) == 2
    finally:
        for w in worlds.values():
            if w.started is not None and w.started.proc.poll() is None:
                w.started.proc.kill()
            (w.pause_dir / w.parked.name.replace(".paused", ".resume")).write_text("go")  # an engine still parked ends
            w.stop()
        sys.stdout.write("\n".join(["timings:"] + TIMINGS) + "\n")
