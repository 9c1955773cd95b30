# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

import copy
import json

import re

import pytest

from ansible_collections.lakekeeper.hive.plugins.module_utils import _lakekeeper_argv as lk
from ansible_collections.lakekeeper.hive.plugins.module_utils import _lakekeeper_result as rs

# The configuration of the reference design's "Scenario 2".
REFERENCE_CONFIG = {
    "block_size_mb": 128,
    "compaction_ratio_threshold": 10.0,
    "log_level": "INFO",
    "spark_submit": {
        "enabled": True,
        "master": "yarn",
        "deploy_mode": "client",
        "principal": "myuser@MY.REALM.COM",
        "keytab": "/etc/security/keytabs/myuser.keytab",
        "queue": "data-engineering",
        "archives": "/opt/lakekeeper_env.tar.gz#lakekeeper_env",
        "python_env": "./lakekeeper_env/bin/python",
        "executor_memory": "4g",
        "num_executors": 10,
        "executor_cores": 2,
        "driver_memory": "2g",
        "script_path": "/opt/lakekeeper/run_lakekeeper.py",
        "extra_conf": {"spark.yarn.kerberos.relogin.period": "1h"},
    },
}

# The reference's "under the hood" command line, which shows the keys of the
# config above except executor_cores, driver_memory and extra_conf.
UNDER_THE_HOOD = (
    "spark-submit --master yarn --deploy-mode client "
    "--principal myuser@MY.REALM.COM "
    "--keytab /etc/security/keytabs/myuser.keytab "
    "--conf spark.yarn.queue=data-engineering "
    "--archives /opt/lakekeeper_env.tar.gz#lakekeeper_env "
    "--conf spark.pyspark.python=./lakekeeper_env/bin/python "
    "--executor-memory 4g --num-executors 10 "
    "/opt/lakekeeper/run_lakekeeper.py compact --table mydb.events"
).split()

# A result document shaped as in docs/engine-contract.md.
CONTRACT_RESULT = {
    "command": "compact",
    "run_id": "20261122T013000-3f9a1c",
    "dry_run": False,
    "changed": True,
    "failed": False,
    "msg": "1 table compacted, 0 skipped, 0 failed",
    "tables": [
        {
            "table": "db.events",
            "status": "compacted",
            "reason": "2 of 3 partitions compacted",
            "changed": True,
            "would_change": True,
            "backup_table": "db.__bkp_events_20261122_013000",
            "run_id": "20261122T013000-3f9a1c",
            "location": "hdfs://nn/warehouse/db/events",
            "format": "parquet",
            "partitions": [
                {"spec": "year=2024/month=01", "location": "...", "files_before": 500, "files_after": 2,
                 "bytes_before": 1000, "bytes_after": 900, "rows_before": 10, "rows_after": 10,
                 "target_files": 2, "status": "compacted", "reason": "..."},
                {"spec": "year=2024/month=02", "location": "...", "files_before": 3, "files_after": 3,
                 "bytes_before": 300, "bytes_after": 300, "rows_before": 3, "rows_after": 3,
                 "target_files": 3, "status": "skipped", "reason": "above threshold"},
            ],
        },
    ],
}


def dry_run_result():
    doc = copy.deepcopy(CONTRACT_RESULT)
    doc.update(dry_run=True, changed=False, msg="1 table planned")
    table = doc["tables"][0]
    table.update(status="planned", changed=False, would_change=True, backup_table=None)
    part = table["partitions"][0]
    part.update(status="planned", files_after=None)
    del part["files_after"]
    return doc


# ---------------------------------------------------------------- selectors

class TestSelectors:
    def test_table(self):
        assert lk.selector_args(table="db.t") == ["--table", "db.t"]

    def test_tables_joined_and_deduplicated(self):
        assert lk.selector_args(tables=["db.a", " db.b ", "db.a"]) == ["--tables", "db.a,db.b"]

    def test_database(self):
        assert lk.selector_args(database="mydb") == ["--database", "mydb"]

    def test_one_is_required(self):
        with pytest.raises(lk.LakekeeperError, match="one of table, tables or database is required"):
            lk.selector_args()
        with pytest.raises(lk.LakekeeperError, match="required"):
            lk.selector_args(table="", tables=[], database=None)

    @pytest.mark.parametrize("kwargs", [
        {"table": "db.t", "database": "db"},
        {"table": "db.t", "tables": ["db.u"]},
        {"tables": ["db.u"], "database": "db"},
    ])
    def test_mutually_exclusive(self, kwargs):
        with pytest.raises(lk.LakekeeperError, match="mutually exclusive"):
            lk.selector_args(**kwargs)

    @pytest.mark.parametrize("name", ["events", "db.t.x", "db. t", "db.t,db.u", ".t", "db.", "db.`t`"])
    def test_bad_table_names(self, name):
        with pytest.raises(lk.LakekeeperError, match="DB.TABLE"):
            lk.selector_args(table=name)
        with pytest.raises(lk.LakekeeperError, match="DB.TABLE"):
            lk.selector_args(tables=["db.ok", name])

    @pytest.mark.parametrize("name", ["db.t", "a b", "a,b"])
    def test_bad_database_names(self, name):
        with pytest.raises(lk.LakekeeperError, match="database"):
            lk.selector_args(database=name)


# ----------------------------------------------------------- engine options

def test_engine_args_every_option_in_order():
    argv = lk.engine_args(
        "cleanup", ["--database", "db"],
        dict(block_size_mb=256, compaction_ratio_threshold=5.0, target_file_size_mb=64, backup_prefix="__b",
             older_than="7d", log_level="DEBUG"),
        config_file="/etc/lk.yaml", dry_run=True, state_dir="/s", master="local[2]",
        conf={"spark.sql.shuffle.partitions": 4}, result_file="/tmp/r.json")
    assert argv == [
        "cleanup", "--database", "db", "--block-size", "256", "--ratio-threshold", "5.0",
        "--target-file-size", "64", "--backup-prefix", "__b", "--older-than", "7d", "--log-level", "DEBUG",
        "--config-file", "/etc/lk.yaml", "--dry-run", "--state-dir", "/s", "--master", "local[2]",
        "--conf", "spark.sql.shuffle.partitions=4", "--result-file", "/tmp/r.json"]


def test_engine_args_retention_and_pins():
    argv = lk.engine_args("cleanup", ["--table", "db.t"], dict(older_than="7d", keep_last=0, grace_period="1h"))
    assert argv == ["cleanup", "--table", "db.t", "--older-than", "7d", "--keep-last", "0", "--grace-period", "1h"]
    assert lk.engine_args("cleanup", ["--table", "db.t"], dict(pin="20261122T013000-3f9a1c")) == [
        "cleanup", "--table", "db.t", "--pin", "20261122T013000-3f9a1c"]
    assert lk.engine_args("cleanup", ["--table", "db.t"], dict(unpin="r")) == ["cleanup", "--table", "db.t", "--unpin", "r"]


