"""Apache DistCp with the collection's ``-filters`` file, for real (issue 47, part 4).

``hadoop-distcp`` of the test bed's Hadoop pin (tests/testbed/jvm/distcp, fetched by
``testbed.maven``) runs with the local job runner on pyspark's Hadoop client jars,
with the test bed's client configuration, against the test bed's NameNode: the
``-filters`` file is the one the maintenance role ships
(roles/maintenance/files/lakekeeper-distcp-filters.txt), not a copy.

The source is a database directory as lakekeeper's runs leave it, made by the real
engine under spark-submit: two tables compacted (their originals kept hidden beside
each unit: the data of their backup tables; the journals and histories), a third
one interrupted by a kill while parked before its verification (its staging copy and
its journal with the dead run's lease), a rollback's trash beside a partition (named
by the engine's ``trash_path``), and two hidden paths that are not lakekeeper's
(near misses of its names). What counts as lakekeeper's is decided by the engine's
own name parser (``parse_hidden_name``, the journal directory's name), never by the
filter lines under test.

1. ``distcp -filters <shipped> -update SRC GOOD``: the replica is exactly the source
   without lakekeeper's hidden paths (same relative paths, same bytes: SHA-256 of each
   file's content); every kind of hidden path was in the source.
2. The same with a deliberately wrong list (the first line without its ``(/.*)?``,
   the journal line dropped, and a line that also leaves out a partition) into WRONG:
   the same check reports the hidden paths copied and the data left out.
3. The engine compacts a fourth table (its small files were copied in 1.); then
   ``distcp -filters <shipped> -update -delete SRC GOOD``: the replica again equals the
   source's readable data, the new hidden directories are absent, DistCp deleted
   exactly the replica's paths the source no longer has and copied only what changed.
   The same run into WRONG brings its missing partition back but leaves every hidden
   path the wrong list had copied: DistCp lists the target with the same filters, so
   ``-delete`` never removes them (a replica once copied without the filters must be
   cleaned by hand).

One DistCp JVM is several seconds of CPU: four runs, each checked against one
listing with content digests of all trees at once (one JVM per listing).
"""
from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine_submit import APP, app_python, submit_engine  # pylint: disable=import-error
from testbed import maven
from testbed.bed import find_java

ROOT = Path(__file__).resolve().parents[2]
SPARK_APP = ROOT / "spark_app"
APPS = Path(__file__).resolve().parent / "apps"
SHIPPED = ROOT / "roles" / "maintenance" / "files" / "lakekeeper-distcp-filters.txt"  # what the role copies
sys.path.insert(0, str(SPARK_APP))  # the engine's naming functions (pure, no Spark)

from lakekeeper_spark.protocol.lease import LEASE_NAME  # noqa: E402  pylint: disable=wrong-import-position
from lakekeeper_spark.storage.layout import (JOURNAL_DIR_NAME, old_path,  # noqa: E402  pylint: disable=wrong-import-position
                                             parse_hidden_name)

pytestmark = pytest.mark.testbed

DB = "lk_distcp"
SRC = f"/lk-distcp/{DB}.db"
GOOD = f"/lk-distcp-replica/good/{DB}.db"
WRONG = f"/lk-distcp-replica/wrong/{DB}.db"

LOG4J2 = """\
status = error
appender.err.type = Console
appender.err.name = err
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = %d{HH:mm:ss,SSS} %p %c{1}: %m%n
rootLogger.level = warn
rootLogger.appenderRef.err.ref = err
logger.distcp.name = org.apache.hadoop.tools
logger.distcp.level = info
logger.job.name = org.apache.hadoop.mapreduce.Job
logger.job.level = info
"""


def ours(rel: str) -> bool:
    """Whether a path is inside (or is) one of lakekeeper's hidden directories, by
    the engine's own names: ``.<unit>.lk_{staging,old,trash}_<run id>`` and the
    journal directory (``.lakekeeper``, ``.<table dir>.lakekeeper``)."""
    return any(parse_hidden_name(seg) is not None or (seg.startswith(".") and seg.endswith(JOURNAL_DIR_NAME))
               for seg in rel.split("/"))


