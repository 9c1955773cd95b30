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


def test_text_units_read_their_own_directory_with_their_own_codec(spark, engine, files, warehouse):
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
    s.conf.set("hive.exec.dynamic.partition.mode", "nonstrict")
    s.sql(f"INSERT INTO {t} PARTITION (hour) SELECT /*+ REPARTITION(4) */ id, "
          f"IF(id < 50, concat('nine-', id), concat('ten-', id)), IF(id < 50, 9, 10) FROM range(0, 90)")
    s.conf.set("hive.exec.compress.output", "true")
    s.conf.set("mapreduce.output.fileoutputformat.compress.codec", "org.apache.hadoop.io.compress.GzipCodec")
    s.sql(f"INSERT INTO {t} PARTITION (hour=10) SELECT /*+ REPARTITION(3) */ id, concat('ten-', id) "
          f"FROM range(100, 130)")
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
    # each unit's own codec; hour=10's files disagree: the newest file's (gzip), said in a note
    assert [n.endswith(".gz") for n in _lines_of(files, f"{loc}/hour=9")] == [False]
    assert [n.endswith(".gz") for n in _lines_of(files, f"{loc}/hour=09")] == [True]
    assert [n.endswith(".gz") for n in _lines_of(files, f"{loc}/hour=10")] == [True]
    assert "notes" not in by["hour=9"] and "notes" not in by["hour=09"], res
    assert any("GzipCodec" in n and "newest" in n for n in by["hour=10"].get("notes", [])), by["hour=10"]
    spark.sql(f"DROP TABLE {t}")


def _parquet_facts(spark, files, loc: str) -> list[tuple[str, str | None]]:
    from lakekeeper_spark.storage.formats import file_facts

    return sorted({(file_facts(spark, "parquet", uri)["codec"], file_facts(spark, "parquet", uri)["layout"])
                   for uri in files.data_files(loc)}, key=str)


