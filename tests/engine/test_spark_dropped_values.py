"""Values Spark drops are refused or kept, never verified away (issue 46).

Files here are written as Hive and Impala write them, by pyarrow, not by
Spark: Parquet INT96 and ORC timestamps with nanoseconds, text with nine
digits of a second, Parquet INT64 TIMESTAMP_MICROS/MILLIS. Each is placed
into a partition of a real EXTERNAL table.

* nanoseconds (Parquet INT96, dictionary-encoded or plain; ORC, top-level or
  nested; text): the partition is refused (``unsupported_values``, naming
  the column and a value), its files byte for byte as they were; partitions
  of whole microseconds compact, values unchanged;
* Parquet INT96 files pyarrow (or Impala) wrote are refused whatever their
  values: Hive reads them without the UTC conversion it applies to the copy
  Spark's parquet-mr would write (tests/testbed/test_hive_reader.py shows
  the shift); INT96 files of Hive's writer (parquet-mr, not Spark) with whole
  microseconds compact;
* Parquet INT64 TIMESTAMP_MICROS / MILLIS stay so (the compacted files'
  footers), INT96 stays INT96; a partition mixing INT96 and INT64 is refused
  (``mixed_files``); a copy written in another type fails verification;
* the content checksum sees a nested timestamp's microseconds and the sign of
  a zero; dedupe sees two versions a microsecond apart as a tie.
(The pure rules: test_timestamp_rules.py.)
"""

from __future__ import annotations

import pytest

from engine_helpers import frozen, same_rows

pytestmark = pytest.mark.integration

pa = pytest.importorskip("pyarrow", reason="pyarrow writes the test files as Hive/Impala write them "
                                           "(requirements.txt, tests section)")

BASE_NS = 1577872800_000_000_000  # 2020-01-01 10:00:00 UTC


def _parquet_bytes(table, **kwargs) -> bytes:
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, **kwargs)
    return sink.getvalue().to_pybytes()


def _orc_bytes(table) -> bytes:
    from pyarrow import orc

    sink = pa.BufferOutputStream()
    orc.write_table(table, sink)
    return sink.getvalue().to_pybytes()


def _table(spark, warehouse: str, name: str, columns: str, stored: str) -> tuple[str, str]:
    t, loc = f"lk.{name}", f"{warehouse}/{name}"
    spark.sql(f"DROP TABLE IF EXISTS {t}")
    spark.sql(f"CREATE EXTERNAL TABLE {t} ({columns}) PARTITIONED BY (dt STRING) {stored} LOCATION '{loc}'")
    return t, loc


def _partition(spark, files, t: str, loc: str, dt: str, contents: list[bytes]) -> str:
    """The files, named as Hive names them, in a new partition ``dt``."""
    where = f"{loc}/dt={dt}"
    for i, data in enumerate(contents):
        files.write_bytes(f"{where}/{i:06d}_0", data)
    spark.sql(f"ALTER TABLE {t} ADD PARTITION (dt='{dt}') LOCATION '{where}'")
    return where


def _ts(values, unit="ns", tz=None):
    return pa.array(values, pa.timestamp(unit, tz=tz))


def _footer_types(spark, files, where: str) -> set[tuple[str, ...]]:
    from lakekeeper_spark.storage.formats import parquet_footer

    return {tuple(parquet_footer(spark, f)["timestamps"]) for f in files.data_files(where)}


def _by_spec(res):
    return {p["spec"]: p for p in res["partitions"]}


