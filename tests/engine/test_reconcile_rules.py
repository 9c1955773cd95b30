"""The Metastore against the filesystem (policy/reconcile.py): each finding
fires when its case is there and not otherwise, and only orphaned staging
copies are ever removable. Pure: no Spark."""

from __future__ import annotations

from lakekeeper_spark.policy.reconcile import TableFacts, reconcile, summarize
from lakekeeper_spark.report.model import FileEntry

ROOT = "hdfs://nn/wh/db.db/events"
RUN_A = "20261101T010000-aaaaaa"  # a killed run, no journal
RUN_B = "20261102T010000-bbbbbb"  # a compaction with its backup
RUN_C = "20261103T010000-cccccc"  # interrupted: its journal is not finished
RUN_D = "20261104T010000-dddddd"  # finished, its backup table dropped by hand
RUN_L = "20261105T010000-eeeeee"  # the live run


def facts(**over):
    """A consistent partitioned table: dt=a and dt=b, their directories there,
    a backup of RUN_B beside dt=a, the journal directory."""
    base = dict(root=ROOT, partitioned=True, partition_columns=["dt"],
                units=[("dt=a", f"{ROOT}/dt=a", True), ("dt=b", f"{ROOT}/dt=b", True)],
                parents={ROOT: [("dt=a", True), ("dt=b", True), (".lakekeeper", True), (f".dt=a.lk_old_{RUN_B}", True),
                                ("_SUCCESS", False)]},
                journal_runs={RUN_B}, backup_runs={RUN_B}, journal_dir=f"{ROOT}/.lakekeeper")
    base.update(over)
    return TableFacts(**base)


def test_a_consistent_table_has_no_finding():
    found = reconcile(facts())
    assert found == {"unregistered_dirs": [], "missing_dirs": [], "stale": [],
                     "root_files": {"files": 0, "bytes": 0, "names": []}}
    assert summarize(found) == {"findings": 0, "consistent": True, "unregistered_dirs": 0, "missing_dirs": 0,
                                "root_files": 0, "stale": 0, "legacy_leftovers": 0, "bytes": 0, "removable": 0,
                                "removable_bytes": 0}


def test_a_directory_no_partition_points_at_and_a_partition_without_directory():
    t = facts(units=[("dt=a", f"{ROOT}/dt=a", True), ("dt=b", f"{ROOT}/dt=b", False)],
              parents={ROOT: [("dt=a", True), ("dt=c", True), ("copy_of_a", True), ("_temporary", True),
                              ("dt=a__old_20240101120000", True)]})
    found = reconcile(t)
    assert [(d["path"], d["looks_like_partition"]) for d in found["unregistered_dirs"]] == [
        (f"{ROOT}/copy_of_a", False), (f"{ROOT}/dt=c", True)]
    assert [(m["spec"], m["location"]) for m in found["missing_dirs"]] == [("dt=b", f"{ROOT}/dt=b")]
    assert summarize(found)["findings"] == 3 and not summarize(found)["consistent"]
    # a where filter looked at some partitions only: the others' directories are not "unregistered"
    staging = f".dt=b.lk_staging_{RUN_A}"
    partial = reconcile(facts(filtered=True, units=[("dt=a", f"{ROOT}/dt=a", True)],
                              parents={ROOT: [("dt=a", True), ("dt=b", True), (staging, True)]}))
    assert partial["unregistered_dirs"] == [] and "where" in partial["partial"]
    # dt=b was not looked at, but its directory is there: the killed run's copy beside it is still removable
    assert [(e["state"], e["removable"]) for e in partial["stale"]] == [("orphaned", True)], partial["stale"]


def test_two_levels_intermediate_directories_are_not_unregistered():
    units = [("y=2024/m=01", f"{ROOT}/y=2024/m=01", True), ("y=2024/m=02", f"{ROOT}/y=2024/m=02", True)]
    t = facts(partition_columns=["y", "m"], units=units,
              parents={ROOT: [("y=2024", True), ("y=2025", True)],
                       f"{ROOT}/y=2024": [("m=01", True), ("m=02", True), ("m=03", True)]})
    assert sorted(d["path"] for d in reconcile(t)["unregistered_dirs"]) == [f"{ROOT}/y=2024/m=03", f"{ROOT}/y=2025"]


