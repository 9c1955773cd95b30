"""What the maintenance role makes of a batch to merge
(``maintenance_merge_from``, roles/maintenance/tasks/_start.yml): one table
and the dedupe that says how, the dedupe also as the JSON text an AWX survey
gives. Real ansible-playbook, one run for every case (a host each), the
playbooks' variable mapping; no Spark (the run stops after the checks)."""

from __future__ import annotations

import json
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

PLAY = """
- name: The maintenance role's checks of a merge
  hosts: all
  gather_facts: false
  vars_files:
    - {mapping}
  tasks:
    - name: Map the lakekeeper_* variables without a role default (set only when set)
      ansible.builtin.import_tasks: {facts}

    - name: Start a compaction run (the selection is checked)
      ansible.builtin.include_role:
        name: lakekeeper.hive.maintenance
        tasks_from: _start
        public: true
      vars:
        _maintenance_start_action: compact
        _maintenance_start_pauses: false

    - name: Show what the run would merge
      ansible.builtin.debug:
        msg: "CASE {{{{ inventory_hostname }}}} merge={{{{ _maintenance_merge }}}} tables={{{{ _maintenance_tables | join(',') }}}}"
"""

DEDUPE = {"keys": ["id"], "order_by": "ver"}
CASES = {
    "dict": {"lakekeeper_tables": "crm.customers", "lakekeeper_merge_from": "hdfs://nn/in/b1",
             "lakekeeper_dedupe": DEDUPE},
    "survey_text": {"lakekeeper_tables": "customers", "lakekeeper_database": "crm",
                    "lakekeeper_merge_from": "hdfs://nn/in/b1", "lakekeeper_dedupe": json.dumps(DEDUPE)},
    "no_dedupe": {"lakekeeper_tables": "crm.customers", "lakekeeper_merge_from": "hdfs://nn/in/b1"},
    "two_tables": {"lakekeeper_tables": "crm.a, crm.b", "lakekeeper_merge_from": "hdfs://nn/in/b1",
                   "lakekeeper_dedupe": DEDUPE},
    "database": {"lakekeeper_database": "crm", "lakekeeper_merge_from": "crm.batch", "lakekeeper_dedupe": DEDUPE},
    "no_merge": {"lakekeeper_database": "crm", "lakekeeper_merge_from": ""},
}


def test_a_merge_takes_one_table_and_a_dedupe(playbook):
    run = playbook(PLAY.format(mapping=REPO / "playbooks" / "vars" / "maintenance.yml",
                               facts=REPO / "playbooks" / "tasks" / "maintenance.yml"), hosts=CASES)
    shown = dict(re.findall(r"CASE (\w+) (merge=\w+ tables=[\w.,]*)", run.output))
    assert shown == {"dict": "merge=True tables=crm.customers", "survey_text": "merge=True tables=crm.customers",
                     "no_merge": "merge=False tables="}, run
    assert "set maintenance_dedupe (lakekeeper_dedupe)" in run.fatal("no_dedupe"), run
    assert "name exactly one table with maintenance_tables (lakekeeper_tables), not crm.a, crm.b" in \
        run.fatal("two_tables"), run
    assert "not the database crm" in run.fatal("database"), run
