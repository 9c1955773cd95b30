# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The built collection: ``ansible-galaxy collection build`` and install
(tests/conftest.py), what the tarball ships, ``ansible-doc`` on it.

The lifecycle playbook (tests/e2e/playbooks/lifecycle.yml: each module on
its own, 10 engine runs, 8 with ``LAKEKEEPER_E2E_EXTRAS=0``) runs with this
built collection inside tests/playbooks' embedded scenario, which sets up the
same world (e2e_helpers.run_lifecycle): one JVM creates the tables of both.
"""

from __future__ import annotations

import os

import pytest

from e2e_helpers import BIN, run, tarball_names, tool_env  # pylint: disable=import-error

pytestmark = pytest.mark.e2e


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
        # the development tree stays out (galaxy.yml build_ignore): a user gets the collection
        assert not name.startswith(("tests/", "scripts/", "benchmarks/")), name
        assert name not in ("requirements.txt", "pytest.ini", "ruff.toml", ".ansible-lint"), name
    assert "docs/modules.md" in names and "roles/maintenance/tasks/main.yml" in names
    root = os.path.join(installed, "ansible_collections", "lakekeeper", "hive")
    assert os.path.isfile(os.path.join(root, "spark_app", "run_lakekeeper.py"))
    res = run([os.path.join(BIN, "ansible-doc"), "-t", "module", "lakekeeper.hive.lakekeeper_compact"],
              env=tool_env(ANSIBLE_COLLECTIONS_PATH=installed))
    assert res.returncode == 0, res.stdout
    assert "spark_submit" in res.stdout
    assert "_lakekeeper_app" not in res.stdout  # internal: passed by the action plugin in the environment
