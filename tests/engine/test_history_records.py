"""Unit tests of the run history's pure part (history.py): a record built
from a command's result, record names, which results are recorded, the
timeline and summary of records; plus the writer and reader against a
fake filesystem. No Spark here."""

from __future__ import annotations

import json

import pytest

from lakekeeper_spark.report import history as H
from lakekeeper_spark.args import parse_args
from lakekeeper_spark.report.errors import UsageError
from lakekeeper_spark.policy.retention import BackupFacts, RetentionPolicy, retention_verdicts

T0 = 1_795_225_800.0  # 2026-11-21T01:50:00Z
FACTS = {"user": "etl", "host": "edge1", "spark_app_id": "local-1", "spark_master": "local[2]",
         "spark_version": "3.5.1", "lakekeeper_version": "0.1.0"}
RUN1 = "20261121T015000-aaaaaa"
R2, R3, R4, R5 = (f"20261121T0{m}0000-{c * 6}" for m, c in ((2, "b"), (3, "c"), (4, "d"), (5, "e")))


def unit(spec, status, fb, fa, bb, ba, **extra):
    return dict({"spec": spec, "location": f"file:/w/t/{spec}", "status": status, "files_before": fb,
                 "files_after": fa, "bytes_before": bb, "bytes_after": ba, "rows_before": None,
                 "rows_after": None, "reason": "x", "rule": "ratio"}, **extra)


COMPACTED = {
    "table": "db.t", "status": "compacted", "reason": "compacted 2 of 3 unit(s)", "changed": True,
    "run_id": RUN1, "backup_table": "db.__bkp_t_20261121_015000_aaaaaa", "mode": "ratio", "code": None,
    "recovered": [],
    "partitions": [
        unit("dt=a", "compacted", 10, 1, 1000, 900, rows_before=100, rows_after=100, verified="content",
             content_checksum="123"),
        unit("dt=b", "compacted", 5, 1, 500, 450, rows_before=50, rows_after=50, verified="rows"),
        unit("dt=c", "skipped", 1, 1, 10, 10),
    ],
}


def test_a_compaction_record():
    rec = H.build_record("compact", COMPACTED, T0, T0 + 12.5, FACTS)
    assert rec["outcome"] == "compacted" and rec["run_id"] == RUN1 and rec["command"] == "compact"
    assert rec["started_at"] == "2026-11-21T01:50:00.000Z" and rec["ended_at"] == "2026-11-21T01:50:12.500Z"
    assert rec["seconds"] == 12.5 and rec["user"] == "etl" and rec["spark_app_id"] == "local-1"
    assert [u["spec"] for u in rec["units"]] == ["dt=a", "dt=b"]  # the skipped unit was not touched
    assert rec["totals"] == {"units": 2, "units_changed": 2, "files_before": 15, "files_after": 2,
                             "bytes_before": 1500, "bytes_after": 1350, "rows_before": 150, "rows_after": 150}
    assert rec["verification"] == {"units": 2, "content": 1, "rows": 1, "rows_before": 150, "rows_after": 150}
    assert rec["units"][0]["content_checksum"] == "123" and "location" not in rec["units"][0]
    assert rec["backup_table"] == COMPACTED["backup_table"] and "recovered" not in rec
    json.dumps(rec)  # plain JSON
    assert H.record_name(rec) == "20261121T015012.500Z-20261121T015000-aaaaaa.json"
    assert H.record_name(rec, 2) == "20261121T015012.500Z-20261121T015000-aaaaaa-2.json"
    assert H.is_record_name(H.record_name(rec)) and H.is_record_name(H.record_name(rec, 2))
    assert not H.is_record_name("table.json") and not H.is_record_name(H.record_name(rec) + ".crc")


