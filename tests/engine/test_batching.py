"""Which units are written in one job (policy/batching.py): pure, no Spark."""

from __future__ import annotations

from lakekeeper_spark.policy import batching, planner
from lakekeeper_spark.report.model import Decision, FileEntry, HdfsCarry, Listing, Unit

ROOT = "file:/w/t"
MB = 1 << 20


def unit(spec: str, sizes=(MB, MB, MB), location: str | None = None, rewrite=None, subdirs=()) -> Unit:
    loc = location or f"{ROOT}/{spec}"
    lst = Listing(loc, files=[FileEntry(f"part-{i}.parquet", s, 1) for i, s in enumerate(sizes)], subdirs=list(subdirs))
    part = dict(kv.split("=", 1) for kv in spec.split("/")) if spec else None
    return Unit(spec, part, loc, lst, planner.file_stats(lst), Decision("compact", "small", 1, rewrite=rewrite),
                f"{loc}.s", f"{loc}.o")


def why(u: Unit, fmt: str = "parquet", target: int = 128 * MB) -> str | None:
    return batching.why_not(fmt, ROOT, u, target, 1.0, 0)


def test_small_partitions_under_the_root_are_batchable():
    assert why(unit("dt=2024-01-01")) is None
    assert why(unit("y=2024/m=01")) is None
    assert why(unit("dt=a"), fmt="orc") is None


def test_what_is_written_on_its_own_and_why():
    assert why(unit("dt=a"), fmt="avro") == "format avro"
    assert why(unit("")) == "not a partition"
    assert "root" in why(unit("dt=a", location="file:/elsewhere/dt=a"))
    assert "written back unchanged" in why(unit("dt=a:b"))  # ':' is escaped in a path
    assert "written back unchanged" in why(unit("dt=a%3Ab"))
    assert "written back unchanged" in why(unit(f"dt={batching.HIVE_DEFAULT_PARTITION}"))
    assert why(unit("dt=a", rewrite=("part-0.parquet", "part-1.parquet"))) == "not read as its whole directory"
    assert why(unit("dt=a", subdirs=("x",))) == "not read as its whole directory"
    assert why(unit("dt=a", sizes=(100 * MB, 100 * MB, 100 * MB))) == "written as 2 files"  # 300 MB at 128 MB a file
    ec = unit("dt=a")
    ec.hdfs = HdfsCarry(erasure_coding="RS-6-3-1024k")
    assert "erasure coding" in why(ec)


def test_batches_group_alike_units_in_plan_order_up_to_the_limit():
    todo = [unit(f"dt={i:02d}") for i in range(7)]
    codecs = {0: "snappy", 1: "snappy", 2: "gzip", 3: "snappy", 4: "gzip", 5: "snappy", 6: "zstd"}
    key = {u.spec: (codecs[i],) for i, u in enumerate(todo)}
    plan = batching.plan_batches(todo, lambda u: None if u.spec != "dt=03" else "no", lambda u: key[u.spec],
                                 max_units=2)
    assert [b.units for b in plan.batches] == [(0, 1), (2, 4)]
    assert plan.alone == {3: "no", 5: "too few batchable units alike", 6: "too few batchable units alike"}
    assert plan.batch_of()[4].number == 1
    lines = plan.lines(todo)
    assert lines[0] == "batch 0: dt=00, dt=01 [snappy]" and "alone: dt=03: no" in lines


def test_batching_off():
    todo = [unit(f"dt={i}") for i in range(3)]
    plan = batching.plan_batches(todo, lambda u: None, lambda u: ("x",), max_units=0)
    assert not plan.batches and set(plan.alone) == {0, 1, 2}


def test_codec_key_and_root_name():
    from lakekeeper_spark.storage import layout

    assert batching.codec_key({"codec": "SNAPPY", "legacy": False}) == ("SNAPPY", False, None)
    root = layout.batch_root("hdfs://nn/w/t/", "20261129T010203-abcdef", 3)
    assert root == "hdfs://nn/w/t/.lk_batch-3.lk_staging_20261129T010203-abcdef"
    assert layout.parse_hidden_name(root.rsplit("/", 1)[1]) == ("lk_batch-3", "lk_staging", "20261129T010203-abcdef")
