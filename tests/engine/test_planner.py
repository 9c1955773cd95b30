"""Unit tests of the pure parts of the engine: no Spark here."""

from __future__ import annotations

import pytest

from lakekeeper_spark.policy.config import Settings, build_settings, parse_duration
from lakekeeper_spark.report.errors import UsageError
from lakekeeper_spark.storage.status import parse_status_dump
from lakekeeper_spark.report.model import FileEntry, Listing, TableInfo
from lakekeeper_spark.policy.names import parse_table_list, parse_table_name, sql_path_literal, sql_string_literal
from lakekeeper_spark.policy import planner
from lakekeeper_spark.storage import layout, readers

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
    from lakekeeper_spark.policy.config import load_config_file

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
    assert layout.is_run_id(run) and not layout.is_run_id("2026-11-22")
    loc = "hdfs://nn:8020/wh/db/ev/year=2024/month=01"
    assert layout.staging_path(loc, run) == f"hdfs://nn:8020/wh/db/ev/year=2024/.month=01.lk_staging_{run}"
    assert layout.old_path(loc, run) == f"hdfs://nn:8020/wh/db/ev/year=2024/.month=01.lk_old_{run}"
    assert layout.parse_hidden_name(f".month=01.lk_old_{run}") == ("month=01", "lk_old", run)
    assert layout.parse_hidden_name("month=01") is None
    for p in (layout.staging_path(loc, run), layout.old_path(loc, run), layout.trash_path(loc, run)):
        assert readers.hive_skips(p.rsplit("/", 1)[1]) and readers.spark_skips(p.rsplit("/", 1)[1])
    assert layout.backup_table_name("__bkp", "events", run) == "__bkp_events_20261122_010203_abcdef"
    assert layout.backup_table_pattern("__bkp", "events").match("__bkp_events_20261122_010203_abcdef")
    assert not layout.backup_table_pattern("__bkp", "events").match("__bkp_events_x_20261122_010203_abcdef")
    assert len(layout.backup_table_name("__bkp", "t" * 200, run)) <= 128
    # a name cut to fit is still found by the lookup (was: never found again)
    for n in (98, 99, 100, 200):
        long_name = "Events_" + "t" * n
        made = layout.backup_table_name("__bkp", long_name, run)
        assert len(made) <= layout.BACKUP_NAME_MAX
        assert layout.backup_table_pattern("__bkp", long_name).match(made), (n, made)
        assert layout.backup_table_pattern("__bkp").match(made)
    assert len(layout.backup_table_name("__bkp", "t" * 99, run)) == 128
    assert layout.backup_table_name("__bkp", "t" * 99, run) == "__bkp_" + "t" * 99 + "_20261122_010203_abcdef"
    # without a table: the backup of any table (a database run passes over them)
    assert layout.backup_table_pattern("__bkp").match("__bkp_events_x_20261122_010203_abcdef")
    assert not layout.backup_table_pattern("__bkp").match("events")
    assert not layout.backup_table_pattern("__bkp").match("__bkp_events_20261122_010203")


def _info(partitioned: bool) -> TableInfo:
    return TableInfo("db", "ev", "EXTERNAL", "file:/wh/db/ev", "hive", None, None, None, {}, {}, [("id", "bigint")],
                     [("dt", "string")] if partitioned else [])


def test_journal_dir_never_moves_with_a_swap():
    assert layout.journal_dir(_info(True)) == "file:/wh/db/ev/.lakekeeper"
    assert layout.journal_dir(_info(False)) == "file:/wh/db/.ev.lakekeeper"


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
    from lakekeeper_spark.catalog.tables import check_eligible
    from lakekeeper_spark.report.errors import Refused

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
    from lakekeeper_spark.report.model import Decision, FileStats, Unit
    from lakekeeper_spark.storage.space import ancestors, needs

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
    from lakekeeper_spark.policy.config import load_config_file

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


DEDUPE = {"dedupe_keys": ["id"], "dedupe_order_by": "ver", "dedupe_delete_marker": "op", "dedupe_delete_value": "D"}


def test_dedupe_trigger_ratio_settings(tmp_path):
    from lakekeeper_spark.policy.config import load_config_file
    from lakekeeper_spark.report.errors import Refused
    from lakekeeper_spark.policy.table_policy import apply_policy, table_policy

    assert Settings().dedupe_trigger_ratio is None
    assert build_settings({}, {**DEDUPE, "dedupe_trigger_ratio": "0.25"}).dedupe_trigger_ratio == 0.25
    assert build_settings({}, {**DEDUPE, "dedupe_trigger_ratio": 1}).dedupe_trigger_ratio == 1.0
    f = tmp_path / "lk.yaml"
    f.write_text("dedupe:\n  keys: [id]\n  order_by: ver\n  trigger_ratio: 0.1\n")
    assert build_settings(load_config_file(str(f)), {}).dedupe_trigger_ratio == 0.1
    assert build_settings(load_config_file(str(f)), {"dedupe_trigger_ratio": 0.5}).dedupe_trigger_ratio == 0.5
    for value in (0, -0.1, 1.5, "0", "nan", "lots", True):
        with pytest.raises(UsageError, match="trigger_ratio"):
            build_settings({}, {**DEDUPE, "dedupe_trigger_ratio": value})
    with pytest.raises(UsageError, match="trigger_ratio .* needs dedupe keys"):
        build_settings({}, {"dedupe_trigger_ratio": 0.1})
    # the table property: on the run's dedupe, or with the table's own keys; refused alone or out of range
    s = apply_policy(build_settings({}, DEDUPE), table_policy({"lakekeeper.dedupe.trigger_ratio": "0.05"}))
    assert s.dedupe_trigger_ratio == 0.05 and s.dedupe_keys == ["id"]
    s = apply_policy(build_settings({}, {}), table_policy({"lakekeeper.dedupe.keys": "id", "lakekeeper.dedupe.order_by": "v",
                                                           "lakekeeper.dedupe.trigger_ratio": "1"}))
    assert s.dedupe_trigger_ratio == 1.0
    for props, words in (({"lakekeeper.dedupe.trigger_ratio": "0.1"}, "needs dedupe keys"),
                         ({"lakekeeper.dedupe.keys": "id", "lakekeeper.dedupe.order_by": "v",
                           "lakekeeper.dedupe.trigger_ratio": "2"}, "at most 1")):
        with pytest.raises(Refused, match=words) as err:
            apply_policy(build_settings({}, {}), table_policy(props))
        assert err.value.code == "invalid_policy"


