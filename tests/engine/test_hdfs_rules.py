"""The HDFS pre-flight's rules (hdfs_checks.py) as pure functions, without
Spark: what refuses or skips a unit, what is carried onto its copy, whose
ownership a run must be able to keep. Erasure coding (Hadoop 3 only) is
tested only here so far: the test bed's Hadoop 3.5 HDFS has erasure coding
(XOR-2-1-1024k enabled), no engine case on it yet (see
tests/engine/test_hdfs_attributes.py for the rest, on real HDFS)."""

from __future__ import annotations

import pytest

from lakekeeper_spark.storage.status import parse_attributes, parse_status_dump
from lakekeeper_spark.storage.hdfs_checks import (
    ENCRYPTION_ZONE,
    ERASURE_CODING,
    SNAPSHOTTABLE,
    carry_plan,
    dir_refusal,
    open_files_reason,
    owner_targets,
    ownership_outcome,
    uri_path,
)
from lakekeeper_spark.report.model import FileEntry

LOC = "hdfs://nn:8020/wh/t/dt=1"


def test_uri_path():
    assert uri_path(LOC) == "/wh/t/dt=1"
    assert uri_path("hdfs://nn:8020/wh/t/") == "/wh/t"
    assert uri_path("hdfs://nn") == "/"


def test_dir_refusals():
    plain = {"zone": None, "ec": None, "snapshottable": False}
    assert dir_refusal(LOC, plain, {"ec": None}) is None
    # inside a zone (its root above the unit): the copy is written in the same zone
    assert dir_refusal(LOC, dict(plain, zone="/wh"), {"ec": None}) is None
    code, reason = dir_refusal(LOC, dict(plain, zone="/wh/t/dt=1"), {"ec": None})
    assert code == ENCRYPTION_ZONE and "root of an HDFS encryption zone" in reason and "nothing was written" in reason
    # erasure coding: a policy other than the parent's (which the copy would take) is given to the staging
    # (prepare_staging); refused only where it cannot be: a policy not enabled, a text/Avro copy
    assert dir_refusal(LOC, dict(plain, ec="RS-6-3-1024k"), {"ec": "RS-6-3-1024k"}) is None
    assert dir_refusal(LOC, dict(plain, ec="RS-6-3-1024k"), {"ec": None}, {"RS-6-3-1024k"}, "parquet") is None
    assert dir_refusal(LOC, plain, {"ec": "XOR-2-1-1024k"}, set(), "orc") is None  # replication: always there
    code, reason = dir_refusal(LOC, dict(plain, ec="RS-6-3-1024k"), {"ec": None}, {"XOR-2-1-1024k"}, "parquet")
    assert code == ERASURE_CODING and "RS-6-3-1024k is not enabled" in reason and "replicated" in reason
    code, reason = dir_refusal(LOC, dict(plain, ec="RS-6-3-1024k"), {"ec": None})  # enabled policies unknown
    assert code == ERASURE_CODING and "not enabled" in reason
    code, reason = dir_refusal(LOC, plain, {"ec": "XOR-2-1-1024k"}, {"XOR-2-1-1024k"}, "avro")
    assert code == ERASURE_CODING and "INSERT OVERWRITE DIRECTORY" in reason
    assert dir_refusal(LOC, dict(plain, ec="XOR-2-1-1024k"), {"ec": "XOR-2-1-1024k"}, set(), "text") is None
    code, reason = dir_refusal(LOC, dict(plain, snapshottable=True), {"ec": None})
    assert code == SNAPSHOTTABLE and "-allowSnapshot" in reason


def test_open_files_reason_names_three():
    assert "FlumeData.1.tmp" in open_files_reason(["FlumeData.1.tmp"])
    text = open_files_reason([f"f{i}" for i in range(5)])
    assert text.startswith("5 file(s) still open") and "f0, f1, f2 and 2 more" in text


def test_carry_plan():
    names = {0: "UNSPECIFIED?", 7: "HOT", 12: "ALL_SSD"}
    files = [FileEntry("a", 1, 1, replication=2), FileEntry("b", 1, 1, replication=2)]
    unit = {"storage_policy": 12, "xattrs": {"user.team": b"x", "trusted.t": b"y", "security.s": b"z"}}
    c = carry_plan(unit, {"storage_policy": 7}, names, files)
    assert (c.storage_policy, sorted(c.xattrs), c.replication) == ("ALL_SSD", ["trusted.t", "user.team"], 2)
    # inherited from the parent: nothing to set (the copy inherits it too)
    assert carry_plan({"storage_policy": 12}, {"storage_policy": 12}, names, files).storage_policy is None
    assert carry_plan({"storage_policy": None}, {"storage_policy": 7}, names, files).storage_policy is None
    mixed = files + [FileEntry("c", 1, 1, replication=3)]
    assert carry_plan({}, {}, names, mixed).replication is None  # no one factor: left as written
    assert carry_plan({}, {}, names, [FileEntry("a", 1, 1)]).replication is None  # not known (not HDFS)


