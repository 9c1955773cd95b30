"""The pure schema drift rule (schema_drift.py): which file columns every
reader sees the same way as the table's, and which it refuses. No Spark."""

from __future__ import annotations

import pytest

from lakekeeper_spark.rewrite import schema_drift
from lakekeeper_spark.report.model import Decision, FileEntry, FileStats, Listing, TableInfo, Unit

TABLE = [("id", "bigint"), ("b", "string"), ("c", "int")]


@pytest.mark.parametrize("file_cols", [
    [("id", "bigint"), ("b", "string"), ("c", "int")],  # written with the same columns
    [("ID", "bigint"), ("B", "string"), ("C", "int")],  # case only (Hive lower-cases, Spark keeps the case)
    [("id", "bigint"), ("b", "binary"), ("c", "int")],  # Parquet BINARY without a string annotation
    [("id", "bigint"), ("b", "string")],  # c added at the end (ADD COLUMNS): NULL for every reader
    [("id", "bigint")],
    [],
], ids=["same", "case", "binary-as-string", "added-last", "added-two", "no-columns"])
def test_benign_files_compact(file_cols):
    assert schema_drift.compare_columns(TABLE, file_cols) == []


def test_char_and_varchar_are_strings():
    assert schema_drift.compare_columns([("a", "varchar(10)"), ("b", "char(3)")], [("a", "string"), ("b", "string")]) == []


def test_renamed_column():
    """ALTER TABLE t CHANGE a b: the file still has a where the table has b."""
    problems = schema_drift.compare_columns(TABLE, [("id", "bigint"), ("a", "string"), ("c", "int")])
    assert problems == ["position 2 is a in the file, b in the table (the file has no column b, "
                        "the table has no column a)"]


def test_dropped_last_column():
    """REPLACE COLUMNS (id, b): the files still hold c."""
    problems = schema_drift.compare_columns(TABLE[:2], [("id", "bigint"), ("b", "string"), ("c", "int")])
    assert problems == ["file column c (position 3) is beyond the table's 2 column(s) (dropped?)"]


def test_dropped_middle_column():
    """REPLACE COLUMNS (id, c): by position c reads b's data, by name it is c."""
    problems = schema_drift.compare_columns([("id", "bigint"), ("c", "int")],
                                            [("id", "bigint"), ("b", "string"), ("c", "int")])
    assert problems[0] == "position 2 is b in the file, c in the table (the table has no column b)"
    assert "file column c (position 3) is beyond the table's 2 column(s); it is column 2 of the table" in problems[1]


def test_reordered_columns():
    problems = schema_drift.compare_columns(TABLE, [("id", "bigint"), ("c", "int"), ("b", "string")])
    assert len(problems) == 2 and "c is column 3 of the table" in problems[0], problems


def test_added_column_not_last_is_drift():
    """A table column in the middle that the file lacks: positional readers
    read the next file column there."""
    problems = schema_drift.compare_columns(TABLE, [("id", "bigint"), ("c", "int")])
    assert problems == ["position 2 is c in the file, b in the table (the file has no column b, "
                        "c is column 3 of the table)"]


def test_type_differs():
    problems = schema_drift.compare_columns(TABLE, [("id", "int"), ("b", "string"), ("c", "int")])
    assert problems == ["column id: int in the file, bigint in the table"]
    nested = schema_drift.compare_columns([("s", "struct<x:int,y:string>")], [("s", "struct<x:int,z:string>")])
    assert nested == ["column s: struct<x:int,z:string> in the file, struct<x:int,y:string> in the table"]


def test_hive_orc_positional_names():
    """Hive 1.x ORC files name their columns _col0...: compared by position."""
    assert schema_drift.compare_columns(TABLE, [("_col0", "bigint"), ("_col1", "string")]) == []
    assert schema_drift.compare_columns(TABLE, [("_col0", "bigint"), ("_col1", "int")]) == [
        "column b (position 2): int in the file, string in the table"]
    assert schema_drift.compare_columns(TABLE[:1], [("_col0", "bigint"), ("_col1", "string")]) == [
        "file column _col1 (position 2) is not in the table (dropped?)"]