def readable(rel: str) -> bool:
    """A path queries read: no segment hidden from Hive and Spark (``.``/``_``)."""
    return not any(seg.startswith((".", "_")) for seg in rel.split("/"))


Tree = dict  # relative path -> None (a directory) or (length, sha256)


def digest(bed, *roots: str) -> list[Tree | None]:
    """Each tree (hidden paths too) with every file's length and SHA-256, read in
    one JVM (apps/TreeDigest.java); None for a missing root."""
    cp = f"{bed.conf_dir}:{bed.spark_home}/jars/*"
    p = subprocess.run([find_java(), "-cp", cp, str(APPS / "TreeDigest.java"), *(bed.hdfs_uri + r for r in roots)],
                       capture_output=True, text=True, timeout=300, check=False, env=_env())
    assert p.returncode == 0, p.stderr[-3000:]
    trees: list[Tree | None] = [{} for _root in roots]
    for line in p.stdout.splitlines():
        d = json.loads(line)
        if d.get("missing"):
            trees[d["root"]] = None
        else:
            trees[d["root"]][d["rel"]] = None if d["dir"] else (d["len"], d["sha256"])
    return trees


def replica_problems(source: Tree, replica: Tree) -> list[str]:
    """What makes ``replica`` other than ``source`` without lakekeeper's hidden
    paths: a hidden path copied, another path too many or missing, a file's bytes."""
    expected = {rel: e for rel, e in source.items() if not ours(rel)}
    problems = [f"copied hidden: {rel}" if ours(rel) else f"extra: {rel}" for rel in sorted(set(replica) - set(expected))]
    problems += [f"missing: {rel}" for rel in sorted(set(expected) - set(replica))]
    problems += [f"differs: {rel}" for rel in sorted(set(expected) & set(replica)) if expected[rel] != replica[rel]]
    return problems


class DistCp:  # pylint: disable=too-few-public-methods
    """``java -cp <conf>:<pyspark jars>:<distcp jars> org.apache.hadoop.tools.DistCp``
    with the local job runner; each run's wall time, stderr, counters."""

    def __init__(self, bed, work: Path):
        self.bed, self.work = bed, work
        self.jars = maven.ensure("distcp")
        (work / "log4j2.properties").write_text(LOG4J2)
        self.seconds: list[float] = []  # wall time of each run
        self.cpu: list[float] = []  # its CPU time (user + system)

    def __call__(self, filters: Path, src: str, dst: str, *options: str) -> dict:
        cp = f"{self.bed.conf_dir}:{self.bed.spark_home}/jars/*:{self.jars}/*"
        tmp = self.work / f"distcp-{len(self.seconds)}"
        argv = [find_java(), f"-Dlog4j2.configurationFile={self.work / 'log4j2.properties'}", "-cp", cp,
                "org.apache.hadoop.tools.DistCp", "-Dmapreduce.framework.name=local", f"-Dhadoop.tmp.dir={tmp}",
                f"-Dmapreduce.jobtracker.staging.root.dir={tmp}/staging", "-filters", str(filters), *options,
                self.bed.hdfs_uri + src, self.bed.hdfs_uri + dst]
        t0, cpu0 = time.monotonic(), _children_cpu()
        p = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False, env=_env())
        self.seconds.append(round(time.monotonic() - t0, 1))
        self.cpu.append(round(_children_cpu() - cpu0, 1))
        (self.work / f"distcp-{len(self.seconds) - 1}.log").write_text(p.stderr)
        assert p.returncode == 0, p.stderr[-4000:]
        err = p.stderr
        # the filter file was read (a file it cannot read is only logged, and then everything is copied)
        assert f"filtersFile='{filters}'" in err, err[:3000]
        assert "attempting to read from" not in err and "Can't find filters file" not in err, err[-3000:]
        counters = {k: int(v) for k, v in re.findall(r"^\s+([A-Za-z_ ]+)=(\d+)$", err, re.M)}
        deleted = re.search(r"Deleted from target: files: (\d+) directories: (\d+)", err)
        return {"counters": counters, "deleted": int(deleted[1]) + int(deleted[2]) if deleted else None}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "CLASSPATH"}


