"""New files and directories get the original owner, group and mode.

Before compacting, the table's directory and files are given a test owner
and group and modes 750/640 (file://: ``nobody:nogroup`` as root; HDFS test
bed: ``alice:analysts``, the engine running as the HDFS superuser). After
the compaction the live directory and every compacted file must carry the
same owner, group and mode (measured by the worlds' verification process,
see tests/crash/apps/world_verify.py)."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.timeout(5400)


def _check(world, table, user, group):
    f = world.facts[table]
    unit = f["units"][""]
    assert unit["state"] == "compacted", f
    assert unit["dir_perms"] == [user, group, 0o750], unit
    assert unit["file_perms"] and all(p == [user, group, 0o640] for p in unit["file_perms"]), unit
    assert not f["problems"], f["problems"]


def test_owner_group_mode_kept_on_file(file_world):
    _check(file_world, "co.owned", "nobody", "nogroup")


@pytest.mark.testbed
def test_owner_group_mode_kept_on_hdfs(hdfs_world):
    table = next(t for t in hdfs_world.cases if t.endswith(".owned"))
    _check(hdfs_world, table, "alice", "analysts")
