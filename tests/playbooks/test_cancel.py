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
off: the control that shows the check can fail). The engine is a stand-in
(slow_engine.py: the output contract, no Spark) that takes its time on the
second table, so the whole test costs a few ansible-playbook runs.

Run: ``.venv/bin/python -m pytest tests/playbooks/test_cancel.py``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from test_playbooks import PLAYBOOKS, STANDIN, process_state, start_playbook, write_inventory  # pylint: disable=import-error

HERE = os.path.dirname(os.path.abspath(__file__))
SLOW_ENGINE = os.path.join(HERE, "slow_engine.py")
ASYNC = 20     # the compaction's async limit: the cancelled job's engine is killed then
EXPIRY = 26    # the guard's expiry, seconds after the pause


class World:
    """One cluster: inventory, a stand-in ingestion process, its pause record."""

    def __init__(self, root, name, guard=True):
        self.name, self.dir = name, root / name
        self.dir.mkdir()
        self.ticks = self.dir / "ticks.log"
        self.engine_log = self.dir / "engine.log"
        self.standin = subprocess.Popen([sys.executable, STANDIN, str(self.ticks)])  # pylint: disable=consider-using-with
        pid = str(self.standin.pid)
        self.state_dir = self.dir / "pipeline-state"
        self.state_file = self.state_dir / ("pipeline-lakekeeper-%s.json" % name)
        self.report_file = self.state_dir / ("pipeline-lakekeeper-%s.guard.json" % name)
        self.runs_dir = self.dir / "runs"
        edge = {
            "lakekeeper_state_dir": str(self.dir / "state"),
            "lakekeeper_spark_submit": {"script_path": SLOW_ENGINE},
            "lakekeeper_environment": {"SLOW_ENGINE_LOG": str(self.engine_log), "SLOW_ENGINE_SECONDS": "600"},
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

    def engine(self, what):
        return self.engine_log.exists() and what in self.engine_log.read_text()

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


@pytest.mark.e2e
def test_cancelled_compaction_resumes_the_ingestion(collections_dir, tmp_path):
    worlds = {"term": World(tmp_path, "term"), "int": World(tmp_path, "int"), "ctl": World(tmp_path, "ctl", guard=False)}
    signals = {"term": signal.SIGTERM, "int": signal.SIGINT, "ctl": signal.SIGTERM}
    try:
        # -- three compactions in the background, each cancelled while its engine works on the second table
        for w in worlds.values():
            w.started = start_playbook(os.path.join(PLAYBOOKS, "compact.yml"), w.inventory, collections_dir, w.dir,
                                       w.extra)
        # each signalled 1.5 s after its play has recorded its job on the edge host and its engine has started
        # (wt.events done, wt.clicks being compacted), well before the job's async limit
        ready, signalled, deadline = {}, set(), time.time() + 300
        while len(signalled) < len(worlds):
            for name, w in worlds.items():
                if name in signalled:
                    continue
                assert w.started.proc.poll() is None, w.started.finish(1)
                if name not in ready:
                    if (w.runs_dir / ("maintenance-lakekeeper-%s.json" % name)).exists() and w.engine("compact started"):
                        ready[name] = time.time()
                elif time.time() - ready[name] >= 1.5:
                    os.kill(w.started.proc.pid, signals[name])
                    signalled.add(name)
            assert time.time() < deadline, "the compactions never started: %s" % ready
            time.sleep(0.2)
        cancelled = {}
        for name, w in worlds.items():
            cancelled[name] = run = w.started.finish(60)
            assert run.rc != 0, run
            # the play's always: (resume) did not run: still paused, the record there with its guard's expiry
            assert w.paused(), (name, run)
            record = json.loads(w.state_file.read_text())
            assert [h["name"] for h in record["hooks"]] == ["standin"], record
            # and on the edge host the record of the compaction in the background, for the next run
            assert json.loads((w.runs_dir / ("maintenance-lakekeeper-%s.json" % name)).read_text())["tables"] == \
                ["%s.events" % name, "%s.clicks" % name]
            if name == "ctl":
                assert "guard" not in record, record
            else:
                guard = record["guard"]
                # the expiry counts from the end of the pause (a few seconds after it was armed)
                assert guard["seconds"] == EXPIRY and 0 <= guard["expires_at"] - guard["armed_at"] - EXPIRY < 30, guard
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

        # -- the next runs: term (its guard fired) and ctl (left paused), with a quick engine (and an expiry that
        # a loaded machine cannot reach before their own resume)
        nxt = {}
        for name in ("term", "ctl"):
            w = worlds[name]
            quick_env = json.dumps({"lakekeeper_environment": {"SLOW_ENGINE_LOG": str(w.engine_log),
                                                               "SLOW_ENGINE_SECONDS": "0.2"}})
            nxt[name] = start_playbook(os.path.join(PLAYBOOKS, "compact.yml"), w.inventory, collections_dir, w.dir,
                                       w.extra + [quick_env, "lakekeeper_pause_guard_seconds=600"])
        for name, started in nxt.items():
            run = started.finish(300)
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
            assert s["counts"]["compacted"] == 2, s
    finally:
        for w in worlds.values():
            if w.started is not None and w.started.proc.poll() is None:
                w.started.proc.kill()
            w.stop()
