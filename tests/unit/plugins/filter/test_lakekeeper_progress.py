# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Filter lakekeeper_progress: new progress records as lines."""

from __future__ import annotations

import json

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.lakekeeper.hive.plugins.filter.lakekeeper_progress import lakekeeper_progress

RECORDS = [
    {"time": "2026-11-25T01:00:00+00:00", "elapsed": 0.0, "event": "start", "command": "compact", "run_id": "R1"},
    {"time": "2026-11-25T01:00:14+00:00", "elapsed": 14.2, "event": "tables", "command": "compact", "run_id": "R1",
     "tables": ["db.a", "db.b"], "of": 2},
    {"time": "2026-11-25T01:05:14+00:00", "elapsed": 314.0, "event": "working", "command": "compact", "run_id": "R1",
     "tables": [{"table": "db.a", "seconds": 300}, {"table": "db.b", "seconds": 299}], "done": 0, "of": 2},
    {"time": "2026-11-25T01:06:00+00:00", "elapsed": 360.0, "event": "table", "command": "compact", "run_id": "R1",
     "table": "db.a", "status": "compacted", "reason": "compacted 2 of 2 unit(s)", "seconds": 346.5, "done": 1,
     "of": 2},
    {"time": "2026-11-25T03:00:00+00:00", "elapsed": 7200.0, "event": "end", "command": "compact", "run_id": "R1",
     "failed": False, "counts": {"compacted": 2}, "msg": "compact: 2 compacted"},
]
TEXT = "".join(json.dumps(r) + "\n" for r in RECORDS)


def test_the_new_records_as_lines():
    first = lakekeeper_progress(TEXT[: TEXT.index("\n", TEXT.index('"working"')) + 1] + '{"time": "2026-11-25T0')
    assert first == {"seen": 3, "lines": [
        "[01:00:00, +0 s] compact started (run R1)",
        "[01:00:14, +14 s] compact: 2 table(s): db.a, db.b",
        "[01:05:14, +5 min 14 s] working on db.a for 5 min 00 s, db.b for 4 min 59 s (0 of 2 done)"]}
    # the half-written last line is left for the next poll, which gets only what is new
    assert lakekeeper_progress(TEXT, first["seen"]) == {"seen": 5, "lines": [
        "[01:06:00, +6 min 00 s] db.a: compacted in 5 min 46 s (1 of 2 done): compacted 2 of 2 unit(s)",
        "[03:00:00, +2 h 00 min] compact finished: compact: 2 compacted"]}
    assert lakekeeper_progress(TEXT, 5) == {"seen": 5, "lines": []}
    assert lakekeeper_progress("", 0) == {"seen": 0, "lines": []}


def test_bad_input():
    assert lakekeeper_progress("not json\n")["lines"] == ["(unreadable progress record: not json)"]
    with pytest.raises(AnsibleFilterError, match="expects the progress file's text"):
        lakekeeper_progress(["x"])
    with pytest.raises(AnsibleFilterError, match="seen must be a number"):
        lakekeeper_progress(TEXT, "many")
