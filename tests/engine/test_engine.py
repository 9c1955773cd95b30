"""Integration tests of the engine on real Spark with a real Hive Metastore
and real files. Each test builds its own tables. The same tests run on the
embedded default (file://, Derby) and on the test bed (hdfs://, Metastore
service, Spark standalone): see conftest.py."""

from __future__ import annotations

import pytest

from engine_helpers import frozen, make_table, parent, same_rows

pytestmark = pytest.mark.integration


def location_of(spark, table: str) -> str:
    from lakekeeper_spark.catalog.catalog import Catalog

    db, name = table.split(".")
    return Catalog(spark).get_table(db, name).location


def partition_locations(spark, table: str) -> dict[str, str]:
    from lakekeeper_spark.catalog.catalog import Catalog

    cat = Catalog(spark)
    db, name = table.split(".")
    return {p.spec_str: p.location for p in cat.list_partitions(cat.get_table(db, name))}


def own_hidden(files, loc: str) -> list[str]:
    """Hidden entries next to and inside a non-partitioned table's directory
    (the warehouse holds other tests' tables)."""
    name = loc.rstrip("/").rsplit("/", 1)[1]
    return [h for h in files.hidden(parent(loc)) if h.split("/")[0].startswith((f".{name}.", f"{name}"))]


def backup_tables(spark, table: str) -> list[str]:
    """Backup tables of lk.<table> (the Metastore may be shared with other tests)."""
    return sorted(r.tableName for r in spark.sql("SHOW TABLES IN lk").collect()
                  if r.tableName.startswith(f"__bkp_{table}_"))


def metastore_stats(spark, table: str, spec: dict[str, str] | None = None) -> dict[str, str]:
    from lakekeeper_spark.catalog.catalog import Catalog

    db, name = table.split(".")
    return Catalog(spark).statistics(db, name, spec)


@pytest.mark.hdfs
def test_non_partitioned_parquet_full_cycle(spark, engine, files, warehouse):
    """50 small ZSTD files (the same steps and checks as a few hundred):
    analyze and dry run write nothing; compact verifies and swaps in place;
    a second run changes nothing; rollback is byte-identical; cleanup frees
    the original."""
    from lakekeeper_spark.storage.formats import parquet_footer

    loc = make_table(spark, warehouse, "flat_pq", rows=4000, files=50, props={"parquet.compression": "ZSTD"})
    t = "lk.flat_pq"
    original = files.snapshot(loc)
    assert len(original) == 50
    rows = frozen(spark, t)
    location = location_of(spark, t)

    res = engine.one("analyze", t)
    assert res["status"] == "analyzed" and res["needs_compaction"] and res["files"] == 50
    part = res["partitions"][0]
    assert part["decision"] == "compact" and part["target_files"] == 1 and part["median_file_bytes"] > 0
    res = engine.one("compact", t, dry_run=True)
    assert res["status"] == "planned" and res["would_change"] and not res["changed"]
    assert files.snapshot(loc) == original and own_hidden(files, loc) == [] and backup_tables(spark, "flat_pq") == []

    res = engine.one("compact", t, sort_by=["name"])
    assert res["status"] == "compacted" and res["changed"], res
    p = res["partitions"][0]
    assert (p["files_before"], p["files_after"]) == (50, 1)
    names = [r.name for r in spark.read.parquet(files.data_files(loc)[0]).select("name").collect()]
    assert names == sorted(names) and names != [f"name-{i}" for i in range(4000)]  # sorted, by name
    assert p["rows_before"] == p["rows_after"] == 4000
    assert len(files.data_files(loc)) == 1
    assert location_of(spark, t) == location  # the Metastore location never changes
    assert parquet_footer(spark, files.data_files(loc)[0])["codec"] == "ZSTD"
    spark.sql(f"REFRESH TABLE {t}")
    assert same_rows(spark.table(t), rows)
    bkp = res["backup_table"]
    assert bkp.startswith("lk.__bkp_flat_pq_")
    props = {r.key: r.value for r in spark.sql(f"SHOW TBLPROPERTIES {bkp}").collect()}
    assert props["external.table.purge"] == "false" and props["lakekeeper.backup_of"] == t
    assert same_rows(spark.table(bkp), rows)  # the backup reads the original files
    assert location_of(spark, bkp).rsplit("/", 1)[1].startswith(".flat_pq.lk_old_")

    stats = metastore_stats(spark, t)  # read back from the Metastore
    assert (stats["numFiles"], stats["totalSize"], stats["numRows"]) == ("1", str(p["bytes_after"]), "4000")
    assert p["statistics"] == stats

    again = engine.one("compact", t, sort_by=["name"])
    assert again["status"] == "not_needed" and not again["changed"]

    res = engine.one("rollback", t)
    assert res["status"] == "rolled_back" and res["changed"]
    assert (res["partitions"][0]["files_before"], res["partitions"][0]["files_after"]) == (1, 50)
    assert files.snapshot(loc) == original  # same files, same bytes
    assert backup_tables(spark, "flat_pq") == [] and own_hidden(files, loc) == []
    stats = metastore_stats(spark, t)
    assert (stats["numFiles"], stats["numRows"]) == ("50", "4000")
    assert stats["totalSize"] == str(res["partitions"][0]["bytes_after"])
    assert engine.one("rollback", t)["changed"] is False

    engine.one("compact", t)
    res = engine.one("cleanup", t, older_than="all")
    assert res["status"] == "cleaned" and res["backups_removed"][0]["bytes"] > 0
    assert res["freed_bytes"] == res["backups_removed"][0]["bytes"]
    assert backup_tables(spark, "flat_pq") == [] and own_hidden(files, loc) == []
    spark.sql(f"REFRESH TABLE {t}")
    assert same_rows(spark.table(t), rows)
    assert engine.one("cleanup", t, older_than="all")["changed"] is False


@pytest.mark.hdfs
def test_two_level_partitions_with_one_outside_the_root(spark, engine, files, warehouse):
    t = "lk.parts"
    loc = f"{warehouse}/parts"
    outside = f"{warehouse}/elsewhere/m=03"
    spark.sql(f"DROP TABLE IF EXISTS {t}")
    spark.sql(f"CREATE EXTERNAL TABLE {t} (id BIGINT, v STRING) PARTITIONED BY (y STRING, m STRING) "
              f"STORED AS PARQUET LOCATION '{loc}'")
    spark.sql(f"ALTER TABLE {t} ADD PARTITION (y='2024', m='03') LOCATION '{outside}'")
    for m, nfiles, start in (("01", 40, 0), ("02", 1, 1000), ("03", 30, 2000)):
        spark.range(start, start + 1000).selectExpr("id", "cast(id as string) v").repartition(nfiles) \
            .createOrReplaceTempView("lk_src")
        spark.sql(f"INSERT INTO {t} PARTITION (y='2024', m='{m}') SELECT * FROM lk_src")
    rows = frozen(spark, t)
    before_locs = partition_locations(spark, t)
    snaps = {m: files.snapshot(f"{loc}/y=2024/m={m}") for m in ("01", "02")}
    snaps["03"] = files.snapshot(outside)

    res = engine.one("compact", t)
    assert res["status"] == "compacted", res
    by_spec = {p["spec"]: p for p in res["partitions"]}
    assert by_spec["y=2024/m=01"]["status"] == "compacted" and by_spec["y=2024/m=01"]["files_after"] == 1
    assert by_spec["y=2024/m=02"]["status"] == "not_needed" and by_spec["y=2024/m=02"]["reason"] == "a single file"
    assert by_spec["y=2024/m=03"]["status"] == "compacted"
    assert partition_locations(spark, t) == before_locs
    assert files.snapshot(f"{loc}/y=2024/m=02") == snaps["02"]  # untouched partition, untouched files
    assert len(files.data_files(outside)) == 1
    assert any(n.startswith(".m=03.lk_old_") for n in files.names(parent(outside)))
    spark.sql(f"REFRESH TABLE {t}")
    assert same_rows(spark.table(t), rows)
    # Readers and MSCK REPAIR TABLE never see the hidden directories.
    spark.sql(f"MSCK REPAIR TABLE {t}")
    assert sorted(r[0] for r in spark.sql(f"SHOW PARTITIONS {t}").collect()) == sorted(
        ["y=2024/m=01", "y=2024/m=02", "y=2024/m=03"])
    bkp = res["backup_table"]
    assert sorted(r[0] for r in spark.sql(f"SHOW PARTITIONS {bkp}").collect()) == ["y=2024/m=01", "y=2024/m=03"]
    assert engine.one("compact", t)["changed"] is False

    res = engine.one("rollback", t)
    assert res["status"] == "rolled_back"
    assert files.snapshot(f"{loc}/y=2024/m=01") == snaps["01"] and files.snapshot(outside) == snaps["03"]
    assert partition_locations(spark, t) == before_locs
    assert files.hidden(loc) == [] and not any(n.startswith(".") for n in files.names(parent(outside)))


