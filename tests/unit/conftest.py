# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Make ``ansible_collections.lakekeeper.hive`` importable for plain pytest.

Under ``ansible-test units`` the collection already sits in an
``ansible_collections/lakekeeper/hive/`` tree and nothing happens here. When
pytest runs straight from the repository (``.venv/bin/pytest tests/unit``), a
temporary ``ansible_collections/lakekeeper/hive`` symlink to the repository
root is put on ``sys.path``.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile


def _ensure_collection_importable():
    try:
        import ansible_collections.lakekeeper.hive.plugins.module_utils._lakekeeper_argv  # noqa: F401 pylint: disable=unused-import
        return
    except ImportError:
        pass
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    tmp = tempfile.mkdtemp(prefix="lakekeeper-units-")
    atexit.register(shutil.rmtree, tmp, True)
    namespace = os.path.join(tmp, "ansible_collections", "lakekeeper")
    os.makedirs(namespace)
    os.symlink(root, os.path.join(namespace, "hive"))
    sys.path.insert(0, tmp)
    for name in [m for m in sys.modules if m == "ansible_collections" or m.startswith("ansible_collections.")]:
        del sys.modules[name]


_ensure_collection_importable()
