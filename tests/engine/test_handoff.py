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
from lakekeeper_spark.report.handoff import (
    Go,
    HadoopFiles,
    LocalFiles,
    files_for,
    handoff_names,
    is_uri,
    parse_go,
    wait_for_go,
    write_atomic,
)

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


def test_a_cluster_mode_driver_takes_every_name_on_the_clusters_filesystem():
    """With --result-uri (a driver in a YARN container) the names go through the Hadoop client, qualified
    there: a relative name is in the user's home on the default filesystem, as the result's."""
    class FS:  # what HadoopFS.qualify answers on a cluster whose default filesystem is hdfs://nn:8020
        @staticmethod
        def qualify(name):
            return name if is_uri(name) else "hdfs://nn:8020/user/etl/" + name

    names = (".lakekeeper/results/r1.analysis.json", "hdfs://nn:8020/tmp/r1.go.json")
    assert handoff_names(*names, FS, cluster=True) == ("hdfs://nn:8020/user/etl/.lakekeeper/results/r1.analysis.json",
                                                       "hdfs://nn:8020/tmp/r1.go.json")
    assert handoff_names(*names, FS, cluster=False) == names  # a client-mode driver's names stay as given
    assert isinstance(files_for(names[0], FS, cluster=True), HadoopFiles)
    assert isinstance(files_for(names[0], FS), LocalFiles) and isinstance(files_for(names[1], FS), HadoopFiles)


def test_the_files_as_uris_through_the_hadoop_client(spark, warehouse, files):
    from lakekeeper_spark.storage.fs import HadoopFS

    hf = HadoopFiles(HadoopFS(spark))
    root = warehouse + "/handoff-" + __import__("uuid").uuid4().hex[:8]
    analysis, go_file = root + "/analysis.json", root + "/go.json"
    assert hf.read(analysis) is None  # not there yet (its directory neither)
    hf.write_atomic(analysis, '{"command": "analyze"}\n')
    assert hf.read(analysis) == '{"command": "analyze"}\n'
    # for the owner's eyes only, as the result's document: the analysis names every table's paths and sizes
    assert (files.mode(root), files.mode(analysis)) == (0o700, 0o600)
    hf.write_atomic(analysis, "{}\n")  # a second write replaces it
    assert files.read_bytes(analysis) == b"{}\n" and files.mode(analysis) == 0o600
    assert [n for n in files.names(root) if not n.endswith(".crc")] == ["analysis.json"]  # no temporary file left
    now = [0.0]

    def sleep(seconds):
        now[0] += seconds
        if now[0] >= 1.5:
            hf.write_atomic(go_file, json.dumps({"tables": ["db.b"]}))

    go = wait_for_go(go_file, 60, ANALYZED, clock=lambda: now[0], sleep=sleep, read=hf.read)
    assert go == Go(tables=["db.b"]) and now[0] == 1.5
    assert wait_for_go(root + "/none.json", 2, ANALYZED, clock=lambda: now[0],
                       sleep=lambda x: now.__setitem__(0, now[0] + x), read=hf.read).outcome == "timeout"


def test_analyze_then_compact_with_uris_in_one_application(spark, warehouse, files):
    """The driver's side of a cluster-mode window: the analysis written to a URI, the go read from one
    (written by another thread, as the launcher on the edge node would), the table compacted."""
    import threading
    import types
    import uuid

    from engine_helpers import make_table

    from lakekeeper_spark import cli
    from lakekeeper_spark.catalog.catalog import Catalog
    from lakekeeper_spark.catalog.context import Context
    from lakekeeper_spark.policy.config import build_settings
    from lakekeeper_spark.report.progress import Progress
    from lakekeeper_spark.storage.fs import HadoopFS
    from lakekeeper_spark.storage.layout import new_run_id

    loc = make_table(spark, warehouse, "handoff_uri", rows=600, files=12)
    root = warehouse + "/handoff-" + uuid.uuid4().hex[:8]
    fs = HadoopFS(spark)
    args = types.SimpleNamespace(analysis_file=root + "/analysis.json", go_file=root + "/go.json", go_timeout=120.0,
                                 database=None)
    ctx = Context(spark, fs, Catalog(spark), build_settings({}, {}), new_run_id())

    def launcher():  # waits for the analysis, then says go for the table it found in need
        hf = HadoopFiles(fs)
        for _i in range(1200):
            text = hf.read(args.analysis_file)
            if text is not None:
                todo = [t["table"] for t in json.loads(text)["tables"] if t.get("needs_compaction")]
                hf.write_atomic(args.go_file, json.dumps({"tables": todo}))
                return
            __import__("time").sleep(0.1)

    helper = threading.Thread(target=launcher)
    helper.start()
    doc: dict = {}
    results = cli._analyze_then_compact(ctx, args, ["lk.handoff_uri"], Progress(None, "compact", ctx.run_id), doc)
    helper.join(timeout=30)
    analysis = json.loads(files.read_bytes(args.analysis_file))
    assert analysis["command"] == "analyze" and analysis["run_id"] == ctx.run_id
    assert [t["table"] for t in analysis["tables"]] == ["lk.handoff_uri"] and analysis["tables"][0]["files"] == 12
    assert doc["handoff"]["outcome"] == "go" and doc["handoff"]["tables"] == ["lk.handoff_uri"], doc
    assert [(r["table"], r["status"]) for r in results] == [("lk.handoff_uri", "compacted")], results
    assert len(files.data_files(loc)) == 1
