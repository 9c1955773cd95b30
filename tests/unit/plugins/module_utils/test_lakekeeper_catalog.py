# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Where a client-mode driver finds the cluster's Metastore (_lakekeeper_catalog)."""

from __future__ import annotations

import os

from ansible_collections.lakekeeper.hive.plugins.module_utils import _lakekeeper_catalog as cat

SITE = """<?xml version="1.0"?>
<configuration>
  <property><name>%s</name><value>%s</value></property>
</configuration>
"""


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


def test_spark_env_sh_sets_the_hadoop_conf_dir_the_way_distributions_do(tmp_path):
    # /usr/bin/spark-submit -> /usr/lib/spark/bin/spark-submit; its conf dir's spark-env.sh names
    # HADOOP_CONF_DIR with a default, where the hive-site.xml is
    home = tmp_path / "usr-lib-spark"
    write(home / "bin" / "spark-submit", "#!/bin/sh\n")
    os.symlink(str(home / "bin" / "spark-submit"), str(tmp_path / "spark-submit"))
    hadoop = tmp_path / "etc-hadoop-conf"
    write(home / "conf" / "spark-env.sh",
          "# set by the installer\nexport HADOOP_CONF_DIR=${HADOOP_CONF_DIR:-%s}\n" % hadoop)
    site = write(hadoop / "hive-site.xml", SITE % ("hive.metastore.uris", "thrift://a:9083,thrift://b:9083"))
    found, looked = cat.find_metastore({}, [], {}, str(tmp_path / "spark-submit"))
    assert found == {"kind": "metastore", "uris": "thrift://a:9083,thrift://b:9083", "source": site}
    assert looked[:3] == ["spark_submit.extra_conf", "spark_submit.extra_args",
                          str(home / "conf" / "spark-defaults.conf")]
    # the environment's HADOOP_CONF_DIR wins over the script's default
    assert cat.driver_conf_dirs({"HADOOP_CONF_DIR": "/other"}, str(tmp_path / "spark-submit")) == [
        str(home / "conf"), "/other"]


def test_what_counts_as_a_metastore(tmp_path):
    conf = tmp_path / "conf"
    env = {"SPARK_CONF_DIR": str(conf)}
    # a hive-site.xml pointing at an embedded Derby is not the cluster's Metastore
    write(conf / "hive-site.xml", SITE % ("javax.jdo.option.ConnectionURL", "jdbc:derby:;databaseName=metastore_db"))
    assert cat.find_metastore({}, None, env, None)[0] is None
    # a Metastore database reached directly (no thrift service): its URL without parameters
    url = "jdbc:postgresql://db:5432/hive?user=hive&amp;password=secret"
    write(conf / "hive-site.xml", SITE % ("javax.jdo.option.ConnectionURL", url))
    found = cat.find_metastore({}, None, env, None)[0]
    assert found["kind"] == "database" and found["url"] == "jdbc:postgresql://db:5432/hive"
    # spark-defaults.conf in the conf dir (key=value and key value forms), before hive-site.xml
    write(conf / "spark-defaults.conf", "# defaults\nspark.hadoop.hive.metastore.uris=thrift://d:9083\n")
    assert cat.find_metastore({}, None, env, None)[0]["uris"] == "thrift://d:9083"
    # --properties-file replaces spark-defaults.conf
    props = write(tmp_path / "job.properties", "spark.hadoop.hive.metastore.uris   thrift://p:9083\n")
    found = cat.find_metastore({}, ["--properties-file", props], env, None)[0]
    assert found == {"kind": "metastore", "uris": "thrift://p:9083", "source": props}
    # extra_conf first of all
    assert cat.find_metastore({"spark.hadoop.hive.metastore.uris": "thrift://x:9083"}, None, env, None)[0] == {
        "kind": "metastore", "uris": "thrift://x:9083", "source": "spark_submit.extra_conf"}


def test_nothing_found_says_where_it_looked(tmp_path):
    found, looked = cat.find_metastore({}, [], {"HADOOP_CONF_DIR": str(tmp_path / "h")}, None)
    assert found is None
    message = cat.no_metastore_message(looked)
    assert str(tmp_path / "h" / "hive-site.xml") in message
    assert "spark.hadoop.hive.metastore.uris: thrift://HOST:9083" in message


