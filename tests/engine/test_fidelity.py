"""Tables as years of DDL and several tools leave them (issue "every
partition as its readers see it"): each case ends compacted with every value
identical, or untouched with a reason."""

from __future__ import annotations

import pytest

from engine_helpers import frozen, make_table, same_rows

pytestmark = pytest.mark.integration


def test_long_table_name_keeps_its_backup_findable(spark, engine, files, warehouse):
    """A 110-character table name: its backup's name is cut to fit the
    Metastore, and rollback and cleanup still find that backup (before,
    rollback said "no backup" and cleanup never freed the originals)."""
    name = "events_from_the_ingestion_pipeline_of_the_" + "x" * 68
    assert len(name) == 110
    loc = make_table(spark, warehouse, name, rows=600, files=30)
    t = f"lk.{name}"
    original = files.snapshot(loc)
    rows = frozen(spark, t)

    res = engine.one("compact", t)
    assert res["status"] == "compacted", res
    bkp = res["backup_table"].split(".", 1)[1]
    assert len(bkp) == 128 and bkp.startswith("__bkp_events_from_the_ingestion"), bkp

    res = engine.one("rollback", t)
    assert res["status"] == "rolled_back" and res["changed"], res
    assert files.snapshot(loc) == original
    assert bkp not in [r.tableName for r in spark.sql("SHOW TABLES IN lk").collect()]

    res = engine.one("compact", t)
    assert res["status"] == "compacted", res
    res = engine.one("cleanup", t, older_than="all")
    assert res["status"] == "cleaned" and res["backups_removed"], res
    spark.sql(f"REFRESH TABLE {t}")
    assert same_rows(spark.table(t), rows)
    spark.sql(f"DROP TABLE {t}")


def test_backups_are_known_by_their_property_whatever_the_prefix(spark, engine, files, warehouse):
    """A backup made under an earlier ``backup_prefix`` is still this table's
    backup: rollback finds it after the prefix changed, a database run
    passes over it (never compacts a backup as a table), and a backup named
    directly is refused."""
    loc = f"{warehouse}/lk_pfx_prefixed"  # its own database: the database run sees only this table and its backup
    spark.sql("CREATE DATABASE IF NOT EXISTS lk_pfx")
    spark.sql(f"CREATE EXTERNAL TABLE lk_pfx.prefixed (id BIGINT, name STRING) STORED AS PARQUET LOCATION '{loc}'")
    spark.range(400).selectExpr("id", "concat('name-', id) AS name").repartition(20).write.insertInto("lk_pfx.prefixed")
    t = "lk_pfx.prefixed"
    original = files.snapshot(loc)
    res = engine.one("compact", t, backup_prefix="__old")
    assert res["status"] == "compacted" and res["backup_table"].startswith("lk_pfx.__old_prefixed_"), res
    bkp = res["backup_table"]

    refused = engine.one("compact", bkp)
    assert (refused["status"], refused["code"]) == ("refused", "backup_table"), refused
    assert "backup of lk_pfx.prefixed" in refused["reason"]

    by_table = {r["table"]: r for r in engine.run("compact", database="lk_pfx")}
    assert sorted(by_table) == sorted([t, bkp]), by_table
    assert by_table[bkp]["status"] == "refused" and by_table[bkp]["code"] == "backup_table", by_table
    assert by_table[t]["status"] == "not_needed", by_table[t]  # compacted already

    res = engine.one("rollback", t)  # the default prefix now
    assert res["status"] == "rolled_back" and res["changed"], res
    assert files.snapshot(loc) == original
    assert bkp.split(".")[1] not in [r.tableName for r in spark.sql("SHOW TABLES IN lk_pfx").collect()]
    spark.sql(f"DROP TABLE {t}")