FORMATS = {
    "orc_zlib": dict(fmt="orc", props={"orc.compress": "ZLIB"}, codec="zlib"),
    "avro_snappy": dict(fmt="avro", conf={"hive.exec.compress.output": "true", "avro.output.codec": "snappy"},
                        codec="snappy"),
    "text_gzip": dict(fmt="textfile", row_format="ROW FORMAT DELIMITED FIELDS TERMINATED BY '|'", sort_by=["name DESC"],
                      conf={"hive.exec.compress.output": "true",
                            "mapreduce.output.fileoutputformat.compress.codec": "org.apache.hadoop.io.compress.GzipCodec"},
                      codec="org.apache.hadoop.io.compress.GzipCodec"),
    "parquet_gzip": dict(fmt="parquet", props={"parquet.compression": "GZIP"}, codec="gzip"),
}


@pytest.mark.parametrize("case", sorted(FORMATS))
def test_formats_keep_their_codec(spark, engine, files, warehouse, case):
    from lakekeeper_spark.storage.formats import detect_codec

    spec = FORMATS[case]
    for k, v in spec.get("conf", {}).items():
        spark.conf.set(k, v)
    try:
        loc = make_table(spark, warehouse, case, fmt=spec["fmt"], rows=1500, files=40, props=spec.get("props"),
                         row_format=spec.get("row_format", ""))
    finally:
        for k in spec.get("conf", {}):
            spark.conf.unset(k)
    t = f"lk.{case}"
    fmt = {"textfile": "text"}.get(spec["fmt"], spec["fmt"])
    assert str(detect_codec(spark, fmt, files.data_files(loc)[0])["codec"]).lower() == spec["codec"].lower()
    original = files.snapshot(loc)
    rows = frozen(spark, t)

    opts = {"sort_by": spec["sort_by"]} if "sort_by" in spec else {}
    if fmt == "text":  # dedupe needs a format whose staged keys can be read back natively
        refused = engine.one("compact", t, dedupe_keys=["id"], dedupe_order_by="ts")
        assert refused["status"] == "refused" and "parquet and orc" in refused["reason"], refused
    res = engine.one("compact", t, **opts)
    assert res["status"] == "compacted", res
    p = res["partitions"][0]
    assert p["files_after"] == 1 and p["rows_before"] == p["rows_after"] == 1500
    new = files.data_files(loc)
    assert len(new) == 1
    if opts:  # sorted through the SerDe path (SORT BY ... DESC)
        names = [line.value.split("|")[1] for line in spark.read.text(new[0]).collect()]
        assert names == sorted(names, reverse=True) and len(names) == 1500
    assert str(detect_codec(spark, fmt, new[0])["codec"]).lower() == spec["codec"].lower()
    spark.sql(f"REFRESH TABLE {t}")
    assert same_rows(spark.table(t), rows)
    assert engine.one("compact", t, **opts)["changed"] is False
    engine.one("rollback", t)
    assert files.snapshot(loc) == original


@pytest.mark.hdfs
def test_refusals_touch_nothing(spark, engine, files, warehouse):
    loc = f"{warehouse}/refused"
    for stmt in (
        "CREATE TABLE lk.r_managed (id INT) STORED AS PARQUET",
        f"CREATE EXTERNAL TABLE lk.r_bucketed (id INT) CLUSTERED BY (id) INTO 4 BUCKETS STORED AS ORC "
        f"LOCATION '{loc}/b'",
        # the Metastore only accepts ACID on managed tables
        "CREATE TABLE lk.r_acid (id INT) CLUSTERED BY (id) INTO 2 BUCKETS STORED AS ORC "
        "TBLPROPERTIES ('transactional'='true')",
        f"CREATE EXTERNAL TABLE lk.r_seq (id INT) STORED AS SEQUENCEFILE LOCATION '{loc}/s'",
    ):
        spark.sql(stmt)
    spark.sql("INSERT INTO lk.r_managed VALUES (1), (2)")
    spark.sql("INSERT INTO lk.r_managed VALUES (3)")
    spark.sql("CREATE OR REPLACE VIEW lk.r_view AS SELECT 1 AS id")
    managed_loc = location_of(spark, "lk.r_managed")
    before = files.snapshot(managed_loc)
    expected = {
        "lk.r_managed": ("refused", "MANAGED"),
        "lk.r_bucketed": ("refused", "bucketed"),
        "lk.r_acid": ("refused", "transactional"),
        "lk.r_seq": ("refused", "unsupported storage format"),
        "lk.r_view": ("refused", "view"),
        "lk.nope": ("failed", "does not exist"),
        "nodb.nope": ("failed", "database nodb does not exist"),
    }
    results = engine.run("compact", list(expected))
    for r in results:
        status, words = expected[r["table"]]
        assert r["status"] == status and words in r["reason"], r
        assert not r["changed"]
    assert files.snapshot(managed_loc) == before
    assert all(backup_tables(spark, name.split(".")[1]) == [] for name in expected)
    # A database run reports what it may not touch as refused too (docs/statuses.md: not a failure of the run).
    db = {r["table"]: r for r in engine.run("analyze", database="lk")}
    assert db["lk.r_managed"]["status"] == "refused" and db["lk.r_view"]["status"] == "refused"
    for name in ("r_managed", "r_bucketed", "r_acid", "r_seq"):
        spark.sql(f"DROP TABLE lk.{name}")
    spark.sql("DROP VIEW lk.r_view")


@pytest.mark.hdfs
def test_rename_and_delete_refuse_what_they_must_and_say_why(files, warehouse):
    """The adapter's rename leaves the checks to the filesystem's own
    (``FileContext``, ``Rename.NONE``) and verifies after: each refusal
    still happens, nothing moves, and the message names the cause - on
    ``file://`` here, on HDFS on the test bed, whose plain renames differ
    (a directory renamed onto an empty one replaces it on ``file://`` and
    goes inside it on HDFS; a missing parent is made on ``file://``)."""
    from lakekeeper_spark.report.errors import LakekeeperError

    fs, base = files.fs, f"{warehouse}/rename_rules"
    fs.write_text(f"{base}/src/f1", "1")
    fs.write_text(f"{base}/file", "2")
    fs.mkdirs(f"{base}/empty")
    cases = [
        (f"{base}/src", f"{base}/empty", "rename target {d} already exists"),  # a directory onto an empty one
        (f"{base}/src/f1", f"{base}/file", "rename target {d} already exists"),  # a file onto a file
        (f"{base}/src", f"{base}/missing/src", "rename target's parent"),  # into a missing parent
        (f"{base}/nope", f"{base}/x", "rename source {s} does not exist"),
    ]
    before = sorted(files._walk(base))  # every entry, hidden ones too
    for s, d, message in cases:
        with pytest.raises(LakekeeperError) as refused:
            fs.rename(s, d)
        assert message.format(s=s, d=d) in refused.value.message, (s, d, refused.value.message)
        assert fs.exists(f"{base}/src/f1") and fs.read_text(f"{base}/file") == "2"
        assert fs.list_names(f"{base}/empty") == [] and not fs.exists(f"{base}/missing")
    assert sorted(files._walk(base)) == before
    fs.rename(f"{base}/src", f"{base}/moved")  # a plain move: done, and seen to be done
    assert not fs.exists(f"{base}/src") and fs.read_text(f"{base}/moved/f1") == "1"

    assert fs.delete(f"{base}/nope") is False
    with pytest.raises(Exception):  # a non-empty directory, not recursively: refused, kept
        fs.delete(f"{base}/moved", recursive=False)
    assert fs.read_text(f"{base}/moved/f1") == "1"
    assert fs.delete(f"{base}/moved") is True and not fs.exists(f"{base}/moved")
    fs.delete(base)

    # The adapter's HDFS clients retry a close in short steps (fs.HDFS_CLOSE_RETRY), unless the cluster's
    # configuration sets its own.
    from lakekeeper_spark.storage.fs import HDFS_CLOSE_RETRY, HadoopFS

    (name, ours), (retries, ours_retries) = HDFS_CLOSE_RETRY.items()
    session_conf = files.fs._conf
    # the whole application has them since 2026-11-30 (session.quick_file_close: the Spark jobs' writes too)
    assert (session_conf.get(name), session_conf.get(retries)) == (ours, ours_retries)
    assert (fs.hdfs_conf().get(name), fs.hdfs_conf().get(retries)) == (ours, ours_retries)
    if base.startswith("hdfs://"):
        assert fs.fs(base).getConf().get(name) == ours  # the client the journal writes with
    session_conf.set(name, "400")
    try:
        assert HadoopFS(fs._spark).hdfs_conf().get(name) == "400"
    finally:
        session_conf.set(name, ours)  # as the session gave it


