"""analyze's ``reconcile`` and ``sources`` on a real table (Metastore and
filesystem), and ``cleanup --orphans``: a partitioned table as pipelines
leave it - Spark appends (``part-<n>-<job uuid>``), Hive INSERTs
(``000000_0``, ``000000_0_copy_1``), a copied-in file, a partition
directory without ADD PARTITION, a partition whose directory is gone, a
data file in the table root and a killed run's staging copy - and a clean
table beside it, where nothing fires."""

from __future__ import annotations

import pytest

from engine_helpers import make_table

KILLED = "20200101T000000-abcdef"


def messy(spark, files, warehouse, name):
    loc = make_table(spark, warehouse, name, rows=200, partitions={"a": 3, "b": 3})
    spark.sql(f"INSERT INTO lk.{name} PARTITION (dt='a') SELECT id + 1000, name, amount, ts FROM lk_src")  # 2nd job
    fs = files.fs
    b = sorted(f.name for f in fs.list_dir(f"{loc}/dt=b").files)
    for i, old in enumerate(b):  # as Hive's INSERT INTO leaves them: 000000_0, then _copy_1, _copy_2
        fs.rename(f"{loc}/dt=b/{old}", f"{loc}/dt=b/000000_0" + (f"_copy_{i}" if i else ""))
    a = sorted(f.name for f in fs.list_dir(f"{loc}/dt=a").files)
    data = files.read_bytes(f"{loc}/dt=a/{a[0]}")
    files.write_bytes(f"{loc}/dt=a/events_export.parquet", data)  # hdfs dfs -put
    files.mkdir(f"{loc}/dt=c")  # a partition directory copied in without ADD PARTITION
    files.write_bytes(f"{loc}/dt=c/000000_0", data)
    files.write_bytes(f"{loc}/000000_0", data)  # a file in the root, outside every partition
    spark.sql(f"ALTER TABLE lk.{name} ADD PARTITION (dt='gone') LOCATION '{loc}/dt=gone'")
    files.rmtree(f"{loc}/dt=gone")  # a partition whose directory was deleted
    staging = f"{loc}/.dt=a.lk_staging_{KILLED}"  # a killed run's copy, its journal gone with it
    files.mkdir(staging)
    files.write_bytes(f"{staging}/part-00000-x.parquet", data)
    return loc, len(data)


@pytest.mark.hdfs
def test_reconcile_sources_and_orphans(spark, engine, files, warehouse):
    loc, size = messy(spark, files, warehouse, "recon")
    clean = make_table(spark, warehouse, "recon_clean", rows=200, partitions={"a": 2})
    res = engine.one("analyze", "lk.recon")
    r = res["reconcile"]
    q = res["location"].rstrip("/")  # as the engine qualifies it (file:/x)
    assert [(d["path"], d["looks_like_partition"], d["files"]) for d in r["unregistered_dirs"]] == [
        (f"{q}/dt=c", True, 1)], r
    assert r["unregistered_dirs"][0]["bytes"] == size
    assert [m["spec"] for m in r["missing_dirs"]] == ["dt=gone"]
    assert r["root_files"]["files"] == 1 and r["root_files"]["names"] == ["000000_0"]
    (stale,) = r["stale"]
    assert (stale["path"], stale["kind"], stale["state"], stale["removable"], stale["files"]) == (
        f"{q}/.dt=a.lk_staging_{KILLED}", "staging", "orphaned", True, 1), stale
    s = r["summary"]
    assert (s["findings"], s["removable"], s["removable_bytes"], s["consistent"]) == (4, 1, size, False), s

    src = res["sources"]
    got = {w["writer"]: (w["files"], w.get("jobs"), w["where"]) for w in src["writers"]}
    assert got == {"spark": (6, 2, ["dt=a"]), "hive": (3, None, ["dt=b"]), "other": (1, None, ["dt=a"])}, got
    assert src["small_files"] == 10 and all(w["owner"] for w in src["writers"]), src
    assert sum(b["count"] for b in src["mtime_histogram"]["bins"]) == 10
    assert src["writers"][0]["cadence"]["text"].startswith("6 file(s) in 2 write(s) on "), src["writers"][0]

    # the clean table: nothing fires
    other = engine.one("analyze", "lk.recon_clean")
    assert other["reconcile"]["summary"]["consistent"] and other["reconcile"]["stale"] == [], other["reconcile"]
    assert [w["writer"] for w in other["sources"]["writers"]] == ["spark"]

    # cleanup --orphans: a dry run lists the staging copy, the real one removes it and nothing else
    before = files.snapshot(loc)
    dry = engine.one("cleanup", "lk.recon", orphans=True, dry_run=True)
    assert dry["status"] == "planned" and [o["path"] for o in dry["orphans_removed"]] == [stale["path"]], dry
    assert files.exists(f"{loc}/.dt=a.lk_staging_{KILLED}")
    done = engine.one("cleanup", "lk.recon", orphans=True)
    assert done["status"] == "cleaned" and done["changed"] and done["orphan_bytes"] == size, done
    assert done["backups_removed"] == [] and "no retention policy" in done["reason"], done
    assert done["history_record"] and done["history_record"].endswith(".json"), done  # the cleanup is on record
    assert not files.exists(f"{loc}/.dt=a.lk_staging_{KILLED}") and files.snapshot(loc) == before
    assert files.exists(f"{loc}/dt=c/000000_0") and files.exists(f"{loc}/000000_0")
    again = engine.one("cleanup", "lk.recon", orphans=True)
    assert again["status"] == "skipped" and not again["changed"] and again["orphans_removed"] == [], again
    after = engine.one("analyze", "lk.recon")["reconcile"]
    assert after["stale"] == [] and after["summary"]["findings"] == 3, after
    assert files.snapshot(clean)
