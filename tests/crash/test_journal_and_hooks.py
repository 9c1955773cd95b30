"""Pure-Python checks of the pieces the crash tests rely on: journal records
survive a crash at any point of their replacement, unit records are
cumulative, the fault/pause hook specs parse, the quiet period decides.
A fake filesystem stands in for HadoopFS (same method names)."""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "spark_app"))

from lakekeeper_spark.protocol import faults as F  # noqa: E402
from lakekeeper_spark.protocol import journal as J  # noqa: E402
from lakekeeper_spark.policy.config import Settings  # noqa: E402
from lakekeeper_spark.report.model import Decision, FileEntry, FileStats, Listing, TablePlan, Unit  # noqa: E402


class FakeFS:
    """The HadoopFS calls the journal makes, on a dict."""

    def __init__(self):
        self.files: dict[str, str] = {}
        self.dirs: set[str] = set()

    def mkdirs(self, uri):
        self.dirs.add(uri.rstrip("/"))

    def replicate_new_files(self, uri):  # HDFS only: nothing is erasure coded here
        return False

    def exists(self, uri):
        return uri in self.files or uri.rstrip("/") in self.dirs

    def write_text(self, uri, text):
        assert uri not in self.files
        self.files[uri] = text

    def read_text(self, uri):
        return self.files[uri]

    def delete(self, uri, recursive=True):
        if uri in self.files:
            del self.files[uri]
            return True
        uri = uri.rstrip("/")
        if uri in self.dirs:
            self.dirs = {d for d in self.dirs if d != uri and not d.startswith(uri + "/")}
            self.files = {f: t for f, t in self.files.items() if not f.startswith(uri + "/")}
            return True
        return False

    def delete_if_empty(self, uri):
        uri = uri.rstrip("/")
        if uri not in self.dirs or self.list_names(uri):
            return False
        return self.delete(uri)

    def rename(self, src, dst):
        assert src in self.files and dst not in self.files
        self.files[dst] = self.files.pop(src)

    def open_log(self, uri):
        assert uri not in self.files
        self.files[uri] = ""
        fs = self

        class Log:
            def append(self, text):
                fs.files[uri] += text

            def close(self):
                pass

        return Log()

    def recover_lease(self, uri):
        return False

    def list_names(self, uri):
        uri = uri.rstrip("/")
        out = {(f[len(uri) + 1:].split("/")[0], "/" in f[len(uri) + 1:]) for f in self.files if f.startswith(uri + "/")}
        out |= {(d[len(uri) + 1:].split("/")[0], True) for d in self.dirs if d.startswith(uri + "/")}
        return sorted(out)


def _pending(fs, base):
    return sorted(f for f in fs.files if f.startswith(base + ".new."))


def test_a_record_is_old_or_new_at_every_crash_point():
    fs = FakeFS()
    fs.mkdirs("j/r")
    base = "j/r/unit-000000.json"
    J.replace_record(fs, base, json.dumps({"step": "verifying"}))
    assert json.loads(J.read_record(fs, "j/r", "unit-000000.json"))["step"] == "verifying"
    # crash after writing the new record, before dropping the old one: old one read
    tmp = f"{base}.new.{time.time_ns():020d}-aaaaaa"
    fs.write_text(tmp, json.dumps({"step": "moving_aside"}))
    assert json.loads(J.read_record(fs, "j/r", "unit-000000.json"))["step"] == "verifying"
    # the next replacement removes that orphan
    J.replace_record(fs, base, json.dumps({"step": "moving_aside"}))
    assert _pending(fs, base) == []
    # crash between dropping the old record and renaming the new one: the new one is read,
    # even next to an older orphan and a torn (half written) one
    fs.write_text(f"{base}.new.{time.time_ns():020d}-zzzzzz", json.dumps({"step": "stale"}))
    time.sleep(0.001)
    fs.write_text(f"{base}.new.{time.time_ns():020d}-000000", json.dumps({"step": "moving_in"}))
    time.sleep(0.001)
    fs.write_text(f"{base}.new.{time.time_ns():020d}-111111", '{"step": "repoin')
    fs.delete(base)
    assert json.loads(J.read_record(fs, "j/r", "unit-000000.json"))["step"] == "moving_in"


def _log_files(fs, run_dir):
    return sorted(f.rsplit("/", 1)[1] for f in fs.files if f.startswith(f"{run_dir}/units-"))


def _records(fs, run_dir, name):
    return [json.loads(line) for line in fs.files[f"{run_dir}/{name}"].splitlines()]