def test_dedupe_trigger_ratio_flag_is_a_compact_and_analyze_flag():
    from lakekeeper_spark.args import parse_args

    _args, s, _tables = parse_args(["compact", "--table", "db.t", "--dedupe-keys", "id", "--dedupe-order-by", "ver",
                                    "--dedupe-trigger-ratio", "0.2"])
    assert s.dedupe_trigger_ratio == 0.2
    # analyze measures what compact would select (the maintenance role decides from it)
    _args, s, _tables = parse_args(["analyze", "--table", "db.t", "--dedupe-keys", "id", "--dedupe-order-by", "ver",
                                    "--dedupe-trigger-ratio", "0.2"])
    assert s.dedupe_trigger_ratio == 0.2 and s.dedupe
    with pytest.raises(UsageError, match="--sort-by only applies to compact"):
        parse_args(["analyze", "--table", "db.t", "--dedupe-keys", "id", "--dedupe-order-by", "ver",
                    "--sort-by", "id"])
    with pytest.raises(UsageError, match="--dedupe-keys only applies to compact"):
        parse_args(["rollback", "--table", "db.t", "--dedupe-keys", "id", "--dedupe-order-by", "ver"])
    with pytest.raises(UsageError, match="needs dedupe keys"):
        parse_args(["compact", "--table", "db.t", "--dedupe-trigger-ratio", "0.2"])


def test_delete_ratio_counts_and_rule():
    from lakekeeper_spark.report.model import Decision, FileStats, Unit

    c = planner.DedupeCounts(rows=1000, keys=950, deletes=10)  # 50 superseded versions, 10 deleted keys
    assert (c.removed, c.ratio) == (60, 0.06)
    assert planner.DedupeCounts(0, 0, 0).ratio == 0.0 and planner.DedupeCounts(5, 5, 0).removed == 0
    skip = Decision("skip", "a single file", 1)
    chosen = planner.delete_ratio_rule(skip, c, 0.05, 100 * MB, 64 * MB)
    assert (chosen.action, chosen.rule, chosen.rewrite, chosen.code) == ("compact", "delete_ratio", None, None)
    assert chosen.target_files == 2  # 94 MB of rows survive: two files of 64 MB
    assert chosen.reason.startswith("delete_ratio: 60 of 1000 rows (6.00%) are superseded versions or delete markers, "
                                    "at or above the trigger 0.05") and "size rule: a single file" in chosen.reason
    assert planner.delete_ratio_rule(skip, c, 0.06, MB, 64 * MB).action == "compact"  # the threshold itself selects
    left = planner.delete_ratio_rule(skip, c, 0.061, MB, 64 * MB)
    assert (left.action, left.rule, left.target_files) == ("skip", "ratio", 1)
    assert left.reason == "a single file; delete_ratio: 60 of 1000 rows (6.00%) are superseded versions or delete " \
                          "markers, below the trigger 0.061"
    gone = planner.delete_ratio_rule(skip, planner.DedupeCounts(3, 1, 1), 1.0, MB, 64 * MB)  # every row removed
    assert (gone.action, gone.target_files) == ("compact", 1)
    assert planner.delete_ratio_rule(skip, planner.DedupeCounts(0, 0, 0), 0.01, 0, 64 * MB).action == "skip"

    def unit(decision, files=(1, 2), exists=True, subdirs=()):
        lst = Listing("file:/t", exists=exists, files=[FileEntry(f"f{i}", s, 0) for i, s in enumerate(files)],
                      subdirs=list(subdirs))
        return Unit("", None, "file:/t", lst, FileStats(len(files), sum(files), 1.0, 1.0), decision, "s", "o")

    units = [unit(Decision("skip", "big files", 2)), unit(Decision("compact", "small files", 1)),
             unit(Decision("refuse", "other format", 2, code="partition_format")),
             unit(Decision("skip", "drift", 2, code="schema_drift")), unit(Decision("skip", "none", 0), files=()),
             unit(Decision("skip", "gone", 0), exists=False), unit(Decision("skip", "nested", 0), subdirs=["x"]),
             unit(Decision("skip", "minor: dedupe must see every row", 2, "minor"))]
    assert planner.delete_ratio_candidates(units) == [units[0], units[-1]]


def test_rewrite_columns_checked_against_the_table():
    from lakekeeper_spark.rewrite.columns import resolve_columns
    from lakekeeper_spark.report.errors import Refused

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


# ---------------------------------------------------------------- compaction modes

def named(*sizes: int, prefix: str = "f") -> Listing:
    return Listing("file:/t", files=[FileEntry(f"{prefix}{i:03d}", s, 0) for i, s in enumerate(sizes)])


def mode_settings(mode: str, **kw) -> Settings:
    return build_settings({}, dict(mode=mode, target_file_size_mb=128, **kw))


FRAG = 16 * MB  # target 128 MB x 1/8
LOW = 96 * MB  # target 128 MB x 3/4


def test_classify_boundaries():
    s = mode_settings("smart")
    c = planner.classify(named(FRAG - 1, FRAG, LOW - 1, LOW, 200 * MB).files, s)
    assert [f.size for f in c.fragments] == [FRAG - 1]
    assert [f.size for f in c.undersized] == [FRAG, LOW - 1]
    assert [f.size for f in c.segments] == [LOW, 200 * MB]


