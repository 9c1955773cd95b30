"""Unit tests of the pure parts of the engine: no Spark here."""

from __future__ import annotations

import pytest

from lakekeeper_spark.config import Settings, build_settings, parse_duration
from lakekeeper_spark.errors import UsageError
from lakekeeper_spark.fs import parse_status_dump
from lakekeeper_spark.model import FileEntry, Listing, TableInfo
from lakekeeper_spark.names import parse_table_list, parse_table_name, sql_path_literal, sql_string_literal
from lakekeeper_spark import planner

MB = 1024 * 1024


def listing(*sizes: int, subdirs=()) -> Listing:
    return Listing("file:/t", files=[FileEntry(f"f{i}", s, 0) for i, s in enumerate(sizes)], subdirs=list(subdirs))


@pytest.mark.parametrize(
    "text,seconds",
    [("30m", 1800), ("12h", 43200), ("7d", 604800), ("2w", 1209600), ("45s", 45), ("7", 604800), (" 3d ", 259200), (2, 172800)],
)
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["7x", "d7", "-1d", "1.5h", "", "abc", True, -3])
def test_bad_durations(text):
    if text == "":
        assert parse_duration(text) is None
        return
    with pytest.raises(UsageError):
        parse_duration(text)


@pytest.mark.parametrize(
    "name", ["db.t; DROP TABLE x", "db", "a.b.c", "db.t`", "db.t--", "db. t", "db.ta ble", "`db`.t", "db.t'", "ü.t", ""]
)
def test_bad_table_names_rejected(name):
    with pytest.raises(UsageError):
        parse_table_name(name)


def test_table_names_lowercased_and_deduplicated():
    assert parse_table_name("DB.Events") == ("db", "events")
    assert parse_table_list("a.b, A.B ,c.d") == ["a.b", "c.d"]
    with pytest.raises(UsageError):
        parse_table_list(" , ")


def test_sql_literals():
    assert sql_string_literal("it's") == "'it\\'s'"
    assert sql_string_literal("a\\b") == "'a\\\\b'"
    assert sql_path_literal("hdfs://nn/a b/c=1") == "'hdfs://nn/a b/c=1'"
    for bad in ("file:/a'b", "file:/a\\b", "file:/a\nb"):
        with pytest.raises(UsageError):
            sql_path_literal(bad)


def test_settings_precedence_and_defaults():
    s = build_settings({"block_size_mb": 256, "log_level": "debug"}, {"block_size_mb": 64, "dry_run": None})
    assert s.block_size_mb == 64 and s.log_level == "DEBUG" and s.dry_run is False
    assert s.target_file_bytes == 64 * MB  # target defaults to the block size
    assert Settings().small_file_threshold_bytes == 128 * MB / 10
    with pytest.raises(UsageError):
        build_settings({"compaction_ratio_threshold": 0}, {})
    with pytest.raises(UsageError):
        build_settings({}, {"backup_prefix": "bad-prefix"})
    with pytest.raises(UsageError):
        build_settings({}, {"log_level": "LOUD"})


def test_config_file(tmp_path):
    from lakekeeper_spark.config import load_config_file

    f = tmp_path / "lk.yaml"
    f.write_text("block_size_mb: 256\ncompaction_ratio_threshold: 5\nspark_submit:\n  enabled: true\n")
    assert load_config_file(str(f)) == {"block_size_mb": 256, "compaction_ratio_threshold": 5}
    f.write_text("block_size: 1\n")
    with pytest.raises(UsageError, match="unknown key"):
        load_config_file(str(f))
    f.write_text("- a\n")
    with pytest.raises(UsageError):
        load_config_file(str(f))
    with pytest.raises(UsageError, match="cannot read"):
        load_config_file(str(tmp_path / "missing.yaml"))


def test_target_file_count():
    assert planner.target_file_count(0, 128 * MB) == 0
    assert planner.target_file_count(1, 128 * MB) == 1
    assert planner.target_file_count(128 * MB, 128 * MB) == 1
    assert planner.target_file_count(128 * MB + 1, 128 * MB) == 2
    assert planner.target_file_count(3 * 1024 * MB, 128 * MB) == 24