def test_a_long_partition_list_is_cut_to_what_matters():
    """limit_partitions: units something happened to are always listed; then
    refused units, then the units to compact with the most files to save;
    what is left out is counted, with its files and bytes."""
    def part(i, status="analyzed", **kw):
        return dict(dict(spec="dt=%03d" % i, status=status, files_before=2, target_files=1, bytes_before=100), **kw)

    parts = [part(i, decision="skip", target_files=2) for i in range(20)]
    parts[3] = part(3, decision="compact", files_before=50)
    parts[7] = part(7, decision="compact", files_before=9)
    parts[11] = part(11, decision="skip", code="schema_drift")
    parts[15] = part(15, decision="compact", files_before=80)
    parts[17] = part(17, decision="compact", files_before=4)
    table = {"table": "db.t", "status": "analyzed", "partitions": parts}
    cut = rs.limit_partitions([table], 4)[0]
    # the refused unit, then the three with the most files to save, in the list's own order
    assert [p["spec"] for p in cut["partitions"]] == ["dt=003", "dt=007", "dt=011", "dt=015"]
    assert cut["partitions_not_listed"] == {"partitions": 16, "to_compact": 1, "files": 2 * 15 + 4, "bytes": 1600}
    assert table["partitions"] is parts and len(parts) == 20  # the engine's document is left whole
    # nothing is cut at or under the limit, or without one
    assert rs.limit_partitions([table], 20) == [table] and rs.limit_partitions([table], 0) == [table]
    assert rs.limit_partitions([table], None) == [table]
    # compacted, failed, refused and planned units are listed even past the limit
    done = [part(i, "compacted") for i in range(5)] + [part(5, "failed"), part(6, "refused"), part(7, "planned")]
    done += [part(i, "skipped", decision="skip") for i in range(8, 30)]
    cut = rs.limit_partitions([{"table": "db.u", "partitions": done}], 3)[0]
    assert [p["status"] for p in cut["partitions"]] == ["compacted"] * 5 + ["failed", "refused", "planned"]
    assert cut["partitions_not_listed"]["partitions"] == 22


def test_refresh_command_per_changed_table():
    doc = {"tables": [
        {"table": "db.events", "status": "compacted", "changed": True,
         "partitions": [{"spec": "dt=1", "status": "compacted"}, {"spec": "dt=2", "status": "skipped"},
                        {"spec": "dt=3", "status": "compacted"}]},
        {"table": "db.flat", "status": "compacted", "changed": True, "partitions": [{"spec": "", "status": "compacted"}]},
        {"table": "db.same", "status": "skipped", "changed": False, "partitions": []},
        {"table": "db.bad", "status": "failed", "changed": False}]}
    assert rs.refresh_targets(doc) == [("db.events", ["dt=1", "dt=3"]), ("db.flat", [])]
    template = ["impala-shell", "-k", "-q", "REFRESH {database}.{table}", "{name}", "{partitions}", "{other} {}"]
    assert lk.refresh_argv(template, "db.events", ["dt=1", "dt=3"]) == [
        "impala-shell", "-k", "-q", "REFRESH db.events", "db.events", "dt=1,dt=3", "{other} {}"]
    # a value is one argument, whatever it holds: no shell, no splitting
    assert lk.refresh_argv(["x", "{partitions}"], "db.t", ["p='a b'; rm -rf /"]) == ["x", "p='a b'; rm -rf /"]
    for bad in (None, [], "impala-shell -q x"):
        with pytest.raises(lk.LakekeeperError):
            lk.refresh_argv(bad, "db.t")


def test_engine_args_unset_options_left_to_the_engine():
    assert lk.engine_args("analyze", ["--table", "db.t"], dict(block_size_mb=None, log_level=None)) == [
        "analyze", "--table", "db.t"]


def test_engine_args_sort_by_and_dedupe():
    argv = lk.engine_args("compact", ["--table", "db.t"], dict(
        block_size_mb=64, sort_by=["region", "ts"],
        dedupe=dict(keys=["id", "Site"], order_by="updated_at", delete_marker="op", delete_marker_value="D")))
    assert argv == ["compact", "--table", "db.t", "--block-size", "64", "--sort-by", "region,ts",
                    "--dedupe-keys", "id,Site", "--dedupe-order-by", "updated_at",
                    "--dedupe-delete-marker", "op", "--dedupe-delete-value", "D"]
    assert lk.rewrite_args(None, dict(keys=["id"], order_by="v", delete_marker="gone", delete_marker_value=None)) == [
        "--dedupe-keys", "id", "--dedupe-order-by", "v", "--dedupe-delete-marker", "gone"]
    assert lk.rewrite_args([], None) == [] and lk.rewrite_args(None, {}) == []
    # a direction per column: DESC passed on, ASC the default
    assert lk.rewrite_args(["customer_id asc", " event_time  desc "], None) == [
        "--sort-by", "customer_id,event_time DESC"]
    # a Z-order: the string, one item, or the items Ansible's list type splits it into on its commas
    for value in ("zorder(a, B)", ["zorder(a, B)"], ["zorder(a", " B)"], " ZORDER( a ,B ) "):
        assert lk.rewrite_args(value, None) == ["--sort-by", "zorder(a,B)"], value
    # a YAML boolean (the module option is raw) reaches the engine as Spark prints it
    assert lk.rewrite_args(None, dict(keys=["id"], order_by="v", delete_marker="op", delete_marker_value=True))[-2:] == [
        "--dedupe-delete-value", "true"]
    # the delete-ratio trigger: a float in (0, 1] (Ansible's float type gives 0.05 for "0.05", 1.0 for 1)
    assert lk.rewrite_args(None, dict(keys=["id"], order_by="v", trigger_ratio=0.05)) == [
        "--dedupe-keys", "id", "--dedupe-order-by", "v", "--dedupe-trigger-ratio", "0.05"]
    assert lk.rewrite_args(None, dict(keys=["id"], order_by="v", trigger_ratio=1))[-2:] == ["--dedupe-trigger-ratio", "1.0"]
    assert lk.rewrite_args(None, dict(keys=["id"], order_by="v", trigger_ratio=None)) == [
        "--dedupe-keys", "id", "--dedupe-order-by", "v"]


@pytest.mark.parametrize("sort_by,dedupe,match", [
    (["a;b"], None, "every item of sort_by must be a column name"),
    (["a", "A"], None, "names a column twice"),
    (["a DESC", "A"], None, "names a column twice"),
    (["a down"], None, "optionally followed by ASC or DESC"),
    (["a DESC NULLS"], None, "optionally followed by ASC or DESC"),
    ("zorder(a,b,c,d,e)", None, "zorder takes 1 to 4 columns, got 5"),
    (["zorder(a", "A)"], None, "names a column twice"),
    ("zorder(a b)", None, "must be a column name"),
    ("zorder(a", None, "is not zorder"),
    ("", dict(keys=[], order_by="v"), "dedupe.keys must be a non-empty list"),
    (None, dict(keys=["id"]), "dedupe.order_by must be a column name"),
    (None, dict(keys=["id"], order_by="ID"), "must not be one of dedupe.keys"),
    (None, dict(keys=["id"], order_by="v", delete_marker="v"), "must not be a key or the order_by"),
    (None, dict(keys=["id"], order_by="v", delete_marker_value="D"), "needs dedupe.delete_marker"),
    (None, dict(keys=["id"], order_by="v", key="x"), "unknown dedupe keys: key"),
    (None, ["id"], "dedupe must be a mapping"),
    (None, dict(keys=["id"], order_by="v", trigger_ratio=0), "trigger_ratio must be a number greater than 0"),
    (None, dict(keys=["id"], order_by="v", trigger_ratio=1.5), "and at most 1"),
    (None, dict(keys=["id"], order_by="v", trigger_ratio=-0.1), "and at most 1"),
    (None, dict(keys=["id"], order_by="v", trigger_ratio="nan"), "trigger_ratio must be a number"),
    (None, dict(keys=["id"], order_by="v", trigger_ratio=True), "trigger_ratio must be a number"),
    (None, dict(keys=["id"], order_by="v", trigger_ratio="often"), "trigger_ratio must be a number"),
    (None, dict(trigger_ratio=0.1), "dedupe.keys must be a non-empty list"),
])
def test_rewrite_args_refused(sort_by, dedupe, match):
    with pytest.raises(lk.LakekeeperError, match=match):
        lk.rewrite_args(sort_by, dedupe)