def test_host_hive_site(tmp_path, monkeypatch):
    monkeypatch.setattr(cat, "HOST_HIVE_CONF_DIRS", (str(tmp_path / "etc-hive-conf"),))
    assert cat.host_hive_site({"HIVE_CONF_DIR": str(tmp_path / "none")}) is None
    site = write(tmp_path / "etc-hive-conf" / "hive-site.xml", SITE % ("hive.metastore.uris", "thrift://m:9083"))
    assert cat.host_hive_site({}) == site
    mine = write(tmp_path / "mine" / "hive-site.xml", SITE % ("hive.metastore.uris", "thrift://m:9083"))
    assert cat.host_hive_site({"HIVE_CONF_DIR": str(tmp_path / "mine")}) == mine


def test_cloudera_spark_env_sh_names_the_yarn_conf_under_the_spark_conf_dir(tmp_path):
    conf = tmp_path / "etc-spark3-conf"
    write(conf / "spark-env.sh", 'export HADOOP_CONF_DIR="$SPARK_CONF_DIR/yarn-conf"\n')
    site = write(conf / "yarn-conf" / "hive-site.xml", SITE % ("hive.metastore.uris", "thrift://cdp:9083"))
    found = cat.find_metastore({}, [], {"SPARK_CONF_DIR": str(conf)}, None)[0]
    assert found == {"kind": "metastore", "uris": "thrift://cdp:9083", "source": site}


def test_spark_home_version_from_the_core_jar_else_release(tmp_path):
    home = tmp_path / "spark"
    write(home / "jars" / "spark-core_2.12-3.5.1.jar", "")
    write(home / "jars" / "spark-catalyst_2.12-3.5.1.jar", "")
    write(home / "RELEASE", "Spark 9.9.9 built for Hadoop 3.3.4\n")
    assert cat.spark_home_version(str(home)) == "3.5.1"  # the jar first
    os.remove(str(home / "jars" / "spark-core_2.12-3.5.1.jar"))
    assert cat.spark_home_version(str(home)) == "9.9.9"  # a distribution's RELEASE
    write(home / "jars" / "spark-core_2.13-4.0.0-preview2.jar", "")
    assert cat.spark_home_version(str(home)) == "4.0.0-preview2"
    assert cat.spark_home_version(str(tmp_path / "none")) is None and cat.spark_home_version(None) is None


def test_spark_home_and_defaults_path_as_spark_submit_finds_them(tmp_path):
    submit = write(tmp_path / "opt-spark" / "bin" / "spark-submit", "")
    link = tmp_path / "usr-bin" / "spark-submit"
    link.parent.mkdir()
    link.symlink_to(submit)
    assert cat.spark_home({}, str(link)) == str(tmp_path / "opt-spark")  # the resolved binary's home
    assert cat.spark_home({"SPARK_HOME": "/h"}, str(link)) == "/h"
    assert cat.spark_defaults_path({"SPARK_HOME": "/h"}, None) == "/h/conf/spark-defaults.conf"
    assert cat.spark_defaults_path({"SPARK_HOME": "/h", "SPARK_CONF_DIR": "/etc/spark/conf"}, None) == (
        "/etc/spark/conf/spark-defaults.conf")
    assert cat.spark_defaults_path({}, None) is None


def test_defaults_properties(tmp_path):
    path = write(tmp_path / "spark-defaults.conf", "# spark.pyspark.python /no\nspark.pyspark.python  /usr/bin/python3\n"
                 "spark.pyspark.driver.python=/opt/py/bin/python\nspark.other 1\n")
    assert cat.defaults_properties(path, ("spark.pyspark.python", "spark.pyspark.driver.python")) == {
        "spark.pyspark.python": "/usr/bin/python3", "spark.pyspark.driver.python": "/opt/py/bin/python"}
    assert cat.defaults_properties(None, ("a",)) == {} and cat.defaults_properties(str(tmp_path / "x"), ("a",)) == {}
