# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The pause guard's resume (lakekeeper_pause_guard.fire) on a cron file, a
fake systemctl and command hooks; the guard run for real (a module process)
is in tests/roles/test_pipeline.py and tests/playbooks/test_cancel.py."""

from __future__ import annotations

import os

from ansible_collections.lakekeeper.hive.plugins.modules import lakekeeper_pause_guard as guard


class FakeModule:
    def __init__(self, rcs=None):
        self.calls, self.rcs = [], rcs or {}

    def run_command(self, argv, data=None, binary_data=False):  # pylint: disable=unused-argument
        self.calls.append(list(argv))
        return self.rcs.get(" ".join(argv), (0, "", ""))

    def atomic_move(self, src, dest):
        os.replace(src, dest)


def test_enable_lines_uncomments_exactly_the_recorded_lines():
    text = "#Ansible: a\n#1 * * * * a\n#2 * * * * b\n#1 * * * * a\n"
    after, done = guard._enable_lines(text, ["1 * * * * a"])  # pylint: disable=protected-access
    assert after == "#Ansible: a\n1 * * * * a\n#2 * * * * b\n#1 * * * * a\n" and done == ["1 * * * * a"]


def test_fire_resumes_what_it_can_and_keeps_the_rest(tmp_path):
    cron = tmp_path / "ingest"
    cron.write_text("SHELL=/bin/sh\n#*/5 * * * * root /x # pause\n")
    state = {"systemd": [{"name": "a.timer", "disabled": True, "stopped": True},
                         {"name": "b.service", "disabled": False, "stopped": True}],
             "cron": [{"cron_file": str(cron), "lines": ["*/5 * * * * root /x # pause", "gone line"]}],
             "hooks": [{"name": "cmd"}, {"name": "http"}, {"name": "broken"}]}
    module = FakeModule({"systemctl start -- b.service": (1, "", "failed to start"), "false": (3, "", "no")})
    resumed, left = guard.fire(module, state, {"cmd": ["true"], "broken": ["false"]})
    assert resumed == {"systemd": ["a.timer"], "cron": ["*/5 * * * * root /x # pause"], "hooks": ["cmd"]}
    assert ["systemctl", "enable", "--", "a.timer"] in module.calls
    assert cron.read_text() == "SHELL=/bin/sh\n*/5 * * * * root /x # pause\n"
    assert [u["name"] for u in left["systemd"]] == ["b.service"]
    assert left["cron"] == [{"cron_file": str(cron), "lines": ["gone line"]}]  # for the next resume
    assert [h["name"] for h in left["hooks"]] == ["http", "broken"]
    assert len(left["errors"]) == 4, left["errors"]
