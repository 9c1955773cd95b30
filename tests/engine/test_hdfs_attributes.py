"""HDFS-only cases of issue 17, on the test bed (Hadoop 3.5 HDFS by default,
2.7.3 with LAKEKEEPER_TESTBED_HADOOP=2.7; the Hadoop client of this Spark): what a unit directory holds on HDFS that a
compaction by rename would lose or break. Each case ends in one of two
outcomes: compacted with every value read back identical, or left untouched
(byte for byte, nothing written next to it) with a reason and a ``code``.

One text table (Flume's format), one partition per case, one compaction run
for all of them (and a second once the writer closed its file):

* ``open``: a separate process (tests/testbed/apps/OpenWriter.java) holds
  ``FlumeData.1700000000000.tmp`` open, lines written and hflush()ed: skipped
  (``open_files``); compacted with every row (written before and after the
  first run) by the next run once closed;
* ``late``: a hidden file opened during the run (after the pre-flight, before
  the swap) makes the unit fail (``concurrent_write``), original kept;
* ``ezroot``: the partition directory is an encryption zone's root: refused
  (``encryption_zone``); ``inzone``: a partition inside a zone (its location
  outside the table root) compacts, its copy encrypted in the same zone;
* ``snap``: snapshottable with a snapshot: refused (``snapshottable``);
* ``attrs``: storage policy ALL_SSD on the directory (its parent has none),
  a ``user.*`` extended attribute, files of replication 2, owned by
  ``ingest:lakers``: compacted by this superuser run, all of it carried.

``test_owner_change_needs_the_superuser``: a run as ``etl`` (not the
superuser, write access through its group) over files of ``ingest``: refused
(``ownership``), nothing written; with ``allow_owner_change`` compacted with
a warning naming the change.

Erasure coding (Hadoop 3 only): its rule is tested as a pure function
(tests/engine/test_hdfs_rules.py); the 3.5 bed could run it for real (not yet).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from engine_helpers import parent

pytestmark = [pytest.mark.integration, pytest.mark.hdfs,
              pytest.mark.skipif(os.environ.get("LAKEKEEPER_ENGINE_BACKEND", "local") != "testbed",
                                 reason="HDFS only: runs on the test bed (tests/testbed/test_engine_on_testbed.py)")]

ROOT = Path(__file__).resolve().parents[2]
FLUME = "FlumeData.1700000000000.tmp"


@pytest.fixture(scope="module")
def bed():
    sys.path.insert(0, str(ROOT / "tests" / "testbed"))
    from testbed.bed import Testbed

    return Testbed.load(os.environ["LAKEKEEPER_TESTBED_JSON"])


class Writer:
    """A separate JVM that keeps one HDFS file open (OpenWriter.java)."""

    def __init__(self, bed, uri: str):
        cp = os.pathsep.join([str(bed.conf_dir), str(Path(bed.info["hadoop_jars"]) / "*")])
        self.proc = subprocess.Popen(
            [bed.info["java"], "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", cp,
             str(ROOT / "tests" / "testbed" / "apps" / "OpenWriter.java"), uri],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)

    def expect(self, word: str) -> None:
        line = self.proc.stdout.readline().strip()
        assert line == word, f"writer said {line!r}, expected {word!r}"

    def write(self, line: str) -> None:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        self.expect("written")

    def close(self) -> None:
        self.proc.stdin.write("CLOSE\n")
        self.proc.stdin.flush()
        self.expect("closed")
        assert self.proc.wait(timeout=60) == 0

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def _rows(start: int, n: int) -> list[tuple[int, str]]:
    return [(i, f"name-{i}") for i in range(start, start + n)]


def test_open_files_zones_snapshots_and_carried_attributes(spark, engine, files, warehouse, bed, monkeypatch,
                                                           owner_run):
    """(``owner_run``: the run as ``etl`` of the next test starts here and
    goes on in its own process meanwhile.)"""
    import lakekeeper_spark.commands.compact as compact_cmd
    from lakekeeper_spark.storage.threads import threaded

    jvm = spark._jvm
    conf = spark._jsc.hadoopConfiguration()
    t, loc, zone = "lk.hdfs_cases", f"{warehouse}/hdfs_cases", f"{warehouse}/hdfs_zone"
    fs = jvm.org.apache.hadoop.fs.Path(warehouse).getFileSystem(conf)
    admin = jvm.org.apache.hadoop.hdfs.client.HdfsAdmin(fs.getUri(), conf)

    def P(uri: str):
        return jvm.org.apache.hadoop.fs.Path(uri)

    dirs = {dt: f"{loc}/dt={dt}" for dt in ("open", "late", "ezroot", "snap", "attrs")}
    dirs["inzone"] = f"{zone}/inzone"
    writer = Writer(bed, f"{dirs['open']}/{FLUME}")  # its JVM starts while the partitions are written
    try:
        for d in (dirs["ezroot"], zone):  # a zone is made on an empty directory
            fs.mkdirs(P(d))
            admin.createEncryptionZone(P(d), bed.info["hdfs"]["key"])
        spark.sql(f"DROP TABLE IF EXISTS {t}")
        spark.sql(f"CREATE EXTERNAL TABLE {t} (id BIGINT, name STRING) PARTITIONED BY (dt STRING) "
                  f"ROW FORMAT DELIMITED FIELDS TERMINATED BY ',' STORED AS TEXTFILE LOCATION '{loc}'")
        expected = {dt: _rows(i * 1000, 300) for i, dt in enumerate(dirs)}
        for dt, rows in expected.items():  # three small files each, written through the FileSystem API
            for n in range(3):
                files.write_bytes(f"{dirs[dt]}/part-{n:05d}", "".join(f"{i},{name}\n" for i, name in rows[n::3]).encode())
        spark.sql(f"ALTER TABLE {t} ADD " + " ".join(f"PARTITION (dt='{dt}') LOCATION '{d}'" for dt, d in dirs.items()))
        fs.allowSnapshot(P(dirs["snap"]))
        fs.createSnapshot(P(dirs["snap"]), "s1")
        fs.setStoragePolicy(P(dirs["attrs"]), "ALL_SSD")
        fs.setXAttr(P(dirs["attrs"]), "user.team", bytearray(b"ingest-a"))
        for f in files.data_files(dirs["attrs"]):
            fs.setReplication(P(f), 2)
        perm = spark._jvm.org.apache.hadoop.fs.permission.FsPermission.valueOf
        for st in [fs.getFileStatus(P(dirs["attrs"]))] + list(fs.listStatus(P(dirs["attrs"]))):
            fs.setOwner(st.getPath(), "ingest", "lakers")  # kept: this run is the superuser
            # modes other than the copy's umask gives (drwxr-xr-x, -rw-r--r--): carried
            fs.setPermission(st.getPath(), perm("drwxr-x---" if st.isDirectory() else "-rw-r-----"))
        writer.expect("open")
        flume = [(900_000 + i, f"flume-{i}") for i in range(5)]
        for i, name in flume[:3]:
            writer.write(f"{i},{name}")
        before = dict(zip(dirs, threaded(files.snapshot, list(dirs.values()))))
        assert FLUME in before["open"]

        late = {}

        def open_a_hidden_file(fs_, staging):  # in the run: after the pre-flight and the write, before the swap
            if ".dt=late." in staging:
                late["out"] = fs.create(P(f"{dirs['late']}/.late-writer.tmp"), False)
                late["out"].write(bytearray(b"1,x\n"))
                late["out"].hflush()

        monkeypatch.setattr(compact_cmd, "tamper_staging", open_a_hidden_file)
        res = engine.one("compact", t)
        monkeypatch.undo()
        late["out"].close()
        parts = {p["spec"].split("=", 1)[1]: p for p in res["partitions"]}
        assert res["status"] == "failed" and res["changed"], res  # "late" failed; the others as below
        assert {dt: (p["status"], p.get("code")) for dt, p in parts.items()} == {
            "open": ("skipped", "open_files"), "late": ("failed", "concurrent_write"),
            "ezroot": ("refused", "encryption_zone"), "inzone": ("compacted", None),
            "snap": ("refused", "snapshottable"), "attrs": ("compacted", None)}, parts
        assert FLUME in parts["open"]["reason"]
        assert ".late-writer.tmp" in parts["late"]["reason"]
        untouched = ("open", "late", "ezroot", "snap")
        for dt, snap in zip(untouched, threaded(files.snapshot, [dirs[dt] for dt in untouched])):
            assert snap == before[dt], dt  # byte for byte, and nothing written next to them
            assert not [h for h in files.names(parent(dirs[dt])) if h.startswith(f".dt={dt}.")], dt
        assert files.exists(f"{dirs['late']}/.late-writer.tmp")
        assert str(fs.getEZForPath(P(dirs["ezroot"])).getPath()).endswith("/dt=ezroot")

        # compacted: one file each, in the zone for "inzone", with the attributes of "attrs"
        for dt in ("inzone", "attrs"):
            assert len(files.data_files(dirs[dt])) == 1 and parts[dt]["rows_after"] == 300, parts[dt]
        (inzone_file,) = files.data_files(dirs["inzone"])
        assert fs.getFileStatus(P(inzone_file)).isEncrypted()
        assert str(fs.getEZForPath(P(dirs["inzone"])).getPath()).endswith("/hdfs_zone")
        assert parts["attrs"]["carried"] == {"storage_policy": "ALL_SSD", "xattrs": ["user.team"], "replication": 2}
        policies = {int(x.getId()): str(x.getName()) for x in fs.getAllStoragePolicies()}
        attrs_path = P(dirs["attrs"]).toUri().getPath()
        assert policies[int(fs.getClient().getFileInfo(attrs_path).getStoragePolicy())] == "ALL_SSD"
        assert policies.get(int(fs.getClient().getFileInfo(P(loc).toUri().getPath()).getStoragePolicy())) != "ALL_SSD"
        assert bytes(fs.getXAttrs(P(dirs["attrs"]))["user.team"]) == b"ingest-a"
        for st in [fs.getFileStatus(P(dirs["attrs"]))] + list(fs.listStatus(P(dirs["attrs"]))):
            assert (str(st.getOwner()), str(st.getGroup())) == ("ingest", "lakers"), st.toString()
            assert str(st.getPermission()) == ("rwxr-x---" if st.isDirectory() else "rw-r-----"), st.toString()
            if not st.isDirectory():
                assert st.getReplication() == 2

        def values(dts) -> dict[str, list[tuple[int, str]]]:
            spark.sql(f"REFRESH TABLE {t}")
            got: dict[str, list[tuple[int, str]]] = {dt: [] for dt in dts}
            sql = f"SELECT dt, id, name FROM {t} WHERE dt IN ({', '.join(repr(d) for d in dts)})"
            for r in spark.sql(sql).collect():
                got[r.dt].append((r.id, r.name))
            return {dt: sorted(v) for dt, v in got.items()}

        # the writer finishes its file: the next run compacts it with every row, written before and after
        for i, name in flume[3:]:
            writer.write(f"{i},{name}")
        writer.close()
        res = engine.one("compact", t, where="dt = 'open'")
        (part,) = res["partitions"]
        assert (res["status"], part["status"], part["rows_after"]) == ("compacted", "compacted", 305), res
        assert len(files.data_files(dirs["open"])) == 1
        # every value of every partition: compacted, refused, failed (original kept) and the one written meanwhile
        expected["open"] = sorted(expected["open"] + flume)
        assert values(list(dirs)) == {dt: sorted(v) for dt, v in expected.items()}
    finally:
        writer.kill()
        if fs.exists(P(f"{dirs['snap']}/.snapshot/s1")):
            fs.deleteSnapshot(P(dirs["snap"]), "s1")
            fs.disallowSnapshot(P(dirs["snap"]))


OWNER_RUN = textwrap.dedent(
    """
    import json, sys
    sys.path.insert(0, sys.argv[1])
    from lakekeeper_spark.catalog.catalog import Catalog
    from lakekeeper_spark.cli import _run_tables
    from lakekeeper_spark.policy.config import build_settings
    from lakekeeper_spark.catalog.context import Context
    from lakekeeper_spark.storage.fs import HadoopFS
    from lakekeeper_spark.storage.layout import new_run_id
    from lakekeeper_spark.session import build_session

    spark = build_session("local[2]", None, json.loads(sys.argv[2]))
    jvm = spark._jvm
    conf = spark._jsc.hadoopConfiguration()
    P = jvm.org.apache.hadoop.fs.Path
    base = sys.argv[3]
    su = jvm.org.apache.hadoop.fs.FileSystem.newInstance(P(base).toUri(), conf, sys.argv[4])  # the superuser
    perm = jvm.org.apache.hadoop.fs.permission.FsPermission.valueOf
    su.mkdirs(P(base + "/t"))
    for d in (base, base + "/t"):  # the ingestion user's directories; group lakers may write
        su.setOwner(P(d), "ingest", "lakers")
        su.setPermission(P(d), perm("drwxrwxr-x"))
    # as on any real cluster, a directory this user may not read: the NameNode then refuses the
    # quota of every directory above it (2.7: the content summary, its only way to a quota;
    # 3.5: getQuotaUsage too)
    su.mkdirs(P(base + "-private"))
    su.setOwner(P(base + "-private"), "alice", "alice")
    su.setPermission(P(base + "-private"), perm("drwx------"))
    spark.sql("CREATE DATABASE IF NOT EXISTS lk")
    spark.sql("DROP TABLE IF EXISTS lk.owned")
    spark.sql(f"CREATE EXTERNAL TABLE lk.owned (id BIGINT, name STRING) STORED AS PARQUET LOCATION '{base}/t'")
    spark.range(0, 3000).selectExpr("id", "concat('name-', id) AS name").repartition(6) \\
        .write.mode("append").parquet(base + "/t")
    for st in su.listStatus(P(base + "/t")):  # the files as the ingestion user left them
        su.setOwner(st.getPath(), "ingest", "lakers")
        su.setPermission(st.getPath(), perm("-rw-rw-r--"))
    fs = HadoopFS(spark)

    def state():
        t = base + "/t"
        sts = [su.getFileStatus(P(t))] + [s for s in su.listStatus(P(t)) if not s.getPath().getName().startswith("_")]
        return {"owners": sorted({f"{s.getOwner()}:{s.getGroup()}" for s in sts}),
                "files": sorted(f"{s.getPath().getName()}:{s.getLen()}" for s in sts[1:]),
                "hidden": sorted(s.getPath().getName() for s in su.listStatus(P(base)) if ".t.lk_" in s.getPath().getName()),
                "rows": sorted((r.id, r.name) for r in spark.sql("SELECT * FROM lk.owned").collect())}

    def run(**settings):
        ctx = Context(spark, fs, Catalog(spark), build_settings({}, settings), new_run_id())
        (res,) = _run_tables(ctx, "compact", ["lk.owned"], None)
        spark.sql("REFRESH TABLE lk.owned")
        return res

    out = {"user": fs.current_user(), "before": state()}
    out["refused"] = run()
    out["after_refused"] = state()
    out["allowed"] = run(allow_owner_change=True)
    out["after_allowed"] = state()
    print(json.dumps(out))
    """
)


def test_open_files_from_one_located_listing_and_renames_trusted_on_hdfs(spark, warehouse, monkeypatch):
    """The adapter's own HDFS calls (issue 49), on the bed's NameNode: a
    directory's open files from its located listing (a file closed, one
    open with hflush()ed bytes in its last block, one open with nothing
    written yet, no block at all, a hidden one open), with no
    ``isFileClosed`` asked; and a rename on HDFS itself trusted without a
    look after it, still refused onto an existing target."""
    from lakekeeper_spark.report.errors import LakekeeperError
    from lakekeeper_spark.storage.fs import HadoopFS

    jvm = spark._jvm
    conf = spark._jsc.hadoopConfiguration()
    d = f"{warehouse}/open_listing/dt=1"
    raw = jvm.org.apache.hadoop.fs.Path(d).getFileSystem(conf)

    def P(uri: str):
        return jvm.org.apache.hadoop.fs.Path(uri)

    out = raw.create(P(f"{d}/closed"), False)
    out.write(bytearray(b"x" * 100))
    out.close()
    held = {}
    for name, data in (("flushed.tmp", b"1,a\n"), ("empty.tmp", b""), (".hidden.tmp", b"2,b\n")):
        held[name] = raw.create(P(f"{d}/{name}"), False)
        if data:
            held[name].write(bytearray(data))
            held[name].hflush()
    fs = HadoopFS(spark)
    asked_one_by_one = []
    real = fs._open_by_file

    def one_by_one(names, threads):
        asked_one_by_one.append(names)
        return real(names, threads)

    monkeypatch.setattr(fs, "_open_by_file", one_by_one)
    try:
        names = ["closed", "flushed.tmp", "empty.tmp", ".hidden.tmp", "gone"]
        assert fs._under_construction(d) == {"closed": False, "flushed.tmp": True, "empty.tmp": True,
                                             ".hidden.tmp": True}
        assert fs.open_files({d: names}) == {d: ["flushed.tmp", "empty.tmp", ".hidden.tmp"]}
        assert fs.open_files({f"{warehouse}/open_listing/missing": ["a"]}) == {f"{warehouse}/open_listing/missing": []}
        for name in ("flushed.tmp", "empty.tmp"):
            held.pop(name).close()
        assert fs.open_files({d: names}) == {d: [".hidden.tmp"]}
        assert asked_one_by_one == []  # every state came from the listing
    finally:
        for out in held.values():
            out.close()

    exists = []
    java_fs = fs.fs(d)
    assert fs._fs_class(d) == "org.apache.hadoop.hdfs.DistributedFileSystem"

    class Counting:  # the FileSystem the rename would look again through
        def __getattr__(self, name):
            if name == "exists":
                exists.append(1)
            return getattr(java_fs, name)

    monkeypatch.setattr(fs, "fs", lambda _uri: Counting())
    fs.rename(f"{d}/closed", f"{d}/renamed")
    assert exists == []  # HDFS's own rename: its answer is the check
    assert raw.exists(P(f"{d}/renamed")) and not raw.exists(P(f"{d}/closed"))
    with pytest.raises(LakekeeperError, match="already exists"):
        fs.rename(f"{d}/renamed", f"{d}/flushed.tmp")
    assert raw.exists(P(f"{d}/renamed")) and raw.exists(P(f"{d}/flushed.tmp"))


@pytest.fixture(scope="module")
def owner_run(bed, warehouse, tmp_path_factory):
    """The process of ``test_owner_change_needs_the_superuser``, started by
    the first test that asks for it (the test before, so that both run at
    once) and waited for by that test."""
    import getpass

    work = tmp_path_factory.mktemp("owner")
    (work / "owner_run.py").write_text(OWNER_RUN)
    base = warehouse.replace("/lk-engine-tests/", "/lk-owner-tests/")
    confs = dict(bed.spark_confs(python=sys.executable), **{"spark.sql.shuffle.partitions": "2"})
    with open(work / "out", "w") as out, open(work / "err", "w") as err:
        proc = bed.start_python(work / "owner_run.py", str(ROOT / "spark_app"), json.dumps(confs), base,
                                getpass.getuser(), stdout=out, stderr=err, env={"HADOOP_USER_NAME": "etl"})
    yield proc, work
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def base_parent(location: str) -> str:
    """``.../lk-owner-tests/x/t`` -> ``.../lk-owner-tests`` (the parent of the table's parent)."""
    return location.rstrip("/").rsplit("/", 2)[0]


def test_owner_change_needs_the_superuser(owner_run):
    """A separate process as ``etl`` (HADOOP_USER_NAME, simple authentication):
    not the superuser, a member of ``lakers`` with write access there."""
    proc, work = owner_run
    assert proc.wait(timeout=900) == 0, (work / "err").read_text()[-3000:]
    out = json.loads((work / "out").read_text().strip().splitlines()[-1])
    assert out["user"] == "etl"
    rows = [[i, f"name-{i}"] for i in range(3000)]
    before = out["before"]
    assert before["owners"] == ["ingest:lakers"] and len(before["files"]) == 6 and before["rows"] == rows

    refused = out["refused"]
    assert (refused["status"], refused["code"], refused["changed"]) == ("refused", "ownership", False), refused
    assert "ingest:lakers" in refused["reason"] and "etl" in refused["reason"], refused["reason"]
    assert out["after_refused"] == before  # nothing written: same files, owners, no staging, same rows

    allowed = out["allowed"]
    assert allowed["status"] == "compacted", allowed
    (part,) = allowed["partitions"]
    assert part["files_after"] == 1 and part["rows_after"] == 3000
    assert any("owner change" in w and "ingest:lakers" in w and "etl:lakers" in w for w in part["warnings"]), part
    after = out["after_allowed"]
    assert after["owners"] == ["etl:lakers"] and len(after["files"]) == 1 and after["rows"] == rows
    # the space pre-flight could not read the quotas above the private directory: said, not failed
    parent = base_parent(allowed["location"])
    unread = [w for w in allowed.get("warnings", []) if "quota not checked" in w]
    assert any(w.startswith(f"{parent}: ") for w in unread) and any("/: " in w for w in unread), allowed
    assert all("AccessControlException" in w or "Permission denied" in w for w in unread), unread