def test_a_sampled_verification_is_recorded():
    """verify: sample (issue 49): the record keeps which units were read back, and the queue (issue 50)."""
    sampled = {"fraction": 0.5, "seed": f"{RUN1}/db.t", "units": 2, "sampled": ["dt=a"]}
    rec = H.build_record("compact", dict(COMPACTED, verify="sample", verify_sample=sampled, queue="root.etl"),
                         T0, T0 + 1)
    assert rec["verify"] == "sample" and rec["verify_sample"] == sampled and rec["queue"] == "root.etl"
    assert rec["verification"]["content"] == 1 and rec["verification"]["rows"] == 1
    assert "verify_sample" not in H.build_record("compact", COMPACTED, T0, T0 + 1)


def test_a_failed_compaction_after_a_swap_and_a_dedupe():
    res = dict(COMPACTED, status="failed", code="write_failed", reason="1 of 2 unit(s) failed: boom",
               recovered_after_error=[{"action": "restored_original", "spec": "dt=b", "run_id": RUN1}],
               partitions=[unit("dt=a", "compacted", 10, 2, 1000, 900, rows_before=100, rows_after=90,
                                verified="content", duplicates_dropped=7, deletes_dropped=3),
                           unit("dt=b", "failed", 5, 5, 500, 500, code="write_failed")])
    rec = H.build_record("compact", res, T0, T0 + 1)
    assert rec["outcome"] == "failed" and rec["code"] == "write_failed" and rec["changed"]
    assert rec["totals"]["units"] == 2 and rec["totals"]["units_changed"] == 1
    assert rec["totals"]["files_before"] == 10 and rec["totals"]["files_after"] == 2
    assert rec["verification"]["rows_dropped_by_dedupe"] == 10
    assert rec["recovered"] == [{"run_id": RUN1, "action": "restored_original", "spec": "dt=b"}]
    assert "user" not in rec  # no facts given


def test_a_rollback_record_names_the_run_it_undid():
    res = {"table": "db.t", "status": "rolled_back", "reason": "restored 1 unit(s)", "changed": True,
           "run_id": "20261120T010000-bbbbbb", "backup_table": "db.__bkp_t_20261121_015000_aaaaaa",
           "partitions": [unit("dt=a", "rolled_back", 1, 10, 900, 1000)]}
    rec = H.build_record("rollback", res, T0, T0 + 2)
    assert rec["outcome"] == "rolled_back" and rec["backup_run_id"] == RUN1
    assert rec["totals"]["files_before"] == 1 and rec["totals"]["files_after"] == 10


def test_a_cleanup_record_says_which_backups_went_and_why():
    facts = [BackupFacts("db.b1", "r1", T0 - 90_000, False), BackupFacts("db.b2", "r2", T0 - 80_000, True),
             BackupFacts("db.b3", "r3", T0 - 70_000, False)]
    verdicts = retention_verdicts(facts, RetentionPolicy(keep_last=1), T0)
    assert [v.rule for v in verdicts] == ["keep_last", "pinned", "keep_last"]
    assert [v.delete for v in verdicts] == [True, False, False]
    verdicts = retention_verdicts(facts, RetentionPolicy(older_than_seconds=0, grace_seconds=75_000), T0)
    assert [v.rule for v in verdicts] == ["all", "pinned", "grace"]
    assert retention_verdicts(facts, RetentionPolicy(keep_last=0, older_than_seconds=3600), T0)[0].rule == \
        "keep_last+older_than"
    removed = [dict(verdicts[0].to_dict(), bytes=1000, units=2)]
    kept = [v.to_dict() for v in verdicts[1:]]
    res = {"table": "db.t", "status": "cleaned", "reason": "removed 1 backup(s)", "changed": True,
           "run_id": "20261121T000000-cccccc", "backups_removed": removed, "kept": kept, "freed_bytes": 1000,
           "partitions": []}
    rec = H.build_record("cleanup", res, T0, T0 + 1)
    assert rec["outcome"] == "cleaned" and rec["freed_bytes"] == 1000
    assert rec["backups_dropped"] == [{"backup_table": "db.b1", "run_id": "r1", "bytes": 1000, "units": 2,
                                       "age_seconds": 90_000, "rule": "all", "reason": verdicts[0].reason}]
    assert [(b["backup_table"], b["rule"], b["pinned"]) for b in rec["backups_kept"]] == [
        ("db.b2", "pinned", True), ("db.b3", "grace", False)]
    assert rec["totals"]["units"] == 0 and rec["totals"]["files_before"] is None
    assert "orphans_removed" not in rec
    # with orphans (docs/reconcile.md): the killed runs' staging copies it removed
    orphan = {"path": "hdfs://nn/t/.dt=a.lk_staging_r9", "kind": "staging", "run_id": "r9", "state": "orphaned",
              "files": 2, "bytes": 300, "reason": "x"}
    rec = H.build_record("cleanup", dict(res, orphans_removed=[orphan]), T0, T0 + 1)
    assert rec["orphans_removed"] == [{"path": orphan["path"], "run_id": "r9", "state": "orphaned", "files": 2,
                                       "bytes": 300}]


