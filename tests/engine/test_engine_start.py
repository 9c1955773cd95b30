"""The engine's start: a context whose web UI's pages fail to start is
started once more (``session.UI_PAGES_FRAME``: Spark's UI set-up races the
YARN ApplicationMaster's web filter in client mode, seen on the test bed),
and a start that fails for good says why in the Java exception's words, not
py4j's "An error occurred while calling ...".

Real CLI processes, each its own driver JVM with its UI on, and a real
servlet filter (``jvm/lakekeeper/test/RefusingFilter.java``, compiled here
against the running pyspark's servlet API) that refuses the UI's pages the
first N times in its JVM - the failure Spark reports in the race, made on
purpose. On the main Spark line (the UI's servlet API is jakarta from 4.0)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lakekeeper_spark.cli import _start_reason
from lakekeeper_spark.session import ui_pages_failure

HERE = Path(__file__).resolve().parent
APP = HERE.parents[1] / "spark_app" / "run_lakekeeper.py"
FILTER = HERE / "jvm" / "lakekeeper" / "test" / "RefusingFilter.java"
SCRUB = ("SPARK_CONF_DIR", "HADOOP_CONF_DIR", "YARN_CONF_DIR", "HIVE_CONF_DIR", "SPARK_HOME", "PYSPARK_SUBMIT_ARGS")
RETRY = "its web UI's pages failed to start"

# the head of the trace the test bed's client-mode driver printed (CI, 2026-12-01), cut as the module cut it
RACE_TRACE = """An error occurred while calling None.org.apache.spark.api.java.JavaSparkContext.
: java.lang.NullPointerException
\tat org.sparkproject.jetty.util.component.AbstractLifeCycle.start(AbstractLifeCycle.java:92)
\tat org.apache.spark.ui.ServerInfo.addHandler(JettyUtils.scala:575)
\tat org.apache.spark.ui.SparkUI.$anonfun$attachAllHandlers$2(SparkUI.scala:84)
\tat org.apache.spark.ui.SparkUI.attachAllHandlers(SparkUI.scala:82)
\tat org.apache.spark.SparkContext.$anonfun$new$33(SparkContext.scala:703)
"""


def test_only_a_failure_of_the_ui_pages_is_retried():
    assert ui_pages_failure(RACE_TRACE)
    # the UI's bind (its first, placeholder page) fails before: Spark exits the JVM there, nothing to retry
    assert not ui_pages_failure(RACE_TRACE.replace("attachAllHandlers", "bind"))
    assert not ui_pages_failure("java.net.ConnectException: Connection refused") and not ui_pages_failure("")
    # a plain error keeps its words; py4j's first line is not a reason
    assert _start_reason(ValueError("spark.master must be set")) == "spark.master must be set"
    reason = _start_reason(RuntimeError(RACE_TRACE))
    assert "An error occurred" not in reason and "java.lang.NullPointerException" in reason, reason
    assert reason.endswith("(calling org.apache.spark.api.java.JavaSparkContext)"), reason


def _servlet_api() -> Path:
    import pyspark  # pylint: disable=import-outside-toplevel

    jars = sorted((Path(pyspark.__file__).parent / "jars").glob("jakarta.servlet-api-*.jar"))
    if not jars:
        pytest.skip("this pyspark's UI is not on the jakarta servlet API (Spark 3.x): the main line runs this")
    return jars[-1]


def _cli(tmp_path: Path, classes: Path, refusals: int) -> tuple[int, dict, str]:
    env = {k: v for k, v in os.environ.items() if k not in SCRUB}
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    name = "lakekeeper.test.RefusingFilter"
    proc = subprocess.run(
        [sys.executable, str(APP), "analyze", "--database", "default", "--master", "local[1]",
         "--state-dir", str(tmp_path / "state"), "--conf", "spark.ui.enabled=true", "--conf", "spark.ui.port=0",
         "--conf", f"spark.ui.filters={name}", "--conf", f"spark.{name}.param.refusals={refusals}",
         "--conf", f"spark.driver.extraClassPath={classes}"],
        cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=600, check=False)
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def test_a_start_whose_ui_pages_fail_is_tried_once_more(tmp_path):
    classes = tmp_path / "classes"
    subprocess.run(["javac", "--release", "17", "-cp", str(_servlet_api()), "-d", str(classes), str(FILTER)],
                   check=True, capture_output=True, text=True, timeout=300)

    # refused once: the first context fails on its first page, the second one starts and the run goes on
    rc, doc, err = _cli(tmp_path, classes, 1)
    assert rc == 0 and not doc["failed"] and doc["msg"] == "analyze: no tables", (doc, err[-3000:])
    assert doc["runtime"]["spark"] and doc["catalog"]["kind"] == "embedded", doc
    assert err.count(RETRY) == 1 and "start 1 of /jobs refused" in err, err[-3000:]

    # refused twice: tried once more only, and the failure is named by the Java exception
    rc, doc, err = _cli(tmp_path, classes, 2)
    assert rc == 3 and doc["failed"] and doc["tables"] == [], doc
    assert err.count(RETRY) == 1 and "start 3 of" not in err, err[-3000:]
    assert doc["msg"] == ("the engine could not start: jakarta.servlet.ServletException: lakekeeper test filter: "
                          "start 2 of /jobs refused (calling org.apache.spark.api.java.JavaSparkContext)"), doc["msg"]
