"""pytest fixture: ``multihost`` (session scope), N real hosts (default 3).

Use it from a test module with::

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/
    from multihost.fixture import multihost  # noqa: F401  (registers the fixture)

or add ``pytest_plugins = ["multihost.fixture"]`` to a top-level conftest.py.
Set MULTIHOST_COUNT to change the number of hosts, MULTIHOST_SYSTEMD=0 to
boot them without systemd (sshd as PID 1).
"""

from __future__ import annotations

import os

import pytest

from .harness import MultiHost, check_prerequisites


@pytest.fixture(scope="session")
def multihost(tmp_path_factory):
    """Started MultiHost; torn down at the end of the session."""
    missing = check_prerequisites()
    if missing:
        pytest.skip("multihost: " + "; ".join(missing))
    systemd_env = os.environ.get("MULTIHOST_SYSTEMD", "")
    systemd = None if systemd_env == "" else systemd_env not in ("0", "false", "no")
    mh = MultiHost(int(os.environ.get("MULTIHOST_COUNT", "3")), tmp_path_factory.mktemp("multihost"),
                   systemd=systemd)
    mh.start()
    try:
        yield mh
    finally:
        mh.close()
