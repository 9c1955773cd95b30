"""Verify app of the merge crash world (tests/crash/test_crash_merge.py):
every check of world_verify.py, in ONE Spark process, with the rows of each
partition expected as the partition now stands (its original rows, or the
batch merged into them, computed here without the engine), plus:

* the batch's applied record (``<journal dir>/merged/<identity>.json``, the
  identity computed afresh from the batch directory): which partitions it
  names, and that it is the only record;
* each partition the batch does not touch keeps exactly its original files
  (names and contents).

    python merge_verify.py SPEC.json EXPECT.json EXTRAS.json OUT.json
"""
from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import world_verify  # noqa: E402  (puts spark_app on the path)
from world_common import COMPACTED, KINDS, MERGE_DELETED, run_app  # noqa: E402

BATCH_SCHEMA = "id BIGINT, name STRING, amount DECIMAL(12,2), ts TIMESTAMP, dt STRING"


def merged_rows(rows, batch):
    """The batch merged into a partition's rows (id, name, amount, ts): per
    key the version with the largest ts; a key whose latest version is a
    delete marker is gone."""
    latest = {}
    for r in list(rows) + list(batch):
        if r[0] not in latest or r[3] > latest[r[0]][3]:
            latest[r[0]] = r
    return [r for r in latest.values() if r[1] != MERGE_DELETED]


def merge_checks(spark, ctx, fs, full, exp, f, templates):
    from lakekeeper_spark.storage.layout import journal_dir
    from lakekeeper_spark.protocol.merge_record import MERGED_DIR, load_record
    from lakekeeper_spark.policy.merge_rules import batch_identity
    from lakekeeper_spark.catalog.tables import load_table

    t = exp["spec"]
    problems = f["problems"]
    batch = [tuple(r) for r in spark.read.schema(BATCH_SCHEMA).parquet(t["batch"]).collect()]
    original = world_verify.expected_rows(spark, full, t["kind"], templates, [], None)
    want = []
    f["merged_units"] = []
    for spec in KINDS[t["kind"]]:
        rows = [r[1:5] for r in original if r[5] == spec]
        if f["units"].get(spec, {}).get("state") == "compacted":  # (the state is asserted by the test)
            f["merged_units"].append(spec)
            rows = merged_rows(rows, [b[:4] for b in batch if f"dt={b[4]}" == spec])
        want += [(full, *r, spec) for r in rows]
    if "_frames" in f:
        f["_frames"] = (want, f["_frames"][1])
    # the applied record, found by the identity the engine computes for this batch directory
    source = ctx.fs.qualify(t["batch"])
    identity = batch_identity(source, sorted(ctx.fs.list_dir(source).files, key=lambda x: x.name))
    folder = f"{journal_dir(load_table(ctx, full)).rstrip('/')}/{MERGED_DIR}"
    record = load_record(ctx.fs, folder, identity)
    f["record_applied"] = sorted(record["applied"]) if record else None
    others = [n for n, _d, _s in fs.ls(folder) if n.endswith(".json") and n != f"{identity}.json"]
    if others:
        problems.append(f"other batch records in {folder}: {others}")
    # partitions the batch does not touch: the very same files
    for spec in KINDS[t["kind"]]:
        if spec in COMPACTED[t["kind"]]:
            continue
        loc = exp["units"][spec]["location"]
        live = {n: fs.sha(f"{loc}/{n}") for n in fs.data_files(loc)}
        f.setdefault("untouched_same_files", {})[spec] = live == exp["units"][spec]["files"]
        if live != exp["units"][spec]["files"]:
            problems.append(f"partition {spec!r} (not in the batch) changed: {sorted(live)[:4]}")


if __name__ == "__main__":
    run_app(lambda: world_verify.main(merge_checks))