def test_rewrite_args_merge_from():
    dedupe = dict(keys=["id"], order_by="ver", delete_marker="op", delete_marker_value="D")
    assert lk.rewrite_args(None, dedupe, " hdfs://nn/in/batch-7 ")[-2:] == ["--merge-from", "hdfs://nn/in/batch-7"]
    assert lk.rewrite_args(None, dedupe, "staging.events_batch")[-2:] == ["--merge-from", "staging.events_batch"]
    assert "--merge-from" not in lk.rewrite_args(None, dedupe, "")
    with pytest.raises(lk.LakekeeperError, match="merge_from needs dedupe"):
        lk.rewrite_args(None, None, "hdfs://nn/in/batch-7")
    with pytest.raises(lk.LakekeeperError, match="merge_from must be a directory URI"):
        lk.rewrite_args(None, dedupe, "hdfs://nn/in\nx")
    with pytest.raises(lk.LakekeeperError, match="only apply to compact"):
        lk.engine_args("analyze", ["--table", "db.t"], dict(merge_from="db.b", dedupe=dedupe))
    with pytest.raises(lk.LakekeeperError, match="give table, not tables or database"):
        lk.engine_args("compact", ["--database", "db"], dict(merge_from="db.b", dedupe=dedupe))
    argv = lk.engine_args("compact", ["--table", "db.t"], dict(merge_from="db.b", dedupe=dict(keys=["id"], order_by="v")))
    assert argv == ["compact", "--table", "db.t", "--dedupe-keys", "id", "--dedupe-order-by", "v", "--merge-from", "db.b"]


def test_sort_by_only_for_compact_dedupe_also_for_analyze():
    with pytest.raises(lk.LakekeeperError, match="only apply to compact"):
        lk.engine_args("analyze", ["--table", "db.t"], dict(sort_by=["a"]))
    with pytest.raises(lk.LakekeeperError, match="dedupe to compact and analyze"):
        lk.engine_args("rollback", ["--table", "db.t"], dict(dedupe=dict(keys=["id"], order_by="v")))
    dedupe = dict(keys=["id"], order_by="v", trigger_ratio=0.05)
    argv = lk.engine_args("analyze", ["--database", "db"], dict(dedupe=dedupe))
    assert argv == ["analyze", "--database", "db", "--dedupe-keys", "id", "--dedupe-order-by", "v",
                    "--dedupe-trigger-ratio", "0.05"]


def test_engine_args_compaction_modes_and_where():
    argv = lk.engine_args(
        "compact", ["--table", "db.t"],
        dict(target_file_size_mb=256, mode="smart", min_input_files=20, fragment_ratio=0.25, min_target_ratio=0.5,
             where="dt >= '2024-09-01' AND region IN ('eu','us')"))
    assert argv == [
        "compact", "--table", "db.t", "--target-file-size", "256", "--mode", "smart", "--min-input-files", "20",
        "--fragment-ratio", "0.25", "--min-target-ratio", "0.5", "--where=dt >= '2024-09-01' AND region IN ('eu','us')"]


def test_engine_args_max_file_size():
    for command in ("analyze", "compact"):
        argv = lk.engine_args(command, ["--table", "db.t"], dict(max_file_size_mb=512.0))
        assert argv == [command, "--table", "db.t", "--max-file-size-mb", "512.0"]


def test_engine_args_where_is_one_argument_even_when_it_looks_like_a_flag():
    argv = lk.engine_args("analyze", ["--table", "db.t"], dict(where="-1 --dry-run"))
    assert argv == ["analyze", "--table", "db.t", "--where=-1 --dry-run"]
    line = lk.join_cmd(argv)
    assert line.endswith("'--where=-1 --dry-run'")


def test_engine_args_history():
    assert lk.engine_args("analyze", ["--table", "db.t"], dict(history=5)) == ["analyze", "--table", "db.t", "--history", "5"]
    assert lk.engine_args("analyze", ["--table", "db.t"], dict(history=0)) == ["analyze", "--table", "db.t", "--history", "0"]
    assert lk.engine_args("analyze", ["--table", "db.t"], dict(history=None)) == ["analyze", "--table", "db.t"]


def test_engine_args_unknown_command():
    with pytest.raises(lk.LakekeeperError):
        lk.engine_args("vacuum", ["--table", "db.t"])


# ------------------------------------------------------------ spark-submit

def reference_ss(**overrides):
    section, warnings = lk.config_spark_submit(copy.deepcopy(REFERENCE_CONFIG))
    assert not warnings
    return lk.resolve_spark_submit(lk.merge_spark_submit(overrides, section))


def test_reference_under_the_hood_example():
    section = dict(REFERENCE_CONFIG["spark_submit"])
    for key in ("executor_cores", "driver_memory", "extra_conf"):
        del section[key]
    ss = lk.resolve_spark_submit(lk.merge_spark_submit({}, section))
    argv = lk.build_command("compact", lk.selector_args(table="mydb.events"), ss, ss["script_path"],
                            spark_submit="spark-submit", result_file="/tmp/r.json")
    # the reference's command, and the application's name (default_app_name) after the deploy mode
    assert argv == UNDER_THE_HOOD[:5] + ["--name", "lakekeeper-compact-mydb.events"] + UNDER_THE_HOOD[5:] + [
        "--result-file", "/tmp/r.json"]


def test_reference_config_every_key():
    ss = reference_ss(extra_files=["/etc/hive/conf/hive-site.xml", "/etc/hbase/conf/hbase-site.xml"])
    argv = lk.build_command("compact", ["--table", "mydb.events"], ss, ss["script_path"],
                            options=dict(block_size_mb=256), config_file="/etc/lakekeeper.yaml",
                            spark_submit="/opt/spark/bin/spark-submit", python="/opt/py/bin/python3",
                            result_file="/tmp/r.json")
    assert argv == [
        "/opt/spark/bin/spark-submit", "--master", "yarn", "--deploy-mode", "client",
        "--name", "lakekeeper-compact-mydb.events", "--principal", "myuser@MY.REALM.COM", "--keytab", "/etc/security/keytabs/myuser.keytab",
        "--conf", "spark.yarn.queue=data-engineering",
        "--archives", "/opt/lakekeeper_env.tar.gz#lakekeeper_env",
        "--conf", "spark.pyspark.python=./lakekeeper_env/bin/python",
        "--executor-memory", "4g", "--num-executors", "10", "--executor-cores", "2", "--driver-memory", "2g",
        "--conf", "spark.yarn.kerberos.relogin.period=1h",
        "--conf", "spark.pyspark.driver.python=/opt/py/bin/python3",
        "--files", "/etc/hive/conf/hive-site.xml,/etc/hbase/conf/hbase-site.xml",
        "/opt/lakekeeper/run_lakekeeper.py", "compact", "--table", "mydb.events", "--block-size", "256",
        "--config-file", "/etc/lakekeeper.yaml", "--result-file", "/tmp/r.json"]


def test_spark_submit_minimal_defaults_to_yarn():
    ss = lk.resolve_spark_submit(lk.merge_spark_submit({"enabled": True}, None))
    argv = lk.build_command("analyze", ["--database", "db"], ss, "/app/run_lakekeeper.py",
                            spark_submit="spark-submit", result_file="/r")
    assert argv == ["spark-submit", "--master", "yarn", "--name", "lakekeeper-analyze-db", "/app/run_lakekeeper.py",
                    "analyze", "--database", "db", "--result-file", "/r"]


def test_spark_submit_name_proxy_user_and_extra_args():
    ss = lk.resolve_spark_submit(lk.merge_spark_submit(
        {"enabled": True, "proxy_user": "etl", "extra_args": ["--conf", "spark.x=1", "--packages", "a:b:1"]}, None))
    argv = lk.build_command("compact", ["--tables", "db.a,db.b,db.c"], ss, "/app/r.py", spark_submit="spark-submit",
                            result_file="/r", job_id="4242")
    assert argv == ["spark-submit", "--master", "yarn", "--name", "lakekeeper-compact-db.a+2-awx-4242",
                    "--proxy-user", "etl", "--conf", "spark.x=1", "--packages", "a:b:1", "/app/r.py", "compact",
                    "--tables", "db.a,db.b,db.c", "--result-file", "/r"]
    named = dict(ss, name="nightly")
    assert lk.build_command("compact", ["--table", "db.a"], named, "/app/r.py", spark_submit="s", result_file="/r",
                            job_id="1")[3:5] == ["--name", "nightly"]
    assert lk.default_app_name("rollback", ["--table", "db.t"]) == "lakekeeper-rollback-db.t"