def test_unit_records_are_appended_and_a_torn_last_line_is_skipped():
    fs = FakeFS()
    j = J.Journal(fs, "t/.lakekeeper", "20260101T000000-abcdef")
    j.start({"table": "db.t", "units": []})
    j.unit_step(0, "moving_aside", compacted=["part-0.parquet"])
    j.unit_step(0, "moving_in")
    j.unit_step(1, "writing_staging")
    # one file for the run, a line a record (alone, a unit records by itself), nothing replaced or renamed
    assert _log_files(fs, j.run_dir) == ["units-000000.jsonl"]
    assert [(d["index"], d["step"]) for d in _records(fs, j.run_dir, "units-000000.jsonl")] == [
        (0, "moving_aside"), (0, "moving_in"), (1, "writing_staging")]
    # the process dies while writing unit 1's next record: its line is torn, unit 1 never went on
    fs.files[f"{j.run_dir}/units-000000.jsonl"] += '{"index": 1, "step": "verif'
    doc, units = J.Journal.load(fs, j.dir, j.run_id)
    assert doc["table"] == "db.t" and doc["step"] == "planned"
    assert units[0]["step"] == "moving_in" and units[0]["compacted"] == ["part-0.parquet"]  # cumulative
    assert units[1]["step"] == "writing_staging"
    # recovery continues the run in a file of its own, after the highest, and builds on the last records
    r = J.Journal(fs, j.dir, j.run_id).resume(doc, units)
    r.unit_step(0, "done", recovered=True)
    # a unit tried again after its first attempt was settled (aborted): the new attempt's records carry
    # nothing of the settled one (its code, reason and kept files' moves)
    r.unit_step(1, "moving_kept", kept_moves=[{"name": "k", "length": 1}])
    r.unit_step(1, "aborted", code="write_failed", reason="disk full")
    r.unit_step(1, "moving_aside", old="o", staging="s", location="l")
    r.unit_step(1, "done", rows=3)
    assert {k: v for k, v in r._units[1].items() if k != "updated"} == {
        "index": 1, "step": "done", "old": "o", "staging": "s", "location": "l", "rows": 3}
    r.close()
    assert _log_files(fs, j.run_dir) == ["units-000000.jsonl", "units-000001.jsonl"]
    again = J.Journal.load(fs, j.dir, j.run_id)[1]
    assert again[0]["step"] == "done" and again[0]["compacted"] == ["part-0.parquet"]
    assert again[1]["step"] == "done" and "code" not in again[1] and "kept_moves" not in again[1], again[1]
    # a whole line that is not a record is not guessed at
    fs.write_text(f"{j.run_dir}/units-000002.jsonl", json.dumps({"step": "done"}) + "\n")
    with pytest.raises(J.LakekeeperError) as bad:
        J.Journal.load(fs, j.dir, j.run_id)
    assert bad.value.code == "journal_incomplete" and "line 1" in bad.value.message
    del fs.files[f"{j.run_dir}/units-000002.jsonl"]
    assert not J.Journal.is_empty(fs, j.dir, j.run_id)
    r.remove()
    assert not fs.exists(j.dir)


def test_a_file_left_open_is_read_once_its_lease_is_recovered():
    """HDFS: a record file its killed writer left open can be unreadable
    (the length of its last block unknown) until the NameNode recovers the
    lease; then it is read. Where no lease can be recovered the error stands."""
    class OpenFS(FakeFS):
        def __init__(self):
            super().__init__()
            self.open, self.recovered = set(), 0

        def read_text(self, uri):
            if uri in self.open:
                raise OSError("Cannot obtain block length for LocatedBlock")
            return super().read_text(uri)

        def recover_lease(self, uri):
            self.recovered += 1
            if uri.endswith("units-000000.jsonl"):
                self.open.discard(uri)
                return True
            return False

    fs = OpenFS()
    j = J.Journal(fs, "t/.lakekeeper", "20260101T000000-abcdef")
    j.start({"table": "db.t", "units": []})
    j.unit_step(0, "moving_aside")
    fs.open.add(f"{j.run_dir}/units-000000.jsonl")  # killed: never closed
    assert J.Journal.load(fs, j.dir, j.run_id)[1][0]["step"] == "moving_aside" and fs.recovered == 1
    fs.write_text(f"{j.run_dir}/units-000001.jsonl", "")
    fs.open.add(f"{j.run_dir}/units-000001.jsonl")
    with pytest.raises(OSError, match="block length"):
        J.Journal.load(fs, j.dir, j.run_id)


