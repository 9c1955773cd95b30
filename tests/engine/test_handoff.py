"""compact's hand-over (lakekeeper_spark/report/handoff.py): the go file
judged against the analyzed tables, the wait with a fake clock, the atomic
write, and the command line's refusals (pure, no Spark); the files as URIs
of the cluster's filesystem, through the session's Hadoop client (the
warehouse's filesystem: file:// here, HDFS on the test bed)."""

from __future__ import annotations

import json

import pytest

from lakekeeper_spark.args import parse_args
from lakekeeper_spark.report.errors import UsageError
from lakekeeper_spark.report.handoff import Go, HadoopFiles, is_uri, parse_go, wait_for_go, write_atomic

ANALYZED = ["db.a", "db.b"]


def test_go_names_some_of_the_analyzed_tables():
    assert parse_go('{"tables": ["db.b", "db.b"]}', ANALYZED) == Go(tables=["db.b"])
    assert parse_go('{"tables": ["db.a", "db.b"]}', ANALYZED).outcome == "go"


def test_no_table_and_stop_compact_nothing():
    empty = parse_go('{"tables": []}', ANALYZED)
    assert empty.outcome == "stop" and empty.tables == [] and empty.stop == "no table to compact"
    stop = parse_go('{"stop": "pre-flight failed"}', ANALYZED)
    assert (stop.outcome, stop.tables, stop.stop) == ("stop", [], "pre-flight failed")
    assert stop.to_dict() == {"outcome": "stop", "tables": [], "reason": "pre-flight failed"}


@pytest.mark.parametrize("text, why", [
    ("not json", "not JSON"),
    ("[]", "either tables"),
    ('{"tables": ["db.a"], "stop": "x"}', "either tables"),
    ('{"tables": "db.a"}', "list of names"),
    ('{"tables": [1]}', "list of names"),
    ('{"tables": ["db.a", "db.c"]}', "did not analyze: db.c"),
])
def test_a_go_file_the_driver_cannot_use_is_invalid(text, why):
    go = parse_go(text, ANALYZED)
    assert go.outcome == "invalid" and go.tables == [] and why in go.stop, go


def test_wait_reads_the_go_file_once_it_is_there(tmp_path):
    path = tmp_path / "go.json"
    now = [0.0]

    def sleep(seconds):
        now[0] += seconds
        if now[0] >= 2:
            write_atomic(str(path), json.dumps({"tables": ["db.a"]}))

    go = wait_for_go(str(path), 60, ANALYZED, clock=lambda: now[0], sleep=sleep)
    assert go.tables == ["db.a"] and now[0] == 2
    assert [p.name for p in tmp_path.iterdir()] == ["go.json"]  # the temporary file was renamed


def test_wait_gives_up_after_the_timeout(tmp_path):
    now = [0.0]
    go = wait_for_go(str(tmp_path / "go.json"), 5, ANALYZED, clock=lambda: now[0],
                     sleep=lambda s: now.__setitem__(0, now[0] + s))
    assert go.outcome == "timeout" and go.tables == [] and "no go file within 5 s" in go.stop
    assert 5 <= now[0] <= 5.5


def test_the_command_line():
    args, _settings, tables = parse_args(["compact", "--tables", "db.a,db.b", "--analysis-file", "/t/a.json",
                                          "--go-file", "/t/g.json", "--go-timeout", "90", "--history", "3"])
    assert (args.analysis_file, args.go_file, args.go_timeout, tables) == ("/t/a.json", "/t/g.json", 90.0, ANALYZED)
    for argv, why in [
        (["compact", "--table", "db.a", "--analysis-file", "/t/a"], "go together"),
        (["analyze", "--table", "db.a", "--analysis-file", "/t/a", "--go-file", "/t/g"], "only apply to compact"),
        (["compact", "--table", "db.a", "--analysis-file", "/t/a", "--go-file", "/t/g", "--dry-run"], "dry run"),
        (["compact", "--table", "db.a", "--analysis-file", "/t/a", "--go-file", "/t/g", "--go-timeout", "0"],
         "greater than 0"),
        (["compact", "--table", "db.a", "--history", "3"], "--history only applies to analyze"),
    ]:
        with pytest.raises(UsageError, match=why):
            parse_args(argv)


def test_which_names_are_uris():
    for uri in ("hdfs://nn:8020/user/etl/go.json", "viewfs://cluster/a.json", "file:///tmp/a.json", "file:/tmp/a.json",
                "o3fs://bucket.vol/a"):
        assert is_uri(uri), uri
    for path in ("/tmp/lk-run/go.json", "lk-run/go.json", "./a:b/go.json", "C:go.json", ""):
        assert not is_uri(path), path


def test_the_files_as_uris_through_the_hadoop_client(spark, warehouse, files):
    from lakekeeper_spark.storage.fs import HadoopFS

    hf = HadoopFiles(HadoopFS(spark))
    root = warehouse + "/handoff-" + __import__("uuid").uuid4().hex[:8]
    analysis, go_file = root + "/analysis.json", root + "/go.json"
    assert hf.read(analysis) is None  # not there yet (its directory neither)
    hf.write_atomic(analysis, '{"command": "analyze"}\n')
    assert hf.read(analysis) == '{"command": "analyze"}\n'
    hf.write_atomic(analysis, "{}\n")  # a second write replaces it
    assert files.read_bytes(analysis) == b"{}\n"
    assert sorted(files.names(root)) == ["analysis.json"]  # no temporary file left
    now = [0.0]

    def sleep(seconds):
        now[0] += seconds
        if now[0] >= 1.5:
            hf.write_atomic(go_file, json.dumps({"tables": ["db.b"]}))

    go = wait_for_go(go_file, 60, ANALYZED, clock=lambda: now[0], sleep=sleep, read=hf.read)
    assert go == Go(tables=["db.b"]) and now[0] == 1.5
    assert wait_for_go(root + "/none.json", 2, ANALYZED, clock=lambda: now[0],
                       sleep=lambda x: now.__setitem__(0, now[0] + x), read=hf.read).outcome == "timeout"