def test_parquet_int96_nanoseconds_are_refused_and_whole_microseconds_compact(spark, engine, files, warehouse):
    from lakekeeper_spark.storage.formats import file_facts, parquet_footer

    t, loc = _table(spark, warehouse, "nanos_int96", "id INT, ts TIMESTAMP", "STORED AS PARQUET")

    def part(ids, offsets, **kw):
        return _parquet_bytes(pa.table({"id": pa.array(ids, pa.int32()), "ts": _ts([BASE_NS + o for o in offsets])}),
                              use_deprecated_int96_timestamps=True, **kw)

    micros = [part([i], [i * 1000 + 123456000]) for i in range(3)]
    # dictionary-encoded (pyarrow's default) and plain pages; the nanoseconds in one value of one file
    dict_nanos = micros[:2] + [part([7, 8], [123456789, 5000])]
    plain_nanos = [part([i], [i * 1000], use_dictionary=False) for i in range(3)]
    plain_nanos[2] = part([5, 6, 9], [0, 1000, 123456789], use_dictionary=False)
    kept = {dt: _partition(spark, files, t, loc, dt, c) for dt, c in
            (("dict", dict_nanos), ("plain", plain_nanos), ("micro", micros))}
    # Hive's own writer (parquet-mr, INT96, no Spark metadata in the footer): the pages are read, and pass
    hive_writer = spark.newSession()
    hive_writer.conf.set("spark.sql.hive.convertMetastoreParquet", "false")
    for i in range(3):
        hive_writer.sql(f"INSERT INTO {t} PARTITION (dt='hive') SELECT {i}, "
                        f"TIMESTAMP'2020-01-01 10:00:0{i}.123456'")
    (first, *_rest) = files.data_files(f"{loc}/dt=hive")
    assert parquet_footer(spark, first)["timestamps"] == ["INT96"]
    assert not file_facts(spark, "parquet", first)["spark_written"]
    assert file_facts(spark, "parquet", first)["created_by"].startswith("parquet-mr")
    before = {dt: files.snapshot(w) for dt, w in kept.items()}
    rows = frozen(spark, t)

    res = engine.one("compact", t)
    by = _by_spec(res)
    for dt in ("dict", "plain"):
        p = by[f"dt={dt}"]
        assert p["status"] == "refused" and p["code"] == "unsupported_values", res
        assert "ts = 2020-01-01 10:00:00.123456789" in p["reason"] and "nothing was written or moved" in p["reason"]
        assert files.snapshot(kept[dt]) == before[dt]
    p = by["dt=micro"]
    assert p["status"] == "refused" and p["code"] == "unsupported_values", res
    assert "INT96 timestamps written by parquet-cpp-arrow" in p["reason"] and "shifted by its UTC offset" in p["reason"]
    assert files.snapshot(kept["micro"]) == before["micro"]
    assert by["dt=hive"]["status"] == "compacted", res
    assert len(files.data_files(f"{loc}/dt=hive")) == 1
    assert _footer_types(spark, files, f"{loc}/dt=hive") == {("INT96",)}
    spark.sql(f"REFRESH TABLE {t}")
    assert same_rows(spark.table(t), rows)


def test_orc_nanoseconds_are_refused_top_level_and_nested(spark, engine, files, warehouse):
    t, loc = _table(spark, warehouse, "nanos_orc", "id INT, ts TIMESTAMP, arr ARRAY<TIMESTAMP>", "STORED AS ORC")

    def part(ids, offsets, nested):
        return _orc_bytes(pa.table({"id": pa.array(ids, pa.int32()), "ts": _ts([BASE_NS + o for o in offsets]),
                                    "arr": pa.array([[BASE_NS + n] for n in nested], pa.list_(pa.timestamp("ns")))}))

    micros = [part([i], [i * 1000], [i * 2000]) for i in range(3)]
    top = micros[:2] + [part([7], [790], [0])]
    nested = micros[:2] + [part([8], [0], [123456791])]
    where = {dt: _partition(spark, files, t, loc, dt, c) for dt, c in (("top", top), ("nested", nested), ("micro", micros))}
    before = {dt: files.snapshot(w) for dt, w in where.items()}
    rows = frozen(spark, t)

    res = engine.one("compact", t)
    by = _by_spec(res)
    assert by["dt=top"]["code"] == by["dt=nested"]["code"] == "unsupported_values", res
    # (ORC formats the value without its trailing zeros)
    assert "ts = 2020-01-01" in by["dt=top"]["reason"] and ".00000079;" in by["dt=top"]["reason"]
    assert "arr = " in by["dt=nested"]["reason"] and ".123456791" in by["dt=nested"]["reason"]
    assert files.snapshot(where["top"]) == before["top"] and files.snapshot(where["nested"]) == before["nested"]
    assert by["dt=micro"]["status"] == "compacted" and len(files.data_files(where["micro"])) == 1, res
    spark.sql(f"REFRESH TABLE {t}")
    assert same_rows(spark.table(t), rows)


