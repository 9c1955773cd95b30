"""Fixtures of the role tests (tests/roles): the collection in this checkout
as ``lakekeeper.hive``, a runner for the real ``ansible-playbook``, and the
real MIT KDC of ``testbed.kdc``."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent
for _p in (_HERE, _HERE.parents[1] / "tests" / "testbed"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

from _role_helpers import link_collection, make_runner  # noqa: E402
from testbed.kdc import kdc  # noqa: E402,F401  # session fixture  # pylint: disable=unused-import


@pytest.fixture(scope="session")
def collections_dir(tmp_path_factory) -> Path:
    """ANSIBLE_COLLECTIONS_PATH in which lakekeeper.hive is this checkout."""
    return link_collection(tmp_path_factory.mktemp("collections"))


@pytest.fixture
def playbook(tmp_path, collections_dir):
    """``playbook(yaml_text, check=False, extra_args=())`` runs the playbook on
    localhost and returns a :class:`_role_helpers.Run`."""
    return make_runner(tmp_path, collections_dir)