def test_the_run_id_in_the_application_name_and_the_engine():
    run_id = lk.new_run_id(now=1700000000, token="a1b2c3")
    assert run_id == "20231114T221320-a1b2c3"
    assert re.match(r"^\d{8}T\d{6}-[0-9a-f]{6}$", lk.new_run_id())
    ss = lk.resolve_spark_submit(lk.merge_spark_submit({"enabled": True}, None))
    argv = lk.build_command("compact", ["--table", "db.a"], ss, "/app/r.py", spark_submit="spark-submit",
                            result_file="/r", job_id="4242", run_id=run_id)
    assert argv == ["spark-submit", "--master", "yarn", "--name", "lakekeeper-compact-db.a-awx-4242-" + run_id,
                    "/app/r.py", "compact", "--table", "db.a", "--new-run-id", run_id, "--result-file", "/r"]
    # a name the user gave is kept; the engine still takes the run id
    named = lk.build_command("compact", ["--table", "db.a"], dict(ss, name="nightly"), "/app/r.py",
                             spark_submit="s", result_file="/r", run_id=run_id)
    assert named[3:5] == ["--name", "nightly"] and named[-4:-2] == ["--new-run-id", run_id]
    assert lk.default_app_name("cleanup", ["--tables", "db.t"], "") == "lakekeeper-cleanup-db.t"
    for args, flag in ((["--deploy-mode", "cluster"], "--deploy-mode"), (["--name=x"], "--name"),
                       (["--files", "a"], "--files"), (["--conf", "a=b", ""], "empty")):
        with pytest.raises(lk.LakekeeperError, match=flag):
            lk.build_command("compact", ["--table", "db.a"], dict(ss, extra_args=args), "/app/r.py",
                             spark_submit="s", result_file="/r")
    # spark-submit only: ignored (and warned about) in the embedded mode
    embedded = lk.resolve_spark_submit({"name": "n", "proxy_user": "u", "extra_args": ["--verbose"]})
    assert lk.ignored_embedded_keys(embedded) == ["name", "proxy_user", "extra_args"]
    assert "--name" not in lk.build_command("compact", ["--table", "db.a"], embedded, "/app/r.py", python="py",
                                            result_file="/r")


def test_spark_submit_state_dir_and_dry_run_only_when_asked():
    ss = lk.resolve_spark_submit({"enabled": True, "master": "local[1]"})
    argv = lk.build_command("compact", ["--table", "a.b"], ss, "/app/r.py", dry_run=True, state_dir="/st",
                            spark_submit="spark-submit", result_file="/r")
    assert argv[-7:] == ["--table", "a.b", "--dry-run", "--state-dir", "/st", "--result-file", "/r"]


RUN_ID = "20261122T013000-3f9a1c"


def cluster_command(ss, **kwargs):
    kwargs.setdefault("config_file", "/etc/lakekeeper/lakekeeper.yaml")
    return lk.build_command("compact", ["--table", "mydb.events"], ss, "/opt/lakekeeper/run_lakekeeper.py",
                            spark_submit="spark-submit", result_file="/tmp/m/lakekeeper-result.json",
                            python="/usr/bin/python3.11", run_id=RUN_ID, require_metastore=True,
                            py_files="/tmp/m/lakekeeper_spark.zip", **kwargs)


def test_cluster_mode_command():
    """The driver runs in a YARN container: the engine's package (--py-files), the config file (--files, read by
    its alias), the driver's Python from the shipped archive, spark-submit waiting for the application, and the
    result written to the cluster's filesystem (--result-uri) instead of a local file; the edge node's python is
    not the driver's."""
    ss = reference_ss(deploy_mode="cluster", extra_files=["/etc/hive/conf/hive-site.xml"])
    argv = cluster_command(ss)
    assert argv == [
        "spark-submit", "--master", "yarn", "--deploy-mode", "cluster",
        "--name", "lakekeeper-compact-mydb.events-" + RUN_ID,
        "--principal", "myuser@MY.REALM.COM", "--keytab", "/etc/security/keytabs/myuser.keytab",
        "--conf", "spark.yarn.queue=data-engineering", "--archives", "/opt/lakekeeper_env.tar.gz#lakekeeper_env",
        "--conf", "spark.pyspark.python=./lakekeeper_env/bin/python",
        "--conf", "spark.yarn.appMasterEnv.PYSPARK_PYTHON=./lakekeeper_env/bin/python",
        "--executor-memory", "4g", "--num-executors", "10", "--executor-cores", "2", "--driver-memory", "2g",
        "--conf", "spark.yarn.kerberos.relogin.period=1h",
        "--files", "/etc/hive/conf/hive-site.xml,/etc/lakekeeper/lakekeeper.yaml#lakekeeper-config.yaml",
        "--py-files", "/tmp/m/lakekeeper_spark.zip", "--conf", "spark.yarn.submit.waitAppCompletion=true",
        "/opt/lakekeeper/run_lakekeeper.py", "compact", "--table", "mydb.events",
        "--result-uri", ".lakekeeper/results/%s.json" % RUN_ID, "--config-file", "lakekeeper-config.yaml",
        "--new-run-id", RUN_ID, "--require-metastore"]
    # the same in client mode: the local result file, the driver's python, the config file by its path
    client = cluster_command(reference_ss(extra_files=["/etc/hive/conf/hive-site.xml"]))
    assert "--py-files" not in client and "--result-uri" not in client
    assert client[-7:] == ["--config-file", "/etc/lakekeeper/lakekeeper.yaml", "--new-run-id", RUN_ID,
                           "--require-metastore", "--result-file", "/tmp/m/lakekeeper-result.json"]
    assert "spark.pyspark.driver.python=/usr/bin/python3.11" in client
    assert "--files" in client and client[client.index("--files") + 1] == "/etc/hive/conf/hive-site.xml"
    # a result directory of one's own; without a config file no --files alias, without python_env no AM python
    argv = cluster_command(dict(reference_ss(deploy_mode="cluster", result_dir="hdfs://nn1/tmp/lk/"), python_env=None),
                           config_file=None)
    assert argv[argv.index("--result-uri") + 1] == "hdfs://nn1/tmp/lk/%s.json" % RUN_ID
    assert "--files" not in argv and "--config-file" not in argv
    assert not [a for a in argv if "PYSPARK_PYTHON" in a or "spark.pyspark" in a]
    with pytest.raises(lk.LakekeeperError, match="needs the engine's package"):
        lk.build_command("compact", ["--table", "a.b"], reference_ss(deploy_mode="cluster"), "/r.py",
                         spark_submit="spark-submit", run_id=RUN_ID)


@pytest.mark.parametrize("how", [
    {"extra_conf": {"spark.submit.deployMode": "cluster"}},
    {"extra_args": ["--conf", "spark.submit.deployMode=cluster"]},
    {"extra_args": ["--conf=spark.submit.deployMode=cluster"]},
])
def test_cluster_mode_through_a_spark_property(how):
    ss = dict(reference_ss(**how), deploy_mode=None)
    assert lk.deploy_mode(ss) == "cluster"
    argv = cluster_command(ss)
    assert "--deploy-mode" not in argv and "--result-uri" in argv and "--py-files" in argv


