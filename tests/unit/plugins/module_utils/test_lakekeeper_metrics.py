# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The Prometheus textfile metrics of a run, read back with the Prometheus
client's own text-format parser (as node_exporter's collector would)."""

from __future__ import annotations

import os

from prometheus_client.parser import text_string_to_metric_families

from ansible_collections.lakekeeper.hive.plugins.module_utils._lakekeeper_metrics import write_metrics


def parsed(path):
    with open(path) as handle:
        text = handle.read()
    out = {}
    for family in text_string_to_metric_families(text):
        assert family.type == "gauge", family
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def parts(files, size):
    return [{"files_before": files, "files_after": 1, "bytes_before": size, "bytes_after": size}]


DOC = {"failed": False, "tables": [
    {"table": "db.a", "status": "compacted", "partitions": parts(40, 4000) + parts(10, 1000)},
    {"table": 'db."odd"', "status": "compacted", "partitions": parts(5, 50)},
    {"table": "db.m", "status": "refused", "reason": "MANAGED"},
    {"table": "db.l", "status": "locked", "lease_holder": {"run_id": "x"}},
    {"table": "db.t", "status": "not_needed", "lease_taken_over": {"run_id": "dead"}},
]}


def test_a_run_then_a_failed_run_of_other_tables(tmp_path):
    path = write_metrics(str(tmp_path), "compact", DOC, 0, 12.5, 1000.0)
    assert os.path.basename(path) == "lakekeeper_compact.prom" and os.listdir(str(tmp_path)) == [os.path.basename(path)]
    m = parsed(path)
    c = (("command", "compact"),)
    assert m[("lakekeeper_run_success", c)] == 1 and m[("lakekeeper_run_duration_seconds", c)] == 12.5
    assert m[("lakekeeper_run_timestamp_seconds", c)] == 1000.0
    assert m[("lakekeeper_tables", c + (("status", "compacted"),))] == 2
    assert m[("lakekeeper_tables", c + (("status", "refused"),))] == 1
    assert m[("lakekeeper_tables", c + (("status", "failed"),))] == 0  # shown, so that queries find it
    assert m[("lakekeeper_files_before", c)] == 55 and m[("lakekeeper_files_after", c)] == 3
    assert m[("lakekeeper_bytes_before", c)] == 5050 == m[("lakekeeper_bytes_after", c)]
    assert m[("lakekeeper_lease_waits", c)] == 1 and m[("lakekeeper_leases_taken_over", c)] == 1
    last = dict((dict(k[1])["table"], v) for k, v in m.items() if k[0] == "lakekeeper_table_last_success_timestamp_seconds")
    assert last == {"db.a": 1000.0, 'db."odd"': 1000.0, "db.t": 1000.0}  # the label escaped and read back

    # a later run of other tables that fails: its own figures, the earlier tables' ages kept
    doc = {"failed": True, "tables": [{"table": "db.x", "status": "failed"}, {"table": "db.a", "status": "failed"}]}
    m = parsed(write_metrics(str(tmp_path), "compact", doc, 1, 3, 2000.0))
    assert m[("lakekeeper_run_success", c)] == 0 and m[("lakekeeper_tables", c + (("status", "failed"),))] == 2
    last = dict((dict(k[1])["table"], v) for k, v in m.items() if k[0] == "lakekeeper_table_last_success_timestamp_seconds")
    assert last == {"db.a": 1000.0, 'db."odd"': 1000.0, "db.t": 1000.0}
    # an engine that gave no document at all
    m = parsed(write_metrics(str(tmp_path), "compact", None, 3, 1, 3000.0))
    assert m[("lakekeeper_run_success", c)] == 0 and m[("lakekeeper_files_before", c)] == 0
    assert len(os.listdir(str(tmp_path))) == 1  # no temporary file left