@pytest.mark.parametrize("command,res,dry_run,expected", [
    ("compact", {"status": "compacted", "run_id": RUN1}, False, True),
    ("compact", {"status": "compacted", "run_id": RUN1}, True, False),  # a dry run writes nothing
    ("compact", {"status": "not_needed", "run_id": RUN1, "changed": False}, False, False),  # nothing to do
    ("compact", {"status": "not_needed", "run_id": RUN1, "changed": True}, False, True),  # its recovery changed it
    ("compact", {"status": "skipped", "code": "deadline", "run_id": RUN1, "changed": False}, False, False),
    ("compact", {"status": "skipped", "code": "quiet_period", "run_id": RUN1, "changed": True}, False, True),
    ("compact", {"status": "refused", "code": "excluded", "run_id": RUN1}, False, True),
    ("compact", {"status": "failed", "code": "error", "run_id": RUN1}, False, True),
    ("compact", {"status": "locked", "code": "locked", "run_id": RUN1}, False, False),
    ("rollback", {"status": "refused", "code": "not_found", "run_id": RUN1}, False, True),  # no backup of that run
    ("cleanup", {"status": "pinned", "run_id": RUN1}, False, True),
    ("analyze", {"status": "analyzed", "run_id": RUN1}, False, False),
    ("recover", {"status": "recovered", "run_id": RUN1, "changed": True}, False, False),
])
def test_which_runs_are_recorded(command, res, dry_run, expected):
    assert H.should_record(command, res, dry_run) is expected


def test_records_list_a_bounded_number_of_units():
    many = dict(COMPACTED, partitions=[unit(f"dt={i:03d}", "compacted", 3, 1, 30, 25) for i in range(250)])
    rec = H.build_record("compact", many, T0, T0 + 1)
    assert len(rec["units"]) == H.MAX_UNITS and rec["units_not_listed"] == 50
    assert rec["totals"]["units"] == 250 and rec["totals"]["files_before"] == 750  # the totals count every unit
    short = H.trim_units(rec, 20)
    assert len(short["units"]) == 20 and short["units_not_listed"] == 230 and len(rec["units"]) == H.MAX_UNITS
    small = H.build_record("compact", COMPACTED, T0, T0 + 1)
    assert H.trim_units(small) is small


def test_outcomes():
    assert H.outcome_of({"status": "skipped", "changed": True}) == "recovered"
    assert H.outcome_of({"status": "not_needed", "changed": True}) == "recovered"
    assert not set(H.OUTCOMES) & set(H.NOT_RECORDED)
    assert H.outcome_of({"status": "refused"}) == "refused"
    assert H.backup_run_id("db.__bkp_t_20261121_015000_aaaaaa") == RUN1 and H.backup_run_id("db.x") is None


