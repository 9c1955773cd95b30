"""The pure timestamp rules (storage/timestamps.py, rewrite/values.py): a
Parquet schema's timestamp types, a schema pruned to its INT96 leaves,
INT96 values below a microsecond, the text pattern, a LazySimpleSerDe
delimiter. No Spark."""

from __future__ import annotations

import struct

from lakekeeper_spark.rewrite.values import _delimiter  # noqa: PLC2701 - the rule under test
from lakekeeper_spark.storage import timestamps as ts

SCHEMA = """message hive_schema {
  optional int32 id;
  optional int96 ts;
  optional int64 us (TIMESTAMP(MICROS,true));
  optional int64 ms (TIMESTAMP(MILLIS,true));
  optional int64 old (TIMESTAMP_MICROS);
  optional int64 local (TIMESTAMP(MICROS,false));
  optional int64 ns (TIMESTAMP(NANOS,true));
  optional int64 plain;
  optional group arr (LIST) {
    repeated group list {
      optional int96 element;
    }
  }
}"""


def test_parquet_timestamp_types_from_the_schema_text():
    assert ts.parquet_timestamp_types(SCHEMA) == {
        "ts": "INT96", "us": "TIMESTAMP_MICROS", "ms": "TIMESTAMP_MILLIS", "old": "TIMESTAMP_MICROS",
        "local": "TIMESTAMP_MICROS (isAdjustedToUTC=false)", "ns": "TIMESTAMP_NANOS", "element": "INT96"}
    assert ts.parquet_timestamp_types("message m {\n  optional int64 a;\n}") == {}


def test_the_schema_pruned_to_its_int96_leaves():
    assert ts.prune_schema(SCHEMA, {"ts", "element"}) == (
        "message hive_schema {\noptional int96 ts;\noptional group arr (LIST) {\nrepeated group list {\n"
        "optional int96 element;\n}\n}\n}")
    assert ts.prune_schema(SCHEMA, {"ts"}).count("{") == 1
    assert ts.prune_schema("not a schema", {"ts"}) is None


def _int96(nanos: int, day: int) -> bytes:
    return struct.pack("<qi", nanos, day)


def test_int96_values_below_a_microsecond():
    day = 2458850  # 2020-01-01
    whole = _int96(36_000_123_456_000, day) + _int96(0, day)
    assert ts.first_sub_micro(whole) is None
    assert ts.first_sub_micro(whole + _int96(36_000_123_456_789, day)) == "2020-01-01 10:00:00.123456789"
    assert ts.first_sub_micro(whole[:20]) is None  # a partial value is not read


def test_which_int96_files_hive_reads_as_written():
    """Hive converts INT96 values from UTC only in files parquet-mr wrote
    (ParquetRecordReaderBase: created_by starts with "parquet-mr")."""
    for writer in ("parquet-mr version 1.17.0 (build 6e1d2e7)", "parquet-mr version 1.8.1 (build 4aba4da)"):
        assert not ts.int96_read_as_written(writer), writer
    for writer in ("impala version 4.1.0-RELEASE (build 1c1b2a4)", "parquet-cpp-arrow version 20.0.0", "", None):
        assert ts.int96_read_as_written(writer), writer


def test_the_text_pattern():
    for text in ("2020-01-01 10:00:00.123456780", "10:00:00.1234567", "2020-01-01T10:00:00.000000001"):
        assert ts.sub_micro(text), text
    for text in ("2020-01-01 10:00:00.123456", "2020-01-01 10:00:00.123456000", "10:00:00", "", None, "1.1234567"):
        assert not ts.sub_micro(text), text


def test_a_lazy_simple_serde_delimiter_as_it_reads_it():
    assert _delimiter({}, "field.delim", "\x01") == "\x01"
    assert _delimiter({"field.delim": ","}, "field.delim", "\x01") == ","
    assert _delimiter({"field.delim": "9"}, "field.delim", "\x01") == "\t"  # a number is a byte's value
    assert _delimiter({"field.delim": "||"}, "field.delim", "\x01") == "|"


def test_the_row_hash_spells_the_json_options_it_documents():
    """row_hash writes to_json's options as SQL text (for the SQL review):
    the same options as ``JSON_OPTIONS``, which the dedupe tie check uses."""
    import inspect

    from lakekeeper_spark.rewrite import content

    source = inspect.getsource(content.row_hash)
    for key, value in content.JSON_OPTIONS.items():
        assert f"'{key}', '{value}'" in source, (key, value)
