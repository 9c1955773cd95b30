"""Files too large (issue 50 item 1): ``max_file_size_mb`` splits a file
above it into files of about the target size through the ordinary rewrite
(content verified), while minor mode keeps the files within the band as they
are (moved by rename into the staging right before the swap: their bytes
never move, the backup's original directory lacks them and a rollback
brings them back from the live directory). Real local Spark and Metastore, the shared session; one small table."""

from __future__ import annotations

from engine_helpers import frozen, parent, same_rows

T_MB = 1 / 16  # target 64 KB: fragment < 8 KB, undersized < 48 KB
MAX_MB = 3 / 16  # split bound 192 KB (3 x the target: above the large file's row groups, see docs/modes.md)
KB = 1024


def test_minor_mode_splits_the_huge_file_keeps_the_band_and_rollback_restores_every_byte(
        spark, engine, files, warehouse):
    t = "lk.split_minor"
    loc = f"{warehouse}/split_minor"
    spark.sql(f"DROP TABLE IF EXISTS {t}")
    spark.sql(f"CREATE EXTERNAL TABLE {t} (id BIGINT, payload STRING) PARTITIONED BY (dt STRING) "
              f"STORED AS PARQUET LOCATION '{loc}'")
    mixed, single = f"{loc}/dt=mixed", f"{loc}/dt=single"

    def write(start: int, rows: int, nfiles: int, block: int | None = None) -> None:
        """As a pipeline appends to a partition: a Spark job writing into its directory."""
        df = spark.range(start, start + rows, numPartitions=nfiles).selectExpr(
            "id", "concat(sha2(cast(id AS STRING), 256), sha2(cast(-id AS STRING), 256)) AS payload")
        w = df.write.mode("append")
        if block:  # the large file's row groups, as a writer with a smaller parquet.block.size leaves them
            w = w.option("parquet.block.size", block)
        w.parquet(mixed)

    write(0, 144, 12)  # 12 fragments (an hourly micro-batch each)
    write(1000, 1400, 2)  # 2 files within the band
    write(10000, 4000, 1, block=32 * KB)  # one file far above the bound, several row groups
    spark.sql(f"ALTER TABLE {t} ADD PARTITION (dt='mixed') LOCATION '{mixed}'")
    big = max(files.fs.list_dir(mixed).files, key=lambda f: f.size)
    files.mkdir(single)
    files.fs.duplicate_file(f"{mixed}/{big.name}", f"{single}/{big.name}")  # a partition of one huge file
    spark.sql(f"ALTER TABLE {t} ADD PARTITION (dt='single') LOCATION '{single}'")
    onegroup = f"{loc}/dt=onegroup"  # as a writer with the default 128 MB row groups leaves a large file: one
    spark.range(20000, 24000, numPartitions=1).selectExpr(
        "id", "concat(sha2(cast(id AS STRING), 256), sha2(cast(-id AS STRING), 256)) AS payload").write.parquet(onegroup)
    spark.sql(f"ALTER TABLE {t} ADD PARTITION (dt='onegroup') LOCATION '{onegroup}'")
    one_files = files.snapshot(onegroup)
    sizes = sorted(f.size for f in files.fs.list_dir(mixed).files)
    frag, low, bound = 64 * KB // 8, 64 * KB * 3 // 4, 192 * KB
    assert len(sizes) == 15 and sizes[11] < frag and low <= sizes[12] <= sizes[13] <= bound < sizes[14], sizes
    in_band = sorted(f.name for f in files.fs.list_dir(mixed).files if low <= f.size <= bound)
    original = {d: files.snapshot(d) for d in (mixed, single)}
    rows = frozen(spark, t)
    opts = dict(mode="minor", target_file_size_mb=T_MB, max_file_size_mb=MAX_MB)

    # without the bound: the single file is skipped, the large one copied as it is
    plain = {p["spec"]: p for p in engine.one("analyze", t, mode="minor", target_file_size_mb=T_MB)["partitions"]}
    assert plain["dt=single"]["decision"] == "skip" and plain["dt=single"]["reason"] == "a single file"
    assert (plain["dt=mixed"]["files_rewritten"], plain["dt=mixed"]["files_copied"]) == (12, 3)

    res = engine.one("compact", t, **opts)
    assert res["status"] == "compacted" and res["changed"], res
    by = {p["spec"]: p for p in res["partitions"]}
    m, s = by["dt=mixed"], by["dt=single"]
    assert m["status"] == "compacted" and m["rule"] == "minor", m
    assert (m["files_rewritten"], m["files_split"], m["files_moved"], m["files_copied"]) == (13, 1, 2, 0), m
    assert "13 file(s) rewritten into" in m["reason"] and "1 of them above max_file_size split" in m["reason"]
    assert "2 kept unchanged, moved by rename" in m["reason"] and m["verified"] == "content"
    assert s["status"] == "compacted" and s["rule"] == "split" and s["files_split"] == 1, s
    assert s["files_after"] >= 2 and s["rows_before"] == s["rows_after"] == 4000
    # a file of one row group above the bound cannot be cut below it: not split (else rewritten by every run)
    g = by["dt=onegroup"]
    assert g["status"] == "not_needed" and "1 file(s) above max_file_size" in g["reason"], g
    assert "not split: a row group or stripe of up to" in g["reason"] and files.snapshot(onegroup) == one_files, g
    # the Metastore's numRows counts the whole partition: the rewritten rows and the kept files' (their footers)
    assert (m["rows_before"], m["rows_after"], m["rows_kept"], s["rows_kept"]) == (4144, 4144, 1400, 0), m
    assert [_stats(spark, t, d)["numRows"] for d in ("mixed", "single")] == ["5544", "4000"]
    now = {d: files.snapshot(d) for d in (mixed, single)}
    for name in in_band:  # the band: the same files, byte for byte
        assert now[mixed][name] == original[mixed][name], name
    olds = [n for n in files.names(parent(mixed)) if n.startswith(".dt=mixed.lk_old_")]
    kept_in_old = {f.name for f in files.fs.list_dir(f"{parent(mixed)}/{olds[0]}").files}
    assert len(olds) == 1 and not kept_in_old & set(in_band) and len(kept_in_old) == 13, kept_in_old  # moved
    for d in (mixed, single):  # everything written is within the bound (about the target: the split worked)
        written = [f for f in files.fs.list_dir(d).files if f.name not in in_band]
        assert len(written) >= 2 and all(f.size <= bound for f in written), [f.size for f in written]
    spark.sql(f"REFRESH TABLE {t}")
    assert same_rows(spark.table(t), rows)
    again = engine.one("compact", t, **opts)  # the files written are within the band: nothing to split again
    assert again["status"] == "not_needed" and not again["changed"], again

    # history: the split and the kept files are recorded per partition and in the totals
    rec = engine.one("analyze", t, **opts)["history"][0]
    assert rec["totals"]["files_split"] == 2
    assert {(u["spec"], u.get("files_split"), u.get("files_moved"), u.get("files_copied"))
            for u in rec["units"]} == {("dt=mixed", 1, 2, 0), ("dt=single", 1, 0, 0)}

    res = engine.one("rollback", t)
    assert res["status"] == "rolled_back" and res["changed"], res
    rb = {p["spec"]: p for p in res["partitions"]}
    assert not rb["dt=mixed"].get("carried_over") and rb["dt=mixed"]["files_after"] == 15, rb  # not "late"
    assert {d: files.snapshot(d) for d in (mixed, single)} == original  # every original file, byte for byte
    assert (rb["dt=mixed"]["rows_before"], rb["dt=mixed"]["rows_after"]) == (5544, 5544), rb
    assert [_stats(spark, t, d)["numRows"] for d in ("mixed", "single")] == ["5544", "4000"]
    spark.sql(f"REFRESH TABLE {t}")
    assert same_rows(spark.table(t), rows)

    engine.one("compact", t, **opts)
    compacted = {d: files.snapshot(d) for d in (mixed, single)}
    res = engine.one("cleanup", t, older_than="all")
    assert res["status"] == "cleaned" and res["backups_removed"][0]["bytes"] > 0, res
    assert {d: files.snapshot(d) for d in (mixed, single)} == compacted  # only the backup went
    assert not [n for n in files.names(parent(mixed)) if n.startswith(".")
                and ".lk_" in n], files.names(parent(mixed))
    spark.sql(f"REFRESH TABLE {t}")
    assert same_rows(spark.table(t), rows)


def _stats(spark, table: str, dt: str) -> dict[str, str]:
    """The partition's statistics as the Metastore holds them."""
    from lakekeeper_spark.catalog.catalog import Catalog

    db, name = table.split(".")
    return Catalog(spark).statistics(db, name, {"dt": dt})
