# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""A secret-looking extra_conf key through the real ``spark-submit`` of this
interpreter's pyspark (4.x on the main line, 3.3 and 3.5 on the Spark lanes:
scripts/spark_lanes.py runs this file on every lane).

The module keeps such a key off the command line: it goes to a private
properties file given with ``--properties-file``, which replaces the
cluster's spark-defaults.conf. Spark 4 reads both when also given
``--load-spark-defaults``; Spark 3.x does not know that flag ("Unrecognized
option"), so there the module copies spark-defaults.conf into the file. This
test builds the argv and the file as the module does (the Spark line read
from the SPARK_HOME's files, the defaults from SPARK_CONF_DIR), runs them,
and checks with a tiny application that the secret key, a ``--conf`` key and
a key of the cluster's spark-defaults.conf all reach the driver's SparkConf.

It loads the module_utils files through an ``ansible_collections`` symlink:
they need no ansible-core for this (the lanes have none).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.spark_lane, pytest.mark.timeout(600)]

SECRET_KEY = "spark.hadoop.fs.s3a.secret.key"
SECRET_VALUE = "s3cr3t/Value=with:specials"

APP = r"""
import json, sys
from pyspark import SparkConf, SparkContext
SparkContext._ensure_initialized()  # the gateway of the JVM spark-submit started; no SparkContext is made
conf = SparkConf()  # that JVM's spark.* properties: what a SparkContext would be given
keys = sys.argv[1].split(",")
print("LAKEKEEPER-CONF " + json.dumps(dict((k, conf.get(k, None)) for k in keys)))
"""


def _module_utils():
    """``(_lakekeeper_argv, _lakekeeper_catalog)`` as the modules import them."""
    tmp = tempfile.mkdtemp(prefix="lakekeeper-submit-")
    namespace = os.path.join(tmp, "ansible_collections", "lakekeeper")
    os.makedirs(namespace)
    os.symlink(str(ROOT), os.path.join(namespace, "hive"))
    sys.path.insert(0, tmp)
    try:
        from ansible_collections.lakekeeper.hive.plugins.module_utils import _lakekeeper_argv as argv_mod
        from ansible_collections.lakekeeper.hive.plugins.module_utils import _lakekeeper_catalog as cat_mod
    finally:
        sys.path.remove(tmp)
    return argv_mod, cat_mod


def test_a_secret_key_with_the_cluster_defaults_on_this_spark(tmp_path):
    pyspark = pytest.importorskip("pyspark")
    lk, cat = _module_utils()
    spark_submit = os.path.join(os.path.dirname(os.path.realpath(pyspark.__file__)), "bin", "spark-submit")
    assert os.access(spark_submit, os.X_OK), spark_submit

    conf_dir = tmp_path / "conf"  # the cluster's Spark conf directory
    conf_dir.mkdir()
    (conf_dir / "spark-defaults.conf").write_text(
        "# the cluster's defaults\n"
        "spark.lakekeeper.test.from.defaults   cluster-value\n"
        "spark.ui.enabled                      false\n"
        "%s                                    from-the-defaults\n" % SECRET_KEY)
    env = dict(os.environ, SPARK_CONF_DIR=str(conf_dir), SPARK_LOCAL_IP="127.0.0.1",
               PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    env.pop("SPARK_HOME", None)  # the spark-submit of this pyspark finds its own home

    # the Spark line, as the module reads it: the SPARK_HOME's jars/spark-core_*.jar (no JVM start)
    version = cat.spark_home_version(cat.spark_home(env, spark_submit))
    assert version == pyspark.__version__.split("+")[0], (version, pyspark.__version__)

    app = tmp_path / "show_conf.py"
    app.write_text(APP)
    result_file = str(tmp_path / "private" / "lakekeeper-result.json")
    os.makedirs(os.path.dirname(result_file))
    ss = dict(enabled=True, master="local[1]", name="lakekeeper-secret-properties-test", extra_files=[],
              extra_conf={SECRET_KEY: SECRET_VALUE, "spark.lakekeeper.test.public": "on-the-command-line"})
    argv = lk.build_command("analyze", ["--table", "db.t"], ss, str(app), spark_submit=spark_submit,
                            result_file=result_file, spark_version=version)
    assert not any(SECRET_VALUE in a or SECRET_KEY in a for a in argv), argv
    assert ("--load-spark-defaults" in argv) is (lk.spark_line(version) >= (4, 0))

    # the file as the module writes it (_lakekeeper_module.secret_file_text): on 3.x, after the defaults
    secret = lk.split_conf(ss["extra_conf"])[1]
    defaults_path = cat.spark_defaults_path(env, spark_submit)
    assert defaults_path == str(conf_dir / "spark-defaults.conf")
    defaults_text = None if lk.loads_spark_defaults(version) else Path(defaults_path).read_text()
    props = lk.secret_properties_path(result_file)
    fd = os.open(props, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(lk.secret_properties_text(secret, defaults_text))

    # the application's own arguments (the engine's, here ignored) end with the keys to show
    keys = [SECRET_KEY, "spark.lakekeeper.test.public", "spark.lakekeeper.test.from.defaults", "spark.ui.enabled"]
    argv = argv[:argv.index(str(app)) + 1] + [",".join(keys)]
    proc = subprocess.run(argv, env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=300,
                          check=False)
    out = proc.stdout + proc.stderr
    assert "Unrecognized option" not in out, out[-3000:]
    assert proc.returncode == 0, out[-3000:]
    line = [x for x in proc.stdout.splitlines() if x.startswith("LAKEKEEPER-CONF ")]
    assert line, out[-3000:]
    seen = json.loads(line[-1][len("LAKEKEEPER-CONF "):])
    assert seen == {
        SECRET_KEY: SECRET_VALUE,  # the secret key, over the same key in spark-defaults.conf
        "spark.lakekeeper.test.public": "on-the-command-line",
        "spark.lakekeeper.test.from.defaults": "cluster-value",  # the cluster's defaults still apply
        "spark.ui.enabled": "false",
    }, (version, seen)
