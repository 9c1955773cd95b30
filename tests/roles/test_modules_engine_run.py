"""One real engine run through a module, in the background, waited for by
lakekeeper_wait: the modules' and action plugins' path from ansible-playbook
to the engine and back, under whichever ansible-core runs this test (the main
line, and the oldest supported line in the ansible-2.16 lane of
scripts/ansible_lanes.py, whose modules run under that line's module_utils).

The engine's Python is ``LAKEKEEPER_ENGINE_PYTHON`` (the lane's runner sets the
project's virtualenv, which has pyspark), else this interpreter."""

from __future__ import annotations

import json
import os
import re
import sys

PLAY = """
- name: A module's engine run in the background, waited for
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Analyze a database that does not exist (the engine starts, answers, and fails that table)
      lakekeeper.hive.lakekeeper_analyze:
        database: nodb_here
        state_dir: {state}
        app_cache_dir: {cache}
        python: {python}
        progress_file: {progress}
      environment:
        SPARK_LOCAL_IP: 127.0.0.1
      async: 600
      poll: 0
      register: job

    - name: Wait for it
      lakekeeper.hive.lakekeeper_wait:
        jid: "{{{{ job.ansible_job_id }}}}"
        results_file: "{{{{ job.results_file }}}}"
        progress_file: {progress}
        poll_seconds: 0.5
        check_seconds: 0.2
        timeout: 600
      register: waited
      failed_when: waited.finished is not defined

    - name: Show the result
      ansible.builtin.debug:
        msg: "RESULT {{{{ waited | to_json }}}}"
"""


def test_a_module_runs_the_engine_in_the_background(playbook, tmp_path):
    python = os.environ.get("LAKEKEEPER_ENGINE_PYTHON") or sys.executable
    run = playbook(PLAY.format(state=tmp_path / "state", cache=tmp_path / "cache", python=python,
                               progress=tmp_path / "progress.jsonl"))
    assert run.rc == 0, run
    (line,) = re.findall(r'"msg": "RESULT (.*)"$', run.output, re.M)
    waited = json.loads(line.encode().decode("unicode_escape"))
    # the engine ran the shipped application and answered with its JSON document
    brief = {k: waited.get(k) for k in ("finished", "rc", "failed", "msg", "checks", "progress_records")}
    # (its "failed" is failed_when's verdict here, whose result differs between ansible-core lines)
    assert waited["finished"] == 1 and waited["rc"] == 1, brief
    assert "database nodb_here does not exist" in waited["msg"], brief
    assert list((tmp_path / "cache").glob("app-*/run_lakekeeper.py")), list((tmp_path / "cache").iterdir())
    # lakekeeper_wait read the progress records the engine wrote: its start and its end
    assert waited["progress_records"] >= 2 and waited["checks"] >= 1, brief
    assert re.search(r"^localhost \| \[\d\d:\d\d:\d\d, \+\d+ s\] analyze started \(run ", run.output, re.M), run
    assert re.search(r"^localhost \| .* analyze finished: ", run.output, re.M), run