def test_minor_needs_min_input_files_fragments():
    s = mode_settings("minor")
    eleven = named(*[MB] * 11, 200 * MB)
    d = planner.decide(planner.file_stats(eleven), s, eleven, "parquet")
    assert d.action == "skip" and d.rule == "minor" and "11 fragment file(s), fewer than min_input_files 12" in d.reason
    twelve = named(*[MB] * 12, 200 * MB, 50 * MB)
    d = planner.decide(planner.file_stats(twelve), s, twelve, "parquet")
    assert d.action == "compact" and d.rule == "minor"
    # only the fragments are rewritten; the segment and the undersized file are kept
    assert d.rewrite == tuple(f"f{i:03d}" for i in range(12))
    assert d.target_files == 1 + 2 and "copy the other 2 file(s) unchanged" in d.reason
    # a file of exactly the fragment size is not a fragment
    edge = named(*[FRAG - 1] * 11, FRAG)
    assert planner.decide(planner.file_stats(edge), s, edge, "parquet").action == "skip"
    # min_input_files is configurable
    s3 = mode_settings("minor", min_input_files=3)
    three = named(MB, MB, MB, 200 * MB)
    assert planner.decide(planner.file_stats(three), s3, three, "orc").action == "compact"


def test_minor_all_fragments_rewrites_everything_and_is_idempotent():
    s = mode_settings("minor")
    only = named(*[MB] * 20)
    d = planner.decide(planner.file_stats(only), s, only, "parquet")
    assert d.action == "compact" and d.rewrite is None and d.target_files == 1
    after = named(20 * MB)
    assert planner.decide(planner.file_stats(after), s, after, "parquet").reason == "a single file"
    after = named(20 * MB, 200 * MB, 300 * MB)  # merged file plus the kept ones: nothing to do
    assert planner.decide(planner.file_stats(after), s, after, "parquet").action == "skip"


def test_minor_does_not_loop_when_fragments_cannot_be_merged():
    s = mode_settings("minor", min_input_files=2, fragment_ratio=1.0, min_target_ratio=1.0)
    two = named(100 * MB, 100 * MB)  # both fragments (< 128 MB) but they do not fit in one target file
    d = planner.decide(planner.file_stats(two), s, two, "parquet")
    assert d.action == "skip" and "would not reduce the file count" in d.reason


def test_minor_on_text_and_avro():
    s = mode_settings("minor")
    mixed = named(*[MB] * 12, 200 * MB)
    d = planner.decide(planner.file_stats(mixed), s, mixed, "text")
    assert d.action == "skip" and "needs Parquet or ORC" in d.reason and d.rule == "minor"
    only = named(*[MB] * 12)  # nothing to keep: the whole partition is the subset
    assert planner.decide(planner.file_stats(only), s, only, "avro").action == "compact"
    d = planner.decide(planner.file_stats(mixed), mode_settings("smart"), mixed, "avro")
    assert d.action == "compact" and d.rule == "minor" and d.rewrite is None and d.target_files == 2
    assert "whole partition" in d.reason
    # dedupe must see every row of a partition: the same as text/Avro
    dd = dict(dedupe_keys=["id"], dedupe_order_by="ts")
    d = planner.decide(planner.file_stats(mixed), mode_settings("minor", **dd), mixed, "parquet")
    assert d.action == "skip" and "dedupe must see every row" in d.reason
    d = planner.decide(planner.file_stats(mixed), mode_settings("smart", **dd), mixed, "parquet")
    assert d.action == "compact" and d.rewrite is None and "dedupe: the whole partition" in d.reason


def test_major_undersized_total_above_target():
    s = mode_settings("major")
    # three undersized files of 50 MB: 150 MB > 128 MB
    three = named(50 * MB, 50 * MB, 50 * MB, 200 * MB)
    d = planner.decide(planner.file_stats(three), s, three, "parquet")
    assert d.action == "compact" and d.rule == "major" and d.rewrite is None
    assert "add up to" in d.reason and d.target_files == 3  # 350 MB -> 3 files of 128 MB
    # the two smallest do fit too, but the first rule is the one reported
    # exactly at the target: not above it, and 64 + 64 = 128 does not fit below it
    at = named(64 * MB, 64 * MB)
    d = planner.decide(planner.file_stats(at), s, at, "parquet")
    assert d.action == "skip" and d.rule == "major" and "no two fit" in d.reason


def test_major_two_smallest_fit_in_one_target():
    s = mode_settings("major")
    pair = named(40 * MB, 60 * MB, 100 * MB)  # 100 MB undersized (not above the target), 40 + 60 < 128
    d = planner.decide(planner.file_stats(pair), s, pair, "parquet")
    assert d.action == "compact" and "two smallest" in d.reason and d.target_files == 2
    # 63 + 64 MB: just below the target; 64 + 64 MB (exactly the target): see above
    assert planner.decide(planner.file_stats(named(63 * MB, 64 * MB)), s, named(63 * MB, 64 * MB)).action == "compact"
    single = named(90 * MB, 300 * MB)  # one undersized file cannot pair
    assert planner.decide(planner.file_stats(single), s, single, "parquet").action == "skip"


def test_major_ignores_fragments_and_does_not_loop():
    s = mode_settings("major")
    frags = named(*[MB] * 30)
    d = planner.decide(planner.file_stats(frags), s, frags, "parquet")
    assert d.action == "skip" and "0 undersized" in d.reason
    # undersized files that cannot be merged into fewer files: 3 x 90 MB -> 3 files
    stuck = named(90 * MB, 90 * MB, 90 * MB)
    d = planner.decide(planner.file_stats(stuck), s, stuck, "parquet")
    assert d.action == "skip" and "would not reduce" in d.reason
    # what major writes (full files and one remainder) does not qualify again
    after = named(128 * MB, 128 * MB, 94 * MB)
    assert planner.decide(planner.file_stats(after), s, after, "parquet").action == "skip"


