"""pytest plugin: a session-scoped ``testbed`` fixture.

Use it from a conftest.py (with tests/testbed on sys.path)::

    from testbed.pytest_plugin import testbed  # noqa: F401  (re-export the fixture)

A second session fixture, ``hiveserver2``, is the same bed with a HiveServer2
(testbed/hiveserver2.py): when a collected test asks for it, the bed starts
one beside its other services; a reused bed (LAKEKEEPER_TESTBED_JSON) must
have one already (``scripts/testbed up --hiveserver2``; the suite's has).

or on the command line: ``PYTHONPATH=tests/testbed pytest -p testbed.pytest_plugin ...``.

* Starts the test bed once per pytest process (in a numbered pytest temp dir),
  stops it at the end of the session; a watchdog process kills the services
  if pytest itself dies.
* Keeps the run dir (logs, HDFS and Derby data) when a test failed, and prints
  where; removes it after a clean run unless LAKEKEEPER_TESTBED_KEEP=1.
* LAKEKEEPER_TESTBED_JSON=/path/testbed.json: reuse a test bed that is already
  running (scripts/testbed up); it is not stopped at the end.
* LAKEKEEPER_TESTBED_SHARED=/path/testbed.json: use that running bed's HDFS
  and Metastore, with a Spark master and worker of this interpreter's pyspark
  started (and stopped) here: an older-Spark lane on the suite's one test bed
  (scripts/suite.py).
* Never creates a SparkSession in the pytest process: talk to the test bed from
  subprocesses (``testbed.spark_submit(...)``, ``testbed.run_python(...)``).

Environment: LAKEKEEPER_TESTBED_TIMEOUT (seconds per start, default 120),
LAKEKEEPER_TESTBED_NO_SPARK=1 / LAKEKEEPER_TESTBED_NO_HDFS=1 (skip those services).
"""
from __future__ import annotations

import os
import shutil

import pytest

from .bed import Testbed
from .procs import TestbedError

__all__ = ["testbed", "hiveserver2"]

# One test bed per pytest process, even if several conftests re-export the fixture.
_STATE: dict = {"bed": None, "users": 0, "owned": False}


def _report(config, line: str) -> None:
    """Write a line to the terminal even while pytest captures output."""
    tr = config.pluginmanager.get_plugin("terminalreporter")
    capman = config.pluginmanager.get_plugin("capturemanager")
    if tr is None:
        print(line)
        return
    if capman is not None:
        with capman.global_and_fixture_disabled():
            tr.ensure_newline()
            tr.write_line(line)
    else:
        tr.ensure_newline()
        tr.write_line(line)


def _acquire(request, tmp_path_factory) -> Testbed:
    if _STATE["bed"] is not None:
        _STATE["users"] += 1
        return _STATE["bed"]
    reuse = os.environ.get("LAKEKEEPER_TESTBED_JSON")
    if reuse:
        bed = Testbed.load(reuse)
        bed.check_alive()
        _STATE.update(bed=bed, users=1, owned=False)
        return bed
    run_dir = tmp_path_factory.mktemp("testbed")
    shared = os.environ.get("LAKEKEEPER_TESTBED_SHARED")
    wants_hs2 = any("hiveserver2" in getattr(item, "fixturenames", ()) for item in request.session.items)
    bed = Testbed.start(run_dir, watchdog=True, hiveserver2=wants_hs2,
                        spark=os.environ.get("LAKEKEEPER_TESTBED_NO_SPARK") != "1",
                        hdfs=os.environ.get("LAKEKEEPER_TESTBED_NO_HDFS") != "1",
                        attach=Testbed.load(shared) if shared else None)
    t = bed.info["timings"]
    _report(request.config, f"testbed: started in {t['total_start_s']} s in {run_dir} "
                            f"({', '.join(f'{k} {v} s' for k, v in t['ready_after_s'].items())})")
    _STATE.update(bed=bed, users=1, owned=True)
    return bed


def _release(request) -> None:
    _STATE["users"] -= 1
    if _STATE["users"] > 0:
        return
    bed, owned = _STATE["bed"], _STATE["owned"]
    _STATE.update(bed=None, users=0, owned=False)
    if bed is None or not owned:
        return
    notes = bed.stop()
    for n in notes:
        _report(request.config, f"testbed: {n}")
    failed = request.session.testsfailed > 0
    if failed or os.environ.get("LAKEKEEPER_TESTBED_KEEP") == "1":
        _report(request.config, f"testbed: stopped; logs kept in {bed.log_dir}")
    else:
        shutil.rmtree(bed.run_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def testbed(request, tmp_path_factory) -> Testbed:
    """The running test bed (a testbed.Testbed): endpoints, confs, spark_submit/run_python."""
    try:
        bed = _acquire(request, tmp_path_factory)
    except TestbedError as e:
        pytest.fail(f"test bed did not start: {e}", pytrace=False)
    try:
        yield bed
    finally:
        _release(request)


@pytest.fixture(scope="session")
def hiveserver2(testbed) -> Testbed:  # pylint: disable=redefined-outer-name
    """The test bed with its HiveServer2 (``hiveserver2_url``, ``hive_batch``, ``hive_query``)."""
    if not testbed.hiveserver2_url:
        pytest.fail(f"the test bed {testbed.json_path} has no HiveServer2 (a reused bed: start it with "
                    "scripts/testbed up --hiveserver2)", pytrace=False)
    testbed.check_alive()
    return testbed
