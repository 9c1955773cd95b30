"""Smoke test of the real-cluster test bed (real JVMs on 127.0.0.1, no mocks).

Two Spark client processes in total, each checking several things:
  (a) spark-submit to the standalone master: executors in the Worker JVM write an
      EXTERNAL parquet table on HDFS through the Metastore service;
  (b) a second, separate Spark process (configured only by the client conf dir)
      sees the table and the same rows through the Metastore service;
  (c) HDFS rename semantics, a space quota, ACLs and chown via the Hadoop API;
  (d) what only a Hadoop 3 NameNode answers (erasure coding, a path's storage
      policy, its enclosing root): answered on the 3.5 bed, "Unknown method" on 2.7.
"""
from __future__ import annotations

import json
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from testbed.procs import listening_ports

pytestmark = pytest.mark.timeout(600)

APPS = Path(__file__).resolve().parent / "apps"
ROWS = 1000
SUFFIX = uuid.uuid4().hex[:8]
DB, TABLE = f"testbed_smoke_{SUFFIX}", "events"


def _result(proc, what: str) -> dict:
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise AssertionError(f"{what} exited {proc.returncode} without a RESULT line\n"
                         f"--- stdout ---\n{proc.stdout[-3000:]}\n--- stderr ---\n{proc.stderr[-6000:]}")


@pytest.fixture(scope="module")
def written(testbed):
    """(a): one spark-submit to the standalone master."""
    location = f"{testbed.hdfs_uri}/data/{DB}/{TABLE}"
    proc = testbed.spark_submit(APPS / "write_table.py", DB, TABLE, location, ROWS, confs=testbed.quick_confs(), timeout=400)
    res = _result(proc, "spark-submit write_table.py")
    assert proc.returncode == 0, proc.stderr[-4000:]
    res["location"] = location
    return res


@pytest.fixture(scope="module")
def read_back(testbed, written):
    """(b)+(c): one separate plain-python Spark process using the client conf dir."""
    proc = testbed.run_python(APPS / "read_and_hdfs.py", DB, TABLE, f"/testbed-smoke/{SUFFIX}", timeout=400,
                              env={"PYSPARK_SUBMIT_ARGS": "--conf spark.ui.enabled=false --driver-java-options "
                                                          "-XX:TieredStopAtLevel=1 pyspark-shell"})
    res = _result(proc, "python read_and_hdfs.py")
    assert proc.returncode == 0, proc.stderr[-4000:]
    return res


def test_services_and_client_conf(testbed):
    testbed.check_alive()
    st = testbed.status()
    hs2 = {"hiveserver2"} if testbed.hiveserver2_url else set()  # the suite's bed has one (test_hive_reader.py)
    if testbed.hadoop3:  # NameNode, DataNodes, ResourceManager and NodeManager in one JVM
        assert set(st) == {"hadoop", "metastore", "spark-master", "spark-worker"} | hs2
        assert testbed.hadoop_version.startswith("3.") and testbed.datanodes == 3
        assert testbed.ec_policies == ["XOR-2-1-1024k"]
    else:
        assert set(st) == {"namenode", "datanode", "metastore", "spark-master", "spark-worker"} | hs2
        assert testbed.hadoop_version == "2.7.3" and testbed.datanodes == 1 and testbed.yarn_rm is None
    if hs2:
        assert testbed.info["hiveserver2"]["port"] in st["hiveserver2"]["listening"]
    nn_port = int(testbed.hdfs_uri.rsplit(":", 1)[1])
    assert nn_port in st["hadoop" if testbed.hadoop3 else "namenode"]["listening"]
    assert int(testbed.metastore_uri.rsplit(":", 1)[1]) in listening_ports(testbed.procs["metastore"].pid)
    for s in st.values():
        assert Path(s["log"]).is_file()

    def props(name):
        root = ET.parse(testbed.conf_dir / name).getroot()
        return {p.findtext("name"): p.findtext("value") for p in root.iter("property")}
    assert props("core-site.xml")["fs.defaultFS"] == testbed.hdfs_uri
    assert props("hive-site.xml")["hive.metastore.uris"] == testbed.metastore_uri
    confs = testbed.spark_confs()
    assert confs["spark.hadoop.fs.defaultFS"] == testbed.hdfs_uri
    assert confs["spark.hadoop.hive.metastore.uris"] == testbed.metastore_uri
    assert confs["spark.sql.catalogImplementation"] == "hive"
    assert confs["spark.sql.warehouse.dir"] == f"{testbed.hdfs_uri}/warehouse"
    argv = testbed.spark_submit_argv()
    assert argv[:2] == ["--master", testbed.master_url]
    assert f"spark.hadoop.fs.defaultFS={testbed.hdfs_uri}" in argv
    env = testbed.env()
    assert env["HADOOP_CONF_DIR"] == env["SPARK_CONF_DIR"] == str(testbed.conf_dir)
    assert env["SPARK_LOCAL_IP"] == "127.0.0.1"