def test_smart_prefers_major_then_minor_then_skips_with_both_reasons():
    s = mode_settings("smart")
    both = named(*[MB] * 12, 40 * MB, 60 * MB)
    assert planner.decide(planner.file_stats(both), s, both, "parquet").rule == "major"
    frags = named(*[MB] * 12, 300 * MB)
    d = planner.decide(planner.file_stats(frags), s, frags, "parquet")
    assert d.rule == "minor" and d.action == "compact" and len(d.rewrite) == 12
    fine = named(MB, 200 * MB, 300 * MB)
    d = planner.decide(planner.file_stats(fine), s, fine, "parquet")
    assert d.action == "skip" and d.rule == "smart"
    assert d.reason.startswith("smart: major: ") and "; minor: 1 fragment file(s)" in d.reason


def test_modes_share_the_early_checks_and_ratio_stays_the_default():
    assert Settings().mode == "ratio"
    d = planner.decide(planner.file_stats(listing(1000, 1000)), Settings(), listing(1000, 1000))
    assert d.rule == "ratio" and d.action == "compact"
    for mode in ("minor", "major", "smart"):
        s = mode_settings(mode)
        assert planner.decide(planner.file_stats(listing(5)), s, listing(5)).reason == "a single file"
        gone = Listing("file:/t", exists=False)
        d = planner.decide(planner.file_stats(gone), s, gone)
        assert d.reason == "directory does not exist" and d.rule == mode


def test_unit_rewrite_and_kept_files():
    from lakekeeper_spark.report.model import Unit

    lst = named(MB, 200 * MB, MB)
    d = planner.Decision("compact", "x", 2, "minor", ("f000", "f002"))
    u = Unit("", None, "file:/t", lst, planner.file_stats(lst), d, "s", "o")
    assert [f.name for f in u.rewrite_files] == ["f000", "f002"] and [f.name for f in u.kept_files] == ["f001"]
    u.decision = planner.Decision("compact", "x", 1)
    assert len(u.rewrite_files) == 3 and u.kept_files == []


def test_read_paths_is_the_directory_only_when_its_read_takes_exactly_the_rewritten_files():
    from lakekeeper_spark.report.model import Unit

    def paths(names, hidden=(), subdirs=(), rewrite=None):
        lst = Listing("file:/t/dt=a", files=[FileEntry(n, MB, 0) for n in names], subdirs=list(subdirs),
                      hidden_files=list(hidden))
        d = planner.Decision("compact", "x", 1, "minor" if rewrite else "ratio", rewrite)
        return planner.read_paths(Unit("dt=a", {"dt": "a"}, "file:/t/dt=a/", lst, planner.file_stats(lst), d, "s", "o"))

    assert paths(["a.parquet", "b.parquet"], hidden=["_SUCCESS", ".a.parquet.crc", ".part-9.tmp"]) == ["file:/t/dt=a"]
    byname = ["file:/t/dt=a/a.parquet", "file:/t/dt=a/b.parquet"]
    assert paths(["a.parquet", "b.parquet"], subdirs=["nested"]) == byname  # Spark would read below it too
    assert paths(["a.parquet", "b.parquet"], hidden=["_metadata"]) == byname  # a summary file Spark lists
    assert paths(["a.parquet", "b.parquet"], hidden=["_x=1"]) == byname  # a '_' name with '=' is read
    assert paths(["a.parquet", "b.parquet._COPYING_"]) == ["file:/t/dt=a/a.parquet", "file:/t/dt=a/b.parquet._COPYING_"]
    assert paths(["a.parquet", "b.parquet", "c.parquet"], rewrite=("a.parquet", "c.parquet")) == [
        "file:/t/dt=a/a.parquet", "file:/t/dt=a/c.parquet"]  # minor: the kept file is not read
    assert paths([]) == []


# (name, Hive reads it, Spark reads it): Hive's hidden-file filter; Spark's HadoopFSUtils.shouldFilterOutPathName
# (3.3 to 4.3: the 4.x form checked in spark-core 4.3's bytecode, the 3.x form in Spark's source)
READERS = [
    ("part-00000-1f.snappy.parquet", True, True),
    ("000000_0", True, True),
    ("part-0.parquet._COPYING_", True, False),  # a killed hdfs dfs -put: Hive reads it, Spark never
    ("_COPYING_", False, False),
    ("x.COPYING", True, True),  # only the exact suffix
    ("x._copying_", True, True),
    ("_SUCCESS", False, False),
    ("_temporary", False, False),
    (".part-0.parquet.crc", False, False),
    (".x.tmp", False, False),
    ("._COPYING_", False, False),
    ("_a=1", False, True),  # '_' with '=': a partition directory's spelling, Spark lists it
    ("_a=1._COPYING_", False, False),
    (".a=1", False, False),  # '.' hides whatever follows
    ("_metadata", False, True),  # Parquet summaries: Spark lists them (not as data)
    ("_common_metadata", False, True),
    ("_metadata_old", False, True),  # a prefix, not the exact name
    ("_metadata._COPYING_", False, True),  # the summary exception comes first
    ("_ab_metadata", False, False),
]


@pytest.mark.parametrize("name,hive,spark", READERS)
def test_which_names_hive_and_spark_read(name, hive, spark):
    assert (not readers.hive_skips(name), not readers.spark_skips(name)) == (hive, spark)
    unreadable = hive and not spark
    assert (readers.why_spark_skips(name) is not None) == unreadable
    assert readers.unreadable_files([name, "part-1.parquet"]) == ([name] if unreadable else [])


