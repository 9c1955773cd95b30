# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Playbook tests: real ansible-playbook, real engine, real local Spark.

Run with ``.venv/bin/pytest tests/e2e``: one JVM creates the tables, then the
playbook runs the engine 10 times (8 with ``LAKEKEEPER_E2E_EXTRAS=0``, which
skips the spark-submit analyze and the cleanup dry run). The embedded Derby
Metastore allows one JVM at a time, so nothing runs in parallel; each run is
a JVM start (5-20 s on a quiet 2-core machine, far more when it is loaded).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time

import pytest

from e2e_helpers import BIN, run, tarball_names, tool_env  # pylint: disable=import-error

pytestmark = pytest.mark.e2e

HERE = os.path.dirname(os.path.abspath(__file__))
TAIL = 150


def tail(text, count=TAIL):
    return "\n".join(text.splitlines()[-count:])


def test_build_ships_the_spark_app(built_collection):
    tarball, installed = built_collection
    if tarball is None:
        pytest.skip("LAKEKEEPER_E2E_COLLECTION=link: nothing was built")
    names = tarball_names(tarball)
    for name in ("MANIFEST.json", "FILES.json", "LICENSE", "meta/runtime.yml", "spark_app/run_lakekeeper.py",
                 "spark_app/lakekeeper_spark/__init__.py", "plugins/action/lakekeeper_compact.py",
                 "plugins/modules/lakekeeper_compact.py", "plugins/module_utils/_lakekeeper_argv.py",
                 "plugins/plugin_utils/_lakekeeper_action.py", "plugins/doc_fragments/lakekeeper.py"):
        assert name in names, name
    for name in names:
        assert not name.startswith((".venv/", ".git/", ".ansible/", ".cache/", "tests/output/")), name
        assert "__pycache__" not in name and not name.endswith(".pyc"), name
    root = os.path.join(installed, "ansible_collections", "lakekeeper", "hive")
    assert os.path.isfile(os.path.join(root, "spark_app", "run_lakekeeper.py"))
    res = run([os.path.join(BIN, "ansible-doc"), "-t", "module", "lakekeeper.hive.lakekeeper_compact"],
              env=tool_env(ANSIBLE_COLLECTIONS_PATH=installed))
    assert res.returncode == 0, res.stdout
    assert "spark_submit" in res.stdout


MODULES_DIR = os.path.join(HERE, "..", "..", "plugins", "modules")
# Values (not only types) of these keys in a RETURN sample must be ones the real run gave.
SAMPLE_VALUE_KEYS = ("command", "status", "verdict", "decision", "dry_run")
_TYPES = dict(bool=bool, int=int, float=(int, float), str=str, list=list, dict=dict, raw=object)


def return_doc(module):
    """The parsed RETURN of a module file (read from its syntax tree, not imported)."""
    import ast

    import yaml

    tree = ast.parse(open(os.path.join(MODULES_DIR, module + ".py")).read())
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


def create_tables(state_dir, data_dir):
    started = time.time()
    res = run([sys.executable, os.path.join(HERE, "create_tables.py"), state_dir, data_dir], timeout=600)
    assert res.returncode == 0, "creating the test tables failed:\n" + tail(res.stdout)
    summary = json.loads(res.stdout.strip().splitlines()[-1])
    assert summary["events"]["rows"] == 6000 and summary["clicks"]["rows"] == 3000
    return time.time() - started


def test_lifecycle(collection_path, tmp_path):
    state_dir = str(tmp_path / "state")
    data_dir = str(tmp_path / "data")
    setup_seconds = create_tables(state_dir, data_dir)
    for table, expected in (("events", 60), ("clicks", 60)):
        files = [f for _d, _s, names in os.walk(os.path.join(data_dir, table)) for f in names
                 if f.endswith(".parquet")]
        assert len(files) == expected, (table, len(files))

    inventory = tmp_path / "inventory.ini"
    inventory.write_text("localhost ansible_connection=local ansible_python_interpreter=%s\n" % sys.executable)
    extra = tmp_path / "vars.json"
    extra.write_text(json.dumps(dict(state_dir=state_dir, data_dir=data_dir,
                                     app_cache_dir=str(tmp_path / "app-cache"),
                                     config_file=str(tmp_path / "lakekeeper.yaml"),
                                     refresh_script=os.path.join(HERE, "record_argv.py"),
                                     results_file=str(tmp_path / "results.json"),
                                     e2e_extras=os.environ.get("LAKEKEEPER_E2E_EXTRAS", "1") != "0")))
    # The playbook runs from tmp_path, so stray files (derby.log, ...) would show in its listing below.
    playbook = tmp_path / "lifecycle.yml"
    shutil.copy(os.path.join(HERE, "playbooks", "lifecycle.yml"), str(playbook))
    started = time.time()
    res = run([os.path.join(BIN, "ansible-playbook"), "-i", str(inventory), "-e", "@%s" % extra, str(playbook)],
              timeout=900, cwd=str(tmp_path),
              env=tool_env(ANSIBLE_COLLECTIONS_PATH=collection_path, ANSIBLE_LOCAL_TEMP=str(tmp_path / "ltmp"),
                           ANSIBLE_REMOTE_TEMP=str(tmp_path / "rtmp")))
    playbook_seconds = time.time() - started
    sys.stdout.write("setup %.0fs, playbook %.0fs\n" % (setup_seconds, playbook_seconds))
    assert res.returncode == 0, "playbook failed:\n" + tail(res.stdout)
    assert "E2E_SUMMARY" in res.stdout
    if os.environ.get("LAKEKEEPER_E2E_EXTRAS", "1") != "0":
        # spark-submit's --name reached Spark (the engine no longer renames the application)
        (log,) = os.listdir(os.path.join(state_dir, "eventlog"))
        with open(os.path.join(state_dir, "eventlog", log)) as handle:
            start = [json.loads(line) for line in handle if '"SparkListenerApplicationStart"' in line]
        assert [e["App Name"] for e in start] == ["lakekeeper-analyze-e2e.events-awx-4242"], start
    # Every module's RETURN documentation against its real result in this run.
    with open(str(tmp_path / "results.json")) as handle:
        results = json.load(handle)
    assert sorted(results) == ["lakekeeper_analyze", "lakekeeper_cleanup", "lakekeeper_compact", "lakekeeper_rollback"]
    errors = [e for module, result in sorted(results.items()) for e in return_errors(module, result)]
    assert not errors, "\n".join(errors)
    # The cached application: one app-<sha12> directory, unpacked once.
    cached = os.listdir(str(tmp_path / "app-cache"))
    assert len(cached) == 1 and cached[0].startswith("app-"), cached
    # Nothing of the engine's working files outside the state dir.
    assert sorted(os.listdir(str(tmp_path))) == sorted(
        ["app-cache", "data", "inventory.ini", "lakekeeper.yaml", "lifecycle.yml", "ltmp", "rtmp", "results.json",
         "state", "vars.json"])
