# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Issue 48 item 2, "Mixed fleets do not turn the job red": compact.yml run
for real with ``ansible-playbook`` (the embedded default: local Spark, Derby
Metastore in a state dir) over a table list named explicitly that mixes a
table to compact, one that needs nothing and the tables Lakekeeper must
leave alone, as Hive, Spark and a replication tool leave them (MANAGED,
Hive ACID, excluded by ``lakekeeper.exclude``, a replica with
``repl.last.id``; tests/e2e/create_tables.py ``mixed:``):

* by default the job is green (rc 0): the table is compacted, the others are
  reported with their own status (docs/statuses.md) - ``not_needed``, and
  ``refused`` with their code - in the summary and the set_stats totals, a
  warning per refused table, nothing of them touched;
* with ``lakekeeper_fail_on_refused=true`` (and lakekeeper's own backup table
  named too) the same list fails the job, still saying what each table is.

Two playbook runs, three JVMs in all (the tables, two analyses, one
compaction); each run checks many things.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from test_playbooks import CREATE_TABLES, PLAYBOOKS, TIMINGS, data_files, run_playbook  # pylint: disable=import-error

MIXED = ["e2e.events", "mx.single", "mx.excluded", "mx.replica", "mx.managed", "mx.acid"]


@pytest.mark.e2e
def test_a_mixed_list_is_green_with_refusals_reported_and_red_on_request(collections_dir, tmp_path):
    state_dir, data_dir = tmp_path / "state", tmp_path / "data"
    started = time.time()
    res = subprocess.run([sys.executable, CREATE_TABLES, str(state_dir), str(data_dir), "mixed:mx"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900, check=False,
                         env=dict(os.environ, SPARK_LOCAL_IP="127.0.0.1"))
    assert res.returncode == 0, res.stdout[-5000:]
    TIMINGS.append("create_tables.py mixed: %.0fs" % (time.time() - started))
    inventory = tmp_path / "inventory.json"
    inventory.write_text(json.dumps({"all": {
        "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable},
        "children": {"lakekeeper_edge": {"hosts": {"edge": {
            "lakekeeper_state_dir": str(state_dir),
            "lakekeeper_app_cache_dir": str(tmp_path / "app-cache"),
            "lakekeeper_run_record_dir": str(tmp_path / "runs"),  # not the shared ~/.lakekeeper/runs
            "lakekeeper_spark_submit": {"master": "local[2]", "extra_conf": {
                "spark.sql.shuffle.partitions": "4", "spark.ui.showConsoleProgress": "false"}},
            "lakekeeper_environment": {"SPARK_LOCAL_IP": "127.0.0.1"},
            "lakekeeper_pause_ingestion": False}}},  # no ingestion hosts here
            "mixed": {"hosts": {"edge": {}}, "vars": {"lakekeeper_cluster": "mixed"}}}}}))
    untouched = {t: data_files(str(data_dir / "mx" / t)) for t in ("single", "excluded", "replica")}
    assert [len(untouched[t]) for t in ("single", "excluded", "replica")] == [1, 20, 20], untouched

    # -- the mixed list, named explicitly (an AWX survey's string): green --------------------------------
    run = run_playbook(os.path.join(PLAYBOOKS, "compact.yml"), inventory, collections_dir, tmp_path,
                       [json.dumps({"lakekeeper_tables": ", ".join(MIXED)})])
    assert run.rc == 0, run
    s = run.summary("edge")
    assert s["ok"] and not s["error"], s
    got = {t["table"]: (t["status"], t.get("code")) for t in s["tables"]}
    assert got == {"e2e.events": ("compacted", None), "mx.single": ("not_needed", None),
                   "mx.excluded": ("refused", "excluded"), "mx.replica": ("refused", "replicated"),
                   "mx.managed": ("refused", "managed_table"), "mx.acid": ("refused", "transactional_table")}, got
    reasons = {t["table"]: t["reason"] for t in s["tables"]}
    assert "lakekeeper.exclude" in reasons["mx.excluded"] and "repl.last.id=4711" in reasons["mx.replica"], reasons
    assert "MANAGED" in reasons["mx.managed"] and "transactional" in reasons["mx.acid"], reasons
    # set_stats, as AWX shows them: the statuses counted apart, none of them a failure
    stats = {k: run.stats["lakekeeper_tables_%s" % k]
             for k in ("compacted", "not_needed", "skipped", "refused", "failed")}
    assert stats == {"compacted": 1, "not_needed": 1, "skipped": 0, "refused": 4, "failed": 0}, run.stats
    assert run.stats["lakekeeper_hosts_failed"] == 0, run.stats
    assert sorted(run.stats["lakekeeper_refused_tables"]) == [
        "edge:mx.acid", "edge:mx.excluded", "edge:mx.managed", "edge:mx.replica"], run.stats
    assert "compact on edge (cluster mixed): 1 compacted, 1 not needed, 0 skipped, 4 refused, 0 failed" in run.output, run
    assert "mx.managed was refused (managed_table)" in run.output, run  # the module's warning
    assert run.recap["edge"]["failed"] == 0, run
    assert len(data_files(str(data_dir / "events"))) == 1
    assert {t: data_files(str(data_dir / "mx" / t)) for t in untouched} == untouched
    (backup,) = [b.split(":", 1)[1] for b in run.stats["lakekeeper_backup_tables"]]
    assert backup.startswith("e2e.__bkp_events_"), backup

    # -- the same list and the backup table, strict: red, and still says what each table is ---------------
    run = run_playbook(os.path.join(PLAYBOOKS, "compact.yml"), inventory, collections_dir, tmp_path,
                       ["lakekeeper_tables=%s" % ",".join(MIXED + [backup]), "lakekeeper_fail_on_refused=true"])
    assert run.rc != 0 and run.recap["edge"]["failed"] == 1, run
    s = run.summary("edge")
    assert not s["ok"] and run.stats["lakekeeper_hosts_failed"] == 1, run.stats
    got = {t["table"]: (t["status"], t.get("code")) for t in s["tables"]}
    assert got == {"e2e.events": ("not_needed", None), "mx.single": ("not_needed", None),
                   "mx.excluded": ("refused", "excluded"), "mx.replica": ("refused", "replicated"),
                   "mx.managed": ("refused", "managed_table"), "mx.acid": ("refused", "transactional_table"),
                   backup: ("refused", "backup_table")}, got
    assert run.stats["lakekeeper_tables_refused"] == 5 and run.stats["lakekeeper_tables_failed"] == 0, run.stats
    assert "mx.managed: refused: " in s["error"] and "lakekeeper analyze failed (rc=1)" in s["error"], s["error"]
    assert {t: data_files(str(data_dir / "mx" / t)) for t in untouched} == untouched