def test_a_unit_holding_a_file_hive_reads_and_spark_skips_is_refused_whatever_the_rule():
    files = [FileEntry(f"part-{i}.parquet", 1000, 0) for i in range(20)]
    copying = FileEntry("part-9.parquet._COPYING_", 1000, 0)
    for mode in ("ratio", "minor", "major", "smart"):
        s = Settings(mode=mode, min_input_files=2, target_file_size_mb=1)
        ok = Listing("file:/t/dt=a", files=files, hidden_files=["_SUCCESS", ".part-0.parquet.crc"])
        assert planner.decide(planner.file_stats(ok), s, ok).code is None, mode
        bad = Listing("file:/t/dt=a", files=files + [copying])
        d = planner.decide(planner.file_stats(bad), s, bad)
        assert (d.action, d.code) == ("refuse", readers.UNREADABLE_FILE), (mode, d)
        assert "file:/t/dt=a holds 1 file(s)" in d.reason and "part-9.parquet._COPYING_: its name ends with" in d.reason
    alone = Listing("file:/t/dt=a", files=[copying])  # one file: refused, not skipped (a merge rewrites a skip)
    assert planner.decide(planner.file_stats(alone), Settings(), alone).code == readers.UNREADABLE_FILE
    nested = Listing("file:/t/dt=a", files=[copying, files[0]], subdirs=["x"])
    assert planner.decide(planner.file_stats(nested), Settings(), nested).action == "refuse"
    many = Listing("file:/t", files=[FileEntry(f"f{i}._COPYING_", 1, 0) for i in range(5)])
    assert "(f0._COPYING_: " in planner.decide(planner.file_stats(many), Settings(), many).reason
    assert " and 2 more)" in planner.decide(planner.file_stats(many), Settings(), many).reason


@pytest.mark.parametrize("kw,words", [
    (dict(mode="mega"), "invalid mode"),
    (dict(min_input_files=1), "min_input_files"),
    (dict(fragment_ratio=0), "fragment_ratio"),
    (dict(fragment_ratio=1.5), "fragment_ratio"),
    (dict(min_target_ratio=0), "min_target_ratio"),
    (dict(fragment_ratio=0.8, min_target_ratio=0.5), "must not exceed"),
    (dict(where="dt = "), "invalid where"),
])
def test_mode_settings_validated(kw, words):
    with pytest.raises(UsageError, match=words):
        build_settings({}, kw)


def test_mode_settings_from_the_config_file(tmp_path):
    from lakekeeper_spark.policy.config import load_config_file

    f = tmp_path / "lk.yaml"
    f.write_text("mode: Smart\nmin_input_files: 20\nfragment_ratio: 0.25\nmin_target_ratio: 0.5\n"
                 "where: \"dt >= '2024-09-01'\"\n")
    s = build_settings(load_config_file(str(f)), {"min_input_files": 5})
    assert (s.mode, s.min_input_files, s.fragment_ratio, s.min_target_ratio) == ("smart", 5, 0.25, 0.5)
    assert s.where == "dt >= '2024-09-01'"
    assert s.fragment_bytes == s.target_file_bytes * 0.25 and s.min_target_bytes == s.target_file_bytes * 0.5


# ---------------------------------------------------------------- where

import re  # noqa: E402

from lakekeeper_spark.policy import partition_filter as pf  # noqa: E402


def sel(where: str, *specs: dict) -> list[bool]:
    cols = list(specs[0]) if specs else ["dt"]
    return pf.select_partitions(where, "db.t", cols, ["id", "amount"], list(specs))


@pytest.mark.parametrize("where,expected", [
    ("dt >= '2024-09-01'", [False, True, True]),
    ("dt > '2024-09-01'", [False, False, True]),
    ("dt < '2024-09-01'", [True, False, False]),
    ("dt <= '2024-09-01'", [True, True, False]),
    ("dt = '2024-09-01'", [False, True, False]),
    ("dt != '2024-09-01'", [True, False, True]),
    ("dt <> '2024-09-01'", [True, False, True]),
    ("dt >= '2024-09-01' AND region IN ('eu','us')", [False, True, False]),
    ("region NOT IN ('eu')", [True, False, True]),
    ("dt BETWEEN '2024-08-15' AND '2024-09-01'", [False, True, False]),
    ("dt NOT BETWEEN '2024-08-15' AND '2024-09-01'", [True, False, True]),
    ("NOT (region = 'eu') AND NOT dt = '2024-09-02'", [True, False, False]),
    ("(region = 'eu' OR region = 'apac') AND dt < '2024-09-02'", [False, True, False]),
    ("region = 'eu' or region = 'us' and dt = '2024-08-01'", [True, True, False]),  # AND binds tighter
    ("Region in (\"US\", 'us')", [True, False, False]),
    ("hour >= 9", [False, True, True]),  # numeric: 10 >= 9
    ("hour >= '9'", [False, True, True]),  # both sides numeric: numeric
    ("hour = 10.0", [False, True, False]),
    ("hour IN (-1, 5, 10)", [True, True, False]),
])
def test_where_selects(where, expected):
    specs = [{"dt": "2024-08-01", "region": "us", "hour": "5"},
             {"dt": "2024-09-01", "region": "eu", "hour": "10"},
             {"dt": "2024-09-02", "region": "apac", "hour": "23"}]
    assert sel(where, *specs) == expected


def test_where_null_partition_is_unknown():
    null = {"dt": pf.HIVE_DEFAULT_PARTITION}
    assert sel("dt = 'x'", null) == [False]
    assert sel("dt != 'x'", null) == [False]
    assert sel("NOT dt = 'x'", null) == [False]
    assert sel("dt NOT IN ('x')", null) == [False]


def test_where_strings_keep_quotes_and_are_not_sql():
    specs = [{"dt": "it's"}, {"dt": "a\\b"}]
    assert sel("dt = 'it''s'", *specs) == [True, False]
    assert sel("dt = 'a\\b'", *specs) == [False, True]


