"""Each unit (a partition's directory, or a table's) compacted as its own
files are, issue 17: read by its own directory, never through a filter on
its partition values (``hour=9`` and ``hour=09`` are two partitions whose
values cast to one); written with the codec, Parquet layout and Avro writer
schema of its own files, not of the first file of the table; a unit whose
files disagree on what a rewrite must keep is left untouched with a reason.
Each case ends compacted with every value identical, or untouched with a
reason."""

from __future__ import annotations

import gzip

import pytest

from engine_helpers import frozen, same_rows

pytestmark = pytest.mark.integration


def _lines_of(files, loc: str) -> dict[str, list[bytes]]:
    """File name -> its lines as Hive's TextInputFormat reads them (a
    ``.gz`` file decompressed, as Hadoop's codec factory picks it by name)."""
    out = {}
    for uri in files.data_files(loc):
        data = files.read_bytes(uri)
        if uri.endswith(".gz"):
            data = gzip.decompress(data)
        assert data.endswith(b"\n"), uri
        out[uri.rsplit("/", 1)[1]] = data[:-1].split(b"\n")
    return out


def _all_lines(files, loc: str) -> list[bytes]:
    return sorted(line for lines in _lines_of(files, loc).values() for line in lines)


def test_text_units_read_their_own_directory(spark, engine, files, warehouse):
    """``hour`` is an INT partition column. The pipeline writes ``hour=9``
    through the table (plain text); an external tool drops gzip files into
    ``hour=09`` and ``MSCK REPAIR TABLE`` adds that partition with its raw
    value: two partitions whose values cast to 9. ``hour=10`` got plain
    files, then gzip files after the writers' compression setting changed.

    Before: each unit was read as ``hour = '<value>'``, so hour=9 and hour=09
    each read both directories and were written back with each other's rows
    (every row twice; content verification read the duplicates back too),
    and every unit was written with the codec of the first file of the first
    unit (hour=09's gzip)."""
    loc = f"{warehouse}/sibling_text"
    t = "lk.sibling_text"
    spark.sql(f"DROP TABLE IF EXISTS {t}")
    spark.sql(f"CREATE EXTERNAL TABLE {t} (id BIGINT, v STRING) PARTITIONED BY (hour INT) "
              f"ROW FORMAT DELIMITED FIELDS TERMINATED BY ',' STORED AS TEXTFILE LOCATION '{loc}'")
    s = spark.newSession()  # the writers' settings, not the shared session's
    s.sql(f"INSERT INTO {t} PARTITION (hour=9) SELECT /*+ REPARTITION(5) */ id, concat('nine-', id) "
          f"FROM range(0, 50)")
    s.sql(f"INSERT INTO {t} PARTITION (hour=10) SELECT /*+ REPARTITION(4) */ id, concat('ten-', id) "
          f"FROM range(100, 140)")
    s.conf.set("hive.exec.compress.output", "true")
    s.conf.set("mapreduce.output.fileoutputformat.compress.codec", "org.apache.hadoop.io.compress.GzipCodec")
    s.sql(f"INSERT INTO {t} PARTITION (hour=10) SELECT /*+ REPARTITION(3) */ id, concat('ten-', id) "
          f"FROM range(140, 170)")
    tool = []  # the external tool: gzip files, no partition in the Metastore
    for f in range(4):
        chunk = [f"{i},zero-nine-{i}".encode() for i in range(200 + f * 10, 210 + f * 10)]
        files.write_bytes(f"{loc}/hour=09/batch-{f}.csv.gz", gzip.compress(b"".join(x + b"\n" for x in chunk)))
        tool += chunk
    spark.sql(f"MSCK REPAIR TABLE {t}")
    assert sorted(r[0] for r in spark.sql(f"SHOW PARTITIONS {t}").collect()) == ["hour=09", "hour=10", "hour=9"]
    spark.sql(f"REFRESH TABLE {t}")
    rows = frozen(spark, t)
    assert rows.count() == 160 and rows.where("hour = 9").count() == 90
    lines = {p: _all_lines(files, f"{loc}/{p}") for p in ("hour=9", "hour=09", "hour=10")}
    assert lines["hour=09"] == sorted(tool)

    res = engine.one("compact", t)
    by = {p["spec"]: p for p in res["partitions"]}
    assert res["status"] == "compacted" and sorted(by) == ["hour=09", "hour=10", "hour=9"], res
    assert all(p["status"] == "compacted" and p["files_after"] == 1 for p in by.values()), res
    assert (by["hour=9"]["rows_after"], by["hour=09"]["rows_after"], by["hour=10"]["rows_after"]) == (50, 40, 70)
    spark.sql(f"REFRESH TABLE {t}")
    assert same_rows(spark.table(t), rows)
    for p, want in lines.items():  # byte for byte, each unit its own lines, once
        assert _all_lines(files, f"{loc}/{p}") == want, p
    spark.sql(f"DROP TABLE {t}")
