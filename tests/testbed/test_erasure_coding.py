"""Erasure coding on the test bed's Hadoop 3.5 NameNode (3 DataNodes,
XOR-2-1-1024k enabled; skipped on the Hadoop 2.7 bed, which has none).

Tables made as a real cluster gets them (apps/ec_tables.py, spark-submit):
partitioned EXTERNAL Parquet tables through the Metastore, an admin giving
a directory its policy (setErasureCodingPolicy) before data lands, files
written by Spark:

* ``part_ec``: a replicated table directory, partition dt=2 XOR-2-1: its
  staging, written next to it, would inherit replication; it is created
  with XOR-2-1 instead, and verification checks each new file's policy;
* ``table_ec``: the table directory XOR-2-1 (dt=1, dt=2 inherit: nothing to
  do but check), dt=3 under the replication policy (its staging is given
  it); the journal directory ``.lakekeeper`` inherits XOR-2-1 and is given
  the replication policy (an erasure coded stream cannot be synced);
* ``wrong``: as part_ec, the staging given the wrong policy by a fault hook
  (``wrong_staging_ec@db.table``): verification must fail, nothing swapped;
* ``disabled``: dt=2 under RS-3-2-1024k, which was disabled since: refused;
* ``crash``: an XOR-2-1 table whose compaction is killed after its first
  move in (parking: the others finish first): its journal is readable and
  ``recover`` finishes it;
* ``tiered``: tiering (``lakekeeper.tier.older_than=30d``, XOR-2-1 and the
  storage policy ALL_SSD - HDFS gives an erasure coded file only HOT, COLD
  or ALL_SSD (it read WARM as HOT here: the engine's check failed the
  unit, which the settings now refuse); the bed's DataNodes have DISK only:
  COLD (ARCHIVE, no fallback) could not be written, ALL_SSD falls back to
  DISK for new blocks, so the policy is asserted as set on the directory and
  on every new file, not the blocks' storage): a replicated table
  (replication 3, as a real cluster writes) whose partition written 90 days
  ago is compacted into an erasure coded ALL_SSD directory (each new file's
  policies read back, the space consumed smaller), the one written
  yesterday as before; the rollback restores the original replicated
  directory;
* ``tier_bad``: a tiering storage policy the NameNode does not have
  (FROZEN): refused ``tier_policy_unknown`` before anything is written.

One engine spark-submit compacts all seven; one plain-python process
(apps/ec_check.py) reads rows, policies and journals back (and shows the
append log's behaviour in an erasure coded directory); then ``recover``,
``rollback`` and a last read-back.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from engine_submit import APP, app_python, submit_engine  # pylint: disable=import-error

ROOT = Path(__file__).resolve().parents[2]
APPS = ROOT / "tests" / "testbed" / "apps"
DB, DIR = "lk_ec", "/lk-ec"
XOR = "XOR-2-1-1024k"

pytestmark = pytest.mark.testbed


def _result(proc) -> dict:
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-4000:])
    line = next(x for x in reversed(proc.stdout.splitlines()) if x.startswith("RESULT "))
    return json.loads(line.split("RESULT ", 1)[1])


def _check(testbed, probe: bool = False) -> dict:
    return _result(testbed.run_python(APPS / "ec_check.py", str(ROOT / "spark_app"), DB, DIR,
                                      "probe" if probe else "-", timeout=900))


def test_erasure_coded_partitions_tables_and_journals(testbed, tmp_path):
    if not testbed.ec_policies:
        pytest.skip("this test bed's NameNode has no erasure coding (the Hadoop 2.7 bed)")
    started = time.time()
    made = _result(testbed.spark_submit(APPS / "ec_tables.py", DB, DIR, timeout=900))
    # what the writers left: Spark's files take their directory's policy
    assert set(made["part_ec"]["files"]["dt=2"]) == {XOR} and set(made["part_ec"]["files"]["dt=1"]) == {None}
    assert set(made["table_ec"]["files"]["dt=1"]) == {XOR} and set(made["table_ec"]["files"]["dt=3"]) == {None}
    timings = {"setup": round(time.time() - started, 1)}

    # one engine run: all five tables; crash parks after its first move in, then the process is killed
    t0 = time.time()
    partial = tmp_path / "partial.json"
    proc = testbed.spark_submit(APP, "compact", "--database", DB, "--result-file", str(tmp_path / "compact.json"),
                                confs={"spark.pyspark.python": app_python()}, timeout=900,
                                env={"LAKEKEEPER_FAULT_AT": f"moving_in:after@{DB}.crash",
                                     "LAKEKEEPER_WRONG_STAGING_EC": f"{DB}.wrong",
                                     "LAKEKEEPER_FAULT_RESULTS": str(partial)})
    timings["compact"] = round(time.time() - t0, 1)
    assert proc.returncode != 0 and partial.exists(), (proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:])
    results = {t["table"].split(".")[-1]: t for t in json.loads(partial.read_text())}
    print(json.dumps(results, indent=1, default=str)[:20000])
    assert set(results) == {"part_ec", "table_ec", "wrong", "disabled", "tiered", "tier_bad"}, sorted(results)
    parts = {name: {p["spec"]: p for p in t["partitions"]} for name, t in results.items()}

    t0 = time.time()
    after = _check(testbed, probe=True)
    timings["check"] = round(time.time() - t0, 1)
    print(json.dumps(after, indent=1)[:20000])
    for t in ("part_ec", "table_ec", "wrong", "disabled", "crash", "tiered"):  # row content: the same
        assert (after[t]["rows"], after[t]["sum"]) == (made[t]["rows"], made[t]["sum"]), t

    # 1. the erasure coded partition under a replicated table: compacted, its new files XOR-2-1
    assert results["part_ec"]["status"] == "compacted", results["part_ec"]
    assert parts["part_ec"]["dt=2"].get("carried", {}).get("erasure_coding") == XOR, parts["part_ec"]["dt=2"]
    got = after["part_ec"]["parts"]
    assert got["dt=2"]["dir"] == XOR and got["dt=2"]["files"] and set(got["dt=2"]["files"]) == {XOR}, got
    assert len(got["dt=2"]["files"]) < len(made["part_ec"]["files"]["dt=2"]), got
    assert set(got["dt=1"]["files"]) == {None}, got
    # the erasure coded table: inherited partitions stay XOR-2-1, the replicated one stays replicated
    assert results["table_ec"]["status"] == "compacted", results["table_ec"]
    got = after["table_ec"]["parts"]
    assert set(got["dt=1"]["files"]) == {XOR} and set(got["dt=2"]["files"]) == {XOR}, got
    assert got["dt=3"]["dir"] is None and set(got["dt=3"]["files"]) == {None}, got
    assert parts["table_ec"]["dt=3"].get("carried", {}).get("erasure_coding") == "replication", parts["table_ec"]
    # the check can fail: the wrong policy fails verification, the original stays
    w = parts["wrong"]["dt=2"]
    assert w["status"] == "failed" and w["code"] == "verification_failed" and \
        "erasure coding policy changed: XOR-2-1-1024k" in w["reason"] and "replicated" in w["reason"], w
    assert set(after["wrong"]["parts"]["dt=2"]["files"]) == {XOR}
    assert len(after["wrong"]["parts"]["dt=2"]["files"]) == len(made["wrong"]["files"]["dt=2"])
    # a policy that is not enabled any more: refused, with the reason
    d = parts["disabled"]["dt=2"]
    assert d["status"] == "refused" and d["code"] == "erasure_coding" and "RS-3-2-1024k is not enabled" in d["reason"], d

    # tiering: the partition written 90 days ago compacted into XOR-2-1 under ALL_SSD, the space consumed smaller
    # (replication 3 -> XOR-2-1's 1 + parity); the one written yesterday as before; the swap kept the policies
    old, new = "dt=2026-08-31", "dt=2026-11-28"
    assert made["tiered"]["replication"] == {old: [3], new: [3]}, made["tiered"]
    assert made["tiered"]["storage"][old] == "HOT" and set(made["tiered"]["files"][old]) == {None}, made["tiered"]
    t = results["tiered"]
    assert t["status"] == "compacted" and t["tiered"] == 1 and t["tier_space_saved"] > 0, t
    assert t["policy"]["lakekeeper.tier.storage_policy"] == "ALL_SSD", t
    tier = parts["tiered"][old]["tiering"]
    assert (tier["storage_policy"], tier["erasure_coding_policy"]) == ("ALL_SSD", XOR) and tier["age_days"] >= 89, tier
    assert tier["space_before"] == made["tiered"]["space"][old], (tier, made["tiered"]["space"])
    assert tier["space_after"] < tier["space_before"] and tier["space_saved"] == \
        tier["space_before"] - tier["space_after"] == t["tier_space_saved"], tier
    assert "tiering" not in parts["tiered"][new] and parts["tiered"][new]["status"] == "compacted", parts["tiered"]
    got = after["tiered"]["parts"]
    assert got[old]["dir"] == XOR and set(got[old]["files"]) == {XOR}, got[old]
    assert got[old]["storage"] == "ALL_SSD" and set(got[old]["file_storage"]) == {"ALL_SSD"}, got[old]
    assert got[old]["space"] == tier["space_after"], got[old]
    assert len(got[old]["files"]) < len(made["tiered"]["files"][old]), got[old]
    assert got[new]["dir"] is None and set(got[new]["files"]) == {None} and got[new]["storage"] == "HOT", got[new]
    # a policy the NameNode does not have: the table refused, nothing written
    b = results["tier_bad"]
    assert b["status"] == "refused" and b["code"] == "tier_policy_unknown" and "FROZEN" in b["reason"], b

    # 2. the journal under an erasure coded table directory: replicated, its records appended and readable
    for t in ("table_ec", "crash"):
        j = after[t]["journal"]
        assert j["exists"] and j["dir"] is None, (t, j)
        for run in j["runs"].values():
            assert set(run["files"].values()) == {None}, (t, run)
            assert any(n.startswith("units-") for n in run["files"]), (t, run)
    (crashed,) = after["crash"]["journal"]["runs"].values()
    # killed after its first unit's move in: the run open, that unit's last record (moving_aside) read back
    assert crashed["step"] == "compacting" and list(crashed["units"].values()) == ["moving_aside"], crashed
    probe = after["probe"]
    assert probe["ec"] == {"open_log": None}, probe  # an erasure coded stream cannot be synced
    assert probe["replicate_new_files"] is True and probe["replicate_again"] is False, probe
    assert probe["replicated"]["seen_before_close"] == '{"step": "written"}\n' and \
        probe["replicated"]["policy"] is None, probe

    # recover finishes the killed run; rollback restores every compacted table
    t0 = time.time()
    doc, _out = submit_engine(testbed, tmp_path, "recover", "--database", DB)
    recovered = {t["table"].split(".")[-1]: t["status"] for t in doc["tables"]}
    assert recovered["crash"] == "recovered", doc  # from the journal written in the erasure coded table directory
    doc, _out = submit_engine(testbed, tmp_path, "rollback", "--database", DB)
    timings["recover_rollback"] = round(time.time() - t0, 1)
    rolled = {t["table"].split(".")[-1]: t["status"] for t in doc["tables"]}
    print(rolled)
    assert {rolled[t] for t in ("part_ec", "table_ec", "crash", "tiered")} == {"rolled_back"}, rolled
    t0 = time.time()
    back = _check(testbed)
    timings["check_rolled_back"] = round(time.time() - t0, 1)
    for t in ("part_ec", "table_ec", "crash", "tiered"):
        assert (back[t]["rows"], back[t]["sum"]) == (made[t]["rows"], made[t]["sum"]), t
        for spec, files in made[t]["files"].items():
            assert sorted(back[t]["parts"][spec]["files"], key=str) == sorted(files, key=str), (t, spec)
    # the rollback restored the original directory of the tiered partition, with its own policies and space
    got = back["tiered"]["parts"][old]
    assert got["dir"] is None and got["storage"] == "HOT" and set(got["file_storage"]) == {"HOT"}, got
    assert got["space"] == made["tiered"]["space"][old], (got, made["tiered"]["space"])
    timings["total"] = round(time.time() - started, 1)
    print("TIMINGS", json.dumps(timings))
