# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""RETURN entries written in several modules are copies of one text.

Options are shared through plugins/doc_fragments (extends_documentation_fragment);
ansible-core has no fragments for RETURN, so each module writes its own
RETURN and this test keeps the copies identical: edit one, edit them all.
The modules are read as text (their RETURN string), never imported.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import yaml

MODULES = Path(__file__).resolve().parents[4] / "plugins" / "modules"

# (path in RETURN, the modules that return it): the same text in each.
SHARED = [
    # the run's history record, written by the commands that change a table (analyze reads the history)
    (("tables", "contains", "history_record"), ("lakekeeper_compact", "lakekeeper_rollback", "lakekeeper_cleanup")),
    (("tables", "contains", "history_error"), ("lakekeeper_compact", "lakekeeper_rollback", "lakekeeper_cleanup")),
    (("tables", "contains", "partitions_not_listed"),
     ("lakekeeper_analyze", "lakekeeper_compact", "lakekeeper_rollback", "lakekeeper_cleanup")),
    (("tables", "contains", "mode"), ("lakekeeper_analyze", "lakekeeper_compact")),
    # the statuses of docs/statuses.md, in the same words
    (("tables", "contains", "status"), ("lakekeeper_compact", "lakekeeper_rollback", "lakekeeper_cleanup")),
] + [((key,), ("lakekeeper_analyze", "lakekeeper_compact", "lakekeeper_rollback", "lakekeeper_cleanup"))
     for key in ("app_transferred", "application_id", "cancelled", "catalog", "dry_run", "rc", "result_fetch",
                 "result_uri", "run_id", "runtime", "script", "stderr_lines", "stdout_lines")]


def _return_doc(module: str) -> dict:
    tree = ast.parse((MODULES / f"{module}.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "RETURN" for t in node.targets):
            return yaml.safe_load(node.value.value)
    raise AssertionError(f"{module} has no RETURN")


def _entry(doc: dict, path: tuple) -> object:
    for key in path:
        doc = doc[key]
    return doc


@pytest.mark.parametrize("path, modules", SHARED, ids=lambda v: ".".join(v) if isinstance(v[0], str) and
                         not v[0].startswith("lakekeeper_") else None)
def test_shared_return_entries_are_identical(path, modules):
    entries = {m: _entry(_return_doc(m), path) for m in modules}
    first = entries[modules[0]]
    differ = [m for m, e in entries.items() if e != first]
    assert not differ, f"RETURN {'.'.join(path)} differs from {modules[0]}'s in {', '.join(differ)}"


def test_the_history_record_is_returned_by_the_commands_that_write_one():
    """analyze reads the history (tables[].history) and writes none."""
    assert "history_record" not in _return_doc("lakekeeper_analyze")["tables"]["contains"]
    assert "history" in _return_doc("lakekeeper_analyze")["tables"]["contains"]


def test_the_statuses_are_documented_once_and_returned_in_those_words():
    """docs/statuses.md is the one table of the statuses; the modules' RETURN
    names each of them in its words, and points there."""
    table = (MODULES.parents[1] / "docs" / "statuses.md").read_text(encoding="utf-8")
    text = " ".join(_return_doc("lakekeeper_compact")["tables"]["contains"]["status"]["description"])
    for status in ("compacted", "planned", "not_needed", "skipped", "locked", "refused", "failed"):
        assert f"`{status}`" in table, status
        assert f"V({status})" in text, status
    assert "docs/statuses.md" in text and "O(fail_on_refused)" in text