@pytest.mark.hdfs
def test_directory_names_match_hadoops_listing(files, warehouse):
    """``list_names`` reads a directory in one gateway round trip (the
    statuses as text) or, on ``file://``, from the operating system: the
    same names and kinds as Hadoop's own ``listStatus``, awkward names,
    hidden entries and subdirectories included; a file lists itself; a
    missing path lists nothing."""
    fs, base = files.fs, f"{warehouse}/names_listing"
    odd = ["part-0", ".hidden", "_SUCCESS", "a b, c}{d", "pct%3A20", "dt=2024-01-01", "ünï"]
    for name in odd:
        files.write_bytes(f"{base}/d/{name}", b"x")
    for sub in ("sub", ".lk_staging_x", "k=v w"):
        files.write_bytes(f"{base}/d/{sub}/f", b"y")

    def hadoops(uri):
        jfs = fs.fs(uri)
        if not jfs.exists(fs.path(uri)):
            return []
        return sorted((str(st.getPath().getName()), bool(st.isDirectory())) for st in jfs.listStatus(fs.path(uri)))

    for uri in (f"{base}/d", f"{base}/d/part-0", f"{base}/missing", f"{base}/d/k=v w"):
        assert sorted(fs.list_names(uri)) == hadoops(uri), uri
    assert len(fs.list_names(f"{base}/d")) == len(odd) + 3
    fs.delete(base)


def test_local_permission_copy_matches_hadoops(files, warehouse, monkeypatch):
    """On ``file://`` the adapter copies modes and owners itself (Hadoop's
    local filesystem starts a process per call without its native library):
    the result must be the one Hadoop's own calls give - the reference file
    a data file, never a checksum file, and checksum files following their
    data files."""
    import os

    from lakekeeper_spark.storage.fs import HadoopFS

    if not warehouse.startswith("file:"):
        pytest.skip("the local fast path is file:// only")
    fs, base = files.fs, f"{warehouse}/perm_copy"

    def world(tag: str) -> str:
        root = f"{base}/{tag}"
        for name, mode in (("src/.part-0.crc", 0o600), ("src/part-0", 0o640), ("src/part-1", 0o640),
                           ("dst/part-9", 0o644), ("dst/.part-9.crc", 0o644)):
            files.write_bytes(f"{root}/{name}", b"x")
            os.chmod(HadoopFS._local_path(f"{root}/{name}"), mode)
            if not name.endswith(".crc") and name.startswith("src/"):
                os.chown(HadoopFS._local_path(f"{root}/{name}"), 65534, 65534)
        os.chmod(HadoopFS._local_path(f"{root}/src"), 0o750)
        os.chown(HadoopFS._local_path(f"{root}/src"), 65534, 0)
        return root

    def result(root: str) -> dict[str, tuple[int, int, int]]:
        out = {}
        for name in ("dst", "dst/part-9"):
            st = os.stat(HadoopFS._local_path(f"{root}/{name}"))
            out[name] = (oct(st.st_mode & 0o7777), st.st_uid, st.st_gid)
        return out

    ours = world("ours")
    assert fs.copy_permissions(f"{ours}/src", f"{ours}/dst") == []
    hadoops = world("hadoops")
    with monkeypatch.context() as m:
        m.setattr(HadoopFS, "_local_path", staticmethod(lambda uri: None))

        def by_fields(*_a, **_k):
            raise AssertionError("the statuses' text was not read (parse_attributes)")

        m.setattr(HadoopFS, "_copy_permissions_by_fields", staticmethod(by_fields))
        assert fs.copy_permissions(f"{hadoops}/src", f"{hadoops}/dst") == []
    assert result(ours) == result(hadoops) == {"dst": (oct(0o750), 65534, 0), "dst/part-9": (oct(0o640), 65534, 65534)}
    fs.delete(base)


@pytest.mark.hdfs
def test_empty_missing_and_leftover_directories(spark, engine, files, warehouse):
    t = "lk.odd"
    loc = make_table(spark, warehouse, "odd", rows=300, partitions={"a": 20, "b": 20, "c": 20})
    spark.sql(f"ALTER TABLE {t} ADD PARTITION (dt='empty') LOCATION '{loc}/dt=empty'")
    files.mkdir(f"{loc}/dt=empty")
    files.rmtree(f"{loc}/dt=b")  # a partition whose directory is gone
    leftover = f"{loc}/.dt=c.lk_staging_20200101T000000-abcdef"
    files.mkdir(leftover)
    files.write_bytes(f"{leftover}/part-0.parquet", b"junk from a crashed run")
    res = engine.one("compact", t)
    by = {p["spec"]: p for p in res["partitions"]}
    assert by["dt=a"]["status"] == "compacted" and by["dt=c"]["status"] == "compacted"
    assert by["dt=b"]["status"] == "not_needed" and by["dt=b"]["reason"] == "directory does not exist"
    assert by["dt=empty"]["status"] == "not_needed" and by["dt=empty"]["reason"] == "no data files"
    assert [x["kind"] for x in res["leftovers"]] == ["lk_staging"]
    assert files.read_bytes(f"{leftover}/part-0.parquet") == b"junk from a crashed run"  # never touched

    spark.sql("DROP TABLE IF EXISTS lk.empty_t")
    spark.sql(f"CREATE EXTERNAL TABLE lk.empty_t (id INT) STORED AS PARQUET LOCATION '{warehouse}/empty_t'")
    res = engine.one("compact", "lk.empty_t")
    assert res["status"] == "not_needed" and res["reason"] == "no data files" and not res["changed"]


def test_verification_mismatch_fails_and_keeps_the_original(spark, engine, files, warehouse, monkeypatch):
    loc = make_table(spark, warehouse, "tamper", rows=500, files=30)
    original = files.snapshot(loc)
    monkeypatch.setenv("LAKEKEEPER_FAULT_AT", "tamper_staging")  # drop one staged file before verification
    res = engine.one("compact", "lk.tamper")
    monkeypatch.delenv("LAKEKEEPER_FAULT_AT")
    assert res["status"] == "failed" and res["code"] == "verification_failed", res
    assert "row count mismatch" in res["reason"] and "original data untouched" in res["reason"]
    assert files.snapshot(loc) == original
    assert own_hidden(files, loc) == [] and backup_tables(spark, "tamper") == []
    assert engine.one("compact", "lk.tamper")["status"] == "compacted"


def test_verification_takes_rows_codec_and_schema_from_each_footer(spark, files, warehouse):
    """The staged files are checked from their metadata alone: rows, codec
    and the schema Spark reads them with (the Spark schema a Spark writer
    stored, else the converted physical schema, as Hive-written Parquet
    has), and a file whose schema differs from the table's fails."""
    import json

    from lakekeeper_spark.report.errors import LakekeeperError
    from lakekeeper_spark.storage.formats import data_file_footer
    from lakekeeper_spark.report.model import TableInfo
    from lakekeeper_spark.rewrite.verify import _check_schema

    def table(cols):
        schema = {"type": "struct", "fields": [{"name": n, "type": t, "nullable": True, "metadata": {}}
                                               for n, t in cols]}
        return TableInfo("lk", "f", "EXTERNAL", None, None, None, None, None, {}, {}, [], [],
                         data_schema_json=json.dumps(schema))

    good, bad = table([("id", "long"), ("name", "string")]), table([("id", "long"), ("name", "integer")])
    for fmt, codec in (("parquet", "snappy"), ("orc", "zlib")):
        out = f"{warehouse}/footers_{fmt}"
        (spark.range(0, 300, 1, 3).selectExpr("id", "CAST(id AS STRING) AS name").write.mode("overwrite")
         .option("compression", codec).format(fmt).save(out))
        uris = files.data_files(out)
        got = [data_file_footer(spark, fmt, u) for u in uris]
        assert len(uris) == 3 and sum(f["rows"] for f in got) == 300 and {f["codec"] for f in got} == {codec}
        for uri, f in zip(uris, got):
            _check_schema(good, f["spark_schema"], uri)
            with pytest.raises(LakekeeperError, match="schema mismatch") as exc:
                _check_schema(bad, f["spark_schema"], uri)
            assert exc.value.code == "verification_failed"
    # Parquet written by Hive's SerDe carries no Spark schema: the physical one is converted
    spark.sql("DROP TABLE IF EXISTS lk.hive_written")
    spark.sql(f"CREATE EXTERNAL TABLE lk.hive_written (id BIGINT, name STRING) STORED AS PARQUET "
              f"LOCATION '{warehouse}/hive_written'")
    spark.conf.set("spark.sql.hive.convertMetastoreParquet", "false")
    try:
        spark.sql("INSERT INTO lk.hive_written SELECT id, CAST(id AS STRING) FROM range(0, 50)")
    finally:
        spark.conf.unset("spark.sql.hive.convertMetastoreParquet")
    uris = files.data_files(f"{warehouse}/hive_written")
    got = [data_file_footer(spark, "parquet", u) for u in uris]
    assert uris and sum(f["rows"] for f in got) == 50
    jvm = spark._jvm
    for uri, f in zip(uris, got):
        path = jvm.org.apache.hadoop.fs.Path(uri)
        source = jvm.org.apache.parquet.hadoop.util.HadoopInputFile.fromPath(path, spark._jsc.hadoopConfiguration())
        reader = jvm.org.apache.parquet.hadoop.ParquetFileReader.open(source)
        try:
            assert reader.getFooter().getFileMetaData().getKeyValueMetaData().get(
                "org.apache.spark.sql.parquet.row.metadata") is None
        finally:
            reader.close()
        _check_schema(good, f["spark_schema"], uri)
        with pytest.raises(LakekeeperError, match="schema mismatch"):
            _check_schema(bad, f["spark_schema"], uri)


