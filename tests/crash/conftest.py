"""Fixtures of the crash tests: the file:// world and the HDFS world (see
world.py), each built once per pytest process and shared by every test that
asks for it (tests/security re-exports them)."""
from __future__ import annotations

import sys
from pathlib import Path


HERE = Path(__file__).resolve().parent
for p in (HERE, HERE.parent / "testbed"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from testbed.pytest_plugin import testbed  # noqa: E402,F401  pylint: disable=unused-import
from worlds_fixture import file_world, hdfs_world, lane_world, merge_world  # noqa: E402,F401  pylint: disable=unused-import
