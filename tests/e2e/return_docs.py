# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Each module's RETURN documentation against a real result of the module
(the lifecycle playbook writes the four modules' registered results; see
e2e_helpers.run_lifecycle): keys returned always are there, types are the
documented ones, samples have the real values' shape."""

from __future__ import annotations

import ast
import os

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

MODULES_DIR = os.path.join(ROOT, "plugins", "modules")
# Values (not only types) of these keys in a RETURN sample must be ones the real run gave.
SAMPLE_VALUE_KEYS = ("command", "status", "verdict", "decision", "dry_run")
_TYPES = dict(bool=bool, int=int, float=(int, float), str=str, list=list, dict=dict, raw=object)


def return_doc(module):
    """The parsed RETURN of a module file (read from its syntax tree, not imported)."""
    with open(os.path.join(MODULES_DIR, module + ".py"), encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["RETURN"]:
            return yaml.safe_load(ast.literal_eval(node.value))
    raise AssertionError("%s has no RETURN" % module)


def sample_errors(sample, real, path):
    """Where a documented sample does not have the shape (keys, types, and
    SAMPLE_VALUE_KEYS values) of the real value. The sample's list items
    must each match one real item (an empty real list confirms only that it
    is a list); the table-keyed mappings of ``diff`` match by value."""
    if sample is None:
        return []
    if isinstance(sample, dict):
        if not isinstance(real, dict):
            return ["%s: a mapping in the sample, %r in the real result" % (path, real)]
        if path.endswith(("diff.before", "diff.after")) or path.endswith("].partitions") and ".diff." in path:
            return [] if any(not sample_errors(v, rv, path + ".*") for v in sample.values()
                             for rv in real.values()) else ["%s: no real entry like the sample's" % path]
        errors = []
        for key, value in sample.items():
            if key not in real:
                errors.append("%s.%s: in the sample, not in the real result" % (path, key))
            else:
                errors += sample_errors(value, real[key], "%s.%s" % (path, key))
        return errors
    if isinstance(sample, list):
        if not isinstance(real, list):
            return ["%s: a list in the sample, %r in the real result" % (path, real)]
        errors = []
        for i, item in enumerate(sample):
            tries = [sample_errors(item, r, "%s[%d]" % (path, i)) for r in real]
            if tries and all(tries):
                errors += min(tries, key=len)
        return errors
    if isinstance(sample, bool) != isinstance(real, bool) or not isinstance(real, _scalar_type(sample)):
        return ["%s: sample %r, real %r" % (path, sample, real)]
    if path.rsplit(".", 1)[-1] in SAMPLE_VALUE_KEYS and sample != real:
        return ["%s: sample %r, real %r" % (path, sample, real)]
    return []


def _scalar_type(value):
    return (int, float) if isinstance(value, (int, float)) and not isinstance(value, bool) else type(value)


def return_errors(module, result):
    """Each documented RETURN key against a real result of the module: the
    keys returned always are there, each key's type is the documented one,
    each sample has the real value's shape, and ``msg``'s sample starts
    like the real one (``<command>: ...``)."""
    errors = []
    for key, doc in return_doc(module).items():
        where = "%s %s" % (module, key)
        if key not in result:
            if doc.get("returned") == "always":
                errors.append("%s: returned always, missing from the real result" % where)
            continue
        real = result[key]
        if doc.get("type") and not isinstance(real, _TYPES[doc["type"]]):
            errors.append("%s: documented %s, real %r" % (where, doc["type"], real))
        for sub_key, sub_doc in (doc.get("contains") or {}).items():
            for item in real if isinstance(real, list) else [real]:
                value = item.get(sub_key)  # null: the engine's "does not apply" (e.g. no backup_table)
                if value is not None and sub_doc.get("type") and not isinstance(value, _TYPES[sub_doc["type"]]):
                    errors.append("%s.%s: documented %s, real %r" % (where, sub_key, sub_doc["type"], value))
            if sub_doc.get("returned") == "always" and isinstance(real, list):
                errors += ["%s.%s: returned always, missing from %s" % (where, sub_key, item.get("table"))
                           for item in real if sub_key not in item]
        if "sample" in doc:
            if key == "msg":
                if doc["sample"].split(":")[0] != real.split(":")[0]:
                    errors.append("%s: sample %r, real %r" % (where, doc["sample"], real))
            elif key == "cmd":
                if result.get("command") not in doc["sample"].split():
                    errors.append("%s: the sample does not run %s" % (where, result.get("command")))
            else:
                errors += sample_errors(doc["sample"], real, where)
    return errors