def test_deploy_mode_as_spark_submit_decides_it():
    ss = dict(reference_ss(), deploy_mode=None)
    assert lk.deploy_mode(ss) == "client"
    assert lk.deploy_mode(ss, {"spark.submit.deployMode": "cluster"}) == "cluster"  # spark-defaults.conf
    conf = dict(reference_ss(extra_conf={"spark.submit.deployMode": "client"}), deploy_mode=None)
    assert lk.deploy_mode(conf, {"spark.submit.deployMode": "cluster"}) == "client"  # extra_conf over the defaults
    args = dict(conf, extra_args=["--conf", "spark.submit.deployMode=cluster"])
    assert lk.deploy_mode(args) == "cluster"  # extra_args come last on the command line
    assert lk.deploy_mode(dict(args, deploy_mode="client")) == "client"  # --deploy-mode over any property
    assert lk.deploy_mode(dict(args, enabled=False)) == "client"  # the embedded engine
    with pytest.raises(lk.LakekeeperError, match="client or cluster"):
        lk.deploy_mode(dict(reference_ss(extra_conf={"spark.submit.deployMode": "remote"}), deploy_mode=None))


@pytest.mark.parametrize("ss, kwargs, defaults, message", [
    (dict(master="local[2]"), {}, None, "master must be yarn, got local"),
    ({}, dict(progress_file="/tmp/p.jsonl"), None, "progress_file is a file on the host that runs the driver"),
    ({}, dict(state_dir="/var/lib/lk"), None, "state_dir is an embedded catalog"),
    (dict(extra_conf={"spark.yarn.submit.waitAppCompletion": "false"}), {}, None, "waitAppCompletion=false"),
    ({}, {}, {"spark.yarn.submit.waitAppCompletion": "false"}, "waitAppCompletion=false"),
    (dict(extra_args=["--py-files", "x.zip"]), {}, None, "extra_args --py-files"),
    (dict(extra_args=["--py-files=x.zip"]), {}, None, "extra_args --py-files"),
])
def test_cluster_mode_refuses_what_would_not_reach_its_driver(ss, kwargs, defaults, message):
    ss = reference_ss(deploy_mode="cluster", **ss)
    with pytest.raises(lk.LakekeeperError, match=re.escape(message)):
        lk.check_cluster_mode(ss, defaults=defaults, **kwargs)
    if defaults is None:  # build_command checks the same (progress_file is an engine option there)
        options = {"progress_file": kwargs["progress_file"]} if "progress_file" in kwargs else None
        with pytest.raises(lk.LakekeeperError, match=re.escape(message)):
            cluster_command(ss, options=options, state_dir=kwargs.get("state_dir"))
    lk.check_cluster_mode(reference_ss(deploy_mode="cluster"))  # the reference settings are fine


def test_result_uri():
    assert lk.result_uri(None, RUN_ID) == ".lakekeeper/results/%s.json" % RUN_ID
    assert lk.result_uri("hdfs://ns1/user/etl/lk//", RUN_ID) == "hdfs://ns1/user/etl/lk/%s.json" % RUN_ID
    with pytest.raises(lk.LakekeeperError):
        lk.result_uri(None, None)


def test_embedded_command():
    ss = lk.resolve_spark_submit(lk.merge_spark_submit({"extra_conf": {"spark.ui.enabled": False}}, None))
    assert ss["enabled"] is False and ss["master"] == "local[*]"
    argv = lk.build_command("rollback", ["--table", "db.t"], ss, "/c/app-1/run_lakekeeper.py",
                            options=dict(backup_prefix="__bkp"), dry_run=True, state_dir="/var/lk",
                            python="/usr/bin/python3", result_file="/tmp/r.json")
    assert argv == ["/usr/bin/python3", "/c/app-1/run_lakekeeper.py", "rollback", "--table", "db.t",
                    "--backup-prefix", "__bkp", "--dry-run", "--state-dir", "/var/lk", "--master", "local[*]",
                    "--conf", "spark.ui.enabled=false", "--result-file", "/tmp/r.json"]


def test_embedded_default_state_dir_is_expanded(monkeypatch):
    monkeypatch.setenv("HOME", "/home/lk")
    ss = lk.resolve_spark_submit({})
    argv = lk.build_command("analyze", ["--table", "db.t"], ss, "/a.py", python="python3")
    assert argv[argv.index("--state-dir") + 1] == "/home/lk/.lakekeeper/state"


def test_embedded_needs_python():
    with pytest.raises(lk.LakekeeperError):
        lk.build_command("analyze", ["--table", "db.t"], lk.resolve_spark_submit({}), "/a.py")


def test_ignored_embedded_keys():
    assert lk.ignored_embedded_keys(lk.resolve_spark_submit({"queue": "q", "master": "local[1]"})) == ["queue"]
    assert lk.ignored_embedded_keys(reference_ss()) == []
    assert lk.ignored_embedded_keys(reference_ss(enabled=False)) == [
        "deploy_mode", "principal", "keytab", "queue", "archives", "python_env", "executor_memory",
        "num_executors", "executor_cores", "driver_memory"]


# ---------------------------------------------------------- config merging

class TestMerge:
    def test_module_keys_win(self):
        config = REFERENCE_CONFIG["spark_submit"]
        merged = lk.merge_spark_submit({"queue": "urgent", "num_executors": 2, "principal": None}, config)
        assert merged["queue"] == "urgent"
        assert merged["num_executors"] == 2
        assert merged["principal"] == "myuser@MY.REALM.COM"  # None in the module does not override
        assert merged["enabled"] is True

    def test_extra_conf_merged_key_by_key(self):
        merged = lk.merge_spark_submit(
            {"extra_conf": {"spark.yarn.kerberos.relogin.period": "30m", "spark.sql.shuffle.partitions": "8"}},
            {"extra_conf": {"spark.yarn.kerberos.relogin.period": "1h", "spark.executor.memoryOverhead": "1g"}})
        assert merged["extra_conf"] == {"spark.yarn.kerberos.relogin.period": "30m",
                                        "spark.executor.memoryOverhead": "1g",
                                        "spark.sql.shuffle.partitions": "8"}

    def test_extra_files_replaced(self):
        merged = lk.merge_spark_submit({"extra_files": ["/b"]}, {"extra_files": ["/a"]})
        assert merged["extra_files"] == ["/b"]

    def test_config_does_not_change_inputs(self):
        config = {"extra_conf": {"a": "1"}}
        lk.merge_spark_submit({"extra_conf": {"b": "2"}}, config)
        assert config == {"extra_conf": {"a": "1"}}

    def test_enabled_false_in_module_wins(self):
        ss = reference_ss(enabled=False)
        assert ss["enabled"] is False
        assert ss["master"] == "yarn"  # set explicitly by the config

    def test_master_default_follows_enabled(self):
        assert lk.resolve_spark_submit({"enabled": True})["master"] == "yarn"
        assert lk.resolve_spark_submit({"enabled": False})["master"] == "local[*]"
        assert lk.resolve_spark_submit({})["master"] == "local[*]"

    def test_config_section_unknown_keys_warned(self):
        section, warnings = lk.config_spark_submit({"spark_submit": {"enabled": "yes", "bogus": 1}})
        assert section == {"enabled": "yes"}
        assert warnings == ["config file: unknown spark_submit keys ignored: bogus"]
        assert lk.resolve_spark_submit(section)["enabled"] is True

    def test_config_without_section(self):
        assert lk.config_spark_submit({"block_size_mb": 1}) == ({}, [])
        assert lk.config_spark_submit(None) == ({}, [])

    @pytest.mark.parametrize("config", [[1, 2], "text", {"spark_submit": ["x"]}])
    def test_config_must_be_mappings(self, config):
        with pytest.raises(lk.LakekeeperError, match="mapping"):
            lk.config_spark_submit(config)

    def test_types_from_yaml_normalized(self):
        ss = lk.resolve_spark_submit({"enabled": "true", "num_executors": "10", "extra_files": "a.xml, b.xml",
                                      "extra_conf": {1: 2}})
        assert ss["enabled"] is True and ss["num_executors"] == 10
        assert ss["extra_files"] == ["a.xml", "b.xml"]
        assert ss["extra_conf"] == {"1": 2}

    @pytest.mark.parametrize("section, match", [
        ({"enabled": "maybe"}, "boolean"),
        ({"num_executors": "ten"}, "integer"),
        ({"extra_conf": ["a=b"]}, "mapping"),
        ({"extra_files": 3}, "list"),
        ({"deploy_mode": "remote"}, "client"),
    ])
    def test_bad_types(self, section, match):
        with pytest.raises(lk.LakekeeperError, match=match):
            lk.resolve_spark_submit(section)


