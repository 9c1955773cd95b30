# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Filter of the preflight role: the engine's space verdict of every table to
compact (lakekeeper_analyze's tables[].space), read with a safety margin.

The engine computes what the compacted copy needs in each directory with a
quota and in the filesystem (spark_app/lakekeeper_spark/storage/space.py: data x
replication + the blocks HDFS reserves for open files, names); this filter
does not recompute those figures, it multiplies them by 1 + margin and
compares them with the free room the engine reported. The documentation is
in preflight_check.yml."""

from __future__ import annotations

import math
from collections.abc import Mapping

from ansible.module_utils.common.text.formatters import bytes_to_human
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.lakekeeper.hive.plugins.plugin_utils._lakekeeper_numbers import to_int as _int


def _hr(n):
    return "%s (%d bytes)" % (bytes_to_human(_int(n)), _int(n))


def _with_margin(needed, factor):
    # the figure rounded to 3 decimals first, so that 50 x 1.1 is 55, not 56
    return int(math.ceil(round(_int(needed) * factor, 3)))


def _quota_check(path, kind, limit, used, need):
    """One quota of a directory against what the compacted copy needs."""
    limit, used = _int(limit), _int(used)
    free = limit - used
    return {"path": path, "kind": kind, "limit": limit, "used": used, "available": free, "needed": need,
            "ok": need <= free}


def preflight_check(tables, margin_ratio=0.0, require_figures=True):
    """The pre-flight of every table that needs compaction: a dict with ok,
    margin_ratio, checked, not_needed, missing_figures, problems (lines) and
    tables (per table: table, ok, problems, checks)."""
    ratio = float(margin_ratio)
    factor = 1.0 + ratio
    margin = "" if ratio == 0 else ", +%g %% margin" % (ratio * 100)
    result = {"ok": True, "margin_ratio": ratio, "checked": [], "not_needed": [],
              "missing_figures": [], "problems": [], "tables": []}
    for t in tables or []:
        name = t.get("table", "?")
        if not boolean(t.get("needs_compaction", False), strict=False):
            result["not_needed"].append(name)
            continue
        s = t.get("space")
        if not isinstance(s, Mapping):
            result["missing_figures"].append(name)
            if boolean(require_figures, strict=False):
                line = name + ": no space figures in the analysis (expected tables[].space from lakekeeper.hive.lakekeeper_analyze)"
                result["problems"].append(line)
                result["tables"].append({"table": name, "ok": False, "problems": [line], "checks": []})
            continue
        repl = s.get("replication", 1)
        mine, checks = [], []
        for d in s.get("dirs") or []:
            if _int(d.get("space_quota", -1)) >= 0:
                c = _quota_check(d["path"], "space_quota", d["space_quota"], d.get("space_consumed", 0),
                                 _with_margin(d.get("needed_bytes", 0), factor))
                checks.append(c)
                if not c["ok"]:
                    free = max(c["available"], 0)
                    mine.append("%s: %s: space quota %s, used %s, free %s; needed for the compacted copy: %s"
                                " (data x replication %s + blocks being written%s); short by %s"
                                % (name, d["path"], _hr(c["limit"]), _hr(c["used"]), _hr(free), _hr(c["needed"]),
                                   repl, margin, _hr(c["needed"] - free)))
            if _int(d.get("quota", -1)) >= 0:
                c = _quota_check(d["path"], "namespace_quota", d["quota"], d.get("namespace_used", 0),
                                 _with_margin(d.get("needed_names", 0), factor))
                checks.append(c)
                if not c["ok"]:
                    free = max(c["available"], 0)
                    mine.append("%s: %s: namespace quota %d names, used %d, free %d; needed for the compacted copy: %d"
                                " (files and directories%s); short by %d"
                                % (name, d["path"], c["limit"], c["used"], free, c["needed"], margin,
                                   c["needed"] - free))
        if _int(s.get("remaining_bytes", -1)) >= 0:
            need = _with_margin(s.get("needed_bytes", 0), factor)
            free = _int(s["remaining_bytes"])
            ok = need <= free
            checks.append({"path": t.get("location", ""), "kind": "filesystem", "limit": -1, "used": -1,
                           "available": free, "needed": need, "ok": ok})
            if not ok:
                mine.append("%s: filesystem of %s: %s remaining; needed for the compacted copy: %s"
                            " (data x replication %s%s); short by %s"
                            % (name, t.get("location", "the table"), _hr(free), _hr(need), repl, margin, _hr(need - free)))
        # what the engine found and these checks did not (it should not happen): kept
        if not mine and not boolean(s.get("ok", True), strict=False):
            for p in s.get("problems", ["the engine reports that the compacted copy does not fit"]):
                mine.append(name + ": " + p)
        result["checked"].append(name)
        result["problems"].extend(mine)
        result["tables"].append({"table": name, "ok": not mine, "problems": mine, "checks": checks,
                                 "needed_bytes": _int(s.get("needed_bytes", 0)), "replication": repl})
    result["ok"] = not result["problems"]
    return result


class FilterModule(object):
    def filters(self):
        return {"preflight_check": preflight_check}