def test_decide_reference_rule():
    s = Settings()
    small = listing(*[1000] * 50)
    d = planner.decide(planner.file_stats(small), s, small)
    assert d.action == "compact" and d.target_files == 1
    # average at or above block/ratio: skip, and say why
    big = listing(*[13 * MB] * 20)
    d = planner.decide(planner.file_stats(big), s, big)
    assert d.action == "skip" and "not below the threshold" in d.reason
    # one file, no files, subdirectories, missing directory
    assert planner.decide(planner.file_stats(listing(5)), s).reason == "a single file"
    assert planner.decide(planner.file_stats(listing()), s).reason == "no data files"
    nested = listing(1, 2, subdirs=["x"])
    assert "subdirectories" in planner.decide(planner.file_stats(nested), s, nested).reason
    gone = Listing("file:/t", exists=False)
    assert planner.decide(planner.file_stats(gone), s, gone).reason == "directory does not exist"


def test_decide_is_idempotent_after_compaction():
    """What compaction writes must never qualify again."""
    s = Settings(block_size_mb=1, compaction_ratio_threshold=10)
    before = listing(*[10_000] * 300)  # 3 MB in 300 files -> 3 files
    d = planner.decide(planner.file_stats(before), s, before)
    assert d.action == "compact" and d.target_files == 3
    after = listing(1_000_000, 1_000_000, 1_000_000)
    assert planner.decide(planner.file_stats(after), s, after).action == "skip"
    # small total, several files that cannot be merged further: no loop
    s2 = Settings(block_size_mb=1, compaction_ratio_threshold=1)
    two = listing(600_000, 600_000)
    assert planner.decide(planner.file_stats(two), s2, two).action == "skip"


def test_stats_median_and_average():
    st = planner.file_stats(listing(1, 2, 3, 100))
    assert st.files == 4 and st.bytes == 106 and st.avg_bytes == 26.5 and st.median_bytes == 2.5


def test_hidden_paths_and_names():
    run = "20261122T010203-abcdef"
    assert planner.is_run_id(run) and not planner.is_run_id("2026-11-22")
    loc = "hdfs://nn:8020/wh/db/ev/year=2024/month=01"
    assert planner.staging_path(loc, run) == f"hdfs://nn:8020/wh/db/ev/year=2024/.month=01.lk_staging_{run}"
    assert planner.old_path(loc, run) == f"hdfs://nn:8020/wh/db/ev/year=2024/.month=01.lk_old_{run}"
    assert planner.parse_hidden_name(f".month=01.lk_old_{run}") == ("month=01", "lk_old", run)
    assert planner.parse_hidden_name("month=01") is None
    for p in (planner.staging_path(loc, run), planner.old_path(loc, run), planner.trash_path(loc, run)):
        assert planner.is_hidden(p.rsplit("/", 1)[1])
    assert planner.backup_table_name("__bkp", "events", run) == "__bkp_events_20261122_010203_abcdef"
    assert planner.backup_table_pattern("__bkp", "events").match("__bkp_events_20261122_010203_abcdef")
    assert not planner.backup_table_pattern("__bkp", "events").match("__bkp_events_x_20261122_010203_abcdef")
    assert len(planner.backup_table_name("__bkp", "t" * 200, run)) <= 128


def _info(partitioned: bool) -> TableInfo:
    return TableInfo("db", "ev", "EXTERNAL", "file:/wh/db/ev", "hive", None, None, None, {}, {}, [("id", "bigint")],
                     [("dt", "string")] if partitioned else [])


def test_journal_dir_never_moves_with_a_swap():
    assert planner.journal_dir(_info(True)) == "file:/wh/db/ev/.lakekeeper"
    assert planner.journal_dir(_info(False)) == "file:/wh/db/.ev.lakekeeper"


def test_plan_is_printable_data():
    info = _info(True)
    run = "20261122T010203-abcdef"
    units = [
        ("dt=1", {"dt": "1"}, "file:/wh/db/ev/dt=1", listing(*[100] * 20)),
        ("dt=2", {"dt": "2"}, "file:/wh/db/ev/dt=2", listing(200 * MB)),
    ]
    p = planner.plan_table(info, units, Settings(), run)
    assert [u.spec for u in p.to_compact] == ["dt=1"]
    d = p.to_dict()
    assert d["backup_table"] == "db.__bkp_ev_20261122_010203_abcdef"
    assert d["units"][0]["decision"] == "compact" and d["units"][1]["decision"] == "skip"
    import json

    json.dumps(d)  # a plan is plain data