@pytest.mark.parametrize("where,words", [
    ("", "empty"),
    ("dt", "expected a comparison operator"),
    ("dt = ", "expected a string or number literal"),
    ("dt = 'x", "unterminated string"),
    ("dt = x", "expected a string or number literal"),
    ("dt = '2024' AND", "expected a partition column name"),
    ("(dt = '1'", "expected ')'"),
    ("dt = '1')", "unexpected ')'"),
    ("dt IN ()", "expected a string or number literal"),
    ("dt IN ('a' 'b')", "expected ')' closing the IN list"),
    ("dt BETWEEN '1' '2'", "expected AND in BETWEEN"),
    ("dt NOT = '1'", "expected IN or BETWEEN after NOT"),
    ("dt = 2024-09-01", "unexpected character '-'"),
    ("dt = 12abc", "malformed number"),
    ("'2024' = dt", "expected a partition column name"),
    ("dt == '1'", "expected a string or number literal"),
    # injection-shaped input: nothing but the grammar gets through
    ("dt = '1'; DROP TABLE x", "unexpected character ';'"),
    ("dt = '1' -- comment", "unexpected character '-'"),
    ("dt = '1' /* c */", "unexpected character '/'"),
    ("dt = `x`", "unexpected character '`'"),
    ("dt = '1' OR 1=1", "expected a partition column name"),
    ("dt = (SELECT max(dt) FROM t)", "expected a string or number literal"),
    ("dt = '1' UNION SELECT 1", "unexpected 'UNION'"),
    ("dt = '\x00'", "control character"),
    ("dt = '1'\\", "unexpected character '\\\\'"),
    ("dt = '1' AND " + "(" * 40 + "dt = '1'" + ")" * 40, "nested deeper"),
    ("dt = '" + "x" * 5000 + "'", "longer than"),
])
def test_where_syntax_errors(where, words):
    with pytest.raises(UsageError, match="invalid where"):
        pf.parse_where(where)
    with pytest.raises(UsageError, match=re.escape(words)):
        pf.parse_where(where)


def test_where_columns_checked_against_the_table():
    with pytest.raises(UsageError, match="not partitioned"):
        pf.select_partitions("dt = '1'", "db.t", [], ["id", "dt"], [])
    with pytest.raises(UsageError, match="amount is not a partition column"):
        pf.select_partitions("amount > 5", "db.t", ["dt"], ["id", "amount"], [{"dt": "1"}])
    with pytest.raises(UsageError, match="unknown column regoin .*partition columns: dt, region"):
        pf.select_partitions("regoin = 'eu'", "db.t", ["dt", "region"], ["id"], [{"dt": "1", "region": "eu"}])
    assert pf.select_partitions(None, "db.t", [], [], [{}, {}]) == [True, True]
    assert pf.select_partitions("DT = '1'", "db.t", ["dt"], [], [{"dt": "1"}, {"dt": "2"}]) == [True, False]