def test_hive_default_control_character_delimiters(spark, engine, files, warehouse):
    """The commonest text table there is: Hive's layout with \\001 between
    fields, as `SHOW CREATE TABLE` prints it, files written by an ingestion
    tool (Sqoop/Flume style: raw \\001 bytes, \\N for NULL, empty strings).
    Before, every run failed with "refusing control characters in SQL
    literal" after the journal and backup work."""
    loc = f"{warehouse}/ctrl_text"
    spark.sql("DROP TABLE IF EXISTS lk.ctrl_text")
    spark.sql(
        "CREATE EXTERNAL TABLE lk.ctrl_text (id BIGINT, name STRING, note STRING) "
        "ROW FORMAT DELIMITED FIELDS TERMINATED BY '\\001' LINES TERMINATED BY '\\n' "
        f"STORED AS TEXTFILE LOCATION '{loc}'")
    serde = spark.sql("DESCRIBE FORMATTED lk.ctrl_text").collect()
    assert any("\x01" in (r.data_type or "") for r in serde), serde  # field.delim really is \001
    lines = []
    for f in range(12):
        chunk = []
        for i in range(f * 10, f * 10 + 10):
            note = "\\N" if i % 7 == 0 else ("" if i % 5 == 0 else f"note {i}, with | and ;")
            chunk.append(f"{i}\x01name-{i}\x01{note}")
        lines += chunk
        files.write_bytes(f"{loc}/part-{f:05d}", ("\n".join(chunk) + "\n").encode())
    spark.sql("REFRESH TABLE lk.ctrl_text")
    rows = frozen(spark, "lk.ctrl_text")
    assert rows.count() == 120 and rows.where("note IS NULL").count() == 18 and rows.where("note = ''").count() == 20

    res = engine.one("compact", "lk.ctrl_text")
    assert res["status"] == "compacted", res
    (new,) = files.data_files(loc)
    spark.sql("REFRESH TABLE lk.ctrl_text")
    assert same_rows(spark.table("lk.ctrl_text"), rows)
    # the bytes as Hive splits them: the same lines, \001 between fields, \N for NULL
    written = files.read_bytes(new).decode().split("\n")
    assert written[-1] == "" and sorted(written[:-1]) == sorted(lines)
    assert engine.one("rollback", "lk.ctrl_text")["status"] == "rolled_back"
    spark.sql("DROP TABLE lk.ctrl_text")


def _write_lines(files, uri: str, lines: list[bytes]) -> None:
    files.write_bytes(uri, b"".join(line + b"\n" for line in lines))


def _lines_of(files, loc: str) -> list[bytes]:
    """Every line of the unit's data files, as Hive's TextInputFormat splits them."""
    out: list[bytes] = []
    for uri in files.data_files(loc):
        data = files.read_bytes(uri)
        assert data.endswith(b"\n"), uri
        out += data[:-1].split(b"\n")
    return sorted(out)


