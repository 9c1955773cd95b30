# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The pipeline role's filters, on the results its tasks register: systemctl
show output, crontabs as crontab -l prints them and ansible.builtin.cron
writes them, hook check results."""

from __future__ import annotations

import base64

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.lakekeeper.hive.plugins.filter import lakekeeper_pipeline as f

CRONTAB = "\n".join([
    "MAILTO=ops@example.com",
    "#Ansible: ingest-hourly",
    "5 * * * * /opt/ingest/bin/load-events --hourly",
    "#Ansible: report",
    "0 6 * * * /opt/report/bin/daily",
    "#Ansible: ingest-nightly",
    "#30 2 * * * /opt/ingest/bin/load-events --nightly",
    "*/10 * * * * /opt/etl/bin/pull # lakekeeper-pause",
    "@reboot /opt/etl/bin/pull --catch-up # lakekeeper-pause",
    "# lakekeeper-pause: note, not a job",
])


def user_result(spec, text, rc=0):
    return {"item": spec, "rc": rc, "stdout": text, "changed": False}


def file_result(spec, text):
    return {"item": spec, "content": base64.b64encode(text.encode()).decode(), "encoding": "base64"}


# ------------------------------------------------------------------ systemd units

def test_systemd_units_in_the_order_of_the_arguments():
    show = ("Id=ingest.timer\nLoadState=loaded\nActiveState=active\nUnitFileState=enabled\nTriggers=ingest.service\n\n"
            "Id=flume.service\nLoadState=loaded\nActiveState=inactive\nUnitFileState=disabled\nTriggers=\n\n"
            "Id=gone.service\nLoadState=not-found\nActiveState=inactive\nUnitFileState=\nTriggers=")
    units = f.pipeline_systemd_units(show, [{"name": "ingest.timer"}, {"name": "flume.service", "stop": "false"},
                                            {"name": "gone.service", "disable": True}])
    assert units == [
        {"name": "ingest.timer", "stop": True, "disable": True, "is_timer": True, "load_state": "loaded",
         "active_state": "active", "unit_file_state": "enabled", "triggers": ["ingest.service"]},
        {"name": "flume.service", "stop": False, "disable": False, "is_timer": False, "load_state": "loaded",
         "active_state": "inactive", "unit_file_state": "disabled", "triggers": []},
        {"name": "gone.service", "stop": True, "disable": True, "is_timer": False, "load_state": "not-found",
         "active_state": "inactive", "unit_file_state": "", "triggers": []}]


def test_systemd_units_without_output_are_not_found():
    assert f.pipeline_systemd_units("", [{"name": "a.service"}])[0]["load_state"] == "not-found"
    assert f.pipeline_systemd_units("", []) == []


# ------------------------------------------------------------------ hook checks

@pytest.mark.parametrize("result, check, ok", [
    ({"rc": 0}, {"command": ["x"]}, True),
    ({"rc": 1}, {"command": ["x"]}, False),
    ({"rc": 3, "stdout": "state: paused\n"}, {"command": ["x"], "expect": {"rc": 3, "stdout": "paused$"}}, True),
    ({"rc": 0, "stdout": "state: running"}, {"command": ["x"], "expect": {"stdout": "paused"}}, False),
    ({}, {"command": ["x"]}, False),
    ({"status": 200, "json": {"is_paused": True, "x": 1}}, {"uri": {}, "expect": {"json": {"is_paused": True}}}, True),
    ({"status": 200, "json": {"is_paused": False}}, {"uri": {}, "expect": {"json": {"is_paused": True}}}, False),
    ({"status": 200, "json": {}}, {"uri": {}, "expect": {"json": {"is_paused": True}}}, False),
    ({"status": 200, "json": ["is_paused"]}, {"uri": {}, "expect": {"json": {"is_paused": True}}}, False),
    ({"status": 204}, {"uri": {}}, False),
    ({"status": 204}, {"uri": {}, "expect": {"status": [200, 204]}}, True),
    ({"status": 200, "content": "total_entries: 0"}, {"uri": {}, "expect": {"content": "entries: 0$"}}, True),
    ({"status": 200, "content": "total_entries: 10"}, {"uri": {}, "expect": {"content": "entries: 0$"}}, False),
])
def test_check_matches(result, check, ok):
    assert f.pipeline_check_matches(result, check) is ok


def test_busy_hooks_are_those_whose_idle_check_fails():
    results = [
        {"item": {"name": "a", "idle": {"command": ["x"]}}, "rc": 0},
        {"item": {"name": "b", "idle": {"command": ["x"]}}, "rc": 1},
        {"item": {"name": "c"}, "skipped": True},
        {"item": {"name": "d", "idle": {"uri": {}, "expect": {"json": {"total_entries": 0}}}}, "status": 200,
         "json": {"total_entries": 2}},
    ]
    assert f.pipeline_busy_hooks(results) == ["b", "d"]


# ------------------------------------------------------------------ crontab edits

def test_disable_comments_out_named_and_marked_entries_only():
    spec = {"user": "etl", "names": ["ingest-hourly", "ingest-nightly", "gone"], "marker": "# lakekeeper-pause"}
    [edit] = f.pipeline_cron_edit([user_result(spec, CRONTAB)], "disable")
    assert edit["user"] == "etl" and edit["cron_file"] == "" and edit["path"] == "" and edit["exists"]
    assert edit["changed"]
    assert edit["lines"] == ["5 * * * * /opt/ingest/bin/load-events --hourly",
                             "*/10 * * * * /opt/etl/bin/pull # lakekeeper-pause",
                             "@reboot /opt/etl/bin/pull --catch-up # lakekeeper-pause"]
    assert edit["already"] == ["30 2 * * * /opt/ingest/bin/load-events --nightly"]
    assert edit["missing"] == ["gone"]
    after = edit["after"].split("\n")
    assert after[2] == "#5 * * * * /opt/ingest/bin/load-events --hourly"
    assert after[4] == "0 6 * * * /opt/report/bin/daily"        # not named
    assert after[9] == "# lakekeeper-pause: note, not a job"   # marked, but not a job
    assert len(after) == len(CRONTAB.split("\n"))


def test_enable_restores_exactly_the_recorded_lines():
    spec = {"user": "etl", "cron_file": "", "names": ["ingest-hourly"]}
    [disabled] = f.pipeline_cron_edit([user_result(spec, CRONTAB)], "disable")
    record = {"user": "etl", "cron_file": "", "lines": disabled["lines"] + ["1 1 * * * removed meanwhile"]}
    [edit] = f.pipeline_cron_edit([user_result(record, disabled["after"])], "enable")
    assert edit["after"] == CRONTAB and edit["lines"] == ["5 * * * * /opt/ingest/bin/load-events --hourly"]
    assert edit["missing"] == ["1 1 * * * removed meanwhile"]
    # the entry that was already disabled before the pause stays disabled
    assert "#30 2 * * * /opt/ingest/bin/load-events --nightly" in edit["after"].split("\n")


def test_enable_uncomments_a_duplicated_line_as_often_as_recorded():
    text = "#0 1 * * * job\n#0 1 * * * job\n#0 1 * * * job"
    [edit] = f.pipeline_cron_edit([user_result({"user": "", "cron_file": "", "lines": ["0 1 * * * job"] * 2},
                                               text)], "enable")
    assert edit["after"] == "0 1 * * * job\n0 1 * * * job\n#0 1 * * * job" and edit["missing"] == []


def test_an_active_line_is_not_missing_on_enable():
    [edit] = f.pipeline_cron_edit([user_result({"user": "", "cron_file": "", "lines": ["0 1 * * * job"]},
                                               "0 1 * * * job")], "enable")
    assert not edit["changed"] and edit["missing"] == []


def test_cron_files_and_empty_crontabs():
    spec = {"cron_file": "etl-ingest", "marker": "# lakekeeper-pause"}
    [edit] = f.pipeline_cron_edit([file_result(spec, CRONTAB + "\n")], "disable")
    assert edit["path"] == "/etc/cron.d/etl-ingest" and edit["exists"] and len(edit["lines"]) == 2
    assert edit["after"].endswith("\n")
    [edit] = f.pipeline_cron_edit([file_result({"cron_file": "/srv/x.cron", "names": ["a"]}, CRONTAB)], "disable")
    assert edit["path"] == "/srv/x.cron" and not edit["changed"] and edit["missing"] == ["a"]
    missing_file = {"item": {"cron_file": "nope", "names": ["a"]}, "failed": False, "msg": "file not found"}
    [edit] = f.pipeline_cron_edit([missing_file], "disable")
    assert not edit["exists"] and edit["after"] == "" and edit["missing"] == ["a"]
    no_crontab = user_result({"names": ["a"]}, "", rc=1)
    [edit] = f.pipeline_cron_edit([no_crontab], "disable")
    assert not edit["exists"] and not edit["changed"]


def test_cron_edit_refuses_an_unknown_mode():
    with pytest.raises(AnsibleFilterError, match="disable or enable"):
        f.pipeline_cron_edit([], "pause")


# ------------------------------------------------------------------ pause plan

def unit(name, state="active", stop=True, disable=None, file_state="enabled", load="loaded", triggers=()):
    return {"name": name, "stop": stop, "disable": name.endswith(".timer") if disable is None else disable,
            "is_timer": name.endswith(".timer"), "load_state": load, "active_state": state,
            "unit_file_state": file_state, "triggers": list(triggers)}


def test_pause_plan_of_a_first_pause():
    units = [unit("ingest.timer", triggers=["ingest.service"]), unit("flume.service"),
             unit("old.service", state="inactive"), unit("gone.service", state="inactive", load="not-found"),
             unit("batch.service", stop=False)]
    cron = [{"user": "etl", "cron_file": "", "lines": ["5 * * * * a"], "already": ["0 2 * * * b"]}]
    hooks = [{"name": "airflow", "paused": {"command": ["x"]}}, {"name": "oozie"}]
    paused = [{"item": hooks[0], "rc": 0}, {"item": hooks[1], "skipped": True}]
    plan = f.pipeline_pause_plan({}, units, cron, hooks, paused)
    assert plan["new_systemd"] == [{"name": "ingest.timer", "stopped": True, "disabled": True},
                                   {"name": "flume.service", "stopped": True, "disabled": False}]
    assert plan["systemd"] == plan["new_systemd"] and plan["restop"] == []
    assert plan["drain_units"] == ["ingest.service", "batch.service"]
    assert plan["already_stopped"] == ["old.service"]
    assert plan["cron"] == [{"user": "etl", "cron_file": "", "lines": ["5 * * * * a"]}] == plan["new_cron"]
    assert plan["already_disabled_cron"] == ["0 2 * * * b"]
    assert plan["already_paused_hooks"] == ["airflow"]
    assert plan["hooks"] == [{"name": "oozie"}] == plan["new_hooks"]


def test_pause_plan_merges_with_the_earlier_pause_of_the_run():
    previous = {"systemd": [{"name": "flume.service", "stopped": True, "disabled": False},
                            {"name": "ingest.timer", "stopped": True, "disabled": True}],
                "cron": [{"user": "etl", "cron_file": "", "lines": ["5 * * * * a"]},
                         {"user": "", "cron_file": "x", "lines": ["1 1 * * * c"]}],
                "hooks": [{"name": "oozie"}]}
    units = [unit("flume.service"),                                  # started again since: stopped again
             unit("ingest.timer", state="inactive", file_state="disabled")]
    cron = [{"user": "etl", "cron_file": "", "lines": ["7 * * * * new"], "already": ["5 * * * * a"]}]
    plan = f.pipeline_pause_plan(previous, units, cron, [{"name": "oozie"}], [])
    assert plan["systemd"] == previous["systemd"] and plan["new_systemd"] == []
    assert plan["restop"] == [{"name": "flume.service", "stopped": True, "disabled": False}]
    assert plan["already_stopped"] == []
    assert plan["cron"] == [{"user": "etl", "cron_file": "", "lines": ["5 * * * * a", "7 * * * * new"]},
                            {"user": "", "cron_file": "x", "lines": ["1 1 * * * c"]}]
    assert plan["new_cron"] == [{"user": "etl", "cron_file": "", "lines": ["7 * * * * new"]}]
    assert plan["already_disabled_cron"] == []      # disabled by this run, not before it
    assert plan["hooks"] == [{"name": "oozie"}] and plan["new_hooks"] == []


# ------------------------------------------------------------------ resume

def test_resume_left_keeps_what_failed():
    previous = {"systemd": [{"name": "a.service", "stopped": True, "disabled": False},
                            {"name": "b.service", "stopped": True, "disabled": False}],
                "cron": [{"user": "etl", "cron_file": "", "lines": ["5 * * * * a"]}],
                "hooks": [{"name": "airflow"}, {"name": "oozie"}, {"name": "removed"}]}
    units = [{"item": previous["systemd"][0], "changed": True},
             {"item": previous["systemd"][1], "failed": True, "msg": "Unit b.service not found."}]
    hooks = [{"name": "airflow"}, {"name": "oozie"}]
    hook_results = [{"item": hooks[0], "failed": False}, {"item": hooks[1], "failed": True, "rc": 1}]
    left = f.pipeline_resume_left(previous, units, "crontab: permission denied", hooks, hook_results)
    assert left == {
        "systemd": [previous["systemd"][1]], "cron": previous["cron"],
        "hooks": [{"name": "oozie"}, {"name": "removed"}],
        "errors": ["unit b.service: Unit b.service not found.", "crontabs: crontab: permission denied",
                   "hook oozie: the resume action failed", "hook removed: no longer defined in pipeline_hooks"]}


def test_resume_left_is_empty_when_everything_resumed():
    previous = {"systemd": [{"name": "a.service", "stopped": True, "disabled": True}], "cron": [], "hooks": []}
    assert f.pipeline_resume_left(previous, [{"item": previous["systemd"][0]}], "", [], []) == {
        "systemd": [], "cron": [], "hooks": [], "errors": []}
