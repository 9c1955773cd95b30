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
    # The cached application: one app-<sha12> directory, unpacked once.
    cached = os.listdir(str(tmp_path / "app-cache"))
    assert len(cached) == 1 and cached[0].startswith("app-"), cached
    # Nothing of the engine's working files outside the state dir.
    assert sorted(os.listdir(str(tmp_path))) == sorted(
        ["app-cache", "data", "inventory.ini", "lakekeeper.yaml", "lifecycle.yml", "ltmp", "rtmp", "state",
         "vars.json"])
