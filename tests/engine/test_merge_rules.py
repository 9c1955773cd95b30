"""The pure rules of compact's merge mode (merge_rules.py): no Spark here."""

from __future__ import annotations

import pytest

from lakekeeper_spark.policy import merge_rules as mr
from lakekeeper_spark.policy.config import build_settings
from lakekeeper_spark.report.errors import Refused, UsageError
from lakekeeper_spark.report.model import Decision, FileEntry, FileStats, Listing, Unit


def unit(spec: str, action: str = "skip", code: str | None = None) -> Unit:
    files = [FileEntry("f0", 10, 1), FileEntry("f1", 20, 2)]
    return Unit(spec=spec, partition={"dt": spec[3:]}, location=f"file:/t/{spec}", listing=Listing("x", files=files),
                stats=FileStats(2, 30, 15.0, 15.0), decision=Decision(action, "size rule", 1, "ratio", code=code),
                staging="s", old="o")


def test_spec_string_matches_the_catalog_and_is_none_for_a_null_value():
    assert mr.spec_string(["dt", "h"], ["2024-01-01", 9]) == "dt=2024-01-01/h=9"
    assert mr.spec_string([], []) == ""
    assert mr.spec_string(["dt", "h"], ["a", None]) is None


def test_batch_identity_changes_with_any_file_fact_and_not_with_order():
    files = [FileEntry("a", 10, 100), FileEntry("b", 20, 200)]
    ident = mr.batch_identity("hdfs://nn/in/batch1", files)
    assert ident == mr.batch_identity("hdfs://nn/in/batch1/", list(reversed(files)))
    assert len(ident) == 32
    others = [
        mr.batch_identity("hdfs://nn/in/batch2", files),
        mr.batch_identity("hdfs://nn/in/batch1", [FileEntry("a", 11, 100), files[1]]),  # size
        mr.batch_identity("hdfs://nn/in/batch1", [FileEntry("a", 10, 101), files[1]]),  # mtime
        mr.batch_identity("hdfs://nn/in/batch1", files + [FileEntry("c", 1, 1)]),  # a file more
        mr.batch_identity("hdfs://nn/in/batch1", [FileEntry("x", 10, 100), files[1]]),  # name
    ]
    assert ident not in others and len(set(others)) == len(others)


def test_batch_schema_must_be_the_tables_columns():
    table = [("id", "bigint"), ("v", "string"), ("dt", "string")]
    assert mr.check_batch_schema(table, [("DT", "string"), ("id", "bigint"), ("v", "string")]) is None
    assert "lacks the column(s) dt" in mr.check_batch_schema(table, [("id", "bigint"), ("v", "string")])
    schema = [("id", "int"), ("v", "string"), ("dt", "string")]
    assert "id is int, the table's bigint" in mr.check_batch_schema(table, schema)
    assert "does not: x" in mr.check_batch_schema(table, table + [("x", "int")])


def test_route_touched_partitions_and_what_was_applied_before():
    r = mr.route({"dt=a": 3, "dt=b": 2}, ["dt=a", "dt=b", "dt=c"], {"dt=b"}, "db.t")
    assert r.todo == {"dt=a": mr.BatchPart(rows=3)} and r.already == ["dt=b"]
    done = mr.route({"dt=a": 3}, ["dt=a"], {"dt=a"}, "db.t")
    assert done.todo == {} and done.already == ["dt=a"]


def test_route_refuses_new_partitions_and_null_values():
    with pytest.raises(Refused) as exc:
        mr.route({"dt=a": 3, "dt=z": 1}, ["dt=a"], set(), "db.t")
    assert exc.value.code == mr.NEW_PARTITION and "dt=z" in exc.value.message and "nothing was merged" in exc.value.message
    with pytest.raises(Refused) as exc:
        mr.route({"dt=a": 3, None: 2}, ["dt=a"], set(), "db.t")
    assert exc.value.code == mr.PARTITION_VALUE and "2 batch row(s)" in exc.value.message


def test_moved_keys_refusal():
    assert mr.moved_keys_refusal("db.t", 0, 0, []) is None
    r = mr.moved_keys_refusal("db.t", 2, 0, ["id=6"])
    assert r.code == mr.KEY_MOVED and "two or more partitions of the batch" in r.message and "id=6" in r.message
    r = mr.moved_keys_refusal("db.t", 0, 1, ["id=7 (batch partition dt=b)"])
    assert "already exist in another partition" in r.message