def test_text_digits_below_a_microsecond_are_refused_in_timestamp_columns_only(spark, engine, files, warehouse):
    t, loc = _table(spark, warehouse, "nanos_text", "id INT, s STRING, ts TIMESTAMP",
                    "ROW FORMAT DELIMITED FIELDS TERMINATED BY ',' STORED AS TEXTFILE")
    micro = [b"1,a,2020-01-01 10:00:00.123456\n", b"2,b,2020-01-01 10:00:01\n", b"3,c,2020-01-01 10:00:02.5\n"]
    nanos = micro[:2] + [b"4,d,2020-01-01 10:00:00.123456780\n"]
    # the same text in a string column is a string: kept as it is
    decoy = micro[:2] + [b"5,10:00:00.123456780,2020-01-01 10:00:03.000001\n"]
    where = {dt: _partition(spark, files, t, loc, dt, c) for dt, c in (("nanos", nanos), ("decoy", decoy), ("micro", micro))}
    before = files.snapshot(where["nanos"])
    rows = frozen(spark, t)

    res = engine.one("compact", t)
    by = _by_spec(res)
    assert by["dt=nanos"]["code"] == "unsupported_values", res
    assert "ts: '2020-01-01 10:00:00.123456780'" in by["dt=nanos"]["reason"]
    assert files.snapshot(where["nanos"]) == before
    assert by["dt=decoy"]["status"] == by["dt=micro"]["status"] == "compacted", res
    spark.sql(f"REFRESH TABLE {t}")
    assert same_rows(spark.table(t), rows)


def test_parquet_int64_timestamps_keep_their_type_and_mixed_types_are_refused(
        spark, engine, files, warehouse, monkeypatch):
    t, loc = _table(spark, warehouse, "ts_types", "id INT, ts TIMESTAMP", "STORED AS PARQUET")

    def part(i, **kw):
        return _parquet_bytes(pa.table({"id": pa.array([i, i + 100], pa.int32()),
                                        "ts": _ts([BASE_NS + i * 1_000_000, BASE_NS + 123_456_000], tz="UTC")}), **kw)

    us = [part(i, coerce_timestamps="us") for i in range(3)]
    ms = [part(i, coerce_timestamps="ms", allow_truncated_timestamps=True) for i in range(3)]
    mixed = [part(0, coerce_timestamps="us"), part(1, use_deprecated_int96_timestamps=True)]
    where = {dt: _partition(spark, files, t, loc, dt, c) for dt, c in (("us", us), ("ms", ms), ("mixed", mixed))}
    assert _footer_types(spark, files, where["us"]) == {("TIMESTAMP_MICROS",)}
    assert _footer_types(spark, files, where["ms"]) == {("TIMESTAMP_MILLIS",)}
    mixed_before = files.snapshot(where["mixed"])
    rows = frozen(spark, t)

    # the check fires: a copy written in Spark's default type (INT96) fails verification
    from lakekeeper_spark.commands import compact as compact_command

    real = compact_command.write_staging

    def default_type(spark_, fs, info, u, settings, codec, *args, **kwargs):
        return real(spark_, fs, info, u, settings, {k: v for k, v in codec.items() if k != "timestamp_type"}, *args,
                    **kwargs)

    monkeypatch.setattr(compact_command, "write_staging", default_type)
    us_before = files.snapshot(where["us"])
    res = engine.one("compact", t)
    by = _by_spec(res)
    assert by["dt=us"]["status"] == "failed" and by["dt=us"]["code"] == "verification_failed", res
    assert "Parquet timestamp type changed: TIMESTAMP_MICROS in the unit's files, INT96" in by["dt=us"]["reason"]
    assert files.snapshot(where["us"]) == us_before and files.hidden(loc) == []
    monkeypatch.setattr(compact_command, "write_staging", real)

    res = engine.one("compact", t)
    by = _by_spec(res)
    assert by["dt=us"]["status"] == by["dt=ms"]["status"] == "compacted", res
    assert by["dt=mixed"]["status"] == "refused" and by["dt=mixed"]["code"] == "mixed_files", res
    assert "INT96 in 1 file" in by["dt=mixed"]["reason"] and "TIMESTAMP_MICROS in 1 file" in by["dt=mixed"]["reason"]
    assert files.snapshot(where["mixed"]) == mixed_before
    assert len(files.data_files(where["us"])) == 1 and _footer_types(spark, files, where["us"]) == {("TIMESTAMP_MICROS",)}
    assert len(files.data_files(where["ms"])) == 1 and _footer_types(spark, files, where["ms"]) == {("TIMESTAMP_MILLIS",)}
    spark.sql(f"REFRESH TABLE {t}")
    assert same_rows(spark.table(t), rows)