# ------------------------------------------------------- the driver's Python

class TestDriverPython:
    """The Python a client-mode driver runs, as spark-submit picks it (PythonRunner)."""

    def test_python_env_alone_is_the_drivers_too(self):
        # the reference configuration without the python option: the driver would run the archive's path
        ss = reference_ss()
        assert lk.client_driver_python(ss) == ("./lakekeeper_env/bin/python", "spark_submit.python_env")
        found = lk.archive_driver_python(ss)
        assert found == ("./lakekeeper_env/bin/python", "spark_submit.python_env")
        msg = lk.archive_driver_python_message(*found, archives=ss["archives"])
        assert "inside the archive /opt/lakekeeper_env.tar.gz#lakekeeper_env" in msg
        assert "Set the python option" in msg and "client mode" in msg

    def test_the_python_option_wins(self):
        ss = reference_ss()
        assert lk.client_driver_python(ss, "/usr/bin/python3.11") == ("/usr/bin/python3.11", "python")
        assert lk.archive_driver_python(ss, "/usr/bin/python3.11") is None
        assert lk.archive_driver_python(ss, "python3.11") is None  # looked up on PATH

    @pytest.mark.parametrize("ss_extra, python, defaults, environ, expected", [
        # spark.pyspark.driver.python: extra_conf, then the python option's flag, then extra_args (last --conf wins)
        (dict(extra_conf={"spark.pyspark.driver.python": "/a/py"}), None, None, None,
         ("/a/py", "spark_submit.extra_conf spark.pyspark.driver.python")),
        (dict(extra_conf={"spark.pyspark.driver.python": "/a/py"}), "/b/py", None, None, ("/b/py", "python")),
        (dict(extra_args=["--conf", "spark.pyspark.driver.python=/c/py"]), "/b/py", None, None,
         ("/c/py", "spark_submit.extra_args --conf spark.pyspark.driver.python")),
        # spark-defaults.conf's driver key beats every spark.pyspark.python
        (dict(), None, {"spark.pyspark.driver.python": "/d/py"}, None,
         ("/d/py", "spark-defaults.conf spark.pyspark.driver.python")),
        # spark.pyspark.python: python_env's flag, then extra_conf
        (dict(extra_conf={"spark.pyspark.python": "./other/bin/python"}), None, None, None,
         ("./other/bin/python", "spark_submit.extra_conf spark.pyspark.python")),
        # then the environment
        (dict(python_env=None), None, None, {"PYSPARK_PYTHON": "/e/py", "PYSPARK_DRIVER_PYTHON": "/f/py"},
         ("/f/py", "environment PYSPARK_DRIVER_PYTHON")),
        (dict(python_env=None), None, {"spark.pyspark.python": "/g/py"}, {"PYSPARK_DRIVER_PYTHON": "/f/py"},
         ("/g/py", "spark-defaults.conf spark.pyspark.python")),
        (dict(python_env=None), None, None, None, ("python3", "Spark's default")),
    ])
    def test_precedence(self, ss_extra, python, defaults, environ, expected):
        ss = reference_ss()
        ss.update(ss_extra)
        assert lk.client_driver_python(ss, python, defaults, environ) == expected

    def test_embedded_mode_is_not_checked(self):
        ss = lk.resolve_spark_submit({"python_env": "./lakekeeper_env/bin/python"})
        assert lk.archive_driver_python(ss) is None


# ----------------------------------------------------------------- masking

class TestMasking:
    @pytest.mark.parametrize("key", [
        "spark.hadoop.fs.s3a.secret.key", "spark.hadoop.fs.s3a.access.key", "spark.ssl.keyPassword",
        "spark.ssl.trustStorePassword", "spark.authenticate.secret", "spark.hadoop.javax.jdo.option.ConnectionPassword",
        "spark.some.api_key", "spark.hadoop.oauth.token", "spark.hadoop.credential.provider.path", "DB_PASSWD",
        "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"])
    def test_secret_keys(self, key):
        assert lk.is_secret_key(key)

    @pytest.mark.parametrize("key", [
        "spark.yarn.keytab", "spark.kerberos.keytab", "spark.yarn.principal", "spark.yarn.queue",
        "spark.yarn.kerberos.relogin.period", "spark.pyspark.python", "KRB5CCNAME", "spark.executor.memory",
        "spark.io.encryption.keySizeBits"])
    def test_not_secret_keys(self, key):
        assert not lk.is_secret_key(key)

    def test_mask_argv(self):
        argv = ["spark-submit", "--conf", "spark.hadoop.fs.s3a.secret.key=abc=def", "--conf",
                "spark.ssl.keyPassword=hunter22", "--conf", "spark.yarn.kerberos.relogin.period=1h",
                "--keytab", "/etc/security/keytabs/myuser.keytab"]
        masked = lk.mask_argv(argv)
        assert "spark.hadoop.fs.s3a.secret.key=********" in masked
        assert "spark.ssl.keyPassword=********" in masked
        assert "spark.yarn.kerberos.relogin.period=1h" in masked
        assert "/etc/security/keytabs/myuser.keytab" in masked  # a path, not a secret
        assert "hunter22" not in " ".join(masked) and "abc=def" not in " ".join(masked)
        assert len(masked) == len(argv)
        assert "spark.ssl.keyPassword=hunter22" in argv  # the real argv is untouched

    @pytest.mark.parametrize("version, loads_defaults", [
        ("4.3.0", True), ("4.0.0-preview2", True), ("3.5.8", False), ("3.3.4", False), (None, False)])
    def test_secret_conf_goes_to_a_properties_file_with_spark_submit(self, version, loads_defaults):
        ss = reference_ss(extra_conf={"spark.hadoop.fs.s3a.secret.key": "abc=def",
                                      "spark.ssl.keyPassword": "hunter22"})
        argv = lk.build_command("compact", ["--table", "a.b"], ss, "/app/r.py", spark_submit="spark-submit",
                                result_file="/tmp/mod/lakekeeper-result.json", spark_version=version)
        text = " ".join(argv)
        assert "hunter22" not in text and "abc=def" not in text and "keyPassword" not in text
        assert "spark.yarn.kerberos.relogin.period=1h" in argv  # public conf stays a flag
        i = argv.index("--properties-file")
        assert argv[i + 1] == "/tmp/mod/lakekeeper-secret.properties"
        # --load-spark-defaults only exists from Spark 4.0 ("Unrecognized option" on 3.x; unknown: not given,
        # the module copies spark-defaults.conf into the file instead)
        assert ("--load-spark-defaults" in argv) is loads_defaults
        if loads_defaults:
            assert argv[i + 2] == "--load-spark-defaults"
        assert i < argv.index("/app/r.py")  # a spark-submit flag, before the script
        assert lk.properties_text(lk.split_conf(ss["extra_conf"])[1]) == (
            "spark.hadoop.fs.s3a.secret.key=abc\\=def\nspark.ssl.keyPassword=hunter22\n")

    def test_no_secret_no_properties_file_on_any_line(self):
        for version in ("3.3.4", "4.3.0", None):
            argv = lk.build_command("compact", ["--table", "a.b"], reference_ss(), "/app/r.py",
                                    spark_submit="spark-submit", result_file="/t/r.json", spark_version=version)
            assert "--properties-file" not in argv and "--load-spark-defaults" not in argv

    @pytest.mark.parametrize("version, line", [
        ("3.3.4", (3, 3)), ("3.5.8", (3, 5)), ("4.0.0-preview1", (4, 0)), ("4.3", (4, 3)), ("10.1.0", (10, 1)),
        ("", None), (None, None), ("x.y", None), ("35", None)])
    def test_spark_line(self, version, line):
        assert lk.spark_line(version) == line
        assert lk.loads_spark_defaults(version) is bool(line and line >= (4, 0))

    def test_banner_version(self):
        banner = ("Welcome to\n      ____              __\n     / __/__  ___ _____/ /__\n"
                  "    _\\ \\/ _ \\/ _ `/ __/  '_/\n   /___/ .__/\\_,_/_/ /_/\\_\\   version 3.5.8\n      /_/\n\n"
                  "Using Scala version 2.12.18, OpenJDK 64-Bit Server VM, 17.0.15\nBranch HEAD\n")
        assert lk.banner_version(banner) == "3.5.8"
        assert lk.banner_version("Using Scala version 2.13.16, OpenJDK") is None
        assert lk.banner_version("") is None and lk.banner_version(None) is None

    def test_secret_properties_text_after_the_cluster_defaults(self):
        secret = {"spark.hadoop.fs.s3a.secret.key": "abc=def"}
        assert lk.secret_properties_text(secret) == lk.properties_text(secret)  # Spark 4: the secrets alone
        defaults = "# cluster\nspark.eventLog.enabled true\nspark.hadoop.fs.s3a.secret.key old"
        text = lk.secret_properties_text(secret, defaults)
        # the defaults as they are, then the secret keys (the last of a key given twice wins, as in Java)
        assert text.startswith(defaults + "\n\n")
        assert text.endswith("spark.hadoop.fs.s3a.secret.key=abc\\=def\n")
        # a last defaults line continued with a backslash ends at the blank line, before the secrets
        assert lk.secret_properties_text(secret, "a.b c\\\n").startswith("a.b c\\\n\n#")
        assert lk.secret_properties_text(secret, "") == "\n# lakekeeper: secret extra_conf\n" + lk.properties_text(secret)

    def test_secret_conf_goes_to_a_properties_file_embedded(self):
        ss = lk.resolve_spark_submit({"extra_conf": {"spark.authenticate.secret": "s3cr3t", "spark.ui.enabled": "false"}})
        argv = lk.build_command("analyze", ["--table", "a.b"], ss, "/a.py", python="py", state_dir="/s",
                                result_file="/t/r.json")
        assert "s3cr3t" not in " ".join(argv) and "spark.ui.enabled=false" in argv
        assert argv[argv.index("--properties-file") + 1] == "/t/lakekeeper-secret.properties"
        assert "--load-spark-defaults" not in argv  # an engine option there

    def test_secret_conf_needs_a_private_directory(self):
        ss = lk.resolve_spark_submit({"extra_conf": {"spark.authenticate.secret": "s3cr3t"}})
        with pytest.raises(lk.LakekeeperError, match="private directory"):
            lk.build_command("analyze", ["--table", "a.b"], ss, "/a.py", python="py", state_dir="/s")

    @pytest.mark.parametrize("value", ["plain", " lead", "a=b:c#d!e", "back\\slash", "new\nline\ttab",
                                       "caf\u00e9", "\U0001f600"])
    def test_properties_text_escapes(self, value):
        text = lk.properties_text({"k.secret": value})
        assert text.count("\n") == 1 and text.startswith("k.secret=")
        assert all(32 <= ord(c) < 127 for c in text.rstrip("\n"))

    def test_mask_only_conf_values(self):
        argv = ["spark-submit", "--principal", "token@REALM", "--conf", "spark.x.token=", "password=x"]
        assert lk.mask_argv(argv) == argv

    def test_secret_values(self):
        ss = lk.resolve_spark_submit({"extra_conf": {"spark.ssl.keyPassword": "hunter22", "spark.a.secret": "true",
                                                     "spark.yarn.queue": "q1234"}})
        env = {"AWS_SECRET_ACCESS_KEY": "AKIA/xyz", "KRB5CCNAME": "/tmp/krb5cc"}
        assert lk.secret_values(ss, env) == {"hunter22", "AKIA/xyz"}

    def test_join_cmd_quotes(self):
        assert lk.join_cmd(["python3", "r.py", "--master", "local[*]"]) == "python3 r.py --master 'local[*]'"