@pytest.mark.hdfs
def test_units_write_while_the_backup_is_made_and_none_swaps_without_it(
        spark, engine, files, warehouse, monkeypatch):
    """The backup table is made on its own thread while the units write;
    when it fails (here: an error right after it was made, before the run
    records ``compacting``) every unit stops before its swap, the table
    fails as a whole and is recovered: originals untouched, no staging, no
    backup table. The next run compacts."""
    kept = backup_tables(spark, "bk_fail")  # a reused test bed's Metastore keeps an earlier session's backups
    loc = make_table(spark, warehouse, "bk_fail", rows=400, partitions={"a": 12, "b": 9, "c": 7})
    original = files.snapshot(loc)
    rows = frozen(spark, "lk.bk_fail")
    monkeypatch.setenv("LAKEKEEPER_FAULT_AT", "table:compacting=raise")
    res = engine.one("compact", "lk.bk_fail")
    monkeypatch.delenv("LAKEKEEPER_FAULT_AT")
    assert res["status"] == "failed" and "injected fault at table:compacting" in res["reason"], res
    assert [a["action"] for a in res["recovered_after_error"] if a["spec"] is None] == ["closed_run"], res
    assert files.snapshot(loc) == original and files.hidden(loc) == []
    assert backup_tables(spark, "bk_fail") == kept
    res = engine.one("compact", "lk.bk_fail")
    assert res["status"] == "compacted" and len(res["partitions"]) == 3, res
    assert same_rows(rows, spark.table("lk.bk_fail"))


def test_backup_partitions_not_repointed_leave_the_run_for_recovery(spark, engine, files, warehouse, monkeypatch):
    """A partitioned table's backup partitions are repointed in groups after
    their units' swaps (``backup.PendingRepoints``). When that Metastore
    write fails (here the group's call raises, as it would with the
    Metastore down), the units stay compacted, the table fails with
    ``backup_not_repointed`` and ``pending_recovery`` on each unit, and the
    run stays open; the next command's recovery repoints them together
    (``repointed_backup``), and a rollback then restores the original files."""
    from lakekeeper_spark.catalog.catalog import Catalog

    loc = make_table(spark, warehouse, "rp_fail", rows=400, partitions={"a": 12, "b": 9, "c": 7})
    original, rows = files.snapshot(loc), frozen(spark, "lk.rp_fail")

    def outage(self, db, table, items):
        raise RuntimeError("MetaException(message:the Metastore is down)")

    monkeypatch.setattr(Catalog, "set_locations", outage)
    res = engine.one("compact", "lk.rp_fail")
    monkeypatch.undo()
    assert res["status"] == "failed" and res["code"] == "backup_not_repointed" and res["changed"], res
    assert [(p["status"], p.get("pending_recovery")) for p in res["partitions"]] == [("compacted", True)] * 3, res
    assert "the Metastore is down" in res["reason"] and same_rows(rows, spark.table("lk.rp_fail"))
    cat = Catalog(spark)
    bdb, bname = res["backup_table"].split(".")

    def backup_locations():
        return {p.spec_str: p.location.rstrip("/").rsplit("/", 1)[1]
                for p in cat.list_partitions(cat.get_table(bdb, bname))}

    assert backup_locations() == {"dt=a": "dt=a", "dt=b": "dt=b", "dt=c": "dt=c"}  # still the live directories
    rec = engine.one("recover", "lk.rp_fail")
    assert rec["status"] == "recovered", rec
    assert sorted(a["spec"] for a in rec["actions"] if a["action"] == "repointed_backup") == ["dt=a", "dt=b", "dt=c"]
    assert backup_locations() == {f"dt={d}": f".dt={d}.lk_old_{res['run_id']}" for d in "abc"}  # the originals
    assert engine.one("recover", "lk.rp_fail")["status"] == "skipped"
    back = engine.one("rollback", "lk.rp_fail")
    assert back["status"] == "rolled_back", back
    assert files.snapshot(loc) == original and same_rows(rows, spark.table("lk.rp_fail"))


@pytest.mark.hdfs
def test_rollback_of_an_earlier_run_that_no_later_run_touched(spark, engine, files, warehouse):
    """rollback --run-id (an "undo run X" from an earlier job): run X
    compacted dt=b, a later run dt=a only; X's backup is restored, the later
    run's compaction and backup stay."""
    t = "lk.undo"
    loc = make_table(spark, warehouse, "undo", rows=200, partitions={"a": 12, "b": 12})
    original_b = files.snapshot(f"{loc}/dt=b")
    first = engine.one("compact", t, where="dt = 'b'")
    assert [p["spec"] for p in first["partitions"] if p["status"] == "compacted"] == ["dt=b"], first
    second = engine.one("compact", t)
    assert [p["spec"] for p in second["partitions"] if p["status"] == "compacted"] == ["dt=a"], second
    compacted_a = files.snapshot(f"{loc}/dt=a")
    res = engine.one("rollback", t, rollback_run=first["run_id"])
    assert res["status"] == "rolled_back" and res["backup_table"] == first["backup_table"], res
    assert files.snapshot(f"{loc}/dt=b") == original_b and files.snapshot(f"{loc}/dt=a") == compacted_a
    assert backup_tables(spark, "undo") == [second["backup_table"].split(".", 1)[1]]
    assert engine.one("cleanup", t, older_than="all")["status"] == "cleaned"


def test_database_mode_skips_backups_and_compacts_each_table(spark, engine, warehouse):
    spark.sql("CREATE DATABASE IF NOT EXISTS lkdb")
    for name in ("one", "two"):
        spark.sql(f"DROP TABLE IF EXISTS lkdb.{name}")
        spark.sql(f"CREATE EXTERNAL TABLE lkdb.{name} (id BIGINT) STORED AS PARQUET LOCATION '{warehouse}/lkdb/{name}'")
        spark.range(0, 200).repartition(20).createOrReplaceTempView("lk_src")
        spark.sql(f"INSERT INTO lkdb.{name} SELECT * FROM lk_src")
    res = engine.run("compact", database="lkdb")
    assert sorted((r["table"], r["status"]) for r in res) == [("lkdb.one", "compacted"), ("lkdb.two", "compacted")]
    # the backup tables now in lkdb are not tables to compact
    res = engine.run("compact", database="lkdb")
    assert sorted((r["table"], r["status"]) for r in res) == [("lkdb.one", "not_needed"), ("lkdb.two", "not_needed")]
    res = engine.run("cleanup", database="lkdb", older_than="1d")
    assert all(r["status"] == "skipped" and len(r["kept"]) == 1 for r in res)
    res = engine.run("cleanup", database="lkdb", older_than="all")
    assert all(r["status"] == "cleaned" for r in res)
    assert engine.run("analyze", database="nodb")[0]["status"] == "failed"