def test_without_synced_streams_each_write_is_a_file():
    class ObjectStore(FakeFS):
        asked = 0

        def open_log(self, uri):
            self.asked += 1
            return None

    fs = ObjectStore()
    j = J.Journal(fs, "t/.lakekeeper", "20260101T000000-abcdef")
    j.start({"table": "db.t", "units": []})
    j.unit_step(0, "moving_aside")
    j.unit_step(0, "done")
    assert _log_files(fs, j.run_dir) == ["units-000000.jsonl", "units-000001.jsonl"]
    assert fs.asked == 1  # its answer does not change within a run
    assert J.Journal.load(fs, j.dir, j.run_id)[1][0]["step"] == "done"


def test_an_earlier_versions_records_load_under_the_appended_ones():
    """A journal of an earlier version (one record per unit, replaced in
    place), left by a crash inside a replacement, then resumed by this
    version: the appended records are newer than any such file."""
    fs = FakeFS()
    j = J.Journal(fs, "t/.lakekeeper", "20260101T000000-abcdef")
    j.start({"table": "db.t", "units": []})
    for idx, step in ((0, "moving_in"), (1, "writing_staging")):
        fs.write_text(f"{j.run_dir}/unit-{idx:06d}.json", json.dumps({"index": idx, "step": step, "compacted": ["a"]}))
    base = f"{j.run_dir}/unit-000001.json"  # unit 1's record was being replaced when the process died
    fs.write_text(f"{base}.new.{time.time_ns():020d}-abcdef", json.dumps({"index": 1, "step": "verifying"}))
    fs.delete(base)
    doc, units = J.Journal.load(fs, j.dir, j.run_id)
    assert units[0]["step"] == "moving_in" and units[1]["step"] == "verifying"
    r = J.Journal(fs, j.dir, j.run_id).resume(doc, units)
    r.unit_step(0, "done", recovered=True)
    units = J.Journal.load(fs, j.dir, j.run_id)[1]
    assert units[0]["step"] == "done" and units[0]["compacted"] == ["a"] and units[1]["step"] == "verifying"
    assert _log_files(fs, j.run_dir) == ["units-000000.jsonl"]


class SlowFS(FakeFS):
    """Each sync takes a moment, as on HDFS."""

    def __init__(self):
        super().__init__()
        import threading
        self.lock = threading.Lock()

    def open_log(self, uri):
        inner = super().open_log(uri)
        fs = self

        class Log:
            def append(self, text):
                time.sleep(0.02)
                with fs.lock:
                    inner.append(text)

            def close(self):
                pass

        return Log()


def test_units_that_record_at_once_share_a_sync_and_each_waits_for_its_own():
    import threading
    fs = SlowFS()
    j = J.Journal(fs, "t/.lakekeeper", "20260101T000000-abcdef")
    j.start({"table": "db.t", "units": []})
    errors = []

    def unit(idx):
        try:
            for step in ("moving_aside", "done"):
                j.unit_step(idx, step, by=idx)
                with fs.lock:  # returned: the file holds this very record
                    written = [(d["index"], d["step"]) for d in _records(fs, j.run_dir, "units-000000.jsonl")]
                assert (idx, step) in written
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=unit, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert _log_files(fs, j.run_dir) == ["units-000000.jsonl"]
    assert j.unit_log_writes < 32 / 2  # 32 records, grouped
    units = J.Journal.load(fs, j.dir, j.run_id)[1]
    assert {i: (u["step"], u["by"]) for i, u in units.items()} == {i: ("done", i) for i in range(16)}


def test_a_failed_write_leaves_the_file_and_the_next_record_opens_another():
    class FlakyFS(FakeFS):
        fail = True

        def open_log(self, uri):
            inner = super().open_log(uri)
            fs = self

            class Log:
                def append(self, text):
                    if fs.fail:
                        fs.fail = False
                        inner.append(text[:7])  # part of it reached the file
                        raise OSError("disk full")
                    inner.append(text)

                def close(self):
                    pass

            return Log()

    fs = FlakyFS()
    j = J.Journal(fs, "t/.lakekeeper", "20260101T000000-abcdef")
    j.start({"table": "db.t", "units": []})
    with pytest.raises(OSError):
        j.unit_step(0, "moving_aside")
    j.unit_step(0, "moving_aside")
    assert _log_files(fs, j.run_dir) == ["units-000000.jsonl", "units-000001.jsonl"]
    assert J.Journal.load(fs, j.dir, j.run_id)[1][0]["step"] == "moving_aside"


