"""The maintenance role's default retention and its guards
(roles/maintenance/tasks/cleanup.yml): the playbooks' mapping gives
older_than 7d, keep_last 1 (per partition) and a 1h grace period when
nothing is set; keep_last 0 and an older_than shorter than the grace period
are refused before any module runs. Real ansible-playbook, one run, a host
per case; no Spark (the refused runs stop at the check)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

PLAY = """
- name: The retention the maintenance role resolves
  hosts: all
  gather_facts: false
  vars_files:
    - {mapping}
  tasks:
    - name: Map the lakekeeper_* variables without a role default (set only when set)
      ansible.builtin.import_tasks: {facts}

    - name: Resolve the role's variables
      ansible.builtin.include_role:
        name: lakekeeper.hive.maintenance
        tasks_from: _start
        public: true
      vars:
        _maintenance_start_action: cleanup
        _maintenance_start_pauses: false

    - name: Show the retention
      ansible.builtin.debug:
        msg: >-
          CASE {{{{ inventory_hostname }}}} older_than={{{{ _maintenance_older_than }}}}
          keep_last={{{{ _maintenance_keep_last }}}} grace={{{{ _maintenance_grace_period }}}}
          seconds={{{{ _maintenance_older_than_seconds | int }}}}/{{{{ _maintenance_grace_seconds | int }}}}

- name: The cleanup's guards
  hosts: short,zero,bare_days
  gather_facts: false
  vars_files:
    - {mapping}
  tasks:
    - name: Map the lakekeeper_* variables without a role default (set only when set)
      ansible.builtin.import_tasks: {facts}

    - name: Clean up
      ansible.builtin.import_role:
        name: lakekeeper.hive.maintenance
        tasks_from: cleanup
"""

CASES = {
    "default": {"lakekeeper_database": "sales"},
    "survey_empty": {"lakekeeper_database": "sales", "lakekeeper_keep_last": "", "lakekeeper_grace_period": ""},
    "short": {"lakekeeper_database": "sales", "lakekeeper_older_than": "30m"},
    "zero": {"lakekeeper_database": "sales", "lakekeeper_keep_last": 0},
    "bare_days": {"lakekeeper_database": "sales", "lakekeeper_older_than": "0", "lakekeeper_grace_period": "2d"},
}


def test_default_retention_and_its_guards(playbook):
    run = playbook(PLAY.format(mapping=REPO / "playbooks" / "vars" / "maintenance.yml",
                               facts=REPO / "playbooks" / "tasks" / "maintenance.yml"), hosts=CASES)
    shown = dict(re.findall(r"CASE (\w+) (older_than=\S+ keep_last=\S* grace=\S* seconds=[\d/]+)", run.output))
    assert shown["default"] == "older_than=7d keep_last=1 grace=1h seconds=604800/3600", run
    assert shown["survey_empty"] == "older_than=7d keep_last= grace= seconds=604800/0", run
    assert shown["short"] == "older_than=30m keep_last=1 grace=1h seconds=1800/3600", run
    assert "must not be shorter than the grace period" in run.fatal("short"), run
    assert "Refused, nothing deleted" in run.fatal("zero") and "must be at least 1" in run.fatal("zero"), run
    assert "must not be shorter than the grace period" in run.fatal("bare_days"), run  # 0 days < 2d