def test_secret_properties_file_reads_the_same_in_java_and_the_engine(spark, tmp_path):
    """The modules keep secret conf values off the command line in a
    properties file: spark-submit reads it with java.util.Properties, the
    embedded engine with its own parser; both must see the same values."""
    import importlib.util
    from pathlib import Path

    from lakekeeper_spark.args import parse_args

    spec = importlib.util.spec_from_file_location(
        "_lakekeeper_argv", Path(__file__).resolve().parents[2] / "plugins" / "module_utils" / "_lakekeeper_argv.py")
    cmd = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cmd)
    conf = {"spark.a.secret": " lead=sp:ce\\x#!\nnl\tt", "spark.b.password": "caf\u00e9 \U0001f600 ",
            "spark.c.token": "", "spark.d key": "plain"}
    text = cmd.properties_text(conf)
    jvm = spark.sparkContext._jvm
    props = jvm.java.util.Properties()
    props.load(jvm.java.io.StringReader(text))
    assert {k: props.getProperty(k) for k in props.stringPropertyNames()} == conf
    path = tmp_path / "secret.properties"
    path.write_text(text, encoding="utf-8")
    args, _settings, _tables = parse_args(["analyze", "--table", "db.t", "--conf", "spark.x=1",
                                           "--properties-file", str(path)])
    assert args.extra_conf == {"spark.x": "1", **conf}


def _versions(spark, table: str, dt: str, rows: list[tuple], nfiles: int) -> None:
    spark.createDataFrame(rows, "id BIGINT, v STRING, ver INT, op STRING").repartition(nfiles) \
        .createOrReplaceTempView("lk_src")
    spark.sql(f"INSERT INTO {table} PARTITION (dt='{dt}') SELECT * FROM lk_src")


def test_dedupe_keeps_the_latest_version_per_partition(spark, engine, files, warehouse):
    """Inserts, updates and deletes of keys in many small files: dedupe keeps
    the latest version of each key within its partition, drops deleted keys,
    sorts each output file, and rollback brings back every original row."""
    t, loc = "lk.dd", f"{warehouse}/dd"
    spark.sql(f"DROP TABLE IF EXISTS {t}")
    spark.sql(f"CREATE EXTERNAL TABLE {t} (id BIGINT, v STRING, ver INT, op STRING) PARTITIONED BY (dt STRING) "
              f"STORED AS PARQUET LOCATION '{loc}'")
    a = [(i, f"v{i}-1", 1, "I") for i in range(300)]
    a += [(i, f"v{i}-2", 2, "U") for i in range(100)]  # updates
    a += [(i, f"v{i}-3", 3, "D") for i in range(50)]  # ... then deletes of half of them
    a += [(i, f"v{i}-2", 2, "D") for i in range(200, 210)]  # deletes of keys never updated
    # an exact duplicate; a NULL version (the oldest); a key with only a NULL version
    a += [(250, "v250-1", 1, "I"), (260, "v260-0", None, "I"), (400, "v400-0", None, "I")]
    b = [(i, f"v{i}-1", 1, "I") for i in range(100)] + [(i, f"v{i}-5", 5, "U") for i in range(10)]
    _versions(spark, t, "a", a, 8)
    _versions(spark, t, "b", b, 2)
    original = {dt: files.snapshot(f"{loc}/dt={dt}") for dt in ("a", "b")}
    dedupe = dict(dedupe_keys=["id"], dedupe_order_by="ver", dedupe_delete_marker="op", dedupe_delete_value="D")

    # Columns are checked against the table before anything runs.
    for opts, words in (({"sort_by": ["dt"]}, "partition column"), ({**dedupe, "dedupe_keys": ["nope"]},
                        "not a column"), ({**dedupe, "dedupe_delete_value": None}, "not a boolean")):
        res = engine.one("compact", t, **opts)
        assert res["status"] == "refused" and words in res["reason"] and not res["changed"], res

    res = engine.one("compact", t, sort_by=["v"], target_file_size_mb=0.004, **dedupe)
    assert res["status"] == "compacted", res
    by = {p["spec"]: p for p in res["partitions"]}
    keys_a, deleted_a = 301, 50 + 10  # ids 0..299 and 400
    assert by["dt=a"]["rows_before"] == len(a) and by["dt=a"]["keys_before"] == keys_a
    assert by["dt=a"]["deletes_dropped"] == deleted_a
    assert by["dt=a"]["duplicates_dropped"] == len(a) - keys_a
    assert by["dt=a"]["rows_after"] == keys_a - deleted_a
    assert (by["dt=b"]["rows_before"], by["dt=b"]["rows_after"], by["dt=b"]["deletes_dropped"]) == (110, 100, 0)
    assert by["dt=a"]["files_after"] > 1  # several files, each sorted by v
    for f in files.data_files(f"{loc}/dt=a"):
        vs = [r.v for r in spark.read.parquet(f).select("v").collect()]
        assert vs == sorted(vs) and vs
    spark.sql(f"REFRESH TABLE {t}")
    now = spark.table(t).collect()
    got = {(r.dt, r.id): (r.v, r.ver) for r in now}
    assert len(got) == len(now) == sum(p["rows_after"] for p in res["partitions"])  # one row per key
    assert ("a", 0) not in got and ("a", 205) not in got  # deleted keys are gone
    assert got[("a", 60)] == ("v60-2", 2) and got[("a", 150)] == ("v150-1", 1) and got[("a", 250)] == ("v250-1", 1)
    assert got[("a", 260)] == ("v260-1", 1) and got[("a", 400)] == ("v400-0", None)
    assert got[("b", 0)] == ("v0-5", 5) and got[("b", 20)] == ("v20-1", 1)  # b keeps its own versions
    opts = dict(sort_by=["v"], target_file_size_mb=0.004, **dedupe)
    again = engine.one("compact", t, **opts)
    assert again["changed"] is False, again["partitions"]

    # Two different rows of one key with the same latest version: ambiguous, refused for that partition
    # (the others are already compacted: not_needed).
    tie = [(1, "x", 7, "U"), (1, "y", 7, "U"), (2, "z", 1, "I")]
    _versions(spark, t, "tie", tie, 3)
    tie_files = files.snapshot(f"{loc}/dt=tie")
    res = engine.one("compact", t, **opts)
    by = {p["spec"]: p for p in res["partitions"]}
    assert res["status"] == "failed" and by["dt=tie"]["code"] == "dedupe_tie", res
    assert "original data untouched" in by["dt=tie"]["reason"] and by["dt=a"]["status"] == "not_needed"
    assert files.snapshot(f"{loc}/dt=tie") == tie_files

    res = engine.one("rollback", t)  # the first run's backup: duplicates and delete markers come back
    assert res["status"] == "rolled_back" and res["changed"]
    assert {dt: files.snapshot(f"{loc}/dt={dt}") for dt in ("a", "b")} == original  # byte for byte
    rb = {p["spec"]: p for p in res["partitions"]}
    assert (rb["dt=b"]["rows_before"], rb["dt=b"]["rows_after"]) == (100, 110), rb  # the original's rows come back
    assert metastore_stats(spark, t, {"dt": "b"})["numRows"] == "110"


