"""The pure per-unit format rule (unit_formats.py): each unit's codec,
Parquet layout and Avro writer schema from its own files, one read per
write job, the newest file's codec when codecs differ, a refusal when the
layout or the writer schema differs. No Spark."""

from __future__ import annotations

import json

from lakekeeper_spark.rewrite import unit_formats
from lakekeeper_spark.report.model import Decision, FileEntry, FileStats, Listing, TableInfo, Unit

JOB = "part-{:05d}-0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b-c000.snappy.parquet"


def _info(fmt: str) -> TableInfo:
    return TableInfo(db="d", name="t", table_type="EXTERNAL", location="file:/t", provider="hive", serde=None,
                     input_format=None, output_format=None, serde_properties={}, properties={},
                     data_columns=[("id", "bigint")], partition_columns=[("dt", "string")], format=fmt)


def _unit(spec: str, files: list[tuple[str, int]]) -> Unit:
    entries = [FileEntry(n, 10, mtime) for n, mtime in files]
    return Unit(spec=spec, partition={"dt": spec}, location=f"file:/t/dt={spec}",
                listing=Listing(f"file:/t/dt={spec}", files=entries),
                stats=FileStats(len(entries), 10 * len(entries), 10, 10),
                decision=Decision("compact", "small files", 1), staging="s", old="o")


def _resolve(fmt: str, units: list[Unit], facts_of):
    read: list[str] = []

    def read_one(uri: str):
        read.append(uri)
        return facts_of(uri)

    facts = unit_formats.read_facts(fmt, units, read_one)
    codecs, notes = unit_formats.resolve_units(_info(fmt), units, facts)
    return codecs, notes, read


def test_each_unit_its_own_codec_one_read_per_write_job():
    one_job = _unit("a", [(JOB.format(i), 5) for i in range(40)])
    gzip = _unit("b", [("000000_0", 7), ("000001_0", 8)])
    codecs, notes, read = _resolve("parquet", [one_job, gzip], lambda uri: {
        "codec": "gzip" if "dt=b" in uri else "snappy", "layout": "standard", "columns": []})
    assert codecs == {"a": {"codec": "snappy", "legacy": False}, "b": {"codec": "gzip", "legacy": False}}
    assert notes == {}
    assert len([u for u in read if "dt=a/" in u]) == 1 and len([u for u in read if "dt=b/" in u]) == 2


def test_mixed_codecs_the_newest_file_wins_and_says_so():
    unit = _unit("c", [("000000_0", 1), ("000001_0", 2), ("000002_0", 9), ("000003_0", 3)])
    codecs, notes, _read = _resolve("orc", [unit], lambda uri: {
        "codec": "zlib" if uri.endswith("000002_0") else "snappy", "columns": []})
    assert codecs == {"c": {"codec": "zlib"}} and unit.decision.action == "compact"
    assert notes["c"] == ["its files have different codecs: snappy (3 files), zlib (1 file); written as zlib, the "
                          "codec of its newest file (000002_0); values are the same whatever the codec"]


def test_parquet_without_row_groups_and_layout_free_files_do_not_vote():
    unit = _unit("d", [("000000_0", 1), ("000001_0", 9), ("000002_0", 2)])
    facts = {"000000_0": {"codec": "gzip", "layout": "legacy"},
             "000001_0": {"codec": None, "layout": None},  # newest, empty: no row groups, no decimal
             "000002_0": {"codec": "gzip", "layout": None}}
    codecs, notes, _read = _resolve("parquet", [unit], lambda uri: dict(facts[uri.rsplit("/", 1)[1]], columns=[]))
    assert codecs == {"d": {"codec": "gzip", "legacy": True}} and notes == {}


def test_both_parquet_layouts_are_refused():
    unit = _unit("e", [("000000_0", 1), (JOB.format(0), 2), (JOB.format(1), 2)])
    codecs, _notes, _read = _resolve("parquet", [unit], lambda uri: {
        "codec": "snappy", "layout": "legacy" if uri.endswith("000000_0") else "standard", "columns": []})
    assert codecs == {} and (unit.decision.action, unit.decision.code) == ("refuse", "mixed_files")
    assert "legacy" in unit.decision.reason and "in 1 file (e.g. 000000_0), standard in 2 files" in unit.decision.reason


def test_avro_writer_schemas_refused_naming_what_differs_codecs_not():
    base = {"type": "record", "name": "t", "fields": [{"name": "id", "type": ["null", "long"]}]}
    other = dict(base, name="event", fields=base["fields"] + [{"name": "source", "type": ["null", "string"]}])
    mixed = _unit("f", [("a.avro", 1), ("b.avro", 2)])
    codecs_only = _unit("g", [("a.avro", 1), ("b.avro", 2)])

    def facts(uri: str):
        if "dt=f/b" in uri:
            return {"codec": "deflate", "schema": json.dumps(other)}
        return {"codec": "deflate" if uri.endswith("b.avro") else "snappy", "schema": json.dumps(base)}

    codecs, notes, _read = _resolve("avro", [mixed, codecs_only], facts)
    assert (mixed.decision.action, mixed.decision.code) == ("refuse", "mixed_files")
    assert "2 different Avro writer schemas (record name 't' / 'event'; field(s) source only in the second" \
           in mixed.decision.reason, mixed.decision.reason
    assert codecs == {"g": {"codec": "deflate", "schema": json.dumps(base)}} and "written as deflate" in notes["g"][0]


def test_text_codecs_from_the_names():
    from lakekeeper_spark.storage.formats import text_codec

    unit = _unit("h", [("part-0", 1), ("batch-1.csv.gz", 3), ("batch-0.csv.gz", 2)])
    codecs, notes, _read = _resolve("text", [unit], lambda uri: {"codec": text_codec(uri)})
    assert codecs == {"h": {"codec": "org.apache.hadoop.io.compress.GzipCodec"}}
    assert "none (1 file)" in notes["h"][0] and "(batch-1.csv.gz)" in notes["h"][0]
