"""The lease as a fencing token (protocol/fence.py, protocol/lease.py), in
process on the shared session: a run that stalled (its heartbeat held as a
stopped process's would be: ``LAKEKEEPER_PAUSE_AT=...=stall``) after
journaling its first unit, whose stale lease another command took over and
whose journal that command finished, must change nothing when it resumes;
an operator's ``recover --break-lease`` of a live run likewise. Before
fencing, the resumed rollback moved the live partition directory aside and
could not put the original back (the partition was gone, and ``recover``
then said "nothing to recover"); a cleanup that took over deleted the backup
the rollback was restoring.

Each new check is shown to fire: the fenced adapters refuse a change after a
failed check and let reads through; the swap refuses to move a live
directory aside without its replacement; ``recover`` reports data that no
journal accounts for instead of "nothing to recover"."""

from __future__ import annotations

import threading
import time

import pytest

from engine_helpers import frozen, make_table, parent, same_rows

pytestmark = pytest.mark.integration

TIMEOUT = "30s"  # the shortest lease a run may take (config.MIN_LEASE_TIMEOUT_SECONDS)


def _started(engine, command: str, tables: list[str], **settings):
    box: dict = {}
    t = threading.Thread(target=lambda: box.update(res=engine.run(command, tables, **settings)))
    t.start()
    return t, box


def _wait_for(path, thread, seconds: float = 300) -> None:
    deadline = time.time() + seconds
    while not path.exists() and thread.is_alive() and time.time() < deadline:
        time.sleep(0.05)
    assert path.exists(), f"never paused at {path.name}"


def test_a_stalled_rollback_whose_lease_was_taken_over_changes_nothing_when_it_resumes(
        spark, engine, files, warehouse, monkeypatch, tmp_path):
    parts = {"a": 8, "b": 6, "c": 7}
    locs = {name: make_table(spark, warehouse, name, rows=200, partitions=parts)
            for name in ("fence_rb", "fence_cl")}
    originals = {name: files.snapshot(loc) for name, loc in locs.items()}
    rows = {name: frozen(spark, f"lk.{name}") for name in locs}
    for name in locs:
        assert engine.one("compact", f"lk.{name}")["status"] == "compacted"

    # one rollback of both tables; each table's thread stalls right after journaling its first unit
    monkeypatch.setenv("LAKEKEEPER_PAUSE_AT", "rolling_back@lk.fence_rb#0=stall;rolling_back@lk.fence_cl#0=stall")
    monkeypatch.setenv("LAKEKEEPER_PAUSE_DIR", str(tmp_path))
    first, box = _started(engine, "rollback", ["lk.fence_rb", "lk.fence_cl"], lease_timeout=TIMEOUT, parallelism=2)
    try:
        for name in locs:
            _wait_for(tmp_path / f"lk.{name}.rolling_back.paused", first)
        # while its heartbeat is held the lease is live: another command finds the table locked
        assert engine.one("recover", "lk.fence_rb", lease_timeout=TIMEOUT)["status"] == "locked"
        time.sleep(31)  # no heartbeat for longer than the timeout, on the filesystem's clock: stale
        monkeypatch.delenv("LAKEKEEPER_PAUSE_AT")
        taken = engine.one("recover", "lk.fence_rb", lease_timeout=TIMEOUT)
        assert taken["status"] == "recovered" and taken["changed"], taken
        assert "by the filesystem's clock" in taken["lease_taken_over"]["reason"], taken
        assert any(a["action"] == "rolled_back" for a in taken["actions"]), taken  # the stalled run's journal, finished
        cleaned = engine.one("cleanup", "lk.fence_cl", lease_timeout=TIMEOUT, older_than="all")
        assert "by the filesystem's clock" in cleaned["lease_taken_over"]["reason"], cleaned
        assert any(a["action"] == "rolled_back" for a in cleaned.get("recovered", [])), cleaned  # the rollback finished first
    finally:
        for name in locs:
            (tmp_path / f"lk.{name}.rolling_back.resume").write_text("go")
        first.join(300)
    by = {r["table"]: r for r in box["res"]}
    for name in locs:
        res = by[f"lk.{name}"]
        assert res["status"] == "failed" and res["code"] == "lease_lost" and not res["changed"], res
        assert "changed nothing more" in res["reason"], res
        # every partition directory there, the original files byte for byte, the same rows
        assert files.snapshot(locs[name]) == originals[name], name
        spark.sql(f"REFRESH TABLE lk.{name}")
        assert same_rows(rows[name], spark.table(f"lk.{name}")), name
        assert [h for h in files.hidden(locs[name]) if ".lk_" in h] == [], files.hidden(locs[name])
        after = engine.one("recover", f"lk.{name}")
        assert after["status"] == "skipped" and after["reason"] == "nothing to recover", after


