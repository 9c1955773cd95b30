"""The split bound (``max_file_size_mb``, issue 50 item 1): pure planner
rules, no Spark. A file above the bound is rewritten into files of about the
target size; files within the band are left as they are where the mode
allows (minor, a split alone)."""

from __future__ import annotations

import pytest

from lakekeeper_spark.policy import planner
from lakekeeper_spark.policy.batching import why_not
from lakekeeper_spark.policy.config import Settings, build_settings
from lakekeeper_spark.policy.table_policy import apply_policy, table_policy
from lakekeeper_spark.report.errors import Refused, UsageError
from lakekeeper_spark.report.model import FileEntry, Listing, Unit
from lakekeeper_spark.report.results import partition_result

MB = 1024 * 1024
T = 128 * MB


def named(*sizes: int) -> Listing:
    return Listing("file:/t/dt=1", files=[FileEntry(f"f{i:03d}", s, 0) for i, s in enumerate(sizes)])


def settings(mode: str = "ratio", **kw) -> Settings:
    return build_settings({}, dict(mode=mode, target_file_size_mb=128, **kw))


def decide(listing: Listing, s: Settings, fmt: str = "parquet"):
    return planner.decide(planner.file_stats(listing), s, listing, fmt)


def unit(listing: Listing, decision) -> Unit:
    return Unit("dt=1", {"dt": "1"}, listing.path, listing, planner.file_stats(listing), decision,
                "file:/t/.dt=1.lk_staging_r", "file:/t/.dt=1.lk_old_r")


def test_off_by_default_a_single_huge_file_is_skipped_as_before():
    s = settings()
    assert s.max_file_size_mb is None and s.max_file_bytes == 0
    one = named(10 * 1024 * MB)
    d = decide(one, s)
    assert (d.action, d.reason, d.split) == ("skip", "a single file", ())
    assert planner.output_split([10 * 1024 * MB], T)[0] == 1  # no bound: never more files than it has


@pytest.mark.parametrize("mode", ["ratio", "minor", "major", "smart"])
def test_a_single_file_above_the_bound_is_split_in_every_mode(mode):
    s = settings(mode, max_file_size_mb=256)
    one = named(1280 * MB)
    d = decide(one, s)
    assert (d.action, d.rule, d.split, d.rewrite, d.target_files) == ("compact", "split", ("f000",), None, 10)
    assert "split into about 10 of 128.0 MB" in d.reason and "a single file" in d.reason
    layout = planner.write_layout([1280 * MB], T, 1.0, slots=4, min_piece_bytes=8 * MB, max_file_bytes=s.max_file_bytes)
    assert (layout.files, layout.pieces) == (10, 1)
    # the files it writes are within the band: the next run leaves them alone (idempotent)
    after = named(*[128 * MB] * 10)
    assert decide(after, s).action == "skip" and not decide(after, s).split


def test_the_bound_itself_is_not_above_it_and_the_band_stays():
    s = settings(max_file_size_mb=256)
    edge = named(256 * MB, 200 * MB, 130 * MB)
    d = decide(edge, s)
    assert d.action == "skip" and not d.split
    d = decide(named(256 * MB + 1, 200 * MB, 130 * MB), s)
    assert (d.action, d.rule, d.rewrite, d.split, d.target_files) == ("compact", "split", ("f000",), ("f000",), 2 + 2)
    assert "the other 2 file(s) kept unchanged" in d.reason
    u = unit(named(256 * MB + 1, 200 * MB, 130 * MB), d)
    assert [f.name for f in u.kept_files] == ["f001", "f002"] and [f.name for f in u.rewrite_files] == ["f000"]
    r = partition_result(u, "analyzed", d.reason)
    assert (r["files_rewritten"], r["files_copied"], r["files_split"]) == (1, 2, 1)


def test_a_file_whose_row_group_is_above_the_bound_is_not_split():
    """Rewriting reads and writes whole row groups and stripes: a file whose
    largest one is above the bound would come out above it again (and be
    rewritten by every run). Only the files a rewrite can cut are split."""
    s = settings("minor", max_file_size_mb=256)
    lst = named(300 * MB, 640 * MB, 200 * MB)  # one file of one 300 MB row group, one of 128 MB row groups
    d = planner.decide(planner.file_stats(lst), s, lst, "parquet", {"f000": 300 * MB, "f001": 128 * MB})
    assert (d.action, d.rule, d.rewrite, d.split) == ("compact", "split", ("f001",), ("f001",)), d
    assert "1 file(s) above max_file_size 256.0 MB not split: a row group or stripe of up to 300.0 MB" in d.reason
    assert planner.unsplittable(lst.files, s, {"f000": 300 * MB, "f001": 128 * MB}) == {"f000": 300 * MB}
    # nothing else to do: the unit is left as the size rule decided, and says why (not split forever after)
    alone = named(300 * MB)
    d = planner.decide(planner.file_stats(alone), s, alone, "parquet", {"f000": 300 * MB})
    assert (d.action, d.split) == ("skip", ()) and "not split: a row group or stripe" in d.reason, d
    # a footer that was not read: planned as splittable, as before
    assert planner.decide(planner.file_stats(alone), s, alone, "parquet", {}).split == ("f000",)