def test_parquet_units_keep_their_own_codec_and_layout_and_rollback_leaves_dropped_partitions(
        spark, engine, files, warehouse, monkeypatch):
    """A Parquet table as years leave it: snappy files (Spark's default)
    until its ``parquet.compression`` property became GZIP; files written in
    Parquet's legacy layout (as Hive and Impala write it, or Spark with
    writeLegacyFormat: decimals as fixed_len_byte_array) next to standard
    ones. dt=a snappy, dt=b gzip, dt=c both codecs (written as the newest
    file's, gzip, with a note), dt=d both layouts (refused: readers of the
    legacy layout only would see other rows), dt=e legacy only.

    Then run 2 compacts a new partition dt=f; dt=b is dropped (``ALTER
    TABLE ... DROP PARTITION``: an external table keeps its directory) and
    dt=c dropped with its directory deleted. Rolling back run 1
    (``--run-id``; check mode first, then a run stopped by an error right
    after its first restore and settled from its journal) restores dt=a and
    dt=e: dt=b and dt=c are reported ``skipped`` (``partition_dropped``),
    not re-created, nothing of them moved; their originals stay, and run
    1's backup keeps exactly them. A rollback of the newest run restores
    dt=f; one more rollback finds only dropped partitions and changes
    nothing; cleanup frees run 1's originals.

    Before, the codec and layout of the first file of the first unit (dt=a:
    snappy, standard) were used for every unit: dt=b became snappy, dt=e
    standard, dt=d was compacted into one layout. And the rollback
    re-created dt=b (a partition the user had dropped) and refused the whole
    table (``live_changed``) for dt=c."""
    from lakekeeper_spark.protocol.faults import HOOKS

    loc = f"{warehouse}/unit_codecs"
    t = "lk.unit_codecs"
    spark.sql(f"DROP TABLE IF EXISTS {t}")
    spark.sql(f"CREATE EXTERNAL TABLE {t} (id BIGINT, name STRING, amount DECIMAL(12,2)) PARTITIONED BY (dt STRING) "
              f"STORED AS PARQUET LOCATION '{loc}'")

    def insert(parts: str, start: int, legacy: bool = False) -> None:
        """One write job (a writer with its own settings): 40 rows and 4 files into each partition of ``parts``."""
        s = spark.newSession()
        s.conf.set("spark.sql.parquet.writeLegacyFormat", "true" if legacy else "false")
        s.conf.set("hive.exec.dynamic.partition.mode", "nonstrict")
        s.sql(f"INSERT INTO {t} PARTITION (dt) SELECT /*+ REPARTITION(4) */ id, concat('n-', id), "
              f"CAST(id * 1.5 AS DECIMAL(12,2)), substr('{parts}', CAST(id % {len(parts)} AS INT) + 1, 1) "
              f"FROM range({start}, {start + 40 * len(parts)})")

    def partitions(table: str) -> list[str]:
        return sorted(r[0] for r in spark.sql(f"SHOW PARTITIONS {table}").collect())

    insert("acd", 0)
    insert("de", 200, legacy=True)
    spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('parquet.compression'='GZIP')")
    insert("bc", 400)
    spark.sql(f"REFRESH TABLE {t}")
    before = {dt: _parquet_facts(spark, files, f"{loc}/dt={dt}") for dt in "abcde"}
    assert before == {"a": [("snappy", "standard")], "b": [("gzip", "standard")],
                      "c": [("gzip", "standard"), ("snappy", "standard")],
                      "d": [("snappy", "legacy"), ("snappy", "standard")], "e": [("snappy", "legacy")]}, before
    original = {dt: files.snapshot(f"{loc}/dt={dt}") for dt in "abcde"}
    rows = frozen(spark, t)

    run1 = engine.one("compact", t)
    by = {p["spec"]: p for p in run1["partitions"]}
    assert run1["status"] == "compacted", run1
    assert [by[f"dt={dt}"]["status"] for dt in "abcde"] == ["compacted"] * 3 + ["refused", "compacted"], run1
    d = by["dt=d"]
    assert d["code"] == "mixed_files" and "legacy" in d["reason"] and "standard" in d["reason"], d
    assert files.snapshot(f"{loc}/dt=d") == original["d"] and files.hidden(f"{loc}/dt=d") == []
    after = {dt: _parquet_facts(spark, files, f"{loc}/dt={dt}") for dt in "abce"}
    assert after == {"a": [("snappy", "standard")], "b": [("gzip", "standard")], "c": [("gzip", "standard")],
                     "e": [("snappy", "legacy")]}, after
    assert any("gzip" in n and "snappy" in n and "newest" in n for n in by["dt=c"].get("notes", [])), by["dt=c"]
    assert not by["dt=a"].get("notes") and not by["dt=b"].get("notes"), run1
    spark.sql(f"REFRESH TABLE {t}")
    assert same_rows(spark.table(t), rows)

    insert("f", 600)
    original["f"] = files.snapshot(f"{loc}/dt=f")
    run2 = engine.one("compact", t)
    assert [p["spec"] for p in run2["partitions"] if p["status"] == "compacted"] == ["dt=f"], run2
    compacted_b = files.snapshot(f"{loc}/dt=b")
    rows = frozen(spark, t)
    spark.sql(f"ALTER TABLE {t} DROP PARTITION (dt='b')")
    spark.sql(f"ALTER TABLE {t} DROP PARTITION (dt='c')")
    files.rmtree(f"{loc}/dt=c")
    old = {dt: f"{loc}/.dt={dt}.lk_old_{run1['run_id']}" for dt in "bc"}
    assert all(files.snapshot(o) == original[dt] for dt, o in old.items())
    kept_rows = rows.where("dt IN ('a', 'd', 'e', 'f')")

    plan = engine.one("rollback", t, rollback_run=run1["run_id"], dry_run=True)  # check mode: what it would do
    by = {p["spec"]: p for p in plan["partitions"]}
    assert plan["status"] == "planned" and by["dt=a"]["status"] == by["dt=e"]["status"] == "planned", plan
    for dt in "bc":
        assert (by[f"dt={dt}"]["status"], by[f"dt={dt}"]["code"]) == ("skipped", "partition_dropped"), plan
        reason = by[f"dt={dt}"]["reason"]
        assert f"/.dt={dt}.lk_old_{run1['run_id']}" in reason and run1["backup_table"] in reason, plan
    assert "still holds the compacted files" in by["dt=b"]["reason"] and "is gone" in by["dt=c"]["reason"], plan
    assert any("dt=b, dt=c" in n for n in plan["notes"]) and "2 skipped (partition_dropped)" in plan["reason"], plan

    # the rollback, stopped by an error right after it restored dt=a: settled at once from its journal,
    # which holds the skipped units too (the same path as recover after a crash)
    monkeypatch.setattr(HOOKS, "fired", set())
    monkeypatch.setenv("LAKEKEEPER_FAULT_AT", f"rollback_restored:after@{t}#0=raise")
    res = engine.one("rollback", t, rollback_run=run1["run_id"])
    monkeypatch.delenv("LAKEKEEPER_FAULT_AT")
    assert res["status"] == "failed" and res["changed"] and "injected fault" in res["reason"], res
    kept = [a for a in res["recovered_after_error"] if a["action"] == "kept_backup"]
    assert [a["units"] for a in kept] == [["dt=b", "dt=c"]], res
    assert partitions(t) == ["dt=a", "dt=d", "dt=e", "dt=f"]
    assert all(files.snapshot(f"{loc}/dt={dt}") == original[dt] for dt in "ade")
    assert files.snapshot(f"{loc}/dt=b") == compacted_b and not files.exists(f"{loc}/dt=c")  # nothing moved
    assert all(files.snapshot(o) == original[dt] for dt, o in old.items())  # the originals stay
    assert partitions(run1["backup_table"]) == ["dt=b", "dt=c"]
    spark.sql(f"REFRESH TABLE {t}")
    assert same_rows(spark.table(t), kept_rows)

    res = engine.one("rollback", t)  # the newest backup: run 2's
    assert res["status"] == "rolled_back" and [p["spec"] for p in res["partitions"]] == ["dt=f"], res
    assert files.snapshot(f"{loc}/dt=f") == original["f"]
    res = engine.one("rollback", t)  # run 1's backup again: only dropped partitions in it
    assert (res["status"], res["code"], res["changed"]) == ("skipped", "partition_dropped", False), res
    assert partitions(t) == ["dt=a", "dt=d", "dt=e", "dt=f"]

    res = engine.one("cleanup", t, older_than="all")
    (removed,) = res["backups_removed"]
    assert res["status"] == "cleaned" and removed["backup_table"] == run1["backup_table"], res
    assert removed["dropped_partitions"] == ["dt=b", "dt=c"] and removed["bytes"] > 0, res
    assert not any(files.exists(o) for o in old.values()) and files.hidden(loc) == []
    assert files.snapshot(f"{loc}/dt=b") == compacted_b  # the dropped partition's own directory: never ours to delete
    assert engine.one("rollback", t)["status"] == "skipped"
    spark.sql(f"REFRESH TABLE {t}")
    assert same_rows(spark.table(t), kept_rows)
    spark.sql(f"DROP TABLE {t}")


