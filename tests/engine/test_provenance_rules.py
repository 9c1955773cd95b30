"""Where small files come from (policy/provenance.py): each writer's names,
the batches and the cadence, the modification-time histogram. Pure: no Spark."""

from __future__ import annotations

import calendar

import pytest

from lakekeeper_spark.policy import provenance as pv
from lakekeeper_spark.policy.provenance import SourceFile

T0 = calendar.timegm((2026, 11, 1, 0, 0, 0)) * 1000  # 2026-11-01T00:00:00Z, in ms
UUID_A = "8d1a6f3e-2b4c-4e5f-9a0b-1c2d3e4f5a6b"
UUID_B = "0f9e8d7c-6b5a-4938-8271-605f4e3d2c1b"


@pytest.mark.parametrize("name, writer, job", [
    (f"part-00000-{UUID_A}-c000.snappy.parquet", "spark", UUID_A),
    (f"part-00011-{UUID_A}.c000.zstd.parquet", "spark", UUID_A),
    (f"part-00003-{UUID_B.upper()}-c000", "spark", UUID_B),
    (f"part-00000-{UUID_A}.snappy.orc", "spark", UUID_A),
    ("000000_0", "hive", None),
    ("000001_0", "hive", None),
    ("000000_0_copy_1", "hive", None),
    ("000000_0_copy_12.snappy", "hive", None),
    ("part-m-00000", "mapreduce", None),
    ("part-m-00003.snappy.parquet", "mapreduce", None),
    ("part-r-00001", "mapreduce", None),
    ("part-00000", "mapreduce", None),
    ("FlumeData.1730419200123", "flume", None),
    ("FlumeData.1730419200123.avro", "flume", None),
    ("ef4a2c6b7a9c1d2e-5c3b8f9a00000003_1380284437_data.0.parq", "impala", "ef4a2c6b7a9c1d2e-5c3b8f9a00000003"),
    ("5a4b3c2d1e0f9a8b_c7d6e5f4a3b2c1d0_data.0.parq", "impala", "5a4b3c2d1e0f9a8b"),
    ("events_export.parquet", "other", None),
    ("data.csv", "other", None),
    ("part-0-abc", "other", None),  # not a uuid: not Spark's
    ("000000_0x", "other", None),
    ("FlumeData.tmp", "other", None),
])
def test_each_writer_is_known_by_its_names(name, writer, job):
    assert pv.classify(name) == (writer, job)


def spark_job(uuid, at, n, size=1000, owner="etl", where="dt=a"):
    return [SourceFile(f"part-{i:05d}-{uuid}-c000.snappy.parquet", size, at + i * 50, owner, where) for i in range(n)]


def test_a_regular_writer_gets_a_cadence_in_words():
    files = []
    for k in range(12):  # a Spark job every 5 minutes, 12 files each, job uuids differing
        files += spark_job(f"{k:08x}-0000-4000-8000-{k:012x}", T0 + k * 300_000, 12)
    c = pv.cadence(files, "etl")
    assert c["batches"] == 12 and c["files_per_batch"] == 12 and c["regular"], c
    assert c["interval_seconds"] == 300.0
    assert c["text"] == "12 files every 5 minutes since 2026-11-01 by etl", c
    assert c["first"] == "2026-11-01T00:00:00Z"


def test_files_without_a_job_in_their_name_are_batched_by_time():
    # Hive INSERTs every hour: each writes 3 files within seconds; Flume rolls one file every 30 s
    hive = [SourceFile(f"{i:06d}_0" + (f"_copy_{k}" if k else ""), 500, T0 + k * 3_600_000 + i * 2000)
            for k in range(5) for i in range(3)]
    c = pv.cadence(hive)
    assert (c["batches"], c["files_per_batch"], c["interval_seconds"], c["regular"]) == (5, 3, 3600.0, True), c
    assert c["text"] == "3 files every 1 hour since 2026-11-01"
    flume = [SourceFile(f"FlumeData.{T0 + k * 90_000}", 100, T0 + k * 90_000) for k in range(10)]
    c = pv.cadence(flume, "flume")
    assert c["text"] == "1 file every 2 minutes since 2026-11-01 by flume", c  # 90 s rounds to 2 minutes