def test_parse_status_dump():
    dump = (
        "[HdfsNamedFileStatus{path=hdfs://127.0.0.1:9000/wh/t/a.parquet; isDirectory=false; length=10; "
        "replication=1; blocksize=134217728; modification_time=1700000000000; access_time=1; owner=root; "
        "group=supergroup; permission=rw-r--r--; isSymlink=false; hasAcl=false; isEncrypted=false; "
        "isErasureCoded=false}, HdfsNamedFileStatus{path=hdfs://127.0.0.1:9000/wh/t/sub; isDirectory=true; "
        "modification_time=1700000000001; access_time=0; owner=root; group=supergroup; permission=rwxr-xr-x; "
        "isSymlink=false; hasAcl=false; isEncrypted=false; isErasureCoded=false}]"
    )
    assert parse_status_dump(dump) == [
        ("hdfs://127.0.0.1:9000/wh/t/a.parquet", False, 10, 1700000000000),
        ("hdfs://127.0.0.1:9000/wh/t/sub", True, 0, 1700000000001),
    ]
    assert parse_status_dump("[]") == [] and parse_status_dump("{}") == []
    commons = "{" + dump[1:-1].replace("}, Hdfs", "},Hdfs") + "}"  # ArrayUtils.toString form
    assert parse_status_dump(commons) == parse_status_dump(dump)
    assert parse_status_dump("garbage") is None


def test_eligibility_rules():
    """Insert-only tables cannot be created on the embedded Hive 2.3
    Metastore, so this rule is checked on catalog facts directly."""
    from lakekeeper_spark.commands.common import check_eligible
    from lakekeeper_spark.errors import Refused

    def info(**kw):
        base = dict(db="db", name="t", table_type="EXTERNAL", location="file:/t", provider="hive", serde=None,
                    input_format=None, output_format=None, serde_properties={}, properties={},
                    data_columns=[("id", "int")], partition_columns=[], format="parquet")
        base.update(kw)
        return TableInfo(**base)

    check_eligible(info())
    cases = {
        "insert_only": info(properties={"transactional": "true", "transactional_properties": "insert_only"}),
        "acid": info(table_type="MANAGED", properties={"transactional": "true"}),
        "managed": info(table_type="MANAGED"),
        "view": info(table_type="VIEW"),
        "bucketed": info(num_buckets=4),
        "format": info(format=None),
        "no_location": info(location=None),
        "hidden_partition_column": info(partition_columns=[("_p", "string")]),
    }
    codes = {}
    for name, i in cases.items():
        with pytest.raises(Refused) as exc:
            check_eligible(i)
        codes[name] = exc.value.code
    assert codes == {
        "insert_only": "transactional_table", "acid": "transactional_table", "managed": "managed_table",
        "view": "view", "bucketed": "bucketed_table", "format": "unsupported_format",
        "no_location": "no_location", "hidden_partition_column": "hidden_partition_column",
    }


def test_space_needs_charge_every_ancestor():
    from lakekeeper_spark.model import Decision, FileStats, Unit
    from lakekeeper_spark.space import ancestors, needs

    assert ancestors("hdfs://nn:8020/wh/db/t/dt=1") == [
        "hdfs://nn:8020/wh/db/t", "hdfs://nn:8020/wh/db", "hdfs://nn:8020/wh", "hdfs://nn:8020/"]

    def unit(loc, size, target):
        return Unit("", None, loc, Listing(loc), FileStats(10, size, size / 10, size / 10),
                    Decision("compact", "", target), loc + ".s", loc + ".o")

    units = [unit("hdfs://nn/wh/t/dt=1", 1000, 1), unit("hdfs://nn/other/dt=2", 500, 3)]
    per = needs(units, replication=3, block_size=100, writers=2)
    # data x replication + one block per writer (x replication)
    assert per["hdfs://nn/wh/t"].space == 1000 * 3 + 1 * 100 * 3
    assert per["hdfs://nn/other"].space == 500 * 3 + 2 * 100 * 3
    assert per["hdfs://nn/"].space == per["hdfs://nn/wh/t"].space + per["hdfs://nn/other"].space
    assert per["hdfs://nn/wh/t"].names == 1 + 6