def test_avro_units_keep_their_own_codec_and_writer_schema(spark, engine, files, warehouse):
    """An Avro table partitioned by a string: the default partition (a NULL
    key, written by a dynamic insert) and a value Hive escapes in its
    directory name (``k=a%3Ab%2Fc%25d e``) read through their own
    directories; k=a:b... was written with deflate, the rest with snappy;
    k=x got snappy then deflate files (written as deflate, the newest's);
    k=y holds files an external tool wrote with its own writer schema,
    which has a field the table does not (``source``), next to the
    pipeline's: refused, untouched.

    Before, every unit was written with the codec and writer schema of the
    first file of the first unit: k=a:b... became snappy, and k=y was
    compacted through the table's schema, dropping the tool's ``source``
    values from its files (content verification, reading through the
    table's schema, could not see it)."""
    import json

    from lakekeeper_spark.storage.formats import avro_header

    loc = f"{warehouse}/unit_avro"
    t = "lk.unit_avro"
    spark.sql(f"DROP TABLE IF EXISTS {t}")
    spark.sql(f"CREATE EXTERNAL TABLE {t} (id BIGINT, name STRING) PARTITIONED BY (k STRING) STORED AS AVRO "
              f"LOCATION '{loc}'")
    tool_schema = json.dumps({"type": "record", "name": "event", "namespace": "com.example.ingest", "fields": [
        {"name": "id", "type": ["null", "long"]}, {"name": "name", "type": ["null", "string"]},
        {"name": "source", "type": ["null", "string"]}]})
    tool = spark.newSession()  # the external tool: its own schema, deflate, straight into k=y's directory
    tool.conf.set("hive.exec.compress.output", "true")
    tool.conf.set("avro.output.codec", "deflate")
    tool.sql(f"INSERT OVERWRITE DIRECTORY '{loc}/k=y' ROW FORMAT SERDE 'org.apache.hadoop.hive.serde2.avro.AvroSerDe' "
             f"WITH SERDEPROPERTIES ('avro.schema.literal'='{tool_schema}') STORED AS "
             "INPUTFORMAT 'org.apache.hadoop.hive.ql.io.avro.AvroContainerInputFormat' "
             "OUTPUTFORMAT 'org.apache.hadoop.hive.ql.io.avro.AvroContainerOutputFormat' "
             "SELECT /*+ REPARTITION(3) */ id, concat('tool-', id) AS name, 'crm' AS source FROM range(500, 530)")
    for n in [n for n in files.names(f"{loc}/k=y") if n.startswith(("_", "."))]:
        files.rmtree(f"{loc}/k=y/{n}")
    spark.sql(f"MSCK REPAIR TABLE {t}")

    def insert(codec: str, key: str, start: int, rows: int) -> None:
        s = spark.newSession()  # the pipeline, with its codec of the day
        s.conf.set("hive.exec.compress.output", "true")
        s.conf.set("avro.output.codec", codec)
        s.conf.set("hive.exec.dynamic.partition.mode", "nonstrict")
        s.sql(f"INSERT INTO {t} PARTITION (k) SELECT /*+ REPARTITION(3) */ id, concat('n-', id), {key} "
              f"FROM range({start}, {start + rows})")

    insert("snappy", "CASE id % 3 WHEN 0 THEN NULL WHEN 1 THEN 'x' ELSE 'y' END", 0, 90)
    insert("deflate", "IF(id % 2 = 0, 'a:b/c%d e', 'x')", 100, 60)
    assert sorted(files.names(loc)) == ["k=__HIVE_DEFAULT_PARTITION__", "k=a%3Ab%2Fc%25d e", "k=x", "k=y"]
    spark.sql(f"REFRESH TABLE {t}")

    def headers(d: str) -> list[tuple[str, str]]:
        return sorted({(h["codec"], json.loads(h["schema"]).get("name"))
                       for h in (avro_header(spark, uri) for uri in files.data_files(f"{loc}/{d}"))})

    dirs = {"default": "k=__HIVE_DEFAULT_PARTITION__", "escaped": "k=a%3Ab%2Fc%25d e", "x": "k=x", "y": "k=y"}
    before = {c: headers(d) for c, d in dirs.items()}
    table_record = before["default"][0][1]
    assert before == {"default": [("snappy", table_record)], "escaped": [("deflate", table_record)],
                      "x": [("deflate", table_record), ("snappy", table_record)],
                      "y": [("deflate", "event"), ("snappy", table_record)]}, before
    original_y = files.snapshot(f"{loc}/k=y")
    rows = frozen(spark, t)
    assert rows.count() == 180 and rows.where("k IS NULL OR k = '__HIVE_DEFAULT_PARTITION__'").count() == 30

    res = engine.one("compact", t)
    by = {p["spec"]: p for p in res["partitions"]}
    assert res["status"] == "compacted", res
    assert [by[s]["status"] for s in sorted(by)] == ["compacted", "compacted", "compacted", "refused"], res
    y = by["k=y"]
    assert y["code"] == "mixed_files" and "source" in y["reason"] and "writer schema" in y["reason"], y
    assert files.snapshot(f"{loc}/k=y") == original_y and files.hidden(f"{loc}/k=y") == []
    after = {c: headers(d) for c, d in dirs.items() if c != "y"}
    assert after == {"default": [("snappy", table_record)], "escaped": [("deflate", table_record)],
                     "x": [("deflate", table_record)]}, after
    assert all(len(files.data_files(f"{loc}/{dirs[c]}")) == 1 for c in after)
    assert any("deflate" in n and "snappy" in n for n in by["k=x"].get("notes", [])), by["k=x"]
    spark.sql(f"REFRESH TABLE {t}")
    assert same_rows(spark.table(t), rows)
    spark.sql(f"DROP TABLE {t}")
