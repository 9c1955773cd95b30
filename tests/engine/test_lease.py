"""One run per table (the lease) and the protocol's corners, in process on
the shared session. Each check is made to fire: a lease planted as another
run's keeps every command off the table; a stale one (its process gone, or
no heartbeat for longer than the timeout) is taken over; a backup table
dropped or a partition directory deleted while a unit is paused before its
swap aborts that unit only; an error after the swaps still reports the
change. Real concurrent processes: tests/crash/test_leases.py."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from engine_helpers import frozen, make_table, parent, same_rows

pytestmark = pytest.mark.integration


def lease_file(loc: str, partitioned: bool) -> str:
    if partitioned:
        return f"{loc}/.lakekeeper/lease.json"
    return f"{parent(loc)}/.{loc.rstrip('/').rsplit('/', 1)[1]}.lakekeeper/lease.json"


def plant(files, path: str, run_id: str, host: str, pid: int, age_seconds: float = 0.0) -> dict:
    from lakekeeper_spark.protocol.lease import boot_id, pid_namespace

    doc = {"run_id": run_id, "table": "x", "command": "compact", "host": host, "pid": pid, "pid_start": None,
           "started": time.time() - age_seconds}
    if host == socket.gethostname():  # as a run on this host records itself
        doc.update(boot_id=boot_id(), pid_ns=pid_namespace())
    files.mkdir(path.rsplit("/", 1)[0])
    files.write_bytes(path, json.dumps(doc).encode())
    files.fs.touch(path, int((time.time() - age_seconds) * 1000))
    return doc


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_live_lease_keeps_every_command_off_the_table(spark, engine, files, warehouse):
    loc = make_table(spark, warehouse, "leased", rows=300, partitions={"a": 12, "b": 9})
    other = make_table(spark, warehouse, "unleased", rows=200, files=15)
    original, rows = files.snapshot(loc), frozen(spark, "lk.leased")
    path = lease_file(loc, True)
    plant(files, path, "20240101T000000-abcdef", socket.gethostname(), os.getpid())  # this process: alive
    held = files.read_bytes(path)
    try:
        for command in ("compact", "rollback", "cleanup", "recover"):
            res = engine.one(command, "lk.leased", **({"older_than": "all"} if command == "cleanup" else {}))
            assert res["status"] == "locked" and res["code"] == "locked" and not res["changed"], res
            assert "20240101T000000-abcdef" in res["reason"] and socket.gethostname() in res["reason"], res
            assert res["lease_holder"]["run_id"] == "20240101T000000-abcdef", res
        res = engine.one("compact", "lk.leased", dry_run=True)  # a dry run changes nothing: no lease needed
        assert res["status"] == "planned", res
        res = engine.one("analyze", "lk.leased")  # analyze names the holder (and takes no lease)
        assert res["status"] == "analyzed" and res["lease"]["run_id"] == "20240101T000000-abcdef", res
        assert socket.gethostname() in res["lease"]["description"], res
        assert engine.one("analyze", "lk.unleased")["lease"] is None
        # a run over several tables goes on with the others
        by = {r["table"]: r for r in engine.run("compact", ["lk.leased", "lk.unleased"])}
        assert by["lk.leased"]["status"] == "locked" and by["lk.unleased"]["status"] == "compacted", by
        assert files.snapshot(loc) == original and same_rows(rows, spark.table("lk.leased"))
        assert files.read_bytes(path) == held  # the holder's lease untouched
        assert not files.exists(lease_file(other, False))  # released
    finally:
        files.rmtree(path)
    res = engine.one("compact", "lk.leased")
    assert res["status"] == "compacted" and "lease_taken_over" not in res, res
    assert not files.exists(path) and same_rows(rows, spark.table("lk.leased"))


def test_a_stale_lease_is_taken_over_and_break_lease_frees_a_live_one(spark, engine, files, warehouse):
    loc = make_table(spark, warehouse, "stale_lease", rows=300, files=20)
    rows = frozen(spark, "lk.stale_lease")
    path = lease_file(loc, False)
    # its process on this host is gone: stale at once
    plant(files, path, "20240101T000000-aaaaaa", socket.gethostname(), dead_pid())
    res = engine.one("rollback", "lk.stale_lease")
    assert res["status"] == "skipped" and res["lease_taken_over"]["run_id"] == "20240101T000000-aaaaaa", res
    assert "is gone" in res["lease_taken_over"]["reason"], res
    assert not files.exists(path)
    # another host: live while its heartbeat is younger than the lease timeout
    plant(files, path, "20240101T000000-bbbbbb", "elsewhere.example", 1, age_seconds=120)
    res = engine.one("compact", "lk.stale_lease", lease_timeout="10m")
    assert res["status"] == "locked" and "elsewhere.example" in res["reason"], res
    res = engine.one("compact", "lk.stale_lease", lease_timeout="1m")
    assert res["status"] == "compacted" and "no heartbeat" in res["lease_taken_over"]["reason"], res
    assert same_rows(rows, spark.table("lk.stale_lease"))
    # a live one: only recover --break-lease takes it
    plant(files, path, "20240101T000000-cccccc", "elsewhere.example", 1)
    assert engine.one("recover", "lk.stale_lease")["status"] == "locked"
    res = engine.one("recover", "lk.stale_lease", break_lease=True)
    assert res["status"] == "skipped" and res["lease_taken_over"]["reason"] == "broken by --break-lease", res
    assert not files.exists(path)


def _paused_run(engine, monkeypatch, tmp_path, table: str, step: str, action, **settings):
    """Run compact on ``table`` in a thread, paused at ``step`` of unit 0;
    ``action()`` runs while it waits; returns the result."""
    monkeypatch.setenv("LAKEKEEPER_PAUSE_AT", f"{step}@{table}#0")
    monkeypatch.setenv("LAKEKEEPER_PAUSE_DIR", str(tmp_path))
    box = {}
    t = threading.Thread(target=lambda: box.update(res=engine.one("compact", table, **settings)))
    t.start()
    paused = tmp_path / f"{table}.{step}.paused"
    deadline = time.time() + 300
    while not paused.exists() and t.is_alive() and time.time() < deadline:
        time.sleep(0.05)
    try:
        assert paused.exists(), box
        action()
    finally:
        (tmp_path / f"{table}.{step}.resume").write_text("go")
        t.join(300)
        monkeypatch.delenv("LAKEKEEPER_PAUSE_AT")
    return box["res"]


def test_a_unit_whose_backup_table_was_dropped_is_not_swapped(spark, engine, files, warehouse, monkeypatch,
                                                              tmp_path):
    loc = make_table(spark, warehouse, "bkp_gone", rows=300, files=20)
    original, rows = files.snapshot(loc), frozen(spark, "lk.bkp_gone")

    def drop_backup():
        deadline = time.time() + 120
        while time.time() < deadline:  # the backup table is made on its own thread while the unit writes
            names = [r.tableName for r in spark.sql("SHOW TABLES IN lk LIKE '__bkp_bkp_gone_*'").collect()]
            if names:
                spark.sql(f"DROP TABLE lk.{names[0]}")  # external, purge off: only the Metastore entry
                return
            time.sleep(0.1)
        raise AssertionError("no backup table appeared")

    res = _paused_run(engine, monkeypatch, tmp_path, "lk.bkp_gone", "verifying", drop_backup)
    (part,) = res["partitions"]
    assert res["status"] == "failed" and part["code"] == "backup_missing" and not res["changed"], res
    assert files.snapshot(loc) == original
    # no staging, journal or lease; the failure's record in the table's history stays
    assert [h for h in files.hidden(parent(loc)) if h.startswith(".bkp_gone.")] == []
    assert len(files.history_records(f"{parent(loc)}/.bkp_gone.lakekeeper")) == 1
    assert same_rows(rows, spark.table("lk.bkp_gone"))


def test_a_partition_deleted_during_the_run_is_aborted_and_does_not_block_the_table(
        spark, engine, files, warehouse, monkeypatch, tmp_path):
    loc = make_table(spark, warehouse, "part_gone", rows=300, partitions={"a": 12, "b": 9})

    def drop_partition():
        spark.sql("ALTER TABLE lk.part_gone DROP PARTITION (dt='a')")
        files.rmtree(f"{loc}/dt=a")

    res = _paused_run(engine, monkeypatch, tmp_path, "lk.part_gone", "verifying", drop_partition)
    by = {p["spec"]: p for p in res["partitions"]}
    assert by["dt=a"]["status"] == "failed" and by["dt=a"]["code"] == "source_vanished", res
    assert by["dt=b"]["status"] == "compacted" and res["changed"], res
    assert not files.exists(f"{loc}/dt=a") and not [h for h in files.hidden(loc) if "dt=a" in h]
    rows = frozen(spark, "lk.part_gone")
    for command in ("recover", "compact"):  # nothing left to recover, nothing blocked
        res = engine.one(command, "lk.part_gone")
        assert res["status"] == ("skipped" if command == "recover" else "not_needed"), res
    assert same_rows(rows, spark.table("lk.part_gone"))


def test_an_error_after_the_swaps_reports_the_change(spark, engine, files, warehouse, monkeypatch):
    from lakekeeper_spark.protocol.faults import HOOKS

    from lakekeeper_spark.storage import layout

    make_table(spark, warehouse, "late_error", rows=300, partitions={"a": 12, "b": 9})
    rows = frozen(spark, "lk.late_error")
    # The compaction and the rollback in the same second, the rollback's id sorting first (seen once in a full
    # run on a quick machine): the recovery settles the rollback first, which removes the compaction's journal
    # (its backup's); that journal is then gone, not "an empty journal" to remove.
    real, second = layout.new_run_id, layout.new_run_id()[:-7]
    ids = iter([f"{second}-ffffff", f"{second}-000001"])
    monkeypatch.setattr(layout, "new_run_id", lambda *a, **k: next(ids, None) or real(*a, **k))
    monkeypatch.setattr(HOOKS, "fired", set())  # raise specs fire once per process
    monkeypatch.setenv("LAKEKEEPER_FAULT_AT", "table:finished=raise")
    res = engine.one("compact", "lk.late_error")
    monkeypatch.delenv("LAKEKEEPER_FAULT_AT")
    assert res["status"] == "failed" and res["changed"] and "injected fault" in res["reason"], res
    assert sorted(p["status"] for p in res["partitions"]) == ["compacted", "compacted"], res
    assert res["backup_table"], res
    spark.sql("REFRESH TABLE lk.late_error")
    assert same_rows(rows, spark.table("lk.late_error"))
    # a rollback that fails after its first unit was restored: settled forward right away, and says it changed
    monkeypatch.setattr(HOOKS, "fired", set())
    monkeypatch.setenv("LAKEKEEPER_FAULT_AT", "rollback_restored:after@lk.late_error#0=raise")
    res = engine.one("rollback", "lk.late_error")
    monkeypatch.delenv("LAKEKEEPER_FAULT_AT")
    assert res["status"] == "failed" and res["changed"] and "injected fault" in res["reason"], res
    assert [(a["run_id"], a["action"]) for a in res["recovered_after_error"]] == [
        (f"{second}-000001", "rolled_back"), (f"{second}-000001", "rolled_back"), (f"{second}-000001", "finished_run")
    ], res
    spark.sql("REFRESH TABLE lk.late_error")
    assert same_rows(rows, spark.table("lk.late_error"))
    assert engine.one("rollback", "lk.late_error")["status"] == "skipped"  # the backup is gone: rolled back


def test_two_tables_over_one_location_get_their_own_run_ids(spark, engine, files, warehouse):
    spark.sql("CREATE DATABASE IF NOT EXISTS lkshare")
    loc = f"{warehouse}/lkshare/shared"
    for name in ("first", "second"):
        spark.sql(f"DROP TABLE IF EXISTS lkshare.{name}")
        spark.sql(f"CREATE EXTERNAL TABLE lkshare.{name} (id BIGINT) STORED AS PARQUET LOCATION '{loc}'")
    spark.range(0, 300).repartition(20).createOrReplaceTempView("lk_src")
    spark.sql("INSERT INTO lkshare.first SELECT * FROM lk_src")
    rows = frozen(spark, "lkshare.first")
    res = engine.run("compact", database="lkshare", parallelism=1)
    assert len({r["run_id"] for r in res}) == 2, [(r["table"], r["run_id"]) for r in res]
    assert sorted(r["status"] for r in res) == ["compacted", "not_needed"], res
    spark.sql("REFRESH TABLE lkshare.second")
    assert same_rows(rows, spark.table("lkshare.first")) and same_rows(rows, spark.table("lkshare.second"))


def test_the_heartbeat_keeps_a_lease_fresh_and_release_removes_it(spark, files, warehouse):
    from lakekeeper_spark.protocol.lease import LeaseHeld, acquire, read_holder

    jdir = f"{warehouse}/.beat.lakekeeper"
    path = f"{jdir}/lease.json"
    lease = acquire(files.fs, jdir, "20240101T000000-dddddd", "lk.beat", "compact", timeout=6)
    beat = f"{jdir}/lease.beat-20240101T000000-dddddd"
    try:
        files.fs.touch(path, int((time.time() - 60) * 1000))  # the lease file is never the heartbeat
        deadline = time.time() + 30
        while time.time() - read_holder(files.fs, path)["heartbeat"] > 10 and time.time() < deadline:
            time.sleep(0.2)
        assert time.time() - read_holder(files.fs, path)["heartbeat"] < 10  # its heartbeat file (every timeout/6)
        written = files.fs.mtime(beat)
        while files.fs.mtime(beat) == written and time.time() < deadline:
            time.sleep(0.2)
        assert files.fs.mtime(beat) > written  # rewritten: its time is the filesystem's
        with pytest.raises(LeaseHeld, match="20240101T000000-dddddd"):
            acquire(files.fs, jdir, "20240101T000000-eeeeee", "lk.beat", "cleanup", timeout=5)
    finally:
        lease.release()
    assert not files.exists(path) and not files.exists(jdir)


def test_a_run_that_lost_its_lease_does_not_swap(spark, engine, files, warehouse, monkeypatch, tmp_path):
    loc = make_table(spark, warehouse, "lease_lost", rows=300, files=20)
    original = files.snapshot(loc)
    path = lease_file(loc, False)

    def take_over():  # as a run that judged this one dead (heartbeat stalled) would
        files.rmtree(path)
        plant(files, path, "20240101T000000-ffffff", "elsewhere.example", 1)

    res = _paused_run(engine, monkeypatch, tmp_path, "lk.lease_lost", "verifying", take_over)
    assert res["status"] == "failed" and res["code"] == "lease_lost" and not res["changed"], res
    assert files.snapshot(loc) == original
    assert "20240101T000000-ffffff" in files.read_bytes(path).decode()  # the new holder's lease untouched
    files.rmtree(path)


def test_lease_timeout_option():
    from lakekeeper_spark.policy.config import build_settings
    from lakekeeper_spark.report.errors import UsageError

    assert build_settings({}, {}).lease_timeout_seconds == 1800
    assert build_settings({"lease_timeout": "45m"}, {}).lease_timeout_seconds == 2700
    assert build_settings({"lease_timeout": "45m"}, {"lease_timeout": "2h"}).lease_timeout_seconds == 7200
    with pytest.raises(UsageError, match="lease_timeout"):
        build_settings({}, {"lease_timeout": "2s"})
    with pytest.raises(UsageError, match="at least 30s"):
        build_settings({}, {"lease_timeout": "29s"})
    assert build_settings({}, {"lease_timeout": "30s"}).lease_timeout_seconds == 30


def test_a_file_that_comes_and_goes_before_the_swap_is_never_compacted_in(spark, engine, files, warehouse,
                                                                          monkeypatch, tmp_path):
    """A directory read (every file of the unit rewritten) must take the
    planned files and no other: a file written after the plan and deleted
    again before the check that precedes the swap is in neither listing that
    check compares, so the read itself is checked. The unit fails with
    ``concurrent_write`` and the table is left as it is."""
    loc = make_table(spark, warehouse, "came_and_went", rows=300, files=12)
    original, rows = files.snapshot(loc), frozen(spark, "lk.came_and_went")
    table = "lk.came_and_went"
    monkeypatch.setenv("LAKEKEEPER_PAUSE_AT", f"writing_staging@{table}#0;verifying@{table}#0")
    monkeypatch.setenv("LAKEKEEPER_PAUSE_DIR", str(tmp_path))
    box = {}
    t = threading.Thread(target=lambda: box.update(res=engine.one("compact", table)))
    t.start()
    late = f"{loc}/part-99999-late.c000.snappy.parquet"
    try:
        for step in ("writing_staging", "verifying"):
            paused = tmp_path / f"{table}.{step}.paused"
            deadline = time.time() + 300
            while not paused.exists() and t.is_alive() and time.time() < deadline:
                time.sleep(0.05)
            if not paused.exists():
                break  # the unit stopped before this step
            if step == "writing_staging":  # a writer adds a file once the plan is made ...
                files.write_bytes(late, files.read_bytes(files.data_files(loc)[0]))
            else:  # ... and removes it again before the swap's check
                files.fs.delete(late, recursive=False)
            (tmp_path / f"{table}.{step}.resume").write_text("go")
    finally:
        for step in ("writing_staging", "verifying"):
            (tmp_path / f"{table}.{step}.resume").write_text("go")
        t.join(300)
        monkeypatch.delenv("LAKEKEEPER_PAUSE_AT")
    res = box["res"]
    assert res["status"] == "failed", res
    (p,) = res["partitions"]
    assert p["code"] == "concurrent_write" and "changed before it was read" in p["reason"], p
    files.fs.delete(late, recursive=False)  # the late file, still there: the unit stopped before verifying
    spark.sql("REFRESH TABLE lk.came_and_went")
    assert files.snapshot(loc) == original and same_rows(spark.table("lk.came_and_went"), rows)
    spark.sql("DROP TABLE lk.came_and_went")


def test_liveness_is_the_heartbeats_progress_on_the_filesystems_clock(files, warehouse, monkeypatch):
    """A holder whose clock lags (once: its heartbeat stamped with its own
    clock read as stale at once) and a holder in another PID namespace on
    this host name (once: its pid not found here read as a dead process)
    are live while their heartbeat moves; a failed read of the lease does
    not stop the heartbeat (once: it stopped for good)."""
    from lakekeeper_spark.protocol import lease as L

    jdir = f"{warehouse}/.clock.lakekeeper"
    path = f"{jdir}/lease.json"
    real_time = time.time
    monkeypatch.setattr(L.time, "time", lambda: real_time() - 3600)  # the holder's clock an hour behind
    held = L.acquire(files.fs, jdir, "20240101T000000-111111", "lk.clock", "compact", timeout=30)
    try:
        deadline = real_time() + 20
        while not files.fs.mtime(f"{jdir}/lease.beat-20240101T000000-111111") and real_time() < deadline:
            time.sleep(0.2)  # a heartbeat written while the holder's clock lags (every timeout/6: 5 s)
        monkeypatch.setattr(L.time, "time", real_time)
        with pytest.raises(L.LeaseHeld, match="20240101T000000-111111"):
            L.acquire(files.fs, jdir, "20240101T000000-222222", "lk.clock", "cleanup", timeout=30)
    finally:
        held.release()

    # another PID namespace: the pid means nothing here, the heartbeat alone counts
    doc = plant(files, path, "20240101T000000-333333", socket.gethostname(), dead_pid())
    doc["pid_ns"] = "pid:[4026000000]"
    files.write_bytes(path, json.dumps(doc).encode())
    with pytest.raises(L.LeaseHeld, match="20240101T000000-333333"):
        L.acquire(files.fs, jdir, "20240101T000000-444444", "lk.clock", "cleanup", timeout=30)
    files.rmtree(path)

    # the heartbeat survives reads that fail, and goes on beating
    class Flaky:
        def __init__(self, fs):
            self.fs, self.failures = fs, 0

        def __getattr__(self, name):
            return getattr(self.fs, name)

        def read_text(self, uri):
            if self.failures < 3:
                self.failures += 1
                raise OSError("NameNode failover (test)")
            return self.fs.read_text(uri)

    flaky = Flaky(files.fs)
    held = L.acquire(flaky, jdir, "20240101T000000-555555", "lk.clock", "compact", timeout=6)
    beat = f"{jdir}/lease.beat-20240101T000000-555555"
    try:
        deadline = time.time() + 30
        while not (flaky.failures >= 3 and files.fs.mtime(beat)) and time.time() < deadline:
            time.sleep(0.2)
        first = files.fs.mtime(beat)
        assert flaky.failures >= 3 and first, "the heartbeat never got past the failed reads"
        while files.fs.mtime(beat) == first and time.time() < deadline:
            time.sleep(0.2)
        assert files.fs.mtime(beat) > first and held.lost is None
        held.check(max_age=0)  # still this run's
    finally:
        held.release()