def test_table_properties_the_serde_reads_reach_the_written_files(spark, engine, files, warehouse):
    """A text table as Sqoop leaves one (``--fields-terminated-by '|'
    --escaped-by '\\\\' --null-string ''``, ISO-8859-1 bytes), whose
    ``serialization.null.format`` and ``serialization.encoding`` are table
    properties: LazySimpleSerDe reads them from TBLPROPERTIES too, and there
    they win over the SerDe's own (``NULL DEFINED AS 'SV'`` below: the text
    SV is a string). Before, only the SerDe properties reached the write:
    NULLs were written as SV, text as UTF-8, and the unit failed
    content_mismatch (and without content verification changed values)."""
    loc = f"{warehouse}/tblprops_text"
    t = "lk.tblprops_text"
    spark.sql(f"DROP TABLE IF EXISTS {t}")
    spark.sql(
        f"CREATE EXTERNAL TABLE {t} (id BIGINT, name STRING, tags ARRAY<STRING>, attrs MAP<STRING,STRING>, "
        "note STRING) ROW FORMAT DELIMITED FIELDS TERMINATED BY '|' ESCAPED BY '\\\\' "
        "COLLECTION ITEMS TERMINATED BY ',' MAP KEYS TERMINATED BY ':' NULL DEFINED AS 'SV' "
        f"STORED AS TEXTFILE LOCATION '{loc}' "
        "TBLPROPERTIES ('serialization.null.format'='', 'serialization.encoding'='ISO-8859-1')")
    lines = []
    for f in range(10):
        chunk = []
        for i in range(f * 12, f * 12 + 12):
            note = "" if i % 7 == 0 else ("SV" if i % 5 == 0 else (f"a\\|b {i}" if i % 3 == 0 else f"note {i}"))
            chunk.append(f"{i}|caf\u00e9 {i}|t{i},u|k:{i},l:x|{note}".encode("latin-1"))
        lines += chunk
        _write_lines(files, f"{loc}/part-m-{f:05d}", chunk)
    spark.sql(f"REFRESH TABLE {t}")
    as_json = ["id", "name", "tags", "to_json(attrs) AS attrs", "note"]  # maps: neither set-comparable nor frozen
    before = spark.table(t).selectExpr(*as_json)  # in their order
    rows = spark.createDataFrame(before.collect(), before.schema)
    assert rows.count() == 120 and rows.where("note IS NULL").count() == 18
    assert rows.where("note = 'SV'").count() == 20 and rows.where("note LIKE 'a|b %'").count() == 28
    assert rows.where("name = 'caf\u00e9 7' AND tags[1] = 'u' AND attrs = '{\"k\":\"7\",\"l\":\"x\"}'").count() == 1

    res = engine.one("compact", t)
    assert res["status"] == "compacted", res
    assert len(files.data_files(loc)) == 1
    spark.sql(f"REFRESH TABLE {t}")
    assert same_rows(spark.table(t).selectExpr(*as_json), rows)
    assert _lines_of(files, loc) == sorted(lines)  # byte for byte: '' for NULL, Latin-1, \| escaped
    assert engine.one("rollback", t)["status"] == "rolled_back"
    spark.sql(f"DROP TABLE {t}")


@pytest.mark.parametrize("case, ddl, props, code", [
    ("header", "", {"skip.header.line.count": "1"}, "header_footer_lines"),
    ("footer", "", {"skip.footer.line.count": "1"}, "header_footer_lines"),
    ("tsformats", "", {"timestamp.formats": "yyyy-MM-dd'T'HH:mm:ss"}, "serde_property"),
    ("linedelim", "", {"line.delim": "\\u0002"}, "serde_property"),
])
def test_text_properties_a_rewrite_cannot_honour_are_refused(spark, engine, files, warehouse, case, ddl, props,
                                                             code):
    """Header/footer lines (Hive and Impala skip them in every file, Spark
    reads them as rows: merging files changes what one of them sees),
    ``timestamp.formats`` (read, never written), a line delimiter that is
    not a newline: refused before anything is written. Before, each was
    compacted."""
    loc = f"{warehouse}/refused_{case}"
    t = f"lk.refused_{case}"
    spark.sql(f"DROP TABLE IF EXISTS {t}")
    tbl = ", ".join(f"'{k}'='{v}'".replace("'T'", "\\'T\\'") for k, v in props.items())
    spark.sql(f"CREATE EXTERNAL TABLE {t} (id STRING, ts TIMESTAMP) ROW FORMAT DELIMITED FIELDS TERMINATED BY ',' "
              f"STORED AS TEXTFILE LOCATION '{loc}' TBLPROPERTIES ({tbl})")
    for f in range(6):
        body = [f"{f * 10 + i},2024-01-0{1 + i % 9}T10:00:00".encode() for i in range(10)]
        _write_lines(files, f"{loc}/data-{f}.csv", [b"id,ts"] + body + ([b"total,"] if case == "footer" else []))
    original = files.snapshot(loc)
    spark.sql(f"REFRESH TABLE {t}")
    if case == "header":  # Spark keeps each file's header as a row, Hive skips it
        assert spark.table(t).where("id = 'id'").count() == 6
    res = engine.one("compact", t)
    assert (res["status"], res["code"]) == ("refused", code), res
    assert next(iter(props)) in res["reason"], res
    assert files.snapshot(loc) == original and files.hidden(loc) == []
    assert engine.one("analyze", t)["code"] == code
    assert engine.one("cleanup", t, older_than="all")["status"] != "refused"  # backups of such a table are still managed
    spark.sql(f"DROP TABLE {t}")