def test_submit_to_standalone_writes_external_table(testbed, written):
    assert written["master"] == testbed.master_url
    assert written["executors"] >= 1
    worker = testbed.procs["spark-worker"].pid
    # the tasks ran in python workers under an executor JVM started by the Worker JVM,
    # not in the driver (the spark-submit process)
    assert written["task_ancestors"], written
    assert all(worker in anc for anc in written["task_ancestors"]), (worker, written["task_ancestors"])
    assert worker not in written["driver_ancestors"]
    assert written["table_type"] == "EXTERNAL"
    assert written["count"] == ROWS
    assert written["fs_scheme"] == testbed.hdfs_uri
    assert written["data_files"] and all(f.endswith(".parquet") for f in written["data_files"])
    assert written["db_location"] == f"{testbed.hdfs_uri}/warehouse/{DB}.db"


def test_second_process_sees_table_through_metastore(testbed, written, read_back):
    assert read_back["catalog"] == "hive"
    assert read_back["default_fs"] == testbed.hdfs_uri
    t = read_back["table"]
    assert "error" not in t, t.get("error")
    assert t["table_type"] == "EXTERNAL"
    assert (t["count"], t["sum"], t["distinct_names"]) == (ROWS, ROWS * (ROWS - 1) // 2, ROWS)
    assert t["location"] == written["location"]
    assert TABLE in t["tables_in_db"]


def test_hdfs_rename_semantics(read_back):
    h = read_back["hdfs"]
    assert "error" not in h, h.get("error")
    assert h["fs_class"] == "org.apache.hadoop.hdfs.DistributedFileSystem"
    # rename a dir onto an existing dir moves it inside
    assert h["rename_dir_onto_dir"] is True and h["moved_inside"] and h["src_gone"]
    # rename into a missing parent returns false and changes nothing
    assert h["rename_missing_parent"] is False
    assert h["missing_parent_src_kept"] and h["missing_parent_not_created"]
    # source missing returns false (no exception); file onto existing file: false
    assert h["rename_source_missing"] is False
    assert h["rename_file_onto_file"] is False


def test_hdfs_quota_acl_chown(testbed, read_back):
    h = read_back["hdfs"]
    assert "error" not in h, h.get("error")
    assert h["default_block_size"] == testbed.block_size
    assert h["space_quota"] == h["quota_wanted"]
    assert h["small_write_ok"] is True
    assert h["big_write_error"] == "DSQuotaExceededException"
    assert "user:nobody:r-x" in h["acl_entries"]
    assert h["owner_after_chown"] == "nobody:nogroup"


def test_hadoop3_only_calls(testbed, read_back):
    h = read_back["hadoop3"]
    assert "error" not in h or h.get("error") == "Unknown method", h.get("error")
    if not testbed.hadoop3:  # what a 2.7 NameNode answers (the engine's checks expect exactly this)
        for key in ("policies", "storage_policy", "enclosing_root", "dir_ec"):
            assert h[key] == {"error": "Unknown method"}, (key, h[key])
        return
    assert "XOR-2-1-1024k:ENABLED" in h["policies"], h["policies"]
    assert h["storage_policy"] == "HOT"
    assert h["enclosing_root"] == "/"
    assert h["dir_ec"] == "XOR-2-1-1024k"
    assert h["file_ec"] is True and h["read_back_equal"] is True and h["file_len"] == 5 * 512 * 1024
    assert len(h["block_hosts"]) == 3  # two data blocks and the parity block, each on its own DataNode