# ------------------------------------------------------------------ result

class TestParseResult:
    def test_result_file_preferred(self):
        doc = rs.parse_result('{"command": "other", "tables": []}', json.dumps(CONTRACT_RESULT))
        assert doc == CONTRACT_RESULT

    def test_stdout_when_no_file(self):
        assert rs.parse_result(json.dumps(CONTRACT_RESULT), None) == CONTRACT_RESULT

    def test_stdout_pretty_printed_with_stray_lines(self):
        stdout = "WARNING: something\nmore noise {not json}\n" + json.dumps(CONTRACT_RESULT, indent=2) + "\n"
        assert rs.parse_result(stdout, "") == CONTRACT_RESULT

    @pytest.mark.parametrize("stdout", [None, "", "usage: run_lakekeeper.py ...", "[1, 2]", '{"unrelated": 1}\nx'])
    def test_no_document(self, stdout):
        assert rs.parse_result(stdout, None) is None

    def test_application_id(self):
        stderr = "INFO Client: Submitted application application_1732240000000_0042\nINFO ..."
        assert rs.find_application_id(stderr) == "application_1732240000000_0042"
        assert rs.find_application_id("", None, "no id") is None
        # a driver whose context was started once more (session.py: its UI's pages failed) submitted two
        retried = stderr + "\nINFO Client: Submitted application application_1732240000000_0043\n" \
            "INFO Client: Application report for application_1732240000000_0043 (state: RUNNING)"
        assert rs.find_application_id(retried) == "application_1732240000000_0043"
        assert rs.find_application_id(stderr, "", None) == "application_1732240000000_0042"

    def test_tail_lines(self):
        assert rs.tail_lines("\n".join(str(i) for i in range(100)), 3) == ["97", "98", "99"]
        assert rs.tail_lines(None) == []


class TestChanged:
    def test_compacted(self):
        assert rs.did_change(CONTRACT_RESULT) is True
        assert rs.is_failed(CONTRACT_RESULT, 0) is False

    def test_second_run_unchanged(self):
        doc = copy.deepcopy(CONTRACT_RESULT)
        doc["changed"] = False
        doc["tables"][0].update(status="skipped", changed=False, would_change=False)
        assert rs.did_change(doc) is False
        assert rs.would_change(doc) is False

    def test_dry_run_would_change(self):
        doc = dry_run_result()
        assert rs.did_change(doc) is False
        assert rs.would_change(doc) is True

    def test_would_change_without_the_field(self):
        doc = dry_run_result()
        del doc["tables"][0]["would_change"]
        assert rs.would_change(doc) is True
        doc["tables"][0]["status"] = "skipped"
        assert rs.would_change(doc) is False

    def test_failures(self):
        doc = copy.deepcopy(CONTRACT_RESULT)
        assert rs.is_failed(doc, 1) is True
        doc["failed"] = True
        assert rs.is_failed(doc, 0) is True
        doc = copy.deepcopy(CONTRACT_RESULT)
        doc["tables"][0]["status"] = "refused"  # reported, not a failure (docs/statuses.md) ...
        assert rs.is_failed(doc, 0) is False
        assert rs.is_failed(doc, 0, fail_on_refused=True) is True  # ... unless asked
        for status in ("not_needed", "skipped", "locked"):
            doc["tables"][0]["status"] = status
            assert rs.is_failed(doc, 0, fail_on_refused=True) is False, status


