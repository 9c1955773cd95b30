#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: lakekeeper_wait
short_description: Wait for a lakekeeper module running in the background, printing its progress
version_added: 0.1.0
description:
  - Waits in one task, however long, for a task started with C(async) and C(poll=0) (typically
    M(lakekeeper.hive.lakekeeper_compact) with O(lakekeeper.hive.lakekeeper_compact#module:progress_file)), and returns
    that task's result, like M(ansible.builtin.async_status) polled until it has finished.
  - Every O(check_seconds) it reads the job's results file and the new part of the progress file on the target (one
    command through the task's connection); every O(poll_seconds), and once the job has ended, it prints the engine's
    new progress records (tables done, tables in progress and for how long) as lines prefixed with the host name.
  - One loop, not a task file that includes itself at every poll - a job of many hours polls thousands of times in
    constant memory, and the C(always:) of an enclosing block runs when it ends.
  - The job is never stopped by this module - when O(timeout) passes first, the task fails and says so; the job's own
    C(async) limit is what stops it.
  - When C(ansible-playbook) goes away while it waits (killed, or cancelled on ansible-core 2.16, which does not pass
    SIGTERM on to its workers), it stops waiting at its next check instead of polling on, orphaned, until the job's
    C(async) limit. Nothing of the play runs after a cancel; the role C(lakekeeper.hive.pipeline)'s pause guard
    (M(lakekeeper.hive.lakekeeper_pause_guard)) resumes the ingestion.
  - Runs as an action plugin on the controller; the module itself is documentation only.
author:
  - Lakekeeper for Ansible contributors (!UNKNOWN)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
attributes:
  action:
    support: full
    details:
      - The waiting is done by the action plugin on the controller, through the task's connection.
  async:
    support: none
  bypass_host_loop:
    support: none
  check_mode:
    support: full
    details:
      - In check mode nothing is waited for and the task reports skipped (a check-mode compaction is not run in the
        background by the role C(lakekeeper.hive.maintenance)).
  diff_mode:
    support: none
  idempotent:
    description:
      - When run twice with the same arguments, the same result is returned (nothing is changed by this module).
    support: full
    details:
      - Reads only; waiting again for a finished job returns its result again.
  platform:
    platforms: posix
options:
  jid:
    description:
      - The job id, RV(ansible.builtin.async_status#module:ansible_job_id) of the task registered with C(async) and
        C(poll=0).
    type: str
    required: true
  results_file:
    description:
      - The job's results file on the target, C(results_file) of the same registered task.
    type: path
    required: true
  progress_file:
    description:
      - The engine's progress file on the target (JSON lines), whose new records are printed at each poll.
      - Not set - nothing is printed, the task only waits.
    type: path
  poll_seconds:
    description:
      - How often the new progress records are printed, in seconds (fractions allowed).
    type: float
    default: 60
  check_seconds:
    description:
      - How often the job is checked for its end, in seconds; at most O(poll_seconds).
    type: float
    default: 5
  timeout:
    description:
      - Stop waiting (and fail) after this many seconds; V(0) waits until the job ends. Set it a little above the job's
        C(async) limit.
    type: float
    default: 0
  analysis_file:
    description:
      - Wait for this file instead, the analysis that M(lakekeeper.hive.lakekeeper_compact) with
        O(lakekeeper.hive.lakekeeper_compact#module:analyze_first) writes before it waits for its go file, and return
        it as M(lakekeeper.hive.lakekeeper_analyze) returns its analysis (RV(tables), RV(run_id), C(msg), C(catalog),
        C(runtime); the task fails when the analysis failed, as that module's does). The job goes on (RV(finished) is
        V(0)).
      - When the job ends without writing it (the engine could not start, or was stopped), the task fails with the
        job's result.
    type: path
    version_added: 0.1.0
  max_partitions_listed:
    description:
      - With O(analysis_file) - as O(lakekeeper.hive.lakekeeper_analyze#module:max_partitions_listed).
    type: int
    version_added: 0.1.0
  fail_on_refused:
    description:
      - With O(analysis_file) - as O(lakekeeper.hive.lakekeeper_analyze#module:fail_on_refused).
    type: bool
    default: false
    version_added: 0.1.0
seealso:
  - module: ansible.builtin.async_status
  - module: lakekeeper.hive.lakekeeper_compact
"""

EXAMPLES = r"""
---
- name: Compact in the background, surviving a dropped connection
  lakekeeper.hive.lakekeeper_compact:
    database: sales
    progress_file: /tmp/lakekeeper-progress.jsonl
  async: 28800
  poll: 0
  register: compaction

- name: Wait for it, printing the engine's progress every minute
  lakekeeper.hive.lakekeeper_wait:
    jid: "{{ compaction.ansible_job_id }}"
    results_file: "{{ compaction.results_file }}"
    progress_file: /tmp/lakekeeper-progress.jsonl
    poll_seconds: 60
    timeout: 28900
  register: compaction_result
  # judge the compaction's own result afterwards (compaction_result.tables, .rc)
  failed_when: compaction_result.finished is not defined
"""

RETURN = r"""
---
finished:
  description: V(1) once the job has ended (its result is then merged into this one), V(0) when O(timeout) passed first.
  returned: always
  type: int
  sample: 1
ansible_job_id:
  description: The job id waited for.
  returned: always
  type: str
  sample: "j123456789012.12345"
checks:
  description: How many times the job's files were read.
  returned: always
  type: int
  sample: 240
progress_lines:
  description: How many progress lines were printed.
  returned: always
  type: int
  sample: 12
progress_records:
  description: How many complete progress records the progress file held at the end.
  returned: when the job has ended
  type: int
  sample: 14
progress_tables:
  description:
    - What the progress records say of each table - the engine's status of each finished table, and
      V(in_progress) for the tables begun (a C(started) record) and not finished.
    - What a job stopped by its C(async) limit or killed left behind - its own result then has no tables.
  returned: always
  type: list
  elements: dict
  contains:
    table:
      description: The table.
      type: str
    status:
      description: The engine's status of the table (for example V(compacted)), or V(in_progress).
      type: str
    reason:
      description: The engine's reason, if any.
      type: str
  sample: [{"table": "sales.orders", "status": "compacted", "reason": "compacted 2 of 2 unit(s)"}]
tables:
  description:
    - With O(analysis_file) - the analysis, as RV(lakekeeper.hive.lakekeeper_analyze#module:tables) of
      M(lakekeeper.hive.lakekeeper_analyze); else, once the job has ended, its own result's.
  returned: with O(analysis_file) once written, or when the job has ended
  type: list
  elements: dict
  version_added: 0.1.0
run_id:
  description: With O(analysis_file) - the run id of the application (the compaction's too).
  returned: with O(analysis_file) once written
  type: str
  version_added: 0.1.0
waited_seconds:
  description: Seconds spent waiting.
  returned: always
  type: float
  sample: 1203.4
"""

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(
        argument_spec=dict(
            jid=dict(type="str", required=True),
            results_file=dict(type="path", required=True),
            progress_file=dict(type="path"),
            poll_seconds=dict(type="float", default=60),
            check_seconds=dict(type="float", default=5),
            timeout=dict(type="float", default=0),
            analysis_file=dict(type="path"),
            max_partitions_listed=dict(type="int"),
            fail_on_refused=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    module.fail_json(msg="lakekeeper.hive.lakekeeper_wait runs as an action plugin on the controller; this module "
                         "file is its documentation (was it called under another name?)")


if __name__ == "__main__":
    main()