def test_the_checksum_sees_nested_microseconds_and_negative_zero(spark):
    from pyspark.sql import functions as F

    from lakekeeper_spark.rewrite import content

    a = spark.sql("SELECT array(TIMESTAMP'2020-01-01 10:00:00.123456') AS arr, 0.0D AS d, CAST(0.0 AS FLOAT) AS f")
    b = spark.sql("SELECT array(TIMESTAMP'2020-01-01 10:00:00.123457') AS arr, 0.0D AS d, CAST(0.0 AS FLOAT) AS f")
    neg_d = spark.sql("SELECT array(TIMESTAMP'2020-01-01 10:00:00.123456') AS arr, -0.0D AS d, CAST(0.0 AS FLOAT) AS f")
    neg_f = spark.sql("SELECT array(TIMESTAMP'2020-01-01 10:00:00.123456') AS arr, 0.0D AS d, CAST('-0.0' AS FLOAT) AS f")
    sums = [content.checksum(x)["content"] for x in (a, b, neg_d, neg_f)]
    assert len(set(sums)) == 4, sums
    # what the hash was before: the nested microsecond and the zero's sign unseen
    old = [x.select(F.xxhash64(F.to_json("arr"), F.col("d"), F.col("f"))).first()[0] for x in (a, b, neg_d, neg_f)]
    assert len(set(old)) == 1
    nan = spark.sql("SELECT CAST('NaN' AS DOUBLE) AS d")  # NaN as Spark compares it: every NaN alike
    assert content.checksum(nan) == content.checksum(spark.sql("SELECT sqrt(-1D) AS d"))


def test_dedupe_sees_versions_a_microsecond_apart_as_a_tie(spark, engine, files, warehouse):
    t, loc = "lk.tie_micro", f"{warehouse}/tie_micro"
    spark.sql(f"DROP TABLE IF EXISTS {t}")
    spark.sql(f"CREATE EXTERNAL TABLE {t} (id BIGINT, ver INT, at TIMESTAMP) PARTITIONED BY (dt STRING) "
              f"STORED AS PARQUET LOCATION '{loc}'")
    rows = spark.sql("SELECT * FROM VALUES (1, 7, TIMESTAMP'2020-01-01 10:00:00.123456'), "
                     "(1, 7, TIMESTAMP'2020-01-01 10:00:00.123457'), (2, 1, TIMESTAMP'2020-01-01 10:00:00') "
                     "AS v(id, ver, at)")
    rows.repartition(3).createOrReplaceTempView("lk_src")
    spark.sql(f"INSERT INTO {t} PARTITION (dt='x') SELECT * FROM lk_src")
    before = files.snapshot(f"{loc}/dt=x")
    res = engine.one("compact", t, dedupe_keys="id", dedupe_order_by="ver")
    (p,) = res["partitions"]
    assert p["code"] == "dedupe_tie" and files.snapshot(f"{loc}/dt=x") == before, res