def test_modes_and_where_smart_compaction(spark, engine, files, warehouse):
    """Mode smart with a partition filter, on partitions shaped to hit each
    rule (target 64 KB: fragment < 8 KB, undersized < 48 KB): minor rewrites
    only the fragments and copies the large file byte for byte, major
    rewrites a whole partition, a partition that qualifies for neither is
    skipped with both rules' reasons, partitions outside the filter are not
    even listed; rollback restores everything."""
    t = "lk.modes"
    loc = f"{warehouse}/modes"
    spark.sql(f"DROP TABLE IF EXISTS {t}")
    spark.sql(f"CREATE EXTERNAL TABLE {t} (id BIGINT, payload STRING) PARTITIONED BY (dt STRING, region STRING) "
              f"STORED AS PARQUET LOCATION '{loc}'")
    start = 0

    def insert(dt: str, region: str, rows: int, nfiles: int) -> None:
        nonlocal start
        spark.range(start, start + rows).selectExpr(
            "id", "concat(sha2(cast(id AS STRING), 256), sha2(cast(-id AS STRING), 256)) AS payload") \
            .repartition(nfiles).createOrReplaceTempView("lk_src")
        spark.sql(f"INSERT INTO {t} PARTITION (dt='{dt}', region='{region}') SELECT * FROM lk_src")
        start += rows

    insert("2024-09-01", "eu", 1500, 1)   # one large file (a segment) ...
    insert("2024-09-01", "eu", 144, 12)   # ... and 12 fragments: minor
    insert("2024-09-01", "us", 450, 3)    # 3 undersized files, two fit in one target: major
    insert("2024-09-02", "us", 3000, 2)   # 2 segments ...
    insert("2024-09-02", "us", 24, 2)     # ... and 2 fragments: neither rule
    for dt, region in (("2024-08-01", "eu"), ("2024-09-02", "apac")):  # outside the filter (dt, region)
        src, dst = f"{loc}/dt=2024-09-01/region=eu", f"{loc}/dt={dt}/region={region}"
        files.mkdir(dst)  # 12 fragments each, copied from the minor partition (no Spark job)
        for f in sorted(files.fs.list_dir(src).files, key=lambda f: f.size)[:12]:
            files.fs.duplicate_file(f"{src}/{f.name}", f"{dst}/{f.name}")
        spark.sql(f"ALTER TABLE {t} ADD PARTITION (dt='{dt}', region='{region}') LOCATION '{dst}'")
    where = "dt >= '2024-09-01' AND region IN ('eu','us')"
    opts = dict(mode="smart", where=where, target_file_size_mb=1 / 16)
    dirs = {s: f"{loc}/{s}" for s in ("dt=2024-09-01/region=eu", "dt=2024-09-01/region=us",
                                      "dt=2024-09-02/region=us", "dt=2024-08-01/region=eu",
                                      "dt=2024-09-02/region=apac")}
    sizes = {s: sorted(f.size for f in files.fs.list_dir(d).files) for s, d in dirs.items()}
    frag, low = 65536 // 8, 65536 * 3 // 4
    eu, us, us2 = sizes["dt=2024-09-01/region=eu"], sizes["dt=2024-09-01/region=us"], sizes["dt=2024-09-02/region=us"]
    assert len(eu) == 13 and eu[-2] < frag <= low <= eu[-1], eu  # the shapes the rules need
    assert len(us) == 3 and all(frag <= x < low for x in us) and us[0] + us[1] < 65536, us
    assert len(us2) == 4 and us2[1] < frag and us2[2] >= low, us2
    original = {s: files.snapshot(d) for s, d in dirs.items()}
    sizes_by_name = {f.name: f.size for f in files.fs.list_dir(dirs["dt=2024-09-01/region=eu"]).files}
    rows = frozen(spark, t)
    locations = partition_locations(spark, t)
    unfiltered = engine.one("analyze", t, mode="smart", target_file_size_mb=1 / 16)
    assert {p["spec"]: p["rule"] for p in unfiltered["partitions"] if p["decision"] == "compact"} == {
        "dt=2024-08-01/region=eu": "minor", "dt=2024-09-01/region=eu": "minor",
        "dt=2024-09-01/region=us": "major", "dt=2024-09-02/region=apac": "minor"}

    res = engine.one("analyze", t, **opts)
    by = {p["spec"]: p for p in res["partitions"]}
    assert res["mode"] == "smart" and res["where"] == where
    assert sorted(by) == ["dt=2024-09-01/region=eu", "dt=2024-09-01/region=us", "dt=2024-09-02/region=us"]
    assert (by["dt=2024-09-01/region=eu"]["decision"], by["dt=2024-09-01/region=eu"]["rule"]) == ("compact", "minor")
    assert by["dt=2024-09-01/region=eu"]["files_rewritten"] == 12 and by["dt=2024-09-01/region=eu"]["files_copied"] == 1
    assert (by["dt=2024-09-01/region=us"]["decision"], by["dt=2024-09-01/region=us"]["rule"]) == ("compact", "major")
    assert by["dt=2024-09-02/region=us"]["decision"] == "skip" and by["dt=2024-09-02/region=us"]["rule"] == "smart"
    assert res["files_after_estimate"] == 2 + 1 + 4

    res = engine.one("compact", t, **opts)
    assert res["status"] == "compacted" and res["changed"], res
    by = {p["spec"]: p for p in res["partitions"]}
    assert sorted(by) == sorted(["dt=2024-09-01/region=eu", "dt=2024-09-01/region=us", "dt=2024-09-02/region=us"])
    minor, major, skipped = by["dt=2024-09-01/region=eu"], by["dt=2024-09-01/region=us"], by["dt=2024-09-02/region=us"]
    assert minor["status"] == "compacted" and minor["rule"] == "minor" and minor["files_after"] == 2, minor
    assert minor["rows_before"] == minor["rows_after"] == 144  # the rewritten fragments
    assert "12 fragment files rewritten into 1, 1 kept unchanged, moved by rename" in minor["reason"]
    assert (minor["files_moved"], minor["files_copied"]) == (1, 0), minor
    assert major["status"] == "compacted" and major["rule"] == "major" and major["files_after"] == 1
    assert major["rows_before"] == major["rows_after"] == 450
    assert skipped["status"] == "not_needed" and skipped["reason"].startswith("smart: major: 0 undersized")
    assert "minor: 2 fragment file(s), fewer than min_input_files 12" in skipped["reason"]
    # the large file of the minor partition is the same file, byte for byte, moved by rename: the original
    # directory (the backup's) holds the 12 fragments only
    now = files.snapshot(dirs["dt=2024-09-01/region=eu"])
    old_eu = files.fs.list_dir(f"{parent(dirs['dt=2024-09-01/region=eu'])}/"
                               + [n for n in files.names(parent(dirs["dt=2024-09-01/region=eu"]))
                                  if n.startswith(".region=eu.lk_old_")][0])
    large_name = max(original["dt=2024-09-01/region=eu"], key=lambda n: sizes_by_name[n])
    assert now[large_name] == original["dt=2024-09-01/region=eu"][large_name]
    assert large_name not in {f.name for f in old_eu.files} and len(old_eu.files) == 12
    assert len(now) == 2
    for s in ("dt=2024-09-02/region=us", "dt=2024-08-01/region=eu", "dt=2024-09-02/region=apac"):
        assert files.snapshot(dirs[s]) == original[s], s  # skipped or filtered out: untouched
    assert partition_locations(spark, t) == locations
    spark.sql(f"REFRESH TABLE {t}")
    assert same_rows(spark.table(t), rows)
    assert engine.one("compact", t, **opts)["changed"] is False  # idempotent

    # a filter that does not fit the table refuses it, before anything is listed
    bad = engine.one("analyze", t, where="payload = 'x'")
    assert bad["status"] == "refused" and bad["code"] == "invalid_where"
    assert "payload is not a partition column" in bad["reason"]
    assert "unknown column country" in engine.one("compact", t, where="country = 'x'")["reason"]
    spark.sql("DROP TABLE IF EXISTS lk.modes_flat")
    spark.sql(f"CREATE EXTERNAL TABLE lk.modes_flat (id INT) STORED AS PARQUET LOCATION '{warehouse}/modes_flat'")
    assert "is not partitioned" in engine.one("analyze", "lk.modes_flat", where="dt = '1'")["reason"]

    # the copy check of minor mode catches a copy that differs in one byte only
    import hashlib

    from lakekeeper_spark.report.errors import LakekeeperError
    from lakekeeper_spark.report.model import Decision, Unit
    from lakekeeper_spark.policy.planner import file_stats
    from lakekeeper_spark.rewrite.verify import verify_copies

    src, stg = f"{warehouse}/copycheck/src", f"{warehouse}/copycheck/stg"
    files.mkdir(stg)
    data = bytes(range(256)) * 400
    files.write_bytes(f"{src}/big.parquet", data)
    copied = files.fs.copy_file(f"{src}/big.parquet", f"{stg}/big.parquet")
    assert copied == {"length": len(data), "md5": hashlib.md5(data).hexdigest()}
    assert files.read_bytes(f"{stg}/big.parquet") == data
    with pytest.raises(Exception):
        files.fs.copy_file(f"{src}/big.parquet", f"{stg}/big.parquet")  # never over an existing file
    lst = files.fs.list_dir(src)
    unit = Unit("", None, src, lst, file_stats(lst), Decision("compact", "", 1, "minor", ()), stg, "")
    verify_copies(files.fs, unit, {"big.parquet": copied})
    files.write_bytes(f"{stg}/big.parquet", data[:-1] + b"\x00")
    with pytest.raises(LakekeeperError, match="differs from the original"):
        verify_copies(files.fs, unit, {"big.parquet": copied})
    files.write_bytes(f"{stg}/big.parquet", data[:-1])
    with pytest.raises(LakekeeperError, match="bytes in the staging"):
        verify_copies(files.fs, unit, {"big.parquet": copied})
    files.rmtree(f"{warehouse}/copycheck")

    res = engine.one("rollback", t)
    assert res["status"] == "rolled_back"
    assert {s: files.snapshot(d) for s, d in dirs.items()} == original
    assert files.hidden(loc) == [] and backup_tables(spark, "modes") == []