def test_break_lease_fences_a_live_compaction_at_its_next_step(spark, engine, files, warehouse, monkeypatch,
                                                               tmp_path):
    loc = make_table(spark, warehouse, "fence_break", rows=300, partitions={"a": 9, "b": 8})
    original, rows = files.snapshot(loc), frozen(spark, "lk.fence_break")
    monkeypatch.setenv("LAKEKEEPER_PAUSE_AT", "verifying@lk.fence_break#0")  # heartbeat still running: live
    monkeypatch.setenv("LAKEKEEPER_PAUSE_DIR", str(tmp_path))
    first, box = _started(engine, "compact", ["lk.fence_break"], parallelism=1)
    try:
        _wait_for(tmp_path / "lk.fence_break.verifying.paused", first)
        monkeypatch.delenv("LAKEKEEPER_PAUSE_AT")
        broken = engine.one("recover", "lk.fence_break", break_lease=True)
        assert broken["lease_taken_over"]["reason"] == "broken by --break-lease", broken
        assert broken["status"] == "recovered", broken  # the live run's journal settled: its staging removed
    finally:
        (tmp_path / "lk.fence_break.verifying.resume").write_text("go")
        first.join(300)
    (res,) = box["res"]
    assert res["status"] == "failed" and res["code"] == "lease_lost" and not res["changed"], res
    assert files.snapshot(loc) == original and same_rows(rows, spark.table("lk.fence_break"))
    assert [h for h in files.hidden(loc) if ".lk_" in h] == [], files.hidden(loc)
    assert engine.one("compact", "lk.fence_break")["status"] == "compacted"  # the next run goes on
    assert same_rows(rows, spark.table("lk.fence_break"))


def test_fenced_adapters_refuse_changes_after_a_failed_check_and_let_reads_through(files, warehouse):
    from lakekeeper_spark.protocol.fence import Fence, fenced_fs
    from lakekeeper_spark.report.errors import LakekeeperError

    state = {"holds": True, "checks": 0}

    def check(max_age=None):  # Lease.check's signature: the fence asks a fresh reading before visible steps
        state["checks"] += 1
        state["max_age"] = max_age
        if not state["holds"]:
            raise LakekeeperError("lease_lost", "this run no longer holds the table's lease (test)")

    fence = Fence(check)
    fs = fenced_fs(files.fs, fence)
    base = f"{warehouse}/fenced"
    fs.mkdirs(f"{base}/.hidden.lk_staging_x")
    assert not fence.changed and state["max_age"] is None  # a hidden directory: not what readers see
    fs.mkdirs(f"{base}/dt=a")
    assert fence.changed and state["checks"] == 2 and state["max_age"] == 0.2  # what readers see: a fresh reading
    state["holds"] = False
    with pytest.raises(LakekeeperError, match="lease_lost"):
        fs.rename(f"{base}/dt=a", f"{base}/.dt=a.lk_old_x")
    assert fs.exists(f"{base}/dt=a") and not fs.exists(f"{base}/.dt=a.lk_old_x")  # reads pass, nothing moved
    assert sorted(n for n, _d in fs.list_names(base)) == [".hidden.lk_staging_x", "dt=a"]
    files.rmtree(base)


