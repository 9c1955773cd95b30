"""Replication (issue "fleet maintenance", part 3).

* A table that Hive replication keeps carries the ``repl.last.id`` property
  that ``REPL LOAD`` leaves on it: analyze and compact refuse it
  (``replicated``), nothing written; ``allow_replicated`` compacts it.
* The distcp ``-filters`` file the collection ships
  (roles/maintenance/files/lakekeeper-distcp-filters.txt) is the engine's
  own ``distcp_filters``, and - applied with the JVM's
  ``java.util.regex.Pattern`` the way distcp's ``RegexCopyFilter`` applies
  it (each line compiled, a path left out when its whole string matches) -
  leaves out every path inside the hidden directories a real compaction
  left (originals kept for rollback, journal and history) and the staging
  and trash directories the engine names, and keeps every other path.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine_helpers import frozen, make_table, same_rows

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "roles" / "maintenance" / "files" / "lakekeeper-distcp-filters.txt"


def test_the_shipped_filter_file_is_the_engines():
    from lakekeeper_spark.policy.replication import distcp_filter_file

    assert SHIPPED.read_text() == distcp_filter_file()
    assert not any(line.startswith("#") for line in SHIPPED.read_text().splitlines())  # distcp compiles every line


def _ours(rel: str) -> bool:
    """Whether a path (relative to the warehouse) is inside one of the
    engine's hidden directories, by the engine's own name parser."""
    from lakekeeper_spark.storage.layout import JOURNAL_DIR_NAME, parse_hidden_name

    return any(parse_hidden_name(seg) is not None or (seg.startswith(".") and seg.endswith(JOURNAL_DIR_NAME))
               for seg in rel.split("/"))


def test_replicas_are_refused_and_distcp_leaves_out_the_hidden_directories(spark, engine, files, warehouse):
    from lakekeeper_spark.storage.layout import staging_path, trash_path
    from lakekeeper_spark.policy.replication import distcp_filters

    # a replica, as REPL LOAD leaves it: the last replicated event id on the table
    t = "lk.repl_replica"
    loc = make_table(spark, warehouse, "repl_replica", rows=300, files=8, props={"repl.last.id": "4711"})
    before, rows = files.snapshot(loc), frozen(spark, t)
    seen = engine.one("analyze", t)
    assert (seen["status"], seen["code"]) == ("refused", "replicated"), seen
    refused = engine.one("compact", t)
    assert (refused["status"], refused["code"], refused["changed"]) == ("refused", "replicated", False), refused
    assert "repl.last.id=4711" in refused["reason"] and "allow_replicated" in refused["reason"], refused
    assert files.snapshot(loc) == before and not files.hidden(loc)
    allowed = engine.one("compact", t, allow_replicated=True)
    assert allowed["status"] == "compacted" and allowed["partitions"][0]["files_after"] == 1, allowed
    assert same_rows(spark.table(t), rows)

    # a partitioned table compacted for real: originals kept beside each partition, the journal in the table
    p = "lk.repl_source"
    ploc = make_table(spark, warehouse, "repl_source", rows=200, partitions={"a": 6, "b": 5})
    res = engine.one("compact", p)
    assert res["status"] == "compacted", res
    # what a run that died while writing or rolling back leaves, named by the engine
    for d in (staging_path(f"{ploc}/dt=a", "20261126T120000-abcdef"), trash_path(f"{ploc}/dt=b", "20261126T120000-abcdef")):
        files.mkdir(d)
        files.write_bytes(f"{d}/part-00000.parquet", b"PAR1")

    pattern = spark._jvm.java.util.regex.Pattern
    compiled = [pattern.compile(line) for line in distcp_filters()]
    kept, left_out = [], []
    prefix = str(files.fs.path(warehouse).toString()).rstrip("/")  # paths as distcp's listing gives them
    for top, is_dir in sorted(files.fs.list_names(warehouse)):
        if "repl_" not in top:
            continue  # the other tests' tables
        walked = [(f"{top}/{r}", d) for r, d in files._walk(f"{warehouse}/{top}")] if is_dir else []
        for rel, _d in [(top, is_dir)] + walked:
            uri = f"{prefix}/{rel}"
            out = any(c.matcher(uri).matches() for c in compiled)
            assert out == _ours(rel), (uri, out)
            (left_out if out else kept).append(rel)
    # the hidden directories of every kind were there and left out, with what is in them; the data kept
    for mark in (".lk_old_", ".lk_staging_", ".lk_trash_", ".lakekeeper"):
        assert any(mark in r for r in left_out), (mark, left_out)
    assert any(r.endswith(".parquet") and "/." not in f"/{r}" for r in kept), kept
    assert all(files.exists(f"{ploc}/dt={dt}") for dt in "ab") and "repl_source/dt=a" in kept