def test_writer_key_groups_one_spark_job():
    job = "part-00003-0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b-c000.snappy.parquet"
    same = "part-00017-0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b-c000.snappy.parquet"
    other = "part-00003-11111111-4b5a-6978-8a9b-0c1d2e3f4a5b-c000.snappy.parquet"
    assert schema_drift.writer_key(job) == schema_drift.writer_key(same) != schema_drift.writer_key(other)
    # Hive, Impala, anything else: each file on its own
    assert schema_drift.writer_key("000000_0") != schema_drift.writer_key("000000_0_copy_1")
    assert schema_drift.writer_key("part-00003") == "file:part-00003"


def _info(fmt: str = "parquet") -> TableInfo:
    return TableInfo(db="d", name="t", table_type="EXTERNAL", location="file:/t", provider="hive", serde=None,
                     input_format=None, output_format=None, serde_properties={}, properties={},
                     data_columns=TABLE, partition_columns=[("dt", "string")], format=fmt)


def _unit(spec: str, names: list[str]) -> Unit:
    files = [FileEntry(n, 10, 0) for n in names]
    return Unit(spec=spec, partition={"dt": spec}, location=f"file:/t/dt={spec}",
                listing=Listing(f"file:/t/dt={spec}", files=files), stats=FileStats(len(files), 10 * len(files), 10, 10),
                decision=Decision("compact", "small files", 1), staging="s", old="o")


def test_check_units_refuses_before_anything_and_reads_one_footer_per_job():
    job = "part-{:05d}-0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b-c000.snappy.parquet"
    good = _unit("1", [job.format(i) for i in range(50)])
    old = _unit("2", ["000000_0", "000000_0_copy_1", "000001_0"])
    read: list[str] = []

    def columns(uri: str) -> list[tuple[str, str]]:
        read.append(uri)
        if "dt=2/000000_0_copy_1" in uri:  # written before the rename
            return [("id", "bigint"), ("a", "string"), ("c", "int")]
        return list(TABLE)

    notes = schema_drift.check_units(_info(), [good, old], columns)
    assert notes == {}
    assert good.decision.action == "compact"
    assert (old.decision.action, old.decision.code) == ("skip", "schema_drift")
    assert "the file has no column b, the table has no column a" in old.decision.reason
    assert "000000_0_copy_1: id bigint, a string, c int" in old.decision.reason
    assert len([u for u in read if "dt=1/" in u]) == 1  # one Spark job: one footer for its 50 files
    assert len([u for u in read if "dt=2/" in u]) == 3

    allowed = _unit("2", ["000000_0", "000000_0_copy_1"])
    notes = schema_drift.check_units(_info(), [allowed], columns, allow_by_name=True)
    assert allowed.decision.action == "compact" and "schema drift compacted by name" in notes["2"][0]
    text = _unit("3", ["a.txt"])
    assert schema_drift.check_units(_info("text"), [text], columns) == {} and text.decision.action == "compact"


def test_option_on_the_command_line_and_in_the_config_file():
    from lakekeeper_spark.args import parse_args
    from lakekeeper_spark.policy.config import build_settings
    from lakekeeper_spark.report.errors import UsageError

    _args, settings, _tables = parse_args(["compact", "--table", "d.t", "--allow-by-name-projection"])
    assert settings.allow_by_name_projection is True
    _args, settings, _tables = parse_args(["compact", "--table", "d.t"])
    assert settings.allow_by_name_projection is False
    with pytest.raises(UsageError, match="only applies to compact"):
        parse_args(["analyze", "--table", "d.t", "--allow-by-name-projection"])
    assert build_settings({"allow_by_name_projection": "yes"}, {}).allow_by_name_projection is True
