# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The preflight role's filter: the engine's space verdict read with a margin."""

from __future__ import annotations

import copy

from ansible_collections.lakekeeper.hive.plugins.filter.lakekeeper_preflight import preflight_check

GIB = 1 << 30
ORDERS = {
    "table": "sales.orders", "needs_compaction": True, "location": "hdfs://nn1/warehouse/sales.db/orders",
    "space": {
        "ok": True, "problems": [], "needed_bytes": 3 * GIB, "replication": 3, "block_size": 128 << 20,
        "remaining_bytes": 1 << 40,
        "dirs": [
            {"path": "hdfs://nn1/warehouse", "quota": -1, "namespace_used": 900000,
             "space_quota": 8 << 40, "space_consumed": (8 << 40) - 4 * GIB,   # 4 GiB free
             "needed_bytes": 4026531840, "needed_names": 16},                  # 3.75 GiB
            {"path": "hdfs://nn1/warehouse/sales.db", "quota": 60010, "namespace_used": 60000,   # 10 names free
             "space_quota": -1, "space_consumed": 5 << 40, "needed_bytes": 4026531840, "needed_names": 16},
        ]},
}
CUSTOMERS = {"table": "sales.customers", "needs_compaction": False,
             "space": {"ok": False, "problems": ["never checked"], "dirs": [], "needed_bytes": 0}}


def test_without_margin_only_the_namespace_quota_is_short():
    r = preflight_check([ORDERS, CUSTOMERS])
    assert not r["ok"] and r["checked"] == ["sales.orders"] and r["not_needed"] == ["sales.customers"]
    assert r["problems"] == [
        "sales.orders: hdfs://nn1/warehouse/sales.db: namespace quota 60010 names, used 60000, free 10; needed for "
        "the compacted copy: 16 (files and directories); short by 6"]
    checks = r["tables"][0]["checks"]
    assert [(c["kind"], c["needed"], c["available"], c["ok"]) for c in checks] == [
        ("space_quota", 4026531840, 4 * GIB, True), ("namespace_quota", 16, 10, False),
        ("filesystem", 3 * GIB, 1 << 40, True)]
    assert r["tables"][0]["needed_bytes"] == 3 * GIB and r["tables"][0]["replication"] == 3


def test_the_margin_makes_the_space_quota_short_too():
    r = preflight_check([ORDERS], 0.1)
    assert r["margin_ratio"] == 0.1 and len(r["problems"]) == 2
    assert r["problems"][0] == (
        "sales.orders: hdfs://nn1/warehouse: space quota 8.00 TB (8796093022208 bytes), used 8.00 TB (8791798054912 "
        "bytes), free 4.00 GB (4294967296 bytes); needed for the compacted copy: 4.12 GB (4429185024 bytes) (data x "
        "replication 3 + blocks being written, +10 % margin); short by 128.00 MB (134217728 bytes)")
    assert r["problems"][1].endswith("needed for the compacted copy: 18 (files and directories, +10 % margin); short by 8")


def test_the_margin_is_rounded_before_the_ceiling():
    # 50 x 1.1 is 55.00000000000001 in floating point: 55 names, not 56
    t = copy.deepcopy(ORDERS)
    t["space"]["dirs"][1].update({"quota": 60055, "needed_names": 50})
    r = preflight_check([t], 0.1)
    ns = [c for c in r["tables"][0]["checks"] if c["kind"] == "namespace_quota"][0]
    assert ns["needed"] == 55 and ns["ok"], ns


def test_filesystem_capacity():
    t = {"table": "sales.orders", "needs_compaction": True, "location": "hdfs://nn1/warehouse/sales.db/orders",
         "space": {"ok": False, "problems": [], "dirs": [], "needed_bytes": 3000, "replication": 3,
                   "remaining_bytes": 2999}}
    assert preflight_check([t])["problems"] == [
        "sales.orders: filesystem of hdfs://nn1/warehouse/sales.db/orders: 2.93 KB (2999 bytes) remaining; needed for "
        "the compacted copy: 2.93 KB (3000 bytes) (data x replication 3); short by 1.00 Bytes (1 bytes)"]
    t["space"]["remaining_bytes"] = 3000
    assert preflight_check([t])["ok"]


def test_a_problem_only_the_engine_found_is_kept():
    t = {"table": "db.t", "needs_compaction": True,
         "space": {"ok": False, "problems": ["filesystem has 1 KB left"], "dirs": [], "needed_bytes": 10}}
    r = preflight_check([t])
    assert not r["ok"] and r["problems"] == ["db.t: filesystem has 1 KB left"]


def test_missing_figures_are_a_problem_unless_allowed():
    t = {"table": "sales.orders", "needs_compaction": True}
    r = preflight_check([t])
    assert not r["ok"] and r["missing_figures"] == ["sales.orders"] and "no space figures" in r["problems"][0]
    r = preflight_check([t], 0, False)
    assert r["ok"] and r["missing_figures"] == ["sales.orders"] and r["checked"] == [] and r["tables"] == []


def test_nothing_to_compact_passes():
    assert preflight_check([CUSTOMERS]) == {"ok": True, "margin_ratio": 0.0, "checked": [],
                                            "not_needed": ["sales.customers"], "missing_figures": [],
                                            "problems": [], "tables": []}
