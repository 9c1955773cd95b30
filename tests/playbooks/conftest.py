# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Fixtures of the playbook tests (tests/playbooks): the collection in this
checkout as ``lakekeeper.hive``, the MIT KDC of ``testbed.kdc`` and the HDFS +
Metastore + Spark standalone test bed of ``testbed.pytest_plugin``."""

from __future__ import annotations

import os
import sys

import pytest

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.abspath(os.path.join(_HERE, "..", ".."))
for _p in (_HERE, os.path.join(_ROOT, "tests", "testbed")):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from testbed.kdc import kdc  # noqa: E402,F401  pylint: disable=unused-import,wrong-import-position
from testbed.pytest_plugin import testbed  # noqa: E402,F401  pylint: disable=unused-import,wrong-import-position


@pytest.fixture(scope="session")
def collections_dir(tmp_path_factory):
    """An ANSIBLE_COLLECTIONS_PATH whose ansible_collections/lakekeeper/hive is
    this checkout (a symlink, so the playbooks, roles, plugins and spark_app
    under test are the working tree's)."""
    root = tmp_path_factory.mktemp("collections")
    namespace = root / "ansible_collections" / "lakekeeper"
    namespace.mkdir(parents=True)
    os.symlink(_ROOT, str(namespace / "hive"))
    return str(root)
