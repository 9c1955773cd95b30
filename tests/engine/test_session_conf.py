"""What the engine's session takes from its launch (session.py): the
HDFS client's quick close retry (``QUICK_FILE_CLOSE``, storage/fs.py's HDFS_CLOSE_RETRY: a file's close asks
the NameNode again after 25 ms instead of 400) wherever neither the launch
(``spark.hadoop.*``) nor the edge node's Hadoop configuration sets it, and
the FAIR scheduler unless the launch chose a mode. Under the real
``spark-submit`` of this pyspark: the launch's properties are the driver
JVM's, which a ``SparkConf`` made before the gateway is connected does not
see (it saw nothing: a launch's ``spark.scheduler.mode`` was overridden)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lakekeeper_spark.session import QUICK_FILE_CLOSE, quick_file_close

ROOT = Path(__file__).resolve().parents[2]
DELAY, RETRIES = QUICK_FILE_CLOSE

APP = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from lakekeeper_spark.session import build_session, QUICK_FILE_CLOSE
spark = build_session(None, sys.argv[2])
conf = spark._jsc.hadoopConfiguration()
print("LAKEKEEPER-SESSION " + json.dumps({
    "mode": spark.sparkContext.getConf().get("spark.scheduler.mode"),
    **{k: conf.get(k) for k in QUICK_FILE_CLOSE}}))
spark.stop()
"""


def test_the_quick_close_yields_to_the_launch_and_to_the_hadoop_configuration(tmp_path):
    assert quick_file_close(set(), {}) == QUICK_FILE_CLOSE
    assert quick_file_close({f"spark.hadoop.{DELAY}"}, {}) == {RETRIES: QUICK_FILE_CLOSE[RETRIES]}
    site = tmp_path / "conf"
    site.mkdir()
    (site / "hdfs-site.xml").write_text(f"<configuration><property><name>{RETRIES}</name><value>7</value>"
                                        f"</property></configuration>")
    assert quick_file_close(set(), {"HADOOP_CONF_DIR": str(site)}) == {DELAY: "25"}
    assert quick_file_close(set(), {"HADOOP_HOME": str(tmp_path / "none")}) == QUICK_FILE_CLOSE
    (site / "core-site.xml").write_text("<configuration><property>")  # a broken file is read as nothing
    assert quick_file_close(set(), {"YARN_CONF_DIR": str(site)}) == {DELAY: "25"}


def test_the_engines_session_has_the_quick_close(spark):
    conf = spark._jsc.hadoopConfiguration()
    assert {k: conf.get(k) for k in QUICK_FILE_CLOSE} == QUICK_FILE_CLOSE


@pytest.mark.timeout(600)
def test_under_spark_submit_the_launch_decides(tmp_path):
    import pyspark

    spark_submit = os.path.join(os.path.dirname(os.path.realpath(pyspark.__file__)), "bin", "spark-submit")
    app = tmp_path / "app.py"
    app.write_text(APP)
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               SPARK_LOCAL_IP="127.0.0.1")
    for var in ("SPARK_HOME", "HADOOP_CONF_DIR", "YARN_CONF_DIR", "SPARK_CONF_DIR"):
        env.pop(var, None)
    proc = subprocess.run([spark_submit, "--master", "local[1]", "--conf", "spark.ui.enabled=false",
                           "--conf", "spark.scheduler.mode=FIFO", "--conf", f"spark.hadoop.{DELAY}=400",
                           str(app), str(ROOT / "spark_app"), str(tmp_path / "state")],
                          capture_output=True, text=True, env=env, timeout=540, check=False)
    out = proc.stdout + proc.stderr
    line = next((x for x in out.splitlines() if x.startswith("LAKEKEEPER-SESSION ")), None)
    assert proc.returncode == 0 and line, out[-3000:]
    assert json.loads(line.split(" ", 1)[1]) == {"mode": "FIFO", DELAY: "400", RETRIES: QUICK_FILE_CLOSE[RETRIES]}, line
