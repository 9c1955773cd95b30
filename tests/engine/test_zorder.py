"""sort_by zorder(a, b) (rewrite/zorder.py): the bit interleaving and the
validation as data, then a real compaction of a partitioned Parquet table
left the way a Spark job leaves it (many small part- files), whose files'
own footers show narrower min/max ranges of both columns than an unsorted
compaction of the same rows; Avro is refused."""

from __future__ import annotations

import pytest

from lakekeeper_spark.policy.config import Settings, build_settings, zorder_columns
from lakekeeper_spark.report.errors import Refused, UsageError
from lakekeeper_spark.report.model import TableInfo
from lakekeeper_spark.rewrite.columns import resolve_columns
from lakekeeper_spark.rewrite.zorder import interleave, plan

from engine_helpers import frozen, same_rows


def test_bits_interleave_first_column_leading():
    assert plan(2, 2) == [(0, 1, 3), (1, 1, 2), (0, 0, 1), (1, 0, 0)]
    assert [interleave([a, b], 2) for a, b in ((0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (3, 3))] == [0, 1, 2, 3, 8, 15]
    assert interleave([5], 3) == 5  # one column: its own bucket
    # every bucket combination gets its own value, and the order of a 2x2 block is the Z
    values = {interleave([a, b, c], 3) for a in range(8) for b in range(8) for c in range(8)}
    assert values == set(range(512))
    assert max(t for _j, _b, t in plan(4, 10)) == 39
    with pytest.raises(ValueError):
        plan(7, 10)


def test_zorder_syntax_is_validated():
    s = build_settings({}, {"sort_by": "zorder(A, b)"})
    assert s.sort_by == ["zorder(a,b)"] and zorder_columns(s.sort_by) == ["a", "b"]
    # an Ansible list option splits zorder(a,b) on its comma: the items joined back
    assert build_settings({}, {"sort_by": ["zorder(a", "b)"]}).sort_by == ["zorder(a,b)"]
    assert zorder_columns(build_settings({}, {"sort_by": "a, b desc"}).sort_by) is None
    for bad, msg in (("zorder(a,b,c,d,e)", "1 to 4 columns"), ("zorder(a,a)", "given twice"),
                     ("zorder()", "invalid sort_by zorder column"), ("zorder(a b)", "invalid sort_by zorder")):
        with pytest.raises(UsageError, match=msg):
            build_settings({}, {"sort_by": bad})


def _info(fmt: str, cols=(("a", "bigint"), ("b", "string"), ("m", "map<string,int>"), ("d", "decimal(12,2)"),
                          ("i", "interval day to second"), ("bin", "binary"))) -> TableInfo:
    return TableInfo(db="lk", name="t", table_type="EXTERNAL", location="file:/x", provider="hive", serde=None,
                     input_format=None, output_format=None, serde_properties={}, properties={},
                     data_columns=list(cols), partition_columns=[("dt", "string")], format=fmt)


def test_zorder_columns_checked_against_the_table():
    s = build_settings({}, {"sort_by": "zorder(A, b)"})
    r = resolve_columns(s, _info("parquet"))
    assert r.zorder == ("a", "b") and r.sort_by == () and r.sorted
    assert r.sort_result() == {"strategy": "zorder", "columns": ["a", "b"]}
    assert resolve_columns(build_settings({}, {"sort_by": "a"}), _info("orc")).sort_result() == {
        "strategy": "linear", "columns": ["a"]}
    for fmt in ("avro", "text"):
        with pytest.raises(Refused, match=f"parquet and orc tables, not {fmt}") as exc:
            resolve_columns(s, _info(fmt))
        assert exc.value.code == "unsupported_format"
    assert resolve_columns(build_settings({}, {"sort_by": "zorder(d, a, b)"}), _info("orc")).zorder == ("d", "a", "b")
    for sort_by, msg in (("zorder(a, m)", "m is a map<string,int>"), ("zorder(i)", "i is a interval day to second"),
                         ("zorder(bin)", "bin is a binary"), ("zorder(a, dt)", "dt is a partition column"),
                         ("zorder(a, nope)", "nope is not a column")):
        with pytest.raises(Refused, match=msg) as exc:
            resolve_columns(build_settings({}, {"sort_by": sort_by}), _info("parquet"))
        assert exc.value.code == "invalid_columns"
    assert not Settings().sort_by


def _small_files_table(spark, files, warehouse: str, name: str) -> str:
    """Two partitions of 20 part- files each, as INSERTs of a 20-task Spark job leave them: a and b
    uncorrelated (a hash of the id each), every file holding rows from the whole range of both (10,000 rows a
    partition: with the 0.1 MB target the compaction writes as many files as 20,000 rows did with 0.2 MB)."""
    t, loc = f"lk.{name}", f"{warehouse}/{name}"
    spark.sql(f"DROP TABLE IF EXISTS {t}")
    if files.exists(loc):
        files.rmtree(loc)
    spark.sql(f"CREATE EXTERNAL TABLE {t} (id BIGINT, a BIGINT, b STRING, c DATE, pad STRING) "
              f"PARTITIONED BY (dt STRING) STORED AS PARQUET LOCATION '{loc}'")
    for p in range(2):
        spark.range(p * 10000, (p + 1) * 10000).selectExpr(
            "id", "pmod(xxhash64(id, 1), 100000) - 50000 AS a",
            "lpad(cast(pmod(xxhash64(id, 2), 100000) AS string), 6, '0') AS b",
            "date_add(DATE'2024-01-01', cast(pmod(id, 365) AS int)) AS c",
            "sha2(cast(id AS string), 256) AS pad",
        ).repartition(20).createOrReplaceTempView("lk_zsrc")
        spark.sql(f"INSERT INTO {t} PARTITION (dt='2024-0{p + 1}') SELECT * FROM lk_zsrc")
    return loc


def _ranges(files, loc: str) -> dict[str, list[float]]:
    """Each data file's max - min of a and b (b as a number) from its Parquet footer."""
    import io

    import pyarrow.parquet as pq

    out: dict[str, list[float]] = {"a": [], "b": [], "files": []}
    for part in sorted(n for n, is_dir in files.fs.list_names(loc) if is_dir and n.startswith("dt=")):
        for uri in files.data_files(f"{loc}/{part}"):
            meta = pq.ParquetFile(io.BytesIO(files.read_bytes(uri))).metadata
            for col in ("a", "b"):
                idx = meta.schema.names.index(col)
                lo = min(meta.row_group(g).column(idx).statistics.min for g in range(meta.num_row_groups))
                hi = max(meta.row_group(g).column(idx).statistics.max for g in range(meta.num_row_groups))
                out[col].append(float(hi) - float(lo))
            out["files"].append(uri)
    return out


@pytest.mark.integration
def test_zorder_narrows_both_columns_min_max(spark, engine, files, warehouse):
    z_loc = _small_files_table(spark, files, warehouse, "zo_z")
    plain_loc = _small_files_table(spark, files, warehouse, "zo_plain")
    before = frozen(spark, "lk.zo_z")
    size = dict(target_file_size_mb=0.1)
    z = engine.one("compact", "lk.zo_z", sort_by="zorder(a, b)", **size)
    plain = engine.one("compact", "lk.zo_plain", **size)
    assert z["status"] == plain["status"] == "compacted", (z, plain)
    assert z["sort"] == {"strategy": "zorder", "columns": ["a", "b"]} and "sort" not in plain
    assert same_rows(spark.table("lk.zo_z"), before)
    # the file count the unsorted write plans from the same bytes (planner.write_layout), not one per read task
    planned = {p["spec"]: p["files_after"] for p in plain["partitions"]}
    for part in z["partitions"]:
        assert part["status"] == "compacted" and part["rows_after"] == part["rows_before"] == 10000, part
        assert part["files_after"] == planned[part["spec"]] > 1, (part, planned)
    zr, pr = _ranges(files, z_loc), _ranges(files, plain_loc)
    assert len(zr["files"]) == len(pr["files"]) == sum(planned.values())
    for col in ("a", "b"):  # both columns, not only the first (a linear sort would narrow only a)
        z_mean, p_mean = sum(zr[col]) / len(zr[col]), sum(pr[col]) / len(pr[col])
        assert z_mean < 0.75 * p_mean, (col, zr[col], pr[col])
    # the run's history record keeps the strategy
    (last,) = engine.one("analyze", "lk.zo_z", history=1)["history"]
    assert last["command"] == "compact" and last["sort"] == {"strategy": "zorder", "columns": ["a", "b"]}, last


@pytest.mark.integration
def test_zorder_of_an_avro_table_is_refused(spark, engine, warehouse):
    from engine_helpers import make_table

    make_table(spark, warehouse, "zo_avro", fmt="AVRO", rows=50, files=3)
    res = engine.one("compact", "lk.zo_avro", sort_by="zorder(id, amount)")
    assert res["status"] == "refused" and res["code"] == "unsupported_format", res
    assert "not avro" in res["reason"] and res["partitions"] == []


@pytest.mark.integration
def test_spark_z_values_are_the_plan_in_python(spark):
    """with_z's binary search and bit interleaving (Spark expressions) give, row by row, the z-value of
    ``interleave`` over each key's bucket counted in Python (boundaries below it), NULL first; the keys keep
    the order of numbers, strings (by bytes), dates and NaN (after every number)."""
    from lakekeeper_spark.rewrite import zorder as Z

    rows = [(i, None if i == 3 else (i * 37) % 50 - 25, f"s{(i * 13) % 40:02d}", float("nan") if i == 5 else i / 7.0)
            for i in range(40)]
    df = spark.createDataFrame(rows, "id BIGINT, n INT, s STRING, d DOUBLE")
    cols = [("n", "int"), ("s", "string"), ("d", "double")]
    bounds = Z.boundaries(df, [Z.order_key(c, t) for c, t in cols], 3)
    got = {r["id"]: r[Z.Z] for r in Z.with_z(df, cols, 3).select("id", Z.Z).collect()}
    keys = {r["id"]: r for r in df.select("id", *[Z.order_key(c, t).alias(c) for c, t in cols]).collect()}
    for i, key in keys.items():
        ranks = [0 if key[c] is None else sum(b < key[c] for b in bounds[j]) for j, (c, _t) in enumerate(cols)]
        assert got[i] == Z.interleave(ranks, 3), (i, key, ranks, got[i])
    assert keys[3]["n"] is None and keys[5]["d"] == float("inf")
    assert sorted(keys, key=lambda i: keys[i]["s"]) == sorted(keys, key=lambda i: rows[i][2])  # bytes order kept
    assert len({got[i] for i in got}) > 20  # spread over the buckets, not one value
