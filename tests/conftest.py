# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Session fixtures shared by tests/e2e and tests/playbooks: the collection,
built and installed (created only when a test asks for it).

By default the collection is built with ``ansible-galaxy collection build``
and installed from the tarball with ``ansible-galaxy collection install
--offline`` into a temporary ``ansible_collections`` tree, so the tests run
what users get. ``LAKEKEEPER_E2E_COLLECTION=link`` uses a symlink to the
working tree instead (faster while editing the plugins).
"""

from __future__ import annotations

import os
import sys

import pytest

_TESTS = os.path.dirname(os.path.abspath(__file__))
_E2E = os.path.join(_TESTS, "e2e")
for _path in (_E2E, _TESTS):  # e2e_helpers, cpu_meter (ansible-test units imports this file from its own tree)
    if _path not in sys.path:
        sys.path.insert(0, _path)

from e2e_helpers import BIN, ROOT, run, tool_env  # noqa: E402  pylint: disable=import-error,wrong-import-position

import cpu_meter  # noqa: E402  pylint: disable=import-error,wrong-import-position


# ------------------------------------------------------------------ CPU per test
# Under scripts/suite.py each part runs in a cgroup of its own: the CPU seconds
# of every process the part started (Spark JVMs, ansible-playbook, spark-submit)
# are counted there, so a test's share is the cgroup's counter before and after
# it. The suite is CPU-bound on 2 cores: this, not wall time, says what to cut.
# Outside such a cgroup (a plain pytest run) nothing is measured or printed.


_CPU_BY_TEST: dict = {}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):  # pylint: disable=unused-argument
    before = cpu_meter.cpu_now()
    yield
    after = cpu_meter.cpu_now() if before is not None else None
    if after is not None:
        _CPU_BY_TEST[item.nodeid] = after - before


def pytest_terminal_summary(terminalreporter):
    if cpu_meter.TIMINGS:
        terminalreporter.write_sep("=", "timings of the steps (wall, and CPU under the suite's cgroups)")
        for line in cpu_meter.TIMINGS:
            terminalreporter.write_line(line)
    if not _CPU_BY_TEST:
        return
    ranked = sorted(_CPU_BY_TEST.items(), key=lambda kv: -kv[1])
    terminalreporter.write_sep("=", "most CPU seconds (the part's cgroup: setup, call and teardown)")
    for nodeid, seconds in ranked[:20]:
        terminalreporter.write_line(f"{seconds:8.1f}s cpu  {nodeid}")
    terminalreporter.write_line(f"{sum(_CPU_BY_TEST.values()):8.1f}s cpu  all {len(ranked)} tests")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    """Every test that needs the test bed, directly or through another
    fixture (the HDFS crash world), carries the ``testbed`` marker, before
    ``-m`` is applied: scripts/test runs those tests (one test bed) and the
    others as two pytest processes side by side."""
    for item in items:
        if "testbed" in getattr(item, "fixturenames", ()) and not item.get_closest_marker("testbed"):
            item.add_marker(pytest.mark.testbed)


@pytest.fixture(scope="session")
def built_collection(tmp_path_factory):
    """(tarball, ansible_collections parent dir) of the built and installed collection."""
    work = tmp_path_factory.mktemp("collection")
    mode = os.environ.get("LAKEKEEPER_E2E_COLLECTION", "build")
    if mode == "link":
        namespace = work / "ansible_collections" / "lakekeeper"
        namespace.mkdir(parents=True)
        os.symlink(ROOT, str(namespace / "hive"))
        return None, str(work)
    dist = work / "dist"
    res = run([os.path.join(BIN, "ansible-galaxy"), "collection", "build", ROOT, "--output-path", str(dist)])
    assert res.returncode == 0, "ansible-galaxy collection build failed:\n" + res.stdout
    tarballs = sorted(dist.glob("lakekeeper-hive-*.tar.gz"))
    assert len(tarballs) == 1, res.stdout
    installed = work / "installed"
    # --force: a copy of lakekeeper.hive elsewhere (e.g. ~/.ansible/collections) must not count as installed.
    res = run([os.path.join(BIN, "ansible-galaxy"), "collection", "install", "--offline", "--no-deps", "--force",
               "-p", str(installed), str(tarballs[0])], env=tool_env(ANSIBLE_COLLECTIONS_PATH=str(installed)))
    assert res.returncode == 0, "ansible-galaxy collection install failed:\n" + res.stdout
    assert os.path.isfile(str(installed / "ansible_collections" / "lakekeeper" / "hive" / "MANIFEST.json")), res.stdout
    return str(tarballs[0]), str(installed)


@pytest.fixture(scope="session")
def collection_path(built_collection):
    return built_collection[1]