def _blocks(spark, fmt: str, uri: str) -> list[int]:
    """Rows of each ORC stripe or Parquet row group of a file."""
    jvm = spark._jvm
    conf = spark._jsc.hadoopConfiguration()
    path = jvm.org.apache.hadoop.fs.Path(uri)
    if fmt == "orc":
        reader = jvm.org.apache.orc.OrcFile.createReader(path, jvm.org.apache.orc.OrcFile.readerOptions(conf))
        try:
            return [int(s.getNumberOfRows()) for s in reader.getStripes()]
        finally:
            reader.close()
    reader = jvm.org.apache.parquet.hadoop.ParquetFileReader.open(
        jvm.org.apache.parquet.hadoop.util.HadoopInputFile.fromPath(path, conf))
    try:
        return [int(b.getRowCount()) for b in reader.getFooter().getBlocks()]
    finally:
        reader.close()


@pytest.mark.hdfs
def test_files_fewer_than_the_cores_are_written_in_pieces_and_joined(spark, engine, files, warehouse):
    """A unit whose output is fewer files than the cores writes each file as
    pieces on parallel tasks and joins them without decoding: the joined
    file holds one stripe / row group per piece, every row once, the codec,
    the Spark schema and nothing else (no piece or half-joined file is
    left). Sorted output is never pieced (one sorted run per file), and
    ``min_piece_mb: 0`` turns pieces off. On a Spark line that cannot join
    a format (Parquet before parquet-mr 1.13: Spark 3.3 and 3.4) the file is
    written whole and the result says why."""
    from lakekeeper_spark.compat.file_joins import join_support
    from lakekeeper_spark.storage.formats import data_file_footer, orc_footer, parquet_footer

    cores = int(spark.sparkContext.defaultParallelism)
    n_rows, n_files = 12000, 12  # more input files than the cores; 12,000 rows: pieces of tens of KB each
    for fmt, codec, props in (("orc", "ZLIB", {"orc.compress": "ZLIB"}),
                              ("parquet", "GZIP", {"parquet.compression": "GZIP"})):
        name = f"pieces_{fmt}"
        loc = make_table(spark, warehouse, name, fmt=fmt, rows=n_rows, files=n_files, props=props)
        t = f"lk.{name}"
        rows = frozen(spark, t)
        # target: the whole table in one file; pieces of at least 20 KB (each some tens of KB)
        res = engine.one("compact", t, block_size_mb=64, min_piece_mb=0.02)
        assert res["status"] == "compacted", res
        p = res["partitions"][0]
        assert (p["files_before"], p["files_after"], p["rows_before"], p["rows_after"]) == (n_files, 1, n_rows, n_rows)
        (out,) = files.data_files(loc)
        blocks = _blocks(spark, fmt, out)
        assert sum(blocks) == n_rows
        joinable, why = join_support(spark, fmt)
        if cores >= 2 and joinable:
            assert len(blocks) == min(cores, n_files), (fmt, blocks)  # one stripe / row group per piece
            assert max(blocks) - min(blocks) <= n_rows // len(blocks)  # pieces of about even size
            assert "notes" not in p
        elif cores >= 2:  # written whole, and the result says so
            assert len(blocks) == 1, (fmt, blocks)
            assert p["notes"] == [f"not written in pieces: {why}"], p
        # no piece and no hidden half-joined file left, in the table or in what was staged
        assert [n for n in files.names(loc) if not n.endswith(".crc")] == [out.rsplit("/", 1)[1]]
        assert files.hidden(loc) == []
        assert same_rows(spark.table(t), rows)
        foot = data_file_footer(spark, fmt, out)
        assert foot["codec"] == codec.lower()
        if fmt == "parquet":  # the writer's key-value metadata survives the join
            jvm = spark._jvm
            reader = jvm.org.apache.parquet.hadoop.ParquetFileReader.open(
                jvm.org.apache.parquet.hadoop.util.HadoopInputFile.fromPath(
                    jvm.org.apache.hadoop.fs.Path(out), spark._jsc.hadoopConfiguration()))
            try:
                kv = reader.getFooter().getFileMetaData().getKeyValueMetaData()
                assert kv.get("org.apache.spark.sql.parquet.row.metadata") is not None
            finally:
                reader.close()
            assert parquet_footer(spark, out)["rows"] == n_rows
        else:
            assert orc_footer(spark, out)["rows"] == n_rows
        # rollback restores the originals; then sorted output: one run per file, never pieced
        assert engine.one("rollback", t)["status"] == "rolled_back"
        assert len(files.data_files(loc)) == n_files
        res = engine.one("compact", t, block_size_mb=64, min_piece_mb=0.02, sort_by=["name"])
        assert res["status"] == "compacted", res
        (out,) = files.data_files(loc)
        assert len(_blocks(spark, fmt, out)) == 1
        names = [r.name for r in spark.read.format(fmt).load(out).select("name").collect()]
        assert names == sorted(names)
        assert engine.one("rollback", t)["status"] == "rolled_back"
        res = engine.one("compact", t, block_size_mb=64, min_piece_mb=0)  # pieces off
        assert res["status"] == "compacted", res
        (out,) = files.data_files(loc)
        assert len(_blocks(spark, fmt, out)) == 1 and same_rows(spark.table(t), rows)


@pytest.mark.hdfs
def test_output_file_sizes_and_bulk_partition_listing(spark, engine, files, warehouse):
    """Compacted files land within +-25% of the target size (split sizes
    follow the input's payload share, not its raw bytes), and the bulk
    partition listing returns exactly what the per-partition calls return,
    also for values the bulk text cannot carry unambiguously."""
    from lakekeeper_spark.catalog.catalog import Catalog
    from lakekeeper_spark.report.model import spec_string

    # a quarter of 600,000 rows with a quarter of 1 MB as the target: as many files out; still 150 files in,
    # each about a tenth of the target (whole input files are packed: coarser ones miss the +-25%)
    loc = make_table(spark, warehouse, "sized", rows=150_000, files=150)
    before = sum(f.size for f in files.fs.list_dir(loc).files)
    res = engine.one("compact", "lk.sized", target_file_size_mb=0.25)
    assert res["status"] == "compacted", res
    sizes = [f.size for f in files.fs.list_dir(loc).files]
    target = 1024 * 1024 // 4
    assert len(sizes) >= 3, (before, sizes)
    assert all(0.75 * target <= s <= 1.25 * target for s in sizes), (before, sizes)
    assert res["partitions"][0]["rows_after"] == 150_000

    cat = Catalog(spark)
    spark.sql("DROP TABLE IF EXISTS lk.many_parts")
    spark.sql(f"CREATE EXTERNAL TABLE lk.many_parts (id BIGINT) PARTITIONED BY (a STRING, b STRING) "
              f"STORED AS PARQUET LOCATION '{warehouse}/many_parts'")
    odd = ["x, b=y", "with space", "ü/ß", "b=1", "]", "50%", "k:v#%41"]
    specs = [{"a": f"{i:03d}", "b": odd[i % len(odd)] if i % 37 == 0 else str(i % 7)} for i in range(300)]
    cat.add_partitions("lk", "many_parts", [(s, f"{warehouse}/elsewhere/p{i}") for i, s in enumerate(specs)])
    info = cat.get_table("lk", "many_parts")
    bulk = cat.list_partitions(info)
    listed = cat._session_catalog().listPartitions(cat._ident("lk", "many_parts"), spark._jvm.scala.Option.empty())
    jparts = cat._conv.java_list(listed)
    slow = sorted((cat._partition_fields(p, ["a", "b"]) for p in jparts), key=lambda t: (t[0]["a"], t[0]["b"]))
    assert len(bulk) == 300
    assert sorted(((p.spec, p.location) for p in bulk), key=lambda t: (t[0]["a"], t[0]["b"])) == slow
    assert {p.spec["b"] for p in bulk} >= {"x, b=y", "with space", "ü/ß"}
    assert all(p.location.endswith(f"/elsewhere/p{int(p.spec['a'])}") for p in bulk)

    # the specs from the Metastore's partition names (Hive-escaped: '%3A', '%2F', '%25' decoded) are the
    # listing's, in the same column order
    named = cat.partition_specs(info)
    assert sorted(named, key=spec_string) == sorted((p.spec for p in bulk), key=spec_string)
    assert {s["b"] for s in named} >= {"50%", "k:v#%41", "ü/ß"} and all(list(s) == ["a", "b"] for s in named)
    # a few of many are read by name, one call each, without the listing (which would fail here); a
    # partition gone meanwhile is left out; more than 1/BY_NAME_RATIO of them come from the listing
    few = [s for s in specs if s["a"] in ("000", "111", "222")] + [{"a": "999", "b": "gone"}]
    real_listing, cat.list_partitions = cat.list_partitions, None
    by_name = cat.partitions_named(info, few, total=300)
    cat.list_partitions = real_listing
    assert [(p.spec, p.location) for p in by_name] == [(p.spec, p.location) for p in bulk if p.spec in few]
    assert len(by_name) == 3 and by_name[2].spec == {"a": "222", "b": "50%"}
    many = specs[:20]
    assert cat.partitions_named(info, many, total=300) == [p for p in bulk if p.spec in many]
    # and a run with a where that picks two of the 300 (their directories are missing: nothing to do)
    res = engine.one("analyze", "lk.many_parts", where="a = '000' OR b = 'k:v#%41'")
    assert sorted(p["spec"] for p in res["partitions"]) == ["a=000/b=x, b=y", "a=111/b=k:v#%41"], res