def test_sort_by_and_dedupe_settings(tmp_path):
    from lakekeeper_spark.config import load_config_file

    s = build_settings({"sort_by": ["B", "a"]}, {"dedupe_keys": "id, Region", "dedupe_order_by": "ts"})
    assert s.sort_by == ["b", "a"] and s.dedupe_keys == ["id", "region"] and s.dedupe_order_by == "ts" and s.dedupe
    assert not Settings().dedupe and Settings().sort_by == []
    f = tmp_path / "lk.yaml"
    f.write_text("sort_by: [a]\ndedupe:\n  keys: [id]\n  order_by: ts\n  delete_marker: op\n"
                 "  delete_marker_value: true\n")
    s = build_settings(load_config_file(str(f)), {"dedupe_order_by": "ver"})  # the command line wins
    assert (s.sort_by, s.dedupe_keys, s.dedupe_order_by, s.dedupe_delete_marker, s.dedupe_delete_value) == (
        ["a"], ["id"], "ver", "op", "true")
    f.write_text("dedupe:\n  key: [id]\n")
    with pytest.raises(UsageError, match="unknown dedupe key"):
        load_config_file(str(f))
    bad = [
        ({"sort_by": "a;b"}, "invalid sort_by column"),
        ({"sort_by": ["a", "A"]}, "given twice"),
        ({"sort_by": 3}, "list of column names"),
        ({"dedupe_keys": ["id"]}, "ordering column"),
        ({"dedupe_order_by": "ts"}, "key columns"),
        ({"dedupe_keys": ["id"], "dedupe_order_by": "id"}, "must not be one of the key"),
        ({"dedupe_keys": ["id"], "dedupe_order_by": "ts", "dedupe_delete_marker": "ts"}, "must not be a key"),
        ({"dedupe_keys": ["id"], "dedupe_order_by": "ts", "dedupe_delete_value": "D"}, "needs dedupe delete_marker"),
        ({"dedupe_keys": ["id`x"], "dedupe_order_by": "ts"}, "invalid dedupe keys column"),
    ]
    for overrides, words in bad:
        with pytest.raises(UsageError, match=words):
            build_settings({}, overrides)


def test_rewrite_columns_checked_against_the_table():
    from lakekeeper_spark.columns import resolve_columns
    from lakekeeper_spark.errors import Refused

    t = TableInfo(db="db", name="t", table_type="EXTERNAL", location="file:/t", provider="hive", serde=None,
                  input_format=None, output_format=None, serde_properties={}, properties={},
                  data_columns=[("id", "bigint"), ("Ts", "timestamp"), ("op", "string"), ("gone", "boolean"),
                                ("m", "map<string,int>")],
                  partition_columns=[("dt", "string")], format="parquet")

    def cols(**kw):
        return resolve_columns(build_settings({}, kw), t)

    assert not cols().dedupe and cols().sort_by == ()
    r = cols(sort_by=["ts", "id"], dedupe_keys=["id"], dedupe_order_by="ts", dedupe_delete_marker="gone")
    assert r.sort_by == ("Ts", "id") and r.keys == ("id",) and r.order_by == "Ts" and r.delete_marker == "gone"
    assert r.delete_value is None and r.dedupe_columns == ("id", "Ts", "gone")
    r = cols(dedupe_keys=["id"], dedupe_order_by="ts", dedupe_delete_marker="op", dedupe_delete_value="D")
    assert (r.delete_marker, r.delete_value) == ("op", "D")
    refused = [
        (dict(sort_by=["dt"]), "invalid_columns", "dt is a partition column"),
        (dict(sort_by=["nope"]), "invalid_columns", "nope is not a column of the table"),
        (dict(sort_by=["m"]), "invalid_columns", "cannot be compared"),
        (dict(dedupe_keys=["dt"], dedupe_order_by="ts"), "invalid_columns", "partition column"),
        (dict(dedupe_keys=["id"], dedupe_order_by="ts", dedupe_delete_marker="op"), "invalid_columns", "not a boolean"),
    ]
    for kw, code, words in refused:
        with pytest.raises(Refused, match=words) as exc:
            cols(**kw)
        assert exc.value.code == code
    t.format = "text"
    assert cols(sort_by=["id"]).sort_by == ("id",)
    with pytest.raises(Refused, match="parquet and orc") as exc:
        cols(dedupe_keys=["id"], dedupe_order_by="ts")
    assert exc.value.code == "unsupported_format"