def test_partitions_outside_the_root_and_a_non_partitioned_table():
    t = facts(units=[("dt=a", f"{ROOT}/dt=a", True), ("dt=x", "hdfs://nn/elsewhere/x", True)],
              parents={ROOT: [("dt=a", True)], "hdfs://nn/elsewhere": [("x", True), ("y", True)]})
    assert reconcile(t)["unregistered_dirs"] == []  # only the table root's levels are judged
    db = "hdfs://nn/wh/db.db"
    flat = TableFacts(root=f"{db}/events", partitioned=False, partition_columns=[], units=[("", f"{db}/events", True)],
                      parents={db: [("events", True), ("clicks", True), (f".clicks.lk_staging_{RUN_A}", True)]},
                      root_files=[FileEntry("000000_0", 10, 1)])
    found = reconcile(flat)  # other tables' directories (and their staging) in the database directory are not ours
    assert found["unregistered_dirs"] == [] and found["stale"] == [] and found["root_files"]["files"] == 0


def test_data_files_in_a_partitioned_tables_root():
    files = [FileEntry("000000_0", 100, 1), FileEntry("events.csv", 50, 2)]
    found = reconcile(facts(root_files=files))
    assert found["root_files"]["files"] == 2 and found["root_files"]["bytes"] == 150
    assert found["root_files"]["names"] == ["000000_0", "events.csv"] and "no reader" in found["root_files"]["reason"]
    assert summarize(found)["bytes"] == 150 and summarize(found)["findings"] == 1


def test_hidden_directories_of_ours_each_with_its_state_and_only_orphaned_staging_removable():
    entries = [("dt=a", True), ("dt=b", True),
               (f".dt=a.lk_staging_{RUN_A}", True),  # a killed run's copy, no journal: removable
               (f".dt=b.lk_old_{RUN_A}", True),  # an original without journal: reported only
               (f".dt=b.lk_trash_{RUN_A}", True),  # a rollback's trash without journal: reported only
               (f".dt=a.lk_old_{RUN_B}", True),  # a backup's original: not a finding
               (f".dt=b.lk_staging_{RUN_C}", True),  # an interrupted run's: recovery's
               (f".dt=a.lk_staging_{RUN_D}", True),  # a finished run's copy never swapped in: removable
               (f".dt=b.lk_old_{RUN_D}", True),  # a finished run's original whose backup is gone: reported
               (f".dt=a.lk_staging_{RUN_L}", True),  # the live run's: not a finding
               (f".dt=z.lk_staging_{RUN_A}", True),  # a dropped partition's: its live directory is gone
               (f".dt=a.lk_staging_{RUN_A}.txt", False)]  # a file: not ours
    t = facts(parents={ROOT: entries}, journal_runs={RUN_B, RUN_C, RUN_D, RUN_L}, pending_runs={RUN_C},
              live_lease_run=RUN_L)
    found = reconcile(t)
    got = {(e["path"].rsplit("/", 1)[1], e["state"], e["removable"]) for e in found["stale"]}
    assert got == {
        (f".dt=a.lk_staging_{RUN_A}", "orphaned", True),
        (f".dt=b.lk_old_{RUN_A}", "orphaned", False),
        (f".dt=b.lk_trash_{RUN_A}", "orphaned", False),
        (f".dt=b.lk_staging_{RUN_C}", "interrupted", False),
        (f".dt=a.lk_staging_{RUN_D}", "finished_run", True),
        (f".dt=b.lk_old_{RUN_D}", "finished_run", False),
        (f".dt=z.lk_staging_{RUN_A}", "orphaned", False),
        (RUN_D, "finished_run", False),  # its journal: the backup table is gone
        (RUN_C, "interrupted", False),  # its journal: recovery's
    }, got
    kinds = {e["path"].rsplit("/", 1)[1]: e["kind"] for e in found["stale"]}
    assert kinds[RUN_D] == "journal" and kinds[f".dt=b.lk_trash_{RUN_A}"] == "trash"
    for e in found["stale"]:
        e["bytes"] = 10
    s = summarize(found, legacy=2)
    assert (s["stale"], s["removable"], s["removable_bytes"], s["legacy_leftovers"], s["findings"]) == (9, 2, 20, 2, 11)


def test_a_stale_lease_and_a_live_one():
    stale = {"path": f"{ROOT}/.lakekeeper/lease.json", "run_id": RUN_A, "why": "its process 42 on edge is gone"}
    found = reconcile(facts(stale_lease=stale))
    (lease,) = found["stale"]
    assert lease["kind"] == "lease" and lease["state"] == "stale_lease" and not lease["removable"]
    assert "process 42" in lease["reason"] and "takes it over" in lease["remedy"]
    # the live run's journal and directories are never findings
    live = facts(parents={ROOT: [("dt=a", True), ("dt=b", True), (f".dt=a.lk_staging_{RUN_L}", True)]},
                 journal_runs={RUN_B, RUN_L}, live_lease_run=RUN_L)
    assert reconcile(live)["stale"] == []