def _history():
    c1 = H.build_record("compact", COMPACTED, T0, T0 + 10)
    rb = H.build_record("rollback", {"table": "db.t", "status": "rolled_back", "changed": True, "run_id": R2,
                                     "backup_table": COMPACTED["backup_table"],
                                     "partitions": [unit("dt=a", "rolled_back", 1, 10, 900, 1000),
                                                    unit("dt=b", "rolled_back", 1, 5, 450, 500)]}, T0 + 100, T0 + 110)
    c2 = H.build_record("compact", dict(COMPACTED, run_id=R3), T0 + 200, T0 + 210)
    cl = H.build_record("cleanup", {"table": "db.t", "status": "cleaned", "changed": True, "run_id": R4,
                                    "backups_removed": [{"backup_table": "db.bk3", "rule": "all"}], "kept": [],
                                    "freed_bytes": 1500, "partitions": []}, T0 + 300, T0 + 301)
    failed = H.build_record("compact", {"table": "db.t", "status": "failed", "code": "error", "run_id": R5,
                                        "partitions": []}, T0 + 400, T0 + 401)
    return [failed, cl, c2, rb, c1]  # newest first, as analyze returns them


def test_timeline_and_summary():
    points = H.timeline(_history())
    assert [(p["command"], p["outcome"]) for p in points] == [
        ("compact", "compacted"), ("rollback", "rolled_back"), ("compact", "compacted"), ("cleanup", "cleaned"),
        ("compact", "failed")]
    figures = [(p["files_before"], p["files_after"]) for p in points]
    assert figures == [(15, 2), (2, 15), (15, 2), (None, None), (None, None)]
    assert points[3]["freed_bytes"] == 1500 and points[3]["backups_dropped"] == ["db.bk3"]
    s = H.summarize(_history())
    assert s["runs"] == 5 and s["outcomes"] == {"compacted": 2, "rolled_back": 1, "cleaned": 1, "failed": 1}
    assert s["files_removed"] == 26 and s["files_restored"] == 13 and s["bytes_freed"] == 1500
    assert s["backups_dropped"] == 1 and s["first_at"] == "2026-11-21T01:50:10.000Z"
    assert s["last"]["compact"] == {"run_id": R5, "outcome": "failed", "ended_at": points[-1]["ended_at"]}
    assert H.summarize([]) == {"runs": 0, "outcomes": {}, "first_at": None, "last_at": None, "files_removed": 0,
                               "files_restored": 0, "bytes_freed": 0, "backups_dropped": 0, "last": {}}


class FakeFS:
    def __init__(self):
        self.files: dict[str, str] = {}
        self.dirs: set[str] = set()

    def mkdirs(self, uri):
        self.dirs.add(uri)

    def exists(self, uri):
        return uri in self.files or uri in self.dirs

    def write_text(self, uri, text):
        assert uri not in self.files, "never overwrites"
        self.files[uri] = text

    def read_text(self, uri):
        return self.files[uri]

    def list_names(self, uri):
        return [(k.rsplit("/", 1)[1], False) for k in self.files if k.rsplit("/", 1)[0] == uri]


def test_write_and_read_newest_first():
    fs = FakeFS()
    folder = "file:/w/.t.lakekeeper/history"
    recs = list(reversed(_history()))
    paths = [H.write_record(fs, folder, r) for r in recs]
    again = H.write_record(fs, folder, recs[0])  # the same run and end time: a second file, nothing rewritten
    assert again.endswith("-1.json") and again not in paths and len(fs.files) == 6
    fs.files[f"{folder}/20991231T000000.000Z-20991231T000000-ffffff.json"] = '{"torn'
    fs.files[f"{folder}/notes.txt"] = "not a record"
    got, bad = H.read_history(fs, folder, 3)
    assert [r["run_id"] for r in got] == [R5, R4, R3] and bad == [
        "20991231T000000.000Z-20991231T000000-ffffff.json"]
    assert H.read_history(fs, folder, 0) == ([], []) and H.read_history(fs, "file:/nowhere", 5) == ([], [])


def test_history_option():
    args, settings, _t = parse_args(["analyze", "--table", "db.t", "--history", "5"])
    assert settings.history == 5
    assert parse_args(["analyze", "--table", "db.t"])[1].history == 20
    with pytest.raises(UsageError, match="only applies to analyze"):
        parse_args(["compact", "--table", "db.t", "--history", "5"])
    with pytest.raises(UsageError, match="history must be >= 0"):
        parse_args(["analyze", "--table", "db.t", "--history", "-1"])