def test_an_irregular_writer_and_a_few_writes_are_said_so():
    times = [0, 60, 700, 3000, 3100, 9000]  # seconds apart at random
    files = [SourceFile(f"x{i}.parquet", 10, T0 + s * 1000 * 10) for i, s in enumerate(times)]
    c = pv.cadence(files, "bob")
    assert not c["regular"] and "irregular" in c["text"] and c["text"].endswith("since 2026-11-01 by bob"), c
    two = [SourceFile("a.csv", 1, T0), SourceFile("b.csv", 1, T0 + 86400_000 * 3)]
    c = pv.cadence(two)
    assert c["interval_seconds"] is None and c["text"] == "2 file(s) in 2 write(s) between 2026-11-01 and 2026-11-04"
    one = [SourceFile("a.csv", 1, T0)]
    assert pv.cadence(one, "x")["text"] == "1 file(s) in 1 write(s) on 2026-11-01 by x"
    assert pv.cadence([])["batches"] == 0


def test_human_seconds_rounds_to_the_unit_that_reads_best():
    assert [pv.human_seconds(s) for s in (1, 45, 59, 60, 299, 300, 3500, 7200, 86400, 172800)] == [
        "1 second", "45 seconds", "1 minute", "1 minute", "5 minutes", "5 minutes", "1 hour", "2 hours", "1 day",
        "2 days"]


def test_the_histogram_picks_a_bin_width_for_the_span():
    h = pv.mtime_histogram([T0, T0 + 30_000, T0 + 5 * 60_000])  # 5 minutes: one-minute bins
    assert h["bin_seconds"] == 60 and [b["count"] for b in h["bins"]] == [2, 0, 0, 0, 0, 1], h
    assert h["bins"][0]["start"] == "2026-11-01T00:00:00Z"
    day = pv.mtime_histogram([T0 + k * 3_600_000 for k in range(30)])  # 30 hours: six-hour bins
    assert day["bin_seconds"] == 6 * 3600 and sum(b["count"] for b in day["bins"]) == 30
    assert len(day["bins"]) <= pv.MAX_BINS
    assert pv.mtime_histogram([]) == {"bin_seconds": None, "bins": []}


def test_attribute_groups_by_writer_and_owner_most_small_files_first():
    files = (spark_job(UUID_A, T0, 4) + spark_job(UUID_B, T0 + 300_000, 4)
             + [SourceFile("000000_0", 200, T0, "hive", "dt=b"), SourceFile("000000_0_copy_1", 200, T0 + 9, "hive", "dt=b")]
             + [SourceFile("events_export.parquet", 300, T0 + 5, "alice", "dt=a")]
             + [SourceFile(f"part-00000-{UUID_A}-c000.snappy.parquet", 10**9, T0, "etl", "dt=c")])  # a big one
    out = pv.attribute(files, small_bytes=10**6)
    assert out["small_files"] == 11 and out["small_file_bytes"] == 10**6
    writers = [(w["writer"], w["owner"], w["files"], w["small_files"]) for w in out["writers"]]
    assert writers == [("spark", "etl", 9, 8), ("hive", "hive", 2, 2), ("other", "alice", 1, 1)], writers
    spark = out["writers"][0]
    assert spark["jobs"] == 2 and spark["where"] == ["dt=a"] and spark["where_count"] == 1, spark
    assert spark["small_bytes"] == 8000 and spark["bytes"] == 8000 + 10**9
    assert len(spark["examples"]) == pv.EXAMPLES and spark["cadence"]["batches"] == 2
    assert "jobs" not in out["writers"][1] and out["writers"][1]["who"].startswith("Hive")
    assert sum(b["count"] for b in out["mtime_histogram"]["bins"]) == 11


def test_a_table_without_small_files_has_no_cadence():
    out = pv.attribute([SourceFile("000000_0", 10**9, T0, "hive")], small_bytes=10**6)
    assert out["small_files"] == 0 and out["writers"][0]["cadence"] is None
    assert out["mtime_histogram"]["bins"] == []
    assert pv.attribute([], 1) == {"small_file_bytes": 1, "small_files": 0, "writers": [],
                                   "mtime_histogram": {"bin_seconds": None, "bins": []}}