def test_owner_targets_and_outcome():
    files = [FileEntry("a", 1, 1, owner="ingest", group="lakers"), FileEntry("b", 1, 1, owner="etl", group="lakers"),
             FileEntry("c", 1, 1)]
    assert owner_targets("ingest", "lakers", files) == [("etl", "lakers"), ("ingest", "lakers")]
    targets = [("ingest", "lakers")]
    denied = {("ingest", "lakers"): "AccessControlException: Non-super user cannot change owner"}
    assert ownership_outcome(LOC, targets, {}, "etl", "lakers", False) == (None, None)
    refusal, note = ownership_outcome(LOC, targets, denied, "etl", "lakers", False)
    assert note is None and "belong to ingest:lakers" in refusal and "this run (etl)" in refusal
    assert "allow_owner_change" in refusal and "nothing was written" in refusal
    refusal, note = ownership_outcome(LOC, targets, denied, "etl", "lakers", True)
    assert refusal is None and "owner change" in note and "ingest:lakers" in note and "etl:lakers" in note


def test_status_dump_details():
    dump = (
        "{HdfsNamedFileStatus{path=hdfs://h:1/t/a; isDirectory=false; length=10; replication=2; blocksize=1; "
        "modification_time=5; access_time=1; owner=ingest; group=lakers; permission=rw-r--r--; isSymlink=false; "
        "hasAcl=false; isEncrypted=false; isErasureCoded=false},HdfsNamedFileStatus{path=hdfs://h:1/t/d; "
        "isDirectory=true; modification_time=6; access_time=0; owner=etl; group=g; permission=rwxr-xr-x; "
        "isSymlink=false; hasAcl=false; isEncrypted=false; isErasureCoded=false}}"
    )
    assert parse_status_dump(dump, details=True) == [("hdfs://h:1/t/a", False, 10, 5, 2, "ingest", "lakers"),
                                                     ("hdfs://h:1/t/d", True, 0, 6, None, "etl", "g")]
    assert parse_status_dump(dump) == [("hdfs://h:1/t/a", False, 10, 5), ("hdfs://h:1/t/d", True, 0, 6)]


def test_status_attributes():
    """Mode (as FsPermission.toShort: sticky bit included), owner and group from a status's text, for
    copy_permissions: Hadoop 3's HDFS statuses, Hadoop 2.7's shorter form, one status alone."""
    dump = (
        "{HdfsNamedFileStatus{path=hdfs://h:1/t/a; isDirectory=false; length=10; replication=2; blocksize=1; "
        "modification_time=5; access_time=1; owner=ingest; group=lakers; permission=rw-r-----; isSymlink=false; "
        "hasAcl=false; isEncrypted=false; isErasureCoded=false},HdfsNamedFileStatus{path=hdfs://h:1/t/d; "
        "isDirectory=true; modification_time=6; access_time=0; owner=etl; group=g; permission=rwxrwxrwt; "
        "isSymlink=false; hasAcl=true; isEncrypted=false; isErasureCoded=false}}"
    )
    assert parse_attributes(dump) == [("hdfs://h:1/t/a", False, 0o640, "ingest", "lakers"),
                                      ("hdfs://h:1/t/d", True, 0o1777, "etl", "g")]
    old = ("FileStatus{path=hdfs://nn:8020/w/t/dt=1; isDirectory=true; modification_time=7; access_time=0; "
           "owner=hive; group=hadoop; permission=rwxr-x--T; isSymlink=false}")
    assert parse_attributes(old) == [("hdfs://nn:8020/w/t/dt=1", True, 0o1750, "hive", "hadoop")]
    assert parse_attributes("[]") == [] and parse_attributes("{}") == []
    # a status without its permission (another filesystem's text): not read, the caller asks field by field
    assert parse_attributes(old.replace("; permission=rwxr-x--T", "")) is None
    assert parse_attributes(dump.replace("permission=rw-r-----", "permission=(hidden)")) is None
    assert parse_attributes("garbage") is None