def documented_analyze_fields() -> set[str]:
    """The per-table fields lakekeeper_analyze's RETURN documents."""
    import ast
    from pathlib import Path

    import yaml

    src = (Path(__file__).resolve().parents[2] / "plugins" / "modules" / "lakekeeper_analyze.py").read_text()
    ret = next(n.value.value for n in ast.parse(src).body
               if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "RETURN")
    return set(yaml.safe_load(ret)["tables"]["contains"])


@pytest.mark.hdfs
def test_statistics_retention_pins_and_analyze_sizes(spark, engine, files, warehouse, monkeypatch):
    """Three real backups of one table (three compactions): partition
    statistics read back from the Metastore after each and after a rollback;
    keep_last, grace period and a pin; analyze reports backup sizes,
    verdicts and histograms. The three runs are made to fall in one second
    (their ids and the backups' clock), their ids' random suffixes in the
    reverse of the runs' order: what quick runs do now and then, forced."""
    import types

    from lakekeeper_spark.catalog import backup as backup_module
    from lakekeeper_spark.storage import layout

    t = "lk.keep"
    loc = make_table(spark, warehouse, "keep", rows=300, partitions={"a": 20, "b": 20})
    res = engine.one("analyze", t)
    by = {p["spec"]: p for p in res["partitions"]}
    assert by["dt=a"]["histogram_before"][0] == 20 and by["dt=a"]["histogram_after"][0] == 1
    assert res["histogram"]["before"][0] == 40 and sum(res["histogram"]["after"]) == 2
    assert res["files_saved_estimate"] == 38 and len(res["histogram"]["buckets"]) == len(res["histogram"]["before"])
    documented = documented_analyze_fields()
    assert set(res) <= documented, sorted(set(res) - documented)  # the module's RETURN is complete

    # one second for the three runs: ids whose suffixes sort against the runs' order, and the backups' creation
    # times 0.3 s apart in that second (whole seconds would tie, and the ids would then order them backwards)
    second = layout.new_run_id()[:-7]
    ids = iter([f"{second}-ffffff", f"{second}-888888", f"{second}-000001"])
    real_id = layout.new_run_id
    monkeypatch.setattr(layout, "new_run_id", lambda *a, **k: next(ids, None) or real_id(*a, **k))
    base = layout.run_id_time(second + "-000000").timestamp()
    clock = iter([base + 0.1, base + 0.4, base + 0.7])
    monkeypatch.setattr(backup_module, "time", types.SimpleNamespace(time=lambda: next(clock)))
    runs = []
    for i in range(3):  # three real backups, each of a compaction of new small files
        if i:
            spark.range(10000 * i, 10000 * i + 100).selectExpr(
                "id", "concat('n', id) name", "CAST(id AS DECIMAL(12,2)) amount",
                "timestamp_seconds(1700000000 + id) ts").repartition(10).createOrReplaceTempView("lk_src")
            spark.sql(f"INSERT INTO {t} PARTITION (dt='a') SELECT * FROM lk_src")
        res = engine.one("compact", t)
        assert res["status"] == "compacted", res
        runs.append(res["run_id"])
        part_a = {p["spec"]: p for p in res["partitions"]}["dt=a"]
        stats = metastore_stats(spark, t, {"dt": "a"})  # read back from the Metastore
        rows = 300 + 100 * i
        assert (stats["numFiles"], stats["totalSize"], stats["numRows"]) == ("1", str(part_a["bytes_after"]), str(rows))
        assert part_a["statistics"] == stats
    described = {r.col_name: r.data_type for r in spark.sql(f"DESCRIBE TABLE EXTENDED {t} PARTITION (dt='a')").collect()}
    assert described["Partition Statistics"] == f"{part_a['bytes_after']} bytes, 500 rows"  # what Spark plans with
    assert len(backup_tables(spark, "keep")) == 3
    monkeypatch.undo()
    assert runs == sorted(runs, reverse=True) and len({r[:-7] for r in runs}) == 1, runs  # as forced
    # the backups' creation times order them (keep_last, the newest): distinct and in the runs' order, also when
    # runs come less than a second apart (their run ids' random suffixes would not say which came first)
    created = {}
    for b in backup_tables(spark, "keep"):
        props = {r.key: r.value for r in spark.sql(f"SHOW TBLPROPERTIES lk.{b}").collect()}
        created[props["lakekeeper.run_id"]] = float(props["lakekeeper.created_at"])
    assert [created[r] for r in runs] == sorted(created.values()) and len(set(created.values())) == 3, created
    res = engine.one("cleanup", t, pin=runs[0])
    assert res["status"] == "pinned" and res["changed"]
    assert engine.one("cleanup", t, pin=runs[0])["changed"] is False
    assert engine.one("cleanup", t, pin="20000101T000000-000000")["code"] == "not_found"

    res = engine.one("analyze", t, keep_last=1)
    verdict = {b["run_id"]: b for b in res["backups"]}
    assert [verdict[r]["verdict"] for r in runs] == ["keep", "delete", "keep"]
    assert verdict[runs[0]]["reason"] == "pinned" and "keep_last" in verdict[runs[2]]["reason"]
    assert all(b["bytes"] > 0 and b["files"] >= 10 for b in res["backups"])
    assert res["backups_pending_cleanup"] == 1 and res["backup_bytes_pending_cleanup"] == verdict[runs[1]]["bytes"]
    assert set(res) <= documented, sorted(set(res) - documented)

    res = engine.one("cleanup", t, keep_last=1, grace_period="1h")  # all younger than the grace period
    assert res["status"] == "skipped" and [k["reason"] for k in res["kept"]][0] == "pinned"
    assert all("grace period" in k["reason"] for k in res["kept"][1:]) and len(backup_tables(spark, "keep")) == 3
    res = engine.one("cleanup", t, keep_last=1)
    assert [b["run_id"] for b in res["backups_removed"]] == [runs[1]]
    assert sorted(k["run_id"] for k in res["kept"]) == sorted([runs[0], runs[2]])
    assert len(backup_tables(spark, "keep")) == 2
    # rollback --run-id of the first run: the third changed dt=a after it, so it is refused, nothing touched
    before = files.snapshot(loc)
    res = engine.one("rollback", t, rollback_run=runs[0])
    assert (res["status"], res["code"]) == ("refused", "newer_run") and runs[2] in res["reason"], res
    assert engine.one("rollback", t, rollback_run="20000101T000000-000000")["code"] == "not_found"
    assert files.snapshot(loc) == before and len(backup_tables(spark, "keep")) == 2
    res = engine.one("rollback", t)  # restores the newest backup: 1 compacted + 10 small files, 500 rows
    stats = metastore_stats(spark, t, {"dt": "a"})
    assert (stats["numFiles"], stats["numRows"]) == ("11", "500")
    assert stats["totalSize"] == str(sum(f.size for f in files.fs.list_dir(f"{loc}/dt=a").files))
    assert {p["spec"]: p for p in res["partitions"]}["dt=a"]["statistics"] == stats
    assert engine.one("cleanup", t, unpin=runs[0])["status"] == "unpinned"
    res = engine.one("cleanup", t)  # no retention policy: refused, nothing deleted
    assert (res["status"], res["code"]) == ("refused", "no_retention_policy") and "older_than: all" in res["reason"]
    assert len(backup_tables(spark, "keep")) == 1
    res = engine.one("cleanup", t, older_than="all")
    assert [b["run_id"] for b in res["backups_removed"]] == [runs[0]]
    assert backup_tables(spark, "keep") == [] and files.hidden(loc) == []
