# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""``--result-uri``: the result document on a Hadoop filesystem, for a
launcher that cannot read the driver's stdout (spark-submit
``--deploy-mode cluster``: the driver runs in a YARN container; the modules
read the file back with the edge node's Hadoop client). Through the
session's Hadoop client, and, for a command line refused before Spark
starts, through the JVM spark-submit started the driver from."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lakekeeper_spark import cli

ROOT = Path(__file__).resolve().parents[2]


def _status(spark, uri):
    path = spark._jvm.org.apache.hadoop.fs.Path(uri)
    return path.getFileSystem(spark._jsc.hadoopConfiguration()).getFileStatus(path)


def test_the_result_through_the_sessions_hadoop_client(spark, warehouse, files):
    uri = warehouse + "/results-a/new/20261122T013000-3f9a1c.json"
    text = json.dumps({"command": "analyze", "tables": []}) + "\n"
    assert cli.write_result_uri(uri, text, (spark._jvm, spark._jsc.hadoopConfiguration())) is True
    assert files.read_bytes(uri).decode() == text
    # readable by its owner only, in a new directory of its own
    assert str(_status(spark, uri).getPermission().toString()) == "rw-------"
    assert str(_status(spark, warehouse + "/results-a/new").getPermission().toString()) == "rwx------"
    # a second write (the same run id) replaces it
    assert cli.write_result_uri(uri, "{}\n", (spark._jvm, spark._jsc.hadoopConfiguration())) is True
    assert files.read_bytes(uri) == b"{}\n" and str(_status(spark, uri).getPermission().toString()) == "rw-------"
    assert [n for n in files.names(warehouse + "/results-a/new") if not n.endswith(".crc")] == [
        "20261122T013000-3f9a1c.json"]  # written under a temporary name, renamed: none left


def test_no_hadoop_client_outside_spark_submit(tmp_path, monkeypatch):
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    monkeypatch.delenv("SPARK_SUBMIT_APP_NAME", raising=False)
    assert cli.write_result_uri("file://%s/r.json" % tmp_path, "{}\n") is False
    assert not (tmp_path / "r.json").exists()


@pytest.mark.timeout(300)
def test_a_refused_command_line_under_spark_submit(tmp_path):
    """The engine stops before Spark (exit 2): the document still reaches the result URI, through the JVM
    that spark-submit started (a cluster-mode driver's only way to report it)."""
    pyspark = pytest.importorskip("pyspark")
    submit = os.path.join(os.path.dirname(os.path.realpath(pyspark.__file__)), "bin", "spark-submit")
    uri = "file://%s/results/r.json" % tmp_path
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
               PYSPARK_DRIVER_PYTHON=sys.executable)
    done = subprocess.run([submit, "--master", "local[1]", "--conf", "spark.ui.enabled=false",
                           str(ROOT / "spark_app" / "run_lakekeeper.py"), "compact", "--table", "db.t",
                           "--new-run-id", "yesterday", "--result-uri", uri],
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=280, check=False)
    assert done.returncode == 2, done.stderr.decode()[-2000:]
    doc = json.loads((tmp_path / "results" / "r.json").read_text())
    assert doc["failed"] is True and doc["msg"].startswith("--new-run-id must look like")
    assert oct((tmp_path / "results" / "r.json").stat().st_mode & 0o777) == "0o600"
