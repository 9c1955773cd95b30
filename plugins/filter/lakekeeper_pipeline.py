# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Filters of the pipeline role: what a pause stops, how crontabs are edited,
what a resume could not restart. Pure functions of the results the role's
tasks register; the documentation of each filter is in <filter name>.yml."""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.text.converters import to_text
from ansible.module_utils.parsing.convert_bool import boolean

ACTIVE_STATES = ("active", "activating", "reloading", "refreshing")
CRON_HEADER = "#Ansible: "
CRON_JOB = re.compile(r"^\s*[0-9*@]")


def _bool(value):
    return boolean(value, strict=False)


def pipeline_systemd_units(show_stdout, units):
    """The items of pipeline_systemd_units with their state, from the output
    of one ``systemctl show --property=... -- unit...`` (blocks separated by
    an empty line, in the order of the arguments)."""
    blocks = (show_stdout or "").split("\n\n")
    out = []
    for i, unit in enumerate(units or []):
        props = {}
        for line in (blocks[i] if i < len(blocks) else "").split("\n"):
            if "=" in line:
                key, value = line.split("=", 1)
                props[key] = value
        name = unit["name"]
        out.append({
            "name": name,
            "stop": _bool(unit.get("stop", True)),
            "disable": _bool(unit.get("disable", name.endswith(".timer"))),
            "is_timer": name.endswith(".timer"),
            "load_state": props.get("LoadState", "not-found"),
            "active_state": props.get("ActiveState", "inactive"),
            "unit_file_state": props.get("UnitFileState", ""),
            "triggers": props.get("Triggers", "").split(),
        })
    return out


def pipeline_check_matches(result, check):
    """True when the result of a check action (command or uri) meets
    check.expect: rc (default 0) and stdout (regular expression) for a
    command; status (default [200]), json (top-level key/values) and content
    (regular expression) for uri."""
    result = result or {}
    expect = check.get("expect") or {}
    if "command" in check:
        return (result.get("rc", -1) == expect.get("rc", 0)
                and ("stdout" not in expect or re.search(expect["stdout"], to_text(result.get("stdout", ""))) is not None))
    body = result.get("json", {})
    statuses = expect.get("status", [200])
    if not isinstance(statuses, (list, tuple)):
        statuses = [statuses]
    return (result.get("status", -1) in statuses
            and ("json" not in expect or (isinstance(body, Mapping) and dict(body, **expect["json"]) == dict(body)))
            and ("content" not in expect or re.search(expect["content"], to_text(result.get("content", ""))) is not None))


def pipeline_busy_hooks(results):
    """Names of the hooks whose idle check does not match (the loop results of
    the drain's idle checks, command and uri)."""
    return [r["item"]["name"] for r in results or []
            if "skipped" not in r and not pipeline_check_matches(r, r["item"]["idle"])]


def _cron_path(cron_file):
    if not cron_file:
        return ""
    return cron_file if cron_file.startswith("/") else "/etc/cron.d/" + cron_file


def pipeline_cron_edit(results, mode):
    """The edits of the crontabs read by the role (one loop result per
    crontab, its item the crontab's spec). mode ``disable`` comments out
    ("#" prefix, as ansible.builtin.cron does for disabled=true) the active
    entries named item.names (the "#Ansible: <name>" header line) or
    containing item.marker; ``enable`` uncomments exactly item.lines."""
    if mode not in ("disable", "enable"):
        raise AnsibleFilterError("pipeline_cron_edit: mode must be disable or enable, not %r" % (mode,))
    edits = []
    for r in results or []:
        spec = r["item"]
        cron_file = spec.get("cron_file") or ""
        if cron_file == "":
            exists = r.get("rc", 1) == 0
            text = to_text(r.get("stdout", ""))
        else:
            exists = "content" in r
            text = to_text(base64.b64decode(r.get("content", "")), errors="surrogate_or_strict")
        lines = text.split("\n") if text else []
        out, changed, already = [], [], []
        if mode == "disable":
            names = spec.get("names") or []
            marker = spec.get("marker") or ""
            found = []
            for i, line in enumerate(lines):
                prev = lines[i - 1] if i > 0 else ""
                named = prev.startswith(CRON_HEADER) and prev[len(CRON_HEADER):] in names
                if named:
                    found.append(prev[len(CRON_HEADER):])
                hit = named or (marker != "" and marker in line)
                if hit and CRON_JOB.match(line):
                    out.append("#" + line)
                    changed.append(line)
                else:
                    if hit and line.startswith("#") and not line.startswith(CRON_HEADER) and CRON_JOB.match(line[1:]):
                        already.append(line[1:])
                    out.append(line)
            missing = [n for n in names if n not in found]
        else:
            wanted = spec.get("lines") or []
            done = []
            for line in lines:
                candidate = line[1:] if line.startswith("#") else None
                if candidate is not None and candidate in wanted and done.count(candidate) < wanted.count(candidate):
                    done.append(candidate)
                    out.append(candidate)
                    changed.append(candidate)
                else:
                    out.append(line)
            missing = [w for w in wanted if w not in done and w not in lines]
        edits.append({
            "user": spec.get("user") or "",
            "cron_file": cron_file,
            "path": _cron_path(cron_file),
            "exists": exists,
            "changed": len(changed) > 0,
            "after": "\n".join(out),
            "lines": changed,
            "already": already,
            "missing": missing,
        })
    return edits


def pipeline_pause_plan(previous, units, cron_edit, hooks, paused_results):
    """What a pause does on one host, merged with what an earlier pause of the
    same run id recorded and no resume has restarted yet (previous).

    units: pipeline_systemd_units output; cron_edit: pipeline_cron_edit
    output (mode disable); hooks: pipeline_hooks; paused_results: the loop
    results of the hooks' "paused" checks (command and uri)."""
    prev = previous or {}
    prev_systemd = list(prev.get("systemd") or [])
    prev_hooks = list(prev.get("hooks") or [])
    prev_cron = list(prev.get("cron") or [])
    prev_unit_names = [u["name"] for u in prev_systemd]
    prev_hook_names = [h["name"] for h in prev_hooks]
    plan = {"systemd": list(prev_systemd), "cron": [], "hooks": list(prev_hooks),
            "new_systemd": [], "restop": [], "new_cron": [], "new_hooks": [], "drain_units": [],
            "already_stopped": [], "already_paused_hooks": [], "already_disabled_cron": []}
    for u in units or []:
        state = u["active_state"]
        if u["is_timer"]:
            for t in u["triggers"]:
                if t not in plan["drain_units"]:
                    plan["drain_units"].append(t)
        if not u["stop"] and u["name"] not in plan["drain_units"]:
            plan["drain_units"].append(u["name"])
        if u["stop"] and u["name"] in prev_unit_names and state in ACTIVE_STATES:
            # paused by an earlier pause of this run, started again since: stop it again
            plan["restop"].append([p for p in prev_systemd if p["name"] == u["name"]][0])
        if u["stop"] and u["name"] not in prev_unit_names:
            if state in ACTIVE_STATES:
                rec = {"name": u["name"], "stopped": True, "disabled": u["disable"] and u["unit_file_state"] == "enabled"}
                plan["systemd"].append(rec)
                plan["new_systemd"].append(rec)
            elif u["load_state"] == "loaded":
                plan["already_stopped"].append(u["name"])
    # cron: one record per crontab, lines merged with the earlier record
    seen = []
    for r in cron_edit or []:
        key = {"user": r["user"], "cron_file": r["cron_file"]}
        seen.append(key)
        old = [line for c in prev_cron if c["user"] == key["user"] and c["cron_file"] == key["cron_file"]
               for line in c["lines"]]
        new = [line for line in r["lines"] if line not in old]
        plan["cron"].append(dict(key, lines=old + new))
        if new:
            plan["new_cron"].append(dict(key, lines=new))
        for line in r["already"]:
            if line not in old:
                plan["already_disabled_cron"].append(line)
    for c in prev_cron:
        if {"user": c["user"], "cron_file": c["cron_file"]} not in seen:
            plan["cron"].append(c)
    # hooks
    for h in hooks or []:
        if h["name"] in prev_hook_names:
            continue
        checks = [r for r in paused_results or [] if r["item"]["name"] == h["name"] and "skipped" not in r]
        if checks and pipeline_check_matches(checks[0], h["paused"]):
            plan["already_paused_hooks"].append(h["name"])
        else:
            plan["hooks"].append({"name": h["name"]})
            plan["new_hooks"].append({"name": h["name"]})
    return plan


def pipeline_resume_left(previous, unit_results, cron_error, hooks, hook_results):
    """What a resume could not restart (kept in the state file for the next
    resume), with the reasons: the units whose start failed, every crontab
    when restoring them failed (cron_error), the hooks whose resume action
    failed or that are no longer defined in hooks (pipeline_hooks)."""
    prev = previous or {}
    left = {"systemd": [], "cron": [], "hooks": [], "errors": []}
    failed_units = []
    for r in unit_results or []:
        if r.get("failed", False):
            failed_units.append(r["item"]["name"])
            left["errors"].append("unit %s: %s" % (r["item"]["name"], r.get("msg", "failed")))
    left["systemd"] = [u for u in prev.get("systemd") or [] if u["name"] in failed_units]
    # crontabs: all kept when restoring failed; lines found neither disabled
    # nor active (removed or edited meanwhile) are reported but not kept
    if cron_error:
        left["cron"] = list(prev.get("cron") or [])
        left["errors"].append("crontabs: %s" % (cron_error,))
    defined = [h["name"] for h in hooks or []]
    failed_hooks = [r["item"]["name"] for r in hook_results or [] if r.get("failed")]
    for h in prev.get("hooks") or []:
        if h["name"] not in defined:
            left["hooks"].append(h)
            left["errors"].append("hook %s: no longer defined in pipeline_hooks" % h["name"])
        elif h["name"] in failed_hooks:
            left["hooks"].append(h)
            left["errors"].append("hook %s: the resume action failed" % h["name"])
    return left


class FilterModule(object):
    def filters(self):
        return {
            "pipeline_systemd_units": pipeline_systemd_units,
            "pipeline_check_matches": pipeline_check_matches,
            "pipeline_busy_hooks": pipeline_busy_hooks,
            "pipeline_cron_edit": pipeline_cron_edit,
            "pipeline_pause_plan": pipeline_pause_plan,
            "pipeline_resume_left": pipeline_resume_left,
        }