class TestDiff:
    def test_compacted(self):
        assert rs.build_diff(CONTRACT_RESULT) == {
            "before": {"db.events": {"files": 503, "partitions": {"year=2024/month=01": 500, "year=2024/month=02": 3}}},
            "after": {"db.events": {"files": 5, "partitions": {"year=2024/month=01": 2, "year=2024/month=02": 3}}},
        }

    def test_dry_run_uses_target_files(self):
        diff = rs.build_diff(dry_run_result(), dry_run=True)
        assert diff["after"]["db.events"]["partitions"]["year=2024/month=01"] == 2
        assert diff["before"]["db.events"]["files"] == 503

    def test_dry_run_files_after_still_on_disk(self):
        doc = dry_run_result()
        doc["tables"][0]["partitions"][0]["files_after"] = 500  # what the engine reports: nothing changed
        diff = rs.build_diff(doc, dry_run=True)
        expected = {"files": 5, "partitions": {"year=2024/month=01": 2, "year=2024/month=02": 3}}
        assert diff["after"]["db.events"] == expected
        assert rs.build_diff(doc)["after"]["db.events"]["files"] == 503  # not a dry run: as reported

    def test_non_partitioned_and_tables_without_partitions(self):
        doc = {"tables": [
            {"table": "db.flat", "status": "compacted",
             "partitions": [{"spec": "", "files_before": 60, "files_after": 1}]},
            {"table": "db.gone", "status": "cleaned"},
        ]}
        assert rs.build_diff(doc) == {"before": {"db.flat": {"files": 60, "partitions": {"": 60}}},
                                      "after": {"db.flat": {"files": 1, "partitions": {"": 1}}}}

    def test_cleanup_shows_the_backups_it_drops(self):
        removed = [{"backup_table": "db.__bkp_t_2", "run_id": "r2", "bytes": 10, "verdict": "delete"},
                   {"backup_table": "db.__bkp_t_1", "run_id": "r1", "bytes": 20, "verdict": "delete"}]
        kept = [{"backup_table": "db.__bkp_t_3", "run_id": "r3", "verdict": "keep", "reason": "pinned"}]
        doc = {"tables": [
            {"table": "db.t", "status": "planned", "backups_removed": removed, "kept": kept},
            {"table": "db.u", "status": "skipped", "backups_removed": [], "kept": [], "reason": "no backups"},
            {"table": "db.v", "status": "skipped", "backups_removed": [], "kept": kept[:1]},
        ]}
        for dry_run in (True, False):  # check mode: what the cleanup would drop
            assert rs.build_diff(doc, dry_run=dry_run) == {
                "before": {"db.t": {"backups": ["db.__bkp_t_1", "db.__bkp_t_2", "db.__bkp_t_3"]},
                           "db.v": {"backups": ["db.__bkp_t_3"]}},
                "after": {"db.t": {"backups": ["db.__bkp_t_3"]}, "db.v": {"backups": ["db.__bkp_t_3"]}}}


class TestFailureMessage:
    def test_per_table_reason_and_what_was_left(self):
        doc = copy.deepcopy(CONTRACT_RESULT)
        doc.update(failed=True, msg="0 tables compacted, 0 skipped, 2 failed")
        doc["tables"][0].update(status="failed", reason="row count mismatch (10 != 9); rolled back",
                                left_in_place=["hdfs://nn/warehouse/db/events__old_1"])
        doc["tables"].append({"table": "db.users", "status": "refused", "reason": "MANAGED table"})
        doc["tables"].append({"table": "db.fine", "status": "skipped", "reason": "nothing to do"})
        msg = rs.failure_message("compact", doc, 1)
        assert msg == (
            "lakekeeper compact failed (rc=1): 0 tables compacted, 0 skipped, 2 failed -- "
            "db.events: failed: row count mismatch (10 != 9); rolled back (left in place: backup table "
            "db.__bkp_events_20261122_013000, hdfs://nn/warehouse/db/events__old_1); "
            "db.users: refused: MANAGED table")
        assert "\n" not in msg

    def test_could_not_start(self):
        doc = {"command": "compact", "failed": True, "changed": False, "tables": [],
               "msg": "cannot start Spark:\n java not found"}
        assert rs.failure_message("compact", doc, 3) == (
            "lakekeeper compact failed (rc=3): cannot start Spark: java not found")

    def test_no_document(self):
        assert rs.failure_message("analyze", None, 2) == (
            "lakekeeper analyze failed (rc=2): the engine printed no JSON result")


def test_a_deadline_duration_counts_from_the_module_start():
    now = 1795654800.0  # 2026-11-26T01:00:00Z
    assert lk.absolute_deadline("2h", now) == "2026-11-26T03:00:00Z"
    assert lk.absolute_deadline(" 90M ", now) == "2026-11-26T02:30:00Z"
    assert lk.absolute_deadline("05:30", now) == "05:30"  # a time of day: the engine's to place
    assert lk.absolute_deadline("2026-11-26T05:30:00Z", now) == "2026-11-26T05:30:00Z"


def test_engine_args_analyze_first():
    first = {"analysis_file": "/t/a.json", "go_file": "/t/g.json", "timeout": 90, "history": 3}
    argv = lk.engine_args("compact", ["--database", "db"], {"analyze_first": first, "mode": "minor"})
    assert argv == ["compact", "--database", "db", "--mode", "minor", "--analysis-file", "/t/a.json",
                    "--go-file", "/t/g.json", "--go-timeout", "90.0", "--history", "3"]
    assert lk.handoff_args("compact", dict(first, timeout=None, history=None)) == \
        ["--analysis-file", "/t/a.json", "--go-file", "/t/g.json"]
    assert lk.handoff_args("compact", None) == []
    for command, value, dry_run, why in [
        ("analyze", first, False, "only applies to compact"),
        ("compact", first, True, "not for check mode"),
        ("compact", dict(first, go_file=None), False, "needs analysis_file and go_file"),
        ("compact", dict(first, go_file="/t/a.json"), False, "two files"),
        ("compact", dict(first, timeout=0), False, "greater than 0"),
        ("compact", dict(first, timeout=True), False, "greater than 0"),
    ]:
        with pytest.raises(lk.LakekeeperError, match=why):
            lk.handoff_args(command, value, dry_run)


def test_cluster_mode_hands_over_on_the_clusters_filesystem():
    """The driver in a YARN container gets the hand-over's files beside the result on the cluster (the module
    relays them to and from the edge node's analysis_file and go_file); a client-mode driver gets those."""
    first = {"analysis_file": "/tmp/lk/a.json", "go_file": "/tmp/lk/g.json", "timeout": 600}
    argv = cluster_command(reference_ss(deploy_mode="cluster"), options={"analyze_first": first})
    assert argv[argv.index("--analysis-file"):argv.index("--go-timeout") + 2] == [
        "--analysis-file", ".lakekeeper/results/%s.analysis.json" % RUN_ID,
        "--go-file", ".lakekeeper/results/%s.go.json" % RUN_ID, "--go-timeout", "600.0"]
    assert argv[argv.index("--result-uri") + 1] == ".lakekeeper/results/%s.json" % RUN_ID
    assert lk.handoff_uris("hdfs://nn1/tmp/lk/", RUN_ID) == ("hdfs://nn1/tmp/lk/%s.analysis.json" % RUN_ID,
                                                             "hdfs://nn1/tmp/lk/%s.go.json" % RUN_ID)
    client = cluster_command(reference_ss(), options={"analyze_first": first})
    assert client[client.index("--analysis-file"):client.index("--go-file") + 2] == [
        "--analysis-file", "/tmp/lk/a.json", "--go-file", "/tmp/lk/g.json"]


def test_module_fields_of_an_analysis_document():
    doc = {"command": "analyze", "run_id": "R1", "changed": False, "failed": False, "msg": "analyze: 1 analyzed",
           "catalog": {"kind": "embedded", "state_dir": "/s", "reason": "r"}, "runtime": {"spark": "3.5.1"},
           "tables": [{"table": "db.a", "status": "analyzed", "needs_compaction": True, "would_change": False}, "x"]}
    out = rs.module_fields(doc, writes=False)
    assert out == {"tables": [doc["tables"][0]], "run_id": "R1", "catalog": {"kind": "embedded"},
                   "runtime": {"spark": "3.5.1"}, "changed": False}
    handoff = {"outcome": "go", "tables": ["db.a"]}
    assert rs.module_fields(dict(doc, handoff=handoff))["handoff"] == handoff