def test_distcp_with_the_shipped_filters_leaves_out_lakekeepers_hidden_paths(testbed, tmp_path):
    t0 = time.monotonic()
    distcp = DistCp(testbed, tmp_path)
    phases: dict[str, float] = {}

    def phase(name: str) -> None:
        phases[name] = round(time.monotonic() - t0 - sum(phases.values()), 1)

    # ---- the database as lakekeeper's runs leave it
    p = testbed.run_python(APPS / "distcp_world.py", str(SPARK_APP), DB, SRC, GOOD, WRONG)
    assert p.returncode == 0, p.stderr[-3000:]
    phase("world (local Spark)")
    world = json.loads(p.stdout.strip().splitlines()[-1].split("RESULT ", 1)[1])
    tables, n = world["tables"], world["files_per_unit"]
    finished = tmp_path / "finished.json"
    killed = testbed.spark_submit(APP, "compact", "--tables", f"{DB}.events,{DB}.plain,{DB}.stuck",
                                  confs={"spark.pyspark.python": app_python()},
                                  env={"LAKEKEEPER_FAULT_AT": f"verifying@{DB}.stuck",
                                       "LAKEKEEPER_FAULT_RESULTS": str(finished)})
    assert killed.returncode != 0 and f"parked ({DB}.stuck)" in killed.stdout + killed.stderr, killed.stderr[-3000:]
    phase("engine, killed")
    done = {r["table"]: r for r in json.loads(finished.read_text())}
    assert {t: r["status"] for t, r in done.items()} == {f"{DB}.events": "compacted", f"{DB}.plain": "compacted"}, done
    assert all(r["backup_table"] for r in done.values()), done
    # the engine saw the trash as its own kind (a leftover no journal accounts for)
    assert [x["kind"] for x in done[f"{DB}.events"]["leftovers"]] == ["lk_trash"], done[f"{DB}.events"]

    # ---- 1. the shipped filters; 2. a wrong list, into another tree
    lines = SHIPPED.read_text().splitlines()
    assert len(lines) == 2 and lines[0].endswith("(/.*)?") and JOURNAL_DIR_NAME.replace(".", r"\.") in lines[1], lines
    wrong_filters = tmp_path / "wrong-filters.txt"
    wrong_filters.write_text(lines[0][: -len("(/.*)?")] + "\n" + ".*/dt=2024-01-02(/.*)?\n")
    first = distcp(SHIPPED, SRC, GOOD, "-update")
    distcp(wrong_filters, SRC, WRONG, "-update")
    phase("distcp x2")
    source, good, wrong = digest(testbed, SRC, GOOD, WRONG)
    phase("digest")
    assert source and good is not None and wrong is not None

    def rel(uri: str) -> str:
        assert uri.startswith(world["root"] + "/"), uri
        return uri[len(world["root"]) + 1:]

    # every kind of hidden path is in the source, so that leaving them out means something
    hidden = [r for r in source if ours(r)]
    kinds = {parse_hidden_name(seg)[1] for r in hidden for seg in r.split("/") if parse_hidden_name(seg)}
    assert kinds == {"lk_staging", "lk_old", "lk_trash"}, hidden
    originals = [rel(old_path(u["location"], done[f"{DB}.events"]["run_id"])) for u in done[f"{DB}.events"]["partitions"]]
    originals.append(rel(old_path(tables["plain"], done[f"{DB}.plain"]["run_id"])))
    journal_files = [rel(done[t]["history_record"]) for t in done] + [
        r for r in hidden if r.split("/")[-1] == LEASE_NAME]
    assert len(journal_files) == 3, hidden  # two histories and the killed run's lease
    for r in originals:  # the originals of every compacted unit, the backup tables' data
        assert sum(1 for x in source if x.startswith(r + "/") and x.endswith(".parquet")) == n, (r, hidden)
    assert rel(world["trash"]) in source and any(r.startswith(rel(world["trash"]) + "/") for r in source)
    assert any(r.startswith(".stuck.") and "lk_staging" in r and r.endswith(".parquet") for r in hidden), hidden
    assert all(not ours(r) and r in source for r in world["foreign"])

    # 1. the replica is the source without lakekeeper's hidden paths, byte for byte
    assert replica_problems(source, good) == []
    data = [r for r, e in source.items() if e is not None and readable(r) and r.endswith(".parquet")]
    assert len(data) == 2 + 1 + n + n and all(good[r] == source[r] for r in data), data  # events, plain, stuck, later
    assert all(r in good for r in world["foreign"])  # hidden, not lakekeeper's: copied
    assert first["counters"]["Files Copied"] == sum(1 for e in good.values() if e is not None), first["counters"]

    # 2. the check catches a wrong list: hidden paths copied (the contents of a directory
    #    whose own entry is left out, the journal with the lease) and a partition missing
    problems = replica_problems(source, wrong)
    copied = [x.split(": ", 1)[1] for x in problems if x.startswith("copied hidden: ")]
    missing = [x.split(": ", 1)[1] for x in problems if x.startswith("missing: ")]
    assert all(any(c.startswith(o + "/") for c in copied) for o in originals), problems
    assert all(j in copied for j in journal_files), problems
    assert missing and all(m.startswith("events/dt=2024-01-02") for m in missing), problems
    assert any(m.endswith(".parquet") for m in missing), problems
    assert not [x for x in problems if not x.startswith(("copied hidden: ", "missing: "))], problems

    # ---- 3. the source changes (another compaction), then -update -delete
    doc = submit_engine(testbed, tmp_path, "compact", "--table", f"{DB}.later")[0]
    phase("engine, later")
    (later,) = doc["tables"]
    assert later["status"] == "compacted", later
    third = distcp(SHIPPED, SRC, GOOD, "-update", "-delete")
    distcp(SHIPPED, SRC, WRONG, "-update", "-delete")  # the wrong replica, synced with the right list
    phase("distcp x2 (-delete)")
    source2, good2, wrong2 = digest(testbed, SRC, GOOD, WRONG)
    phase("digest 2")
    assert replica_problems(source2, good2) == []
    assert rel(old_path(tables["later"], later["run_id"])) in source2  # the new hidden directories: not copied
    assert rel(later["history_record"]) in source2 and not any(ours(r) for r in good2)
    expected2 = {r: e for r, e in source2.items() if not ours(r)}
    gone = set(good) - set(expected2)  # the small files of `later` (and its _SUCCESS)
    assert len([r for r in gone if r.startswith("later/") and r.endswith(".parquet")]) == n, gone
    assert third["deleted"] == len(gone), (third["deleted"], sorted(gone))
    changed = [r for r, e in expected2.items() if e is not None and good.get(r) != e]
    assert len(changed) == 1 and changed[0].startswith("later/"), changed  # the compacted file
    assert third["counters"]["Files Copied"] == len(changed), third["counters"]
    unchanged = sum(1 for r, e in expected2.items() if e is not None and r not in changed)
    assert third["counters"]["Files Skipped"] == unchanged, third["counters"]
    # -delete never removes lakekeeper's paths from a replica: DistCp lists the target
    # with the same filters, so what a wrong list copied stays (the missing data is back)
    assert replica_problems(source2, wrong2) == [f"copied hidden: {c}" for c in copied]

    print(f"\ndistcp test: distcp runs {distcp.seconds} s, CPU {distcp.cpu} s (shipped, wrong, -update -delete twice); "
          f"{len(source)} source paths, {len(hidden)} hidden; phases {phases}; whole test {time.monotonic() - t0:.1f} s")