def test_a_namenode_without_acls_is_asked_once_a_run():
    """``copy_dir_attributes`` asks for a directory's ACL before its swap; a
    NameNode with ACLs disabled (the default before Hadoop 3.3) refuses with
    an exception, about 30 ms through the gateway: asked once per
    filesystem, the rest of the run skips it. Any other refusal is asked
    again and reported."""
    from lakekeeper_spark.storage.fs import HadoopFS

    class Refusal(Exception):
        pass

    class FakeJavaFS:
        def __init__(self, message):
            self.message, self.asked = message, 0

        def getScheme(self):
            return "hdfs"

        def getAclStatus(self, _path):
            self.asked += 1
            raise Refusal(self.message)

    def adapter(java_fs):
        fs = object.__new__(HadoopFS)
        fs._fs_cache, fs._identity, fs._no_acls, fs._schemes = {}, set(), set(), {}
        fs.fs = lambda _uri: java_fs
        fs.path = lambda uri: uri
        fs.quota_limits = lambda _uri, _path=None: {"quota": -1, "space_quota": -1}
        return fs

    off = FakeJavaFS("org.apache.hadoop.hdfs.protocol.AclException: The ACL operation has been rejected. "
                     "Support for ACLs has been disabled by setting dfs.namenode.acls.enabled to false.")
    fs = adapter(off)
    for n in range(3):
        assert fs.copy_dir_attributes(f"{LOC}{n}", f"{LOC}{n}.staging") == []
    assert off.asked == 1
    other = FakeJavaFS("java.io.IOException: the NameNode is in safe mode")
    fs = adapter(other)
    for n in range(2):
        assert fs.copy_dir_attributes(f"{LOC}{n}", f"{LOC}{n}.staging")[0].startswith(f"ACL of {LOC}{n}: ")
    assert other.asked == 2


def test_threaded_keeps_order_waits_for_every_call_and_runs_nested_calls_inline():
    """``fs.threaded`` (the NameNode calls of listings, open-file checks and
    the pre-flight, overlapped on one pool kept for the process)."""
    import threading
    import time as _time

    from lakekeeper_spark.storage import threads as fs_mod

    seen: set[str] = set()
    assert fs_mod.threaded(lambda x: (seen.add(threading.current_thread().name), x * x)[1], list(range(20))) == [
        x * x for x in range(20)]
    assert 1 <= len(seen) <= fs_mod.POOL_THREADS and all(n.startswith("lakekeeper-nn") for n in seen)
    at_once, most, lock = [0], [0], threading.Lock()

    def count(_x):
        with lock:
            at_once[0] += 1
            most[0] = max(most[0], at_once[0])
        _time.sleep(0.01)
        with lock:
            at_once[0] -= 1

    fs_mod.threaded(count, list(range(20)), limit=3)
    assert most[0] == 3  # at most ``limit`` at once

    ended = []

    def slow_or_bad(x):
        if x == 0:
            raise ValueError("first")
        _time.sleep(0.05)
        ended.append(x)

    with pytest.raises(ValueError, match="first"):
        fs_mod.threaded(slow_or_bad, list(range(8)))
    assert sorted(ended) == list(range(1, 8))  # raised once every call had ended

    # a call made from a pool thread runs there: a pool waiting on itself would hang
    def outer(_x):
        here = threading.current_thread().name
        return here, fs_mod.threaded(lambda y: (_time.sleep(0.02), threading.current_thread().name)[1], [1, 2, 3])

    for here, names in fs_mod.threaded(outer, [0, 1]):
        assert names == [here] * 3


def test_a_copying_file_still_open_is_a_copy_in_progress_skipped_not_refused():
    """A unit the planner refused for an ``x._COPYING_`` file (unreadable_file)
    while that file is still open for write (an ``hdfs dfs -put`` running) is
    skipped (open_files), as any unit with an open file; closed, it stays refused."""
    from lakekeeper_spark.policy import planner
    from lakekeeper_spark.policy.config import Settings
    from lakekeeper_spark.report.model import Listing, TableInfo
    from lakekeeper_spark.storage.hdfs_checks import OPEN_FILES, check_units
    from lakekeeper_spark.storage.readers import UNREADABLE_FILE

    class FakeFS:
        def __init__(self, open_names):
            self.open_names, self.asked = open_names, []

        def is_hdfs(self, uri):
            return uri.startswith("hdfs://")

        def open_files(self, names):
            self.asked.append(names)
            return {loc: [n for n in ns if n in self.open_names] for loc, ns in names.items()}

    info = TableInfo("db", "t", "EXTERNAL", "hdfs://nn:8020/wh/t", "hive", None, None, None, {}, {},
                     [("id", "bigint")], [("dt", "string")], format="parquet")
    files = [FileEntry("part-0.parquet", 10, 0), FileEntry("part-1.parquet._COPYING_", 10, 0)]
    units = [(f"dt={d}", {"dt": d}, f"hdfs://nn:8020/wh/t/dt={d}", Listing(f"hdfs://nn:8020/wh/t/dt={d}", files=list(files)))
             for d in ("1", "2")]
    for open_names, code, action in (({"part-1.parquet._COPYING_"}, OPEN_FILES, "skip"), (set(), UNREADABLE_FILE, "refuse")):
        p = planner.plan_table(info, units, Settings(), "20261122T010203-abcdef")
        assert {u.decision.code for u in p.units} == {UNREADABLE_FILE}
        fs = FakeFS(open_names)
        check_units(fs, p, Settings(), None)
        assert fs.asked == [{u.location: ["part-1.parquet._COPYING_"] for u in p.units}]  # only those names
        assert [(u.decision.action, u.decision.code) for u in p.units] == [(action, code)] * 2