def test_the_plan_is_written_once_and_table_steps_do_not_carry_it():
    """A run's units (each with every planned file's name, size and time)
    go into plan records written once, before table.json; each table step
    rewrites a record whose size does not grow with the plan; load and
    table_record give the whole document back."""
    fs = FakeFS()
    units = [{"index": i, "spec": f"dt={i:05d}", "files": [[f"part-{k}.parquet", 100, 1] for k in range(20)]}
             for i in range(J.PLAN_RECORD_UNITS * 2 + 500)]
    j = J.Journal(fs, "t/.lakekeeper", "20260101T000000-abcdef")
    j.start({"table": "db.t", "backup_table": "db.b", "units": units})
    names = sorted(n.rsplit("/", 1)[1] for n in fs.files)
    assert names == ["plan-000000.json", "plan-000001.json", "plan-000002.json", "table.json"]
    plan_bytes = sum(len(fs.files[f"{j.run_dir}/plan-{n:06d}.json"]) for n in range(3))
    for step in ("creating_backup", "compacting", "finished"):
        j.table_step(step)
        table_bytes = len(fs.files[f"{j.run_dir}/table.json"])
        assert table_bytes < 400 < plan_bytes // 1000, (table_bytes, plan_bytes)
    doc, _units = J.Journal.load(fs, j.dir, j.run_id)
    assert doc["units"] == units and doc["step"] == "finished" and doc["plan_records"] == 3
    assert j.table_record()["units"] == units
    r = J.Journal(fs, j.dir, j.run_id).resume(doc, {})
    r.table_step("finished", backup_table=None)  # a resumed run: the plan stays as it was written
    assert "units" not in json.loads(fs.files[f"{j.run_dir}/table.json"])
    assert J.Journal.load(fs, j.dir, j.run_id)[0]["units"] == units and r.table_record()["units"] == units

    # a plan record gone (by hand): the run is not guessed at
    del fs.files[f"{j.run_dir}/plan-000001.json"]
    with pytest.raises(J.LakekeeperError) as missing:
        J.Journal.load(fs, j.dir, j.run_id)
    assert missing.value.code == "journal_incomplete" and "plan-000001.json is missing" in missing.value.message


def test_a_crash_while_the_plan_is_written_leaves_an_empty_run_and_old_journals_load():
    fs = FakeFS()
    j = J.Journal(fs, "t/.lakekeeper", "20260101T000000-abcdef")
    fs.mkdirs(j.run_dir)
    fs.write_text(f"{j.run_dir}/plan-000000.json", "[]")  # killed before table.json
    assert J.Journal.load(fs, j.dir, j.run_id) == ({}, {}) and J.Journal.is_empty(fs, j.dir, j.run_id)
    fs.write_text(f"{j.run_dir}/unit-000000.json", json.dumps({"index": 0, "step": "writing_staging"}))
    assert not J.Journal.is_empty(fs, j.dir, j.run_id)
    # a journal written by an earlier version: the units inside table.json
    old = J.Journal(fs, "t/.lakekeeper", "20250101T000000-abcdef")
    fs.mkdirs(old.run_dir)
    fs.write_text(f"{old.run_dir}/table.json", json.dumps({"table": "db.t", "step": "compacting",
                                                           "units": [{"index": 0, "spec": "dt=a"}]}))
    doc, _units = J.Journal.load(fs, old.dir, old.run_id)
    assert doc["units"] == [{"index": 0, "spec": "dt=a"}]
    r = J.Journal(fs, old.dir, old.run_id).resume(doc, {})
    r.table_step("finished")
    assert J.Journal.load(fs, old.dir, old.run_id)[0]["units"] == [{"index": 0, "spec": "dt=a"}]


class CountingFS(FakeFS):
    def __init__(self):
        super().__init__()
        self.listings = 0

    def list_names(self, uri):
        self.listings += 1
        return super().list_names(uri)


def test_a_new_run_lists_its_directory_once_a_resumed_run_once_more():
    fs = CountingFS()
    j = J.Journal(fs, "t/.lakekeeper", "20260101T000000-abcdef")
    j.start({"table": "db.t", "units": []})
    assert fs.listings == 1  # the new run directory is empty: nothing to sweep, records numbered from 0
    for step in ("moving_aside", "done"):
        j.unit_step(0, step)
        j.unit_step(1, step)
    j.table_step("finished")
    assert fs.listings == 1
    # a crashed writer of the same run left a pending table record: the resumed run sweeps it
    orphan = f"{j.run_dir}/table.json.new.{time.time_ns():020d}-dead00"
    fs.write_text(orphan, json.dumps({"step": "stale"}))
    doc, units = J.Journal.load(fs, j.dir, j.run_id)
    r = J.Journal(fs, j.dir, j.run_id).resume(doc, units)
    fs.listings = 0
    r.unit_step(0, "done", recovered=True)  # one listing: the number of its file
    r.unit_step(1, "done", recovered=True)
    assert fs.listings == 1 and _log_files(fs, j.run_dir) == ["units-000000.jsonl", "units-000001.jsonl"]
    r.table_step("finished")
    r.table_step("finished")
    assert orphan not in fs.files and fs.listings == 2  # the table record swept once