def _two_descriptor_table(spark, files, warehouse, name: str) -> tuple[str, dict[str, list[bytes]]]:
    """dt=old created while the table's field delimiter was ',', dt=new after
    ``ALTER TABLE ... SET SERDEPROPERTIES ('field.delim'='|')`` (no CASCADE:
    dt=old keeps ','), files written by an ingestion tool with each
    partition's own delimiter."""
    loc = f"{warehouse}/{name}"
    t = f"lk.{name}"
    spark.sql(f"DROP TABLE IF EXISTS {t}")
    spark.sql(f"CREATE EXTERNAL TABLE {t} (id BIGINT, v STRING) PARTITIONED BY (dt STRING) "
              f"ROW FORMAT DELIMITED FIELDS TERMINATED BY ',' STORED AS TEXTFILE LOCATION '{loc}'")
    spark.sql(f"ALTER TABLE {t} ADD PARTITION (dt='old')")
    spark.sql(f"ALTER TABLE {t} SET SERDEPROPERTIES ('field.delim'='|', 'serialization.format'='|')")
    spark.sql(f"ALTER TABLE {t} ADD PARTITION (dt='new')")
    lines: dict[str, list[bytes]] = {"old": [], "new": []}
    for f in range(8):
        old = [f"{i},{'v-%d' % i if i % 4 else chr(92) + 'N'}".encode() for i in range(f * 10, f * 10 + 10)]
        new = [f"{i}|w-{i}, with a comma".encode() for i in range(f * 10, f * 10 + 10)]
        _write_lines(files, f"{loc}/dt=old/part-{f}", old)
        _write_lines(files, f"{loc}/dt=new/part-{f}", new)
        lines["old"] += old
        lines["new"] += new
    spark.sql(f"REFRESH TABLE {t}")
    return loc, lines


def test_each_partition_is_written_with_its_own_storage_descriptor(spark, engine, files, warehouse, monkeypatch):
    """A partition keeps the SerDe properties it was created with when the
    table's change without CASCADE; readers read it with its own. Before,
    dt=old was written with the table's '|', read back the same way by the
    verification, and compacted: every reader then saw NULLs. The
    descriptors come from the table's partition list here (the bulk read of
    ``Catalog.partition_storages``, from one partition on); the next test
    reads them one call each, and both reads give the same descriptors."""
    from lakekeeper_spark.catalog import catalog as catalog_module

    loc, lines = _two_descriptor_table(spark, files, warehouse, "own_descriptor")
    t = "lk.own_descriptor"
    rows = frozen(spark, t)
    assert rows.where("dt = 'old' AND v LIKE 'v-%'").count() == 60 and rows.where("v IS NULL").count() == 20
    assert rows.where("dt = 'new' AND v LIKE 'w-%, with a comma'").count() == 80

    monkeypatch.setattr(catalog_module, "BULK_STORAGE", 1)
    res = engine.one("compact", t)
    assert res["status"] == "compacted", res
    assert [p["status"] for p in res["partitions"]] == ["compacted", "compacted"], res
    spark.sql(f"REFRESH TABLE {t}")
    assert same_rows(spark.table(t), rows)
    for dt in ("old", "new"):  # byte for byte: each partition with its own delimiter
        assert len(files.data_files(f"{loc}/dt={dt}")) == 1
        assert _lines_of(files, f"{loc}/dt={dt}") == sorted(lines[dt]), dt
    # one Metastore call per partition and the bulk read agree, parameters (statistics) included
    cat = catalog_module.Catalog(spark)
    info = cat.get_table("lk", "own_descriptor")
    specs = [{"dt": "new"}, {"dt": "gone"}, {"dt": "old"}]
    one_by_one = [cat.partition_storage("lk", "own_descriptor", s) for s in (specs[0], specs[2])]
    assert [s.serde_properties["field.delim"] for s in one_by_one] == ["|", ","], one_by_one
    assert one_by_one[0].parameters.get("numFiles") == "1", one_by_one
    with pytest.raises(Exception, match="gone"):  # not in the list: read alone, and fails as it would alone
        cat.partition_storages(info, specs)
    assert cat.partition_storages(info, [specs[0], specs[2]]) == one_by_one
    assert engine.one("rollback", t)["status"] == "rolled_back"
    spark.sql(f"DROP TABLE {t}")