def test_output_split_sizes_files_evenly():
    # 2000 files of 83 KB, target 32 MB, merged rows 18% smaller: 4 even splits
    sizes = [83_000] * 2000
    n, split = planner.output_split(sizes, 32 * MB, 0.82)
    assert n == round(2000 * 83_000 * 0.82 / (32 * MB)) == 4
    assert planner.pack_splits(sizes, split) == [500 * 83_000] * 4
    # uneven sizes: n splits, none far from an even share
    import random

    rnd = random.Random(7)
    sizes = [rnd.randint(20_000, 200_000) for _i in range(150)]
    n, split = planner.output_split(sizes, MB)
    parts = planner.pack_splits(sizes, split)
    assert len(parts) == n == round(sum(sizes) / MB)
    assert max(parts) - min(parts) <= 2 * max(sizes)
    # nearest count: 1.4 targets of data -> one file, 1.6 -> two
    assert planner.output_split([MB // 10] * 14, MB)[0] == 1
    assert planner.output_split([MB // 10] * 16, MB)[0] == 2
    # never more files than inputs, never zero for data
    n, split = planner.output_split([10 * MB, 10 * MB], MB)
    assert n == 2 and planner.pack_splits([10 * MB, 10 * MB], split) == [10 * MB, 10 * MB]
    assert planner.output_split([10], MB)[0] == 1
    assert planner.output_split([], MB)[0] == 0
    # shrink is bounded: a broken estimate cannot explode the count
    assert planner.output_split([MB] * 10, MB, 7.0)[0] == 10


def test_pack_splits_follows_spark():
    # largest first, next fit, big files cut into chunks of the split size
    assert planner.pack_splits([5, 3, 3, 2], 6, open_cost=0) == [5, 3 + 3, 2]
    assert planner.pack_splits([13], 5, open_cost=0) == [5, 5, 3]
    assert planner.pack_splits([3, 3], 6, open_cost=1) == [3, 3]


def test_batch_read_split_gives_every_core_an_even_share():
    import random

    rnd = random.Random(11)
    sizes = [rnd.randint(20_000, 80_000) for _i in range(1200)]  # a batch of 30 units of 40 small files
    # what Spark makes of it on its own (the total over two cores as the split size, largest file first):
    # three splits, the third read alone on one core while the other waits
    assert len(planner.pack_splits(sizes, -(-sum(sizes) // 2))) == 3
    n, split = planner.batch_read_split(sizes, 2, 128 * MB)
    parts = planner.pack_splits(sizes, split)
    assert n == len(parts) == 2 and max(parts) - min(parts) <= max(sizes)
    # above the largest split allowed: as many splits as that takes, rounded up to a multiple of the cores
    big = [rnd.randint(MB, 3 * MB) for _i in range(500)]  # about 1 GB
    for cores, want in ((2, 8), (3, 9), (16, 16)):
        n, split = planner.batch_read_split(big, cores, 128 * MB)
        assert n == len(planner.pack_splits(big, split)) == want and split <= 128 * MB + 3 * MB
    assert planner.batch_read_split([], 2, 128 * MB) == (1, 128 * MB)


def test_parse_partition_text():
    from lakekeeper_spark.catalog.partition_names import parse_partition_text

    text = ("CatalogPartition(\n\tPartition Values: [b=x, a=1]\n\tLocation: hdfs://nn/t/a=1/b=x\n"
            "\tSerde Library: org.x\n\tPartition Parameters: {k=v}\n)")
    assert parse_partition_text(text, ["a", "b"]) == ({"a": "1", "b": "x"}, "hdfs://nn/t/a=1/b=x")
    assert parse_partition_text(text.replace("b=x", "b=x, y"), ["a", "b"])[0] == {"a": "1", "b": "x, y"}
    # a value that reads two ways, a missing location, another shape: the caller asks the JVM
    assert parse_partition_text(text.replace("b=x", "b=x, a=2"), ["a", "b"]) is None
    assert parse_partition_text(text.replace("\tLocation: hdfs://nn/t/a=1/b=x\n", ""), ["a", "b"]) is None
    assert parse_partition_text("CatalogPartition(other)", ["a"]) is None
    assert parse_partition_text(text, ["a", "c"]) is None


def test_plain_uri_is_qualified_without_the_gateway_only_when_unambiguous():
    from lakekeeper_spark.storage.status import plain_uri as _plain_uri

    assert _plain_uri("file:///w/t/dt=2024-01-01") == ("file://", "file:/w/t/dt=2024-01-01")
    assert _plain_uri("file:/w/t") == ("file://", "file:/w/t")
    assert _plain_uri("hdfs://nn:8020/w/t/a=1") == ("hdfs://nn:8020", "hdfs://nn:8020/w/t/a=1")
    for odd in ("hdfs:///w/t", "/w/t", "file:/w/a b", "file:/w/../t", "file:/w/t/", "hdfs://nn/a//b",
                "hdfs://nn/w/x%2Fy", "file://host/w"):
        assert _plain_uri(odd) is None, odd


def test_write_layout_pieces_files_fewer_than_the_slots():
    # one 31 MB output on two slots: two pieces, two even read splits
    sizes = [33_530] * 1000
    lay = planner.write_layout(sizes, 64 * MB, 0.97, slots=2, min_piece_bytes=8 * MB)
    assert (lay.files, lay.pieces, lay.tasks) == (1, 2, 2)
    assert planner.pack_splits(sizes, lay.split_bytes) == [500 * 33_530] * 2
    # three files on two slots: whole files take two rounds, half files one and a half
    sizes = [86_000] * 2000
    lay = planner.write_layout(sizes, 64 * MB, 0.98, slots=2, min_piece_bytes=8 * MB)
    assert (lay.files, lay.pieces) == (3, 2) and len(planner.pack_splits(sizes, lay.split_bytes)) == 6
    # as many files as slots (or more units than cores: one slot each): no pieces, the plain split
    assert planner.write_layout(sizes, 64 * MB, 0.98, slots=3, min_piece_bytes=8 * MB).pieces == 1
    plain = planner.output_split(sizes, 64 * MB, 0.98)
    lay = planner.write_layout(sizes, 64 * MB, 0.98, slots=1, min_piece_bytes=8 * MB)
    assert (lay.files, lay.pieces, lay.split_bytes) == (plain[0], 1, plain[1])
    # pieces never smaller than min_piece_bytes, never more than the slots; 0 turns them off
    one = [MB // 8] * 512  # 64 MB in
    assert planner.write_layout(one, 64 * MB, 1.0, slots=16, min_piece_bytes=8 * MB).pieces == 8
    assert planner.write_layout(one, 64 * MB, 1.0, slots=4, min_piece_bytes=8 * MB).pieces == 4
    assert planner.write_layout(one, 64 * MB, 1.0, slots=16, min_piece_bytes=40 * MB).pieces == 1
    assert planner.write_layout(one, 64 * MB, 1.0, slots=16, min_piece_bytes=0).pieces == 1
    # no more pieces than input files; nothing to write, nothing to piece
    assert planner.write_layout([20 * MB] * 3, 64 * MB, 1.0, slots=8, min_piece_bytes=MB).pieces == 3
    assert planner.write_layout([], 64 * MB, 1.0, slots=8, min_piece_bytes=MB) == planner.WriteLayout(0, 1, 64 * MB)


def test_group_pieces_makes_even_files_of_every_piece():
    import random

    rnd = random.Random(3)
    for _round in range(200):
        n = rnd.randint(1, 30)
        sizes = [rnd.randint(1, 1000) for _i in range(n)]
        files = rnd.randint(1, 8)
        groups = planner.group_pieces(sizes, files)
        assert sorted(i for g in groups for i in g) == list(range(n))  # every piece exactly once
        assert len(groups) == min(files, n) and all(groups)
        assert all(g == sorted(g) for g in groups) and [g[0] for g in groups] == sorted(g[0] for g in groups)
        loads = [sum(sizes[i] for i in g) for g in groups]
        assert max(loads) - min(loads) <= max(sizes)  # largest-first into the lightest: within one piece
    assert planner.group_pieces([5, 5, 5, 5, 5, 5], 3) == [[0, 3], [1, 4], [2, 5]]


def test_serde_properties_are_layered_as_readers_layer_them():
    """Table SerDe properties < table properties < a partition's SerDe
    properties < its parameters (Hive's getSchema and SerDeUtils' overlay,
    Spark's HadoopTableReader); statistics and Spark's keys left out."""
    from lakekeeper_spark.storage.formats import detect_format, reader_properties, unfaithful_properties
    from lakekeeper_spark.report.model import Storage

    lazy, text_in = "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe", "org.apache.hadoop.mapred.TextInputFormat"
    info = TableInfo(db="d", name="t", table_type="EXTERNAL", location="file:/t", provider="hive", serde=lazy,
                     input_format=text_in, output_format="o",
                     serde_properties={"field.delim": ",", "serialization.null.format": "SV", "escape.delim": "\\"},
                     properties={"serialization.null.format": "", "numRows": "5", "transient_lastDdlTime": "1",
                                 "spark.sql.create.version": "4.3.0", "serialization.encoding": "ISO-8859-1"},
                     data_columns=[("id", "bigint"), ("ts", "timestamp")], partition_columns=[("dt", "string")])
    assert reader_properties(info) == {"field.delim": ",", "serialization.null.format": "", "escape.delim": "\\",
                                       "serialization.encoding": "ISO-8859-1"}
    part = Storage(serde=lazy, input_format=text_in, output_format="o",
                   serde_properties={"field.delim": "|", "serialization.null.format": "P"},
                   parameters={"numFiles": "3", "serialization.encoding": "UTF-8"})
    assert reader_properties(info, part) == {"field.delim": "|", "serialization.null.format": "P",
                                             "escape.delim": "\\", "serialization.encoding": "UTF-8"}
    assert detect_format(part) == "text"
    assert detect_format(Storage("org.apache.hadoop.hive.serde2.OpenCSVSerde", text_in, "o", {}, {})) is None
    cols = info.data_columns
    assert unfaithful_properties("text", reader_properties(info, part), cols) is None
    assert unfaithful_properties("text", {"skip.header.line.count": "0", "line.delim": "\n"}, cols) is None
    assert unfaithful_properties("text", {"skip.header.line.count": "1"}, cols)[0] == "header_footer_lines"
    assert unfaithful_properties("text", {"skip.footer.line.count": "x"}, cols)[0] == "header_footer_lines"
    assert unfaithful_properties("text", {"line.delim": "\r"}, cols)[0] == "serde_property"
    assert unfaithful_properties("text", {"timestamp.formats": "millis"}, cols)[0] == "serde_property"
    assert unfaithful_properties("text", {"timestamp.formats": "millis"}, [("id", "bigint")]) is None
    assert unfaithful_properties("avro", {"skip.header.line.count": "1"}, cols) is None


def test_the_application_run_id_chosen_by_the_launcher():
    """--new-run-id: the modules choose the application's run id so that its
    name can carry it; anything that is not a run id is a usage error."""
    from lakekeeper_spark.args import parse_args

    args = parse_args(["compact", "--table", "db.t", "--new-run-id", "20240301T020000-3f9a1c"])[0]
    assert args.new_run_id == "20240301T020000-3f9a1c"
    assert parse_args(["analyze", "--table", "db.t"])[0].new_run_id is None
    for bad in ("", "r1", "20240301T020000-3F9A1C", "20240301T020000-3f9a1c/../x"):
        with pytest.raises(UsageError, match="--new-run-id must look like"):
            parse_args(["rollback", "--table", "db.t", "--new-run-id", bad])


def test_sort_by_takes_a_direction_per_column():
    from lakekeeper_spark.policy.config import sort_key

    s = build_settings({"sort_by": ["Region", "ts DESC", "id asc"]}, {})
    assert s.sort_by == ["region", "ts desc", "id"]
    assert [sort_key(c) for c in s.sort_by] == [("region", False), ("ts", True), ("id", False)]
    assert build_settings({}, {"sort_by": "ts desc, id"}).sort_by == ["ts desc", "id"]
    for bad, match in ((["ts downward"], "optionally followed by ASC or DESC"), (["a b c"], "optionally followed"),
                       (["ts desc", "TS"], "given twice"), (["a;b desc"], "sort_by column")):
        with pytest.raises(UsageError, match=match):
            build_settings({"sort_by": bad}, {})


def test_the_result_document_is_indented_while_small_and_compact_when_large():
    import json

    from lakekeeper_spark.cli import READABLE_DOCUMENT_BYTES, document_text

    small = {"tables": [{"table": "db.t", "partitions": [{"spec": "dt=1", "files_before": 3}]}], "changed": False}
    text = document_text(small)
    assert "\n  " in text and json.loads(text) == small
    # a table of many partitions (each entry about 200 bytes) passes the threshold: one line, the same data
    parts = [{"spec": f"dt={i:06d}", "location": f"hdfs://nn/w/t/dt={i:06d}", "files_before": 2, "status": "analyzed",
              "reason": "2 files averaging 5.9 KB (< 12.8 MB); rewrite into 1"} for i in range(8000)]
    big = {"tables": [{"table": "db.t", "partitions": parts}], "changed": False}
    text = document_text(big)
    assert "\n" not in text and json.loads(text) == big
    assert len(json.dumps(big, indent=2)) >= READABLE_DOCUMENT_BYTES > len(text) / 2


@pytest.mark.parametrize("name,decoded", [
    ("dt=2024-01-01", "dt=2024-01-01"), ("k=a%3Ab", "k=a:b"), ("k=50%25", "k=50%"), ("k=%2F%3D", "k=/="),
    ("k=%", "k=%"), ("k=a%4", "k=a%4"), ("k=%zz", "k=%zz"), ("k=%-1", "k=%-1"), ("k=% 1", "k=% 1"),
    ("k=%C3%BC", "k=\u00c3\u00bc"),  # one char per escape, as Hive decodes (names escape only ASCII)
])
def test_partition_names_are_decoded_as_hive_decodes_them(name, decoded):
    from lakekeeper_spark.catalog.partition_names import unescape_path_name

    assert unescape_path_name(name) == decoded


def test_partition_names_give_specs_in_the_tables_column_order():
    from lakekeeper_spark.catalog.partition_names import parse_partition_name

    assert parse_partition_name("B=x%2Fy/a=1", ["a", "b"]) == {"a": "1", "b": "x/y"}
    assert parse_partition_name("a=1", ["a", "b"]) is None
    assert parse_partition_name("a=1/b=2/c=3", ["a", "b"]) is None
    assert parse_partition_name("a", ["a"]) is None