@pytest.mark.parametrize("text,expect", [
    ("table:compacting", [("table:compacting", "before", None, None, "kill")]),
    ("moving_in:after@Db.T#1", [("moving_in", "after", "db.t", 1, "kill")]),
    ("verifying@a.b=raise; done", [("verifying", "before", "a.b", None, "raise"), ("done", "before", None, None, "kill")]),
    ("rollback_restored:after@db.t#0", [("rollback_restored", "after", "db.t", 0, "kill")]),
    ("tamper_staging", [("tamper_staging", "before", None, None, "kill")]),
    ("x@y;#3;=raise", []),
])
def test_hook_specs(text, expect):
    got = [(s.step, s.phase, s.table, s.unit, s.action) for s in F.parse_hook_specs(text)]
    assert got == expect


def test_hooks_match_table_and_unit_and_raise(monkeypatch):
    monkeypatch.setenv("LAKEKEEPER_FAULT_AT", "moving_in:after@db.t#1=raise")
    F.HOOKS.fired.clear()
    F.fault_point("moving_in", "after", "db.u", 1)  # other table
    F.fault_point("moving_in", "after", "db.t", 0)  # other unit
    F.fault_point("moving_in", "before", "db.t", 1)  # before, not after
    with pytest.raises(F.InjectedFault):
        F.fault_point("moving_in", "after", "db.t", 1)
    F.fault_point("moving_in", "after", "db.t", 1)  # fires once
    assert not F.parking_enabled()
    monkeypatch.setenv("LAKEKEEPER_FAULT_AT", "done@db.t")
    assert F.parking_enabled()
    F.HOOKS.fired.clear()


def test_pause_hook_waits_for_resume(monkeypatch, tmp_path):
    monkeypatch.setenv("LAKEKEEPER_PAUSE_AT", "verifying@db.t")
    monkeypatch.setenv("LAKEKEEPER_PAUSE_DIR", str(tmp_path))
    (tmp_path / "db.t.verifying.resume").write_text("go")
    t0 = time.time()
    F.fault_point("verifying", "before", "db.t", 0)
    assert (tmp_path / "db.t.verifying.paused").exists() and time.time() - t0 < 5
    monkeypatch.setenv("LAKEKEEPER_PAUSE_TIMEOUT", "0.2")
    F.fault_point("moving_in", "before", "db.t", 0)  # no spec: no pause
    assert not (tmp_path / "db.t.moving_in.paused").exists()


def _unit(spec, mtimes_ms):
    files = [FileEntry(f"f{i}", 10, m) for i, m in enumerate(mtimes_ms)]
    return Unit(spec=spec, partition={"dt": spec}, location=f"x/{spec}", listing=Listing(path="x", files=files),
                stats=FileStats(len(files), 10 * len(files), 10.0, 10.0), decision=Decision("compact", "small", 1),
                staging="s", old="o")


def test_quiet_period():
    from lakekeeper_spark.commands.compact import apply_quiet_period

    now = 1_800_000_000.0
    old = _unit("old", [(now - 3600) * 1000, (now - 7200) * 1000])
    new = _unit("new", [(now - 3600) * 1000, (now - 30) * 1000])
    p = TablePlan(table="db.t", run_id="r", format="parquet", location="x", partitioned=True, units=[old, new],
                  backup_table="db.b", journal_dir="j")
    apply_quiet_period(p, None, now)
    assert [u.decision.action for u in p.units] == ["compact", "compact"]
    apply_quiet_period(p, 600, now)
    assert [u.decision.action for u in p.units] == ["compact", "skip"]
    assert "within the quiet period of 600s" in new.decision.reason and "30s old" in new.decision.reason
    from lakekeeper_spark.policy.config import build_settings
    assert build_settings({"quiet_period": "10m"}, {}).quiet_period_seconds == 600
    assert build_settings({}, {"quiet_period": "30s"}).quiet_period_seconds == 30
    assert Settings().quiet_period_seconds is None
    assert os.environ.get("LAKEKEEPER_FAULT_AT") is None
