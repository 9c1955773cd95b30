"""How the maintenance role judges a module run it registered with
``failed_when: false`` (roles/maintenance/vars/main.yml,
``_maintenance_result_failed``): real ansible-playbook, real registered
results of real tasks, no Spark."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

PLAY = """
- name: The maintenance role's judgement of registered results
  hosts: localhost
  gather_facts: false
  vars_files:
    - {vars_file}
  vars:
    maintenance_dry_run: false
    maintenance_async: 0
  tasks:
    - name: A module that failed before starting its engine (fail_json without rc or tables)
      lakekeeper.hive.lakekeeper_compact:
        table: db.t
        state_dir: null
        spark_submit_path: /bin/true
        spark_submit: {{enabled: true, master: yarn, script_path: /bin/true}}
        environment: {{SPARK_CONF_DIR: /nonexistent}}
      register: _maintenance_result
      failed_when: false

    - name: Judge it
      ansible.builtin.debug:
        msg: "JUDGED pre_start={{{{ _maintenance_result_failed | bool }}}} ({{{{ _maintenance_result.msg }}}})"

    - name: A skipped compaction (nothing to compact)
      ansible.builtin.command: "true"
      register: _maintenance_result
      when: false

    - name: Judge it
      ansible.builtin.debug:
        msg: "JUDGED skipped={{{{ _maintenance_result_failed | bool }}}}"

    - name: An engine run that failed (rc 1, tables reported)
      ansible.builtin.set_fact:
        _maintenance_result: {{rc: 1, tables: [{{table: db.t, status: failed}}], failed: false}}

    - name: Judge it
      ansible.builtin.debug:
        msg: "JUDGED engine_failed={{{{ _maintenance_result_failed | bool }}}}"

    - name: An engine run that succeeded
      ansible.builtin.set_fact:
        _maintenance_result: {{rc: 0, tables: [{{table: db.t, status: compacted}}], failed: false}}

    - name: Judge it
      ansible.builtin.debug:
        msg: "JUDGED ok={{{{ _maintenance_result_failed | bool }}}}"
"""


def test_a_module_failing_before_its_engine_is_a_failure(playbook):
    run = playbook(PLAY.format(vars_file=REPO / "roles" / "maintenance" / "vars" / "main.yml"))
    assert run.rc == 0, run
    judged = dict(re.findall(r"JUDGED (\w+)=(\w+)", run.output))
    assert judged == {"pre_start": "True", "skipped": "False", "engine_failed": "True", "ok": "False"}, run
    # the pre-start failure was the module's own, clear message (no Metastore configuration found)
    assert "no Metastore configuration was found" in run.output, run