def test_content_verification_reads_a_partition_with_its_own_descriptor(
        spark, engine, files, warehouse, monkeypatch):
    """The fault hook writes text partitions with the table's descriptor (the
    old write): content verification, reading the staged copy through the
    partition's own descriptor, catches dt=old and leaves it untouched (it
    used to read it back through the table's descriptor too, and saw
    nothing); dt=new, whose descriptor is the table's, compacts."""
    loc, _lines = _two_descriptor_table(spark, files, warehouse, "verify_descriptor")
    t = "lk.verify_descriptor"
    rows = frozen(spark, t)
    original = files.snapshot(f"{loc}/dt=old")
    monkeypatch.setenv("LAKEKEEPER_FAULT_AT", "table_descriptor")
    res = engine.one("compact", t)
    monkeypatch.delenv("LAKEKEEPER_FAULT_AT")
    by_spec = {p["spec"]: p for p in res["partitions"]}
    assert res["status"] == "failed" and by_spec["dt=old"]["code"] == "content_mismatch", res
    assert by_spec["dt=new"]["status"] == "compacted", res
    assert files.snapshot(f"{loc}/dt=old") == original and files.hidden(f"{loc}/dt=old") == []
    spark.sql(f"REFRESH TABLE {t}")
    assert same_rows(spark.table(t), rows)
    assert engine.one("rollback", t)["status"] == "rolled_back"
    spark.sql(f"DROP TABLE {t}")


def test_a_partition_in_another_format_is_refused(spark, engine, files, warehouse):
    """A partition whose own SerDe is not the table's (here OpenCSVSerde on
    one partition of a LazySimpleSerDe table) is refused with a reason,
    untouched; the other partition compacts. Before, it was written with the
    table's SerDe."""
    loc = make_table(spark, warehouse, "other_serde", fmt="textfile", rows=200,
                     partitions={"2024-01-01": 8, "2024-01-02": 8},
                     row_format="ROW FORMAT DELIMITED FIELDS TERMINATED BY ','")
    t = "lk.other_serde"
    spark.sql(f"ALTER TABLE {t} PARTITION (dt='2024-01-01') "
              "SET SERDE 'org.apache.hadoop.hive.serde2.OpenCSVSerde'")
    spark.sql(f"REFRESH TABLE {t}")
    original = files.snapshot(f"{loc}/dt=2024-01-01")
    res = engine.one("compact", t)
    by_spec = {p["spec"]: p for p in res["partitions"]}
    assert res["status"] == "compacted", res
    part = by_spec["dt=2024-01-01"]
    assert (part["status"], part["code"]) == ("refused", "partition_format"), part
    assert "OpenCSVSerde" in part["reason"], part
    assert by_spec["dt=2024-01-02"]["status"] == "compacted", res
    assert files.snapshot(f"{loc}/dt=2024-01-01") == original
    assert engine.one("rollback", t)["status"] == "rolled_back"
    spark.sql(f"DROP TABLE {t}")
