"""``--require-metastore`` (what the modules pass when a run must use the
cluster's Metastore): the engine looks at what its driver really loaded
before touching the catalog. Real CLI processes, each its own driver JVM;
on every Spark lane (the Hive classes it reads differ per line)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

APP = Path(__file__).resolve().parents[2] / "spark_app" / "run_lakekeeper.py"
SCRUB = ("SPARK_CONF_DIR", "HADOOP_CONF_DIR", "YARN_CONF_DIR", "HIVE_CONF_DIR", "SPARK_HOME", "PYSPARK_SUBMIT_ARGS")
SITE = """<?xml version="1.0"?>
<configuration>
  <property><name>hive.metastore.uris</name><value>thrift://127.0.0.1:9</value></property>
  <property><name>hive.metastore.connect.retries</name><value>1</value></property>
</configuration>
"""


def cli(cwd: Path, env_update: dict[str, str]) -> tuple[int, dict]:
    env = {k: v for k, v in os.environ.items() if k not in SCRUB}
    env.update(SPARK_LOCAL_IP="127.0.0.1", **env_update)
    proc = subprocess.run([sys.executable, str(APP), "analyze", "--database", "default", "--require-metastore",
                           "--master", "local[1]", "--conf", "spark.ui.enabled=false"],
                          cwd=str(cwd), env=env, capture_output=True, text=True, timeout=600, check=False)
    return proc.returncode, json.loads(proc.stdout)


def test_a_driver_without_a_metastore_is_refused_and_one_with_it_passes(tmp_path):
    bare = tmp_path / "bare"
    bare.mkdir()
    rc, doc = cli(bare, {})
    assert rc == 3 and doc["failed"] and doc["tables"] == [], doc
    assert doc["catalog"] == {"kind": "embedded", "url": None, "source": None, "hive_site": None}, doc
    assert doc["msg"].startswith("the engine could not start: no Hive Metastore is configured for this driver, so it "
                                 "would use a private embedded Derby catalog"), doc["msg"]
    assert "Put the cluster's hive-site.xml in SPARK_CONF_DIR" in doc["msg"]
    # refused before the catalog was touched: no Derby database, no warehouse
    assert sorted(p.name for p in bare.iterdir() if p.name != "derby.log") == [], list(bare.iterdir())

    # the cluster's hive-site.xml in SPARK_CONF_DIR reaches the driver's class path: the check passes and
    # the engine goes on to the Metastore (which nobody runs here: it fails there, naming it)
    conf = tmp_path / "spark-conf"
    conf.mkdir()
    (conf / "hive-site.xml").write_text(SITE)
    rc, doc = cli(tmp_path, {"SPARK_CONF_DIR": str(conf)})
    assert doc["catalog"]["kind"] == "metastore" and doc["catalog"]["uris"] == "thrift://127.0.0.1:9", doc
    assert doc["catalog"]["hive_site"].endswith(str(conf / "hive-site.xml")), doc
    assert rc == 3 and "the Hive Metastore is unreachable" in doc["msg"], doc
