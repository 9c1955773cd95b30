# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The maintenance role's split of the tables to compact by YARN queue (one
application per queue): the common case stays one group."""

from __future__ import annotations

from ansible_collections.lakekeeper.hive.plugins.filter.lakekeeper_queues import queue_groups

ANALYSIS = [
    {"table": "db.a", "needs_compaction": True},
    {"table": "db.b", "needs_compaction": True, "queue": "root.etl.nightly", "queue_from": "self-optimizing.group"},
    {"table": "db.c", "needs_compaction": True, "queue": "maintenance", "queue_from": "lakekeeper.queue"},
    {"table": "db.d", "needs_compaction": True, "queue": "root.etl.nightly", "queue_from": "lakekeeper.queue"},
    {"table": "db.e", "needs_compaction": False, "queue": "root.other"},
]


def test_without_queue_properties_the_run_stays_one_application():
    plain = [{"table": t["table"]} for t in ANALYSIS]
    assert queue_groups(plain, ["db.a", "db.b"]) == [{"queue": "", "tables": ["db.a", "db.b"], "own": True}]
    assert queue_groups(plain, ["db.a"], "maintenance") == [{"queue": "maintenance", "tables": ["db.a"], "own": True}]
    assert queue_groups([], []) == [{"queue": "", "tables": [], "own": True}]


def test_tables_are_grouped_by_queue_the_runs_own_first():
    groups = queue_groups(ANALYSIS, ["db.d", "db.a", "db.b", "db.c"], "maintenance")
    assert groups == [{"queue": "maintenance", "tables": ["db.a", "db.c"], "own": True},
                      {"queue": "root.etl.nightly", "tables": ["db.d", "db.b"], "own": False}]
    # every table of another queue: the run's own group is there, empty (its application is told to stop)
    assert queue_groups(ANALYSIS, ["db.b"]) == [{"queue": "", "tables": [], "own": True},
                                                {"queue": "root.etl.nightly", "tables": ["db.b"], "own": False}]
    # a table not to compact is in no group, whatever its queue
    assert all("db.e" not in g["tables"] for g in queue_groups(ANALYSIS, ["db.a", "db.b", "db.c", "db.d"]))
