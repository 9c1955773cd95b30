"""YARN on the Hadoop 3 test bed: two spark-submits of a tiny PySpark app
(apps/yarn_app.py) to the bed's ResourceManager, each checked several ways.

  (a) client deploy mode: the driver is the spark-submit process; the tasks run
      in an executor container of the application (CONTAINER_ID, a process under
      the NodeManager's JVM); the app creates an EXTERNAL parquet table on HDFS
      through the Metastore service;
  (b) cluster deploy mode: the driver runs in the application master's container
      (its CONTAINER_ID is the application's first), the tasks in another; it
      reads (a)'s table through the Metastore and writes a partitioned table; its
      output is read from the container's stdout in the NodeManager's log dir.

Skipped on the Hadoop 2.7 bed (no YARN there).
"""
from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest


pytestmark = pytest.mark.timeout(900)

APP = Path(__file__).resolve().parent / "apps" / "yarn_app.py"
ROWS = 600


@pytest.fixture(scope="module")
def yarn_bed(testbed):
    if not testbed.yarn_rm:
        pytest.skip(f"no YARN on this test bed (Hadoop {testbed.hadoop_version})")
    return testbed


@pytest.fixture(scope="module")
def db():
    import uuid
    return f"testbed_yarn_{uuid.uuid4().hex[:8]}"


def _app_id(proc) -> str:
    m = re.search(r"Submitted application (application_\d+_\d+)", proc.stderr + proc.stdout)
    assert m, f"spark-submit exited {proc.returncode} before YARN took the application\n{proc.stderr[-6000:]}"
    return m.group(1)


def _result(text: str, what: str, proc) -> dict:
    for line in reversed(text.splitlines()):
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise AssertionError(f"{what}: no RESULT line (spark-submit exit {proc.returncode})\n"
                         f"--- output ---\n{text[-3000:]}\n--- spark-submit stderr ---\n{proc.stderr[-6000:]}")


def _container_dirs(bed, app_id: str) -> dict[str, Path]:
    """container id -> its log dir (stdout, stderr, launch_container.sh) in the NodeManagers' log dirs."""
    out = {}
    for log_dir in bed.yarn["nm_log_dirs"]:
        for d in sorted((Path(log_dir) / app_id).glob("container_*")):
            out[d.name] = d
    return out


@pytest.fixture(scope="module")
def client_run(yarn_bed, db):
    location = f"{yarn_bed.hdfs_uri}/data/{db}/events"
    proc = yarn_bed.spark_submit(APP, "client", db, location, ROWS, master="yarn", confs=yarn_bed.quick_confs(),
                                 submit_args=["--deploy-mode", "client"], timeout=600)
    app_id = _app_id(proc)
    res = _result(proc.stdout, "client mode", proc)
    assert proc.returncode == 0, proc.stderr[-6000:]
    return {"proc": proc, "app_id": app_id, "res": res, "location": location,
            "containers": _container_dirs(yarn_bed, app_id)}


@pytest.fixture(scope="module")
def cluster_run(yarn_bed, db, client_run):
    location = f"{yarn_bed.hdfs_uri}/data/{db}/events"
    proc = yarn_bed.spark_submit(APP, "cluster", db, location, ROWS, master="yarn", confs=yarn_bed.quick_confs(),
                                 submit_args=["--deploy-mode", "cluster"], timeout=600)
    app_id = _app_id(proc)
    containers = _container_dirs(yarn_bed, app_id)
    am = [c for c in containers if c.endswith("_000001")]
    assert am, (app_id, containers, proc.stderr[-4000:])
    res = _result((containers[am[0]] / "stdout").read_text(), "cluster mode driver", proc)
    assert proc.returncode == 0, proc.stderr[-6000:]
    return {"proc": proc, "app_id": app_id, "res": res, "containers": containers, "am": am[0]}


def test_yarn_in_the_client_conf_and_confs(yarn_bed):
    root = ET.parse(yarn_bed.conf_dir / "yarn-site.xml").getroot()
    props = {p.findtext("name"): p.findtext("value") for p in root.iter("property")}
    assert props["yarn.resourcemanager.address"] == yarn_bed.yarn_rm
    assert int(yarn_bed.yarn_rm.rsplit(":", 1)[1]) in yarn_bed.status()["hadoop"]["listening"]
    confs = yarn_bed.spark_confs(master="yarn")
    assert confs["spark.yarn.jars"] == f"local:{yarn_bed.spark_home / 'jars'}/*"
    assert confs["spark.hadoop.yarn.resourcemanager.address"] == yarn_bed.yarn_rm
    assert confs["spark.hadoop.fs.defaultFS"] == yarn_bed.hdfs_uri
    argv = yarn_bed.spark_submit_argv(master="yarn")
    assert argv[:2] == ["--master", "yarn"] and "spark.yarn.queue=default" in argv
    assert yarn_bed.env()["YARN_CONF_DIR"] == str(yarn_bed.conf_dir)


def test_client_mode_tasks_run_in_yarn_containers(yarn_bed, client_run):
    res, app_id = client_run["res"], client_run["app_id"]
    assert (res["master"], res["deploy_mode"], res["app_id"]) == ("yarn", "client", app_id)
    assert res["driver"]["container"] is None  # the driver is the spark-submit process
    hadoop_pid = yarn_bed.procs["hadoop"].pid
    assert hadoop_pid not in res["driver"]["ancestors"]
    suffix = app_id[len("application_"):]
    containers = {t["container"] for t in res["tasks"]}
    assert len(res["tasks"]) == 4 and all(c and c.startswith(f"container_{suffix}_") for c in containers), res["tasks"]
    assert not any(c.endswith("_000001") for c in containers)  # not the (client-mode) application master
    assert all(hadoop_pid in t["ancestors"] for t in res["tasks"])  # launched by the NodeManager
    assert containers <= set(client_run["containers"])  # each has its log dir in the NodeManager's
    # the table: EXTERNAL, on HDFS, through the Metastore
    assert res["table_type"] == "EXTERNAL" and res["location"] == client_run["location"]
    assert (res["count"], res["sum"]) == (ROWS, ROWS * (ROWS - 1) // 2)
    assert res["default_fs"] == yarn_bed.hdfs_uri


def test_cluster_mode_driver_in_the_application_master(yarn_bed, client_run, cluster_run):
    res, app_id = cluster_run["res"], cluster_run["app_id"]
    assert (res["master"], res["deploy_mode"], res["app_id"]) == ("yarn", "cluster", app_id)
    assert res["driver"]["container"] == cluster_run["am"]  # the application master's container
    hadoop_pid = yarn_bed.procs["hadoop"].pid
    assert hadoop_pid in res["driver"]["ancestors"]
    assert res["driver"]["cwd"].endswith(f"/{app_id}/{cluster_run['am']}")  # its NodeManager work dir
    tasks = {t["container"] for t in res["tasks"]}
    assert tasks and cluster_run["am"] not in tasks and tasks <= set(cluster_run["containers"]), res["tasks"]
    assert all(hadoop_pid in t["ancestors"] for t in res["tasks"])
    # reads the client-mode run's table through the Metastore, writes and reads a partitioned one
    assert (res["count"], res["sum"], res["table_type"]) == (ROWS, ROWS * (ROWS - 1) // 2, "EXTERNAL")
    assert res["by_bucket_type"] == "EXTERNAL"
    expected = {str(b): [len(range(b, ROWS, 3)), sum(range(b, ROWS, 3))] for b in range(3)}
    assert res["by_bucket"] == expected
    assert "final status: SUCCEEDED" in cluster_run["proc"].stderr
    assert client_run["app_id"] != app_id