def test_a_swap_never_moves_a_live_directory_aside_without_its_replacement(files, warehouse):
    from lakekeeper_spark.protocol.swap import swap_back
    from lakekeeper_spark.report.errors import LakekeeperError

    base = f"{warehouse}/swapguard"
    live, old, trash = f"{base}/dt=a", f"{base}/.dt=a.lk_old_r1", f"{base}/.dt=a.lk_trash_r2"
    files.write_bytes(f"{live}/part-0.parquet", b"compacted")
    with pytest.raises(LakekeeperError, match="rollback_failed") as err:
        swap_back(files.fs, live, old, trash, ["part-0.parquet"])  # the original is gone
    assert "was not moved" in str(err.value)
    assert files.read_bytes(f"{live}/part-0.parquet") == b"compacted" and not files.exists(trash)
    files.rmtree(base)


def test_recover_reports_data_no_journal_accounts_for_instead_of_nothing(spark, engine, files, warehouse):
    loc = make_table(spark, warehouse, "fence_orphan", rows=200, partitions={"a": 5, "b": 4})
    assert engine.one("compact", "lk.fence_orphan")["status"] == "compacted"
    before = files.snapshot(loc)
    # what a run with no journal left behind: the live directory moved aside, never put back
    files.fs.rename(f"{loc}/dt=a", f"{loc}/.dt=a.lk_trash_20240101T000000-0abcde")
    res = engine.one("recover", "lk.fence_orphan")
    assert res["status"] == "failed" and res["code"] == "orphaned_data", res
    (orphan,) = res["orphans"]
    assert orphan["location"].endswith("/dt=a") and orphan["kind"] == "lk_trash", orphan
    assert orphan["run_id"] == "20240101T000000-0abcde" and parent(orphan["path"]) == parent(orphan["location"])
    assert files.exists(f"{loc}/.dt=a.lk_trash_20240101T000000-0abcde") and not files.exists(f"{loc}/dt=a")
    files.fs.rename(f"{loc}/.dt=a.lk_trash_20240101T000000-0abcde", f"{loc}/dt=a")  # as the operator would
    assert files.snapshot(loc) == before
    assert engine.one("recover", "lk.fence_orphan")["reason"] == "nothing to recover"


def test_a_change_named_by_a_qualified_local_uri_counts_as_changed():
    """``changed`` of a run that lost its lease comes from its fence: a
    qualified local path is ``file:/tmp/...`` (no authority, what
    ``HadoopFS.qualify`` gives on file://), which the fence used not to
    take for a path, so a rollback that had restored a unit and then lost
    its lease reported ``changed: false`` (found by test_fault_schedule.py,
    seed 8: a rollback stalled at ``rollback_restored:after``); and, once
    such paths count, a journal record three deep under the hidden journal
    directory must not."""
    from lakekeeper_spark.protocol.fence import Fence

    for live in ("file:/tmp/t/dt=a", "file:///tmp/t/dt=a", "hdfs://nn:8020/t/dt=a", "/tmp/t/dt=a"):
        fence = Fence(lambda: None)
        fence.passed("rename", (live, live.replace("dt=a", ".dt=a.lk_trash_x")))
        assert fence.changed, live
    fence = Fence(lambda: None)  # hidden paths only: not what readers see
    fence.passed("rename", ("file:/tmp/t/.dt=a.lk_staging_x", "file:/tmp/t/.dt=a.lk_old_x"))
    fence.passed("write_text", ("file:/tmp/t/.lakekeeper/r/table.json", '{"step": "x"}'))
    fence.passed("write_text", ("file:/tmp/t/.lakekeeper/merged/b.json.new.1", "{}"))
    fence.passed("delete", ("file:/tmp/t/.dt=a.lk_old_r/part-0", False))
    assert not fence.changed
    fence.passed("rename", ("file:/tmp/t/.dt=a.lk_old_r/late-0", "file:/tmp/t/dt=a/late-0"))  # into the live one
    assert fence.changed