def test_minor_rewrites_the_fragments_and_splits_the_large_file_keeping_the_band():
    s = settings("minor", max_file_size_mb=256)
    lst = named(*[MB] * 12, 100 * MB, 120 * MB, 640 * MB)  # 12 fragments, 2 in the band, 1 above the bound
    d = decide(lst, s)
    assert d.action == "compact" and d.rule == "minor"
    assert set(d.rewrite) == {f"f{i:03d}" for i in range(12)} | {"f014"} and d.split == ("f014",)
    assert d.target_files == 1 + 2 + 5  # 12 fragments into one, the band kept, 640 MB into 5
    u = unit(lst, d)
    assert [f.name for f in u.kept_files] == ["f012", "f013"]
    r = partition_result(u, "analyzed", d.reason)
    assert (r["files_rewritten"], r["files_copied"], r["files_split"]) == (13, 2, 1)
    # without the bound, minor copies the large file as it is
    plain = decide(lst, settings("minor"))
    assert "f014" not in plain.rewrite and not plain.split
    assert "files_split" in partition_result(unit(lst, plain), "analyzed", "") and \
        partition_result(unit(lst, plain), "analyzed", "")["files_split"] == 0


def test_a_whole_rewrite_splits_the_large_files_with_the_others():
    s = settings("ratio", max_file_size_mb=256)
    lst = named(*[MB] * 300, 600 * MB)  # average 3 MB: the ratio rule rewrites every file
    d = decide(lst, s)
    assert (d.action, d.rule, d.rewrite, d.split) == ("compact", "ratio", None, ("f300",))
    assert "split into about 5" in d.reason
    sizes = [f.size for f in lst.files]
    assert planner.output_split(sizes, T, 1.0, s.max_file_bytes)[0] == planner.output_split(sizes, T)[0] == 7


WHOLE = [("text", {}, "text is rewritten whole"), ("avro", {}, "avro is rewritten whole"),
         ("parquet", {"dedupe_keys": ["id"], "dedupe_order_by": "ts"}, "dedupe must see every row")]


@pytest.mark.parametrize("fmt,kw,why", WHOLE)
def test_text_avro_and_dedupe_split_by_rewriting_the_whole_partition(fmt, kw, why):
    s = settings("ratio", max_file_size_mb=256, **kw)
    lst = named(200 * MB, 640 * MB)
    d = decide(lst, s, fmt)
    assert (d.action, d.rule, d.rewrite, d.split, d.target_files) == ("compact", "split", None, ("f001",), 7)
    assert why in d.reason


def test_refusals_and_other_skips_are_left_as_they_are():
    s = settings(max_file_size_mb=256)
    nested = Listing("file:/t", files=[FileEntry("a", 600 * MB, 0)], subdirs=["HIVE_UNION_SUBDIR_1"])
    assert decide(nested, s).code == planner.NESTED_LAYOUT
    copying = Listing("file:/t", files=[FileEntry("a", 600 * MB, 0), FileEntry("b._COPYING_", MB, 0)])
    assert decide(copying, s).action == "refuse"
    assert decide(Listing("file:/t", exists=False), s).reason == "directory does not exist"


def test_a_unit_that_splits_is_written_alone_not_in_a_batch():
    s = settings(max_file_size_mb=256)
    lst = Listing("file:/t/dt=1", files=[FileEntry("a", 600 * MB, 0)])
    u = unit(lst, decide(lst, s))
    assert why_not("parquet", "file:/t", u, T, 1.0, 0) == "it splits a file above max_file_size_mb"


def test_the_bound_validates_and_is_a_table_policy():
    with pytest.raises(UsageError, match="at least 1.5 x the target"):
        settings(max_file_size_mb=150)
    with pytest.raises(UsageError, match=">= 0"):
        settings(max_file_size_mb=-1)
    assert settings(max_file_size_mb=0).max_file_bytes == 0
    assert settings(max_file_size_mb=192).max_file_bytes == 192 * MB
    s = apply_policy(settings(), table_policy({"lakekeeper.max_file_size_mb": "512"}))
    assert s.max_file_bytes == 512 * MB
    with pytest.raises(Refused):
        apply_policy(settings(), table_policy({"lakekeeper.max_file_size_mb": "64"}))