def test_merge_decisions_override_the_size_rule_but_not_a_refusal():
    units = [unit("dt=a", "skip"), unit("dt=b", "compact"), unit("dt=c", "compact"), unit("dt=d", "refuse", "x"),
             unit("dt=e")]
    routing = mr.Routing(todo={"dt=a": mr.BatchPart(5, inserted=2, updated=2, deleted=1), "dt=d": mr.BatchPart(1)},
                         already=["dt=e"])
    mr.apply_merge_decisions(units, routing)
    a, b, c, d, e = (u.decision for u in units)
    assert (a.action, a.rule, a.rewrite) == ("compact", mr.MERGE_RULE, None)  # every file, whatever its size
    assert "5 batch row(s) (2 inserted, 2 updated, 1 deleted" in a.reason
    assert (b.action, c.action) == ("skip", "skip") and "no rows for this partition" in b.reason
    assert (d.action, d.code) == ("refuse", "x")
    assert e.action == "skip" and "already merged" in e.reason


def test_applied_record_accumulates():
    batch = {"identity": "abc", "source": "file:/b", "files": [["f", 1, 2]], "record": "file:/t/.lakekeeper/merged/abc.json"}
    doc = mr.with_applied(None, batch, ["dt=a"], "run1")
    assert doc["applied"] == {"dt=a": "run1"} and doc["identity"] == "abc" and "record" not in doc
    doc = mr.with_applied(doc, batch, ["dt=a", "dt=b"], "run2")
    assert doc["applied"] == {"dt=a": "run1", "dt=b": "run2"}
    assert mr.applied_specs(doc) == {"dt=a", "dt=b"} and mr.applied_specs(None) == set()
    assert mr.record_name("abc") == "abc.json"


def test_merge_from_settings():
    s = build_settings({}, {"merge_from": " hdfs://nn/in/b1 ", "dedupe_keys": "id", "dedupe_order_by": "ver"})
    assert s.merge_from == "hdfs://nn/in/b1"
    assert build_settings({}, {"merge_from": "", "dedupe_keys": "id", "dedupe_order_by": "ver"}).merge_from is None
    with pytest.raises(UsageError, match="needs dedupe keys"):
        build_settings({}, {"merge_from": "db.batch"})
    with pytest.raises(UsageError, match="cannot be combined with where"):
        build_settings({}, {"merge_from": "db.batch", "dedupe_keys": "id", "dedupe_order_by": "ver",
                            "where": "dt = 'a'"})


def test_merge_from_command_line():
    from lakekeeper_spark.args import parse_args

    dedupe = ["--dedupe-keys", "id", "--dedupe-order-by", "ver"]
    _args, s, tables = parse_args(["compact", "--table", "db.t", "--merge-from", "hdfs://nn/in/b1"] + dedupe)
    assert s.merge_from == "hdfs://nn/in/b1" and tables == ["db.t"]
    with pytest.raises(UsageError, match="only applies to compact"):
        parse_args(["analyze", "--table", "db.t", "--merge-from", "db.b"] + dedupe)
    with pytest.raises(UsageError, match="give --table"):
        parse_args(["compact", "--database", "db", "--merge-from", "db.b"] + dedupe)
    with pytest.raises(UsageError, match="needs dedupe keys"):
        parse_args(["compact", "--table", "db.t", "--merge-from", "db.b"])


def test_a_units_share_of_the_batch_sizes_its_output():
    from lakekeeper_spark.rewrite.merge import MergePlan

    routing = mr.Routing(todo={"dt=a": mr.BatchPart(rows=6), "dt=b": mr.BatchPart(rows=2)}, already=[])
    plan = MergePlan("file:/b", "parquet", [FileEntry("f0", 100, 1), FileEntry("f1", 300, 1)], "id", "file:/r", routing,
                     ["dt"], batch_rows=8)
    rows = plan.unit_rows(None, "dt=a", {"dt": "a"})
    assert (rows.bytes, rows.partition) == (300, {"dt": "a"})
    assert plan.unit_rows(None, "dt=b", {"dt": "b"}).bytes == 100
    assert plan.unit_rows(None, "dt=z", {"dt": "z"}).bytes == 0
    assert plan.paths() == ["file:/b/f0", "file:/b/f1"]
    assert plan.journal_doc() == {"identity": "id", "source": "file:/b", "record": "file:/r",
                                  "files": [["f0", 100, 1], ["f1", 300, 1]]}
