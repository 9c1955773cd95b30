"""The NameNode calls a unit's renames cost (issue 49), as pure functions and
on fakes of the Java objects (no Spark): ``HadoopFS.rename`` trusts the
answer of HDFS's own rename (one atomic NameNode RPC that throws on every
refusal) and looks again (source gone, target there) on every other
filesystem, decided once per filesystem from the Java classes. The engine's
runs on the test bed rename on real HDFS."""

from __future__ import annotations

import collections

import pytest

from lakekeeper_spark.report.errors import LakekeeperError
from lakekeeper_spark.storage.fs import HDFS_FILECONTEXT, HDFS_FILESYSTEM, HadoopFS, atomic_rename

SRC, DST = "hdfs://nn:8020/wh/t/dt=1", "hdfs://nn:8020/wh/t/.dt=1.lk_old_r"
VIEWFS = ("org.apache.hadoop.fs.viewfs.ViewFileSystem", "org.apache.hadoop.fs.viewfs.ViewFs")
NOT_HDFS_ITSELF = [
    VIEWFS,
    ("org.apache.hadoop.hdfs.web.WebHdfsFileSystem", "org.apache.hadoop.fs.WebHdfs"),
    ("org.apache.hadoop.fs.s3a.S3AFileSystem", "org.apache.hadoop.fs.s3a.S3A"),
    ("org.apache.hadoop.fs.LocalFileSystem", "org.apache.hadoop.fs.local.LocalFs"),
    ("com.example.PatchedDistributedFileSystem", HDFS_FILECONTEXT),  # a subclass may rename otherwise
    (HDFS_FILESYSTEM, "org.apache.hadoop.fs.viewfs.ViewFs"),  # the rename goes through the FileContext's
]


class JavaClass:
    def __init__(self, name):
        self.name = name

    def getName(self):
        return self.name


class Namespace:
    """Paths that exist, shared by the FileSystem and FileContext fakes;
    ``moves=False``: a rename that answers without having moved anything."""

    def __init__(self, paths, moves=True):
        self.paths, self.moves, self.calls = set(paths), moves, collections.Counter()


class FakeFileSystem:
    def __init__(self, ns, cls):
        self.ns, self.cls = ns, cls

    def getClass(self):
        self.ns.calls["FileSystem.getClass"] += 1
        return JavaClass(self.cls)

    def exists(self, p):
        self.ns.calls["exists"] += 1
        return p in self.ns.paths


class FakeAbstractFileSystem:
    def __init__(self, ns, cls):
        self.ns, self.cls = ns, cls

    def getClass(self):
        self.ns.calls["AbstractFileSystem.getClass"] += 1
        return JavaClass(self.cls)


class FakeFileContext:
    def __init__(self, ns, cls):
        self.ns, self.afs = ns, FakeAbstractFileSystem(ns, cls)

    def getDefaultFileSystem(self):
        return self.afs

    def rename(self, s, d, _options):
        self.ns.calls["rename"] += 1
        if s not in self.ns.paths or d in self.ns.paths:
            raise RuntimeError("java.io.FileNotFoundException / FileAlreadyExistsException")
        if self.ns.moves:
            self.ns.paths.discard(s)
            self.ns.paths.add(d)


def adapter(ns, fs_class, fc_class):
    fs = object.__new__(HadoopFS)
    fs._fs_cache, fs._identity, fs._no_acls = {}, set(), set()
    java_fs, fc = FakeFileSystem(ns, fs_class), FakeFileContext(ns, fc_class)
    fs.fs = lambda _uri: java_fs
    fs.path = lambda uri: uri
    fs._file_context = lambda _uri: fc
    fs._rename_none = lambda: None
    return fs


def test_atomic_rename_is_hdfs_itself_only():
    assert atomic_rename(HDFS_FILESYSTEM, HDFS_FILECONTEXT)
    for fs_class, fc_class in NOT_HDFS_ITSELF + [("", "")]:
        assert not atomic_rename(fs_class, fc_class), (fs_class, fc_class)


def test_an_hdfs_rename_is_one_call_decided_once_per_filesystem():
    """On HDFS itself the NameNode's rename is the whole of it: no
    ``exists`` after it (it was two more NameNode calls a rename), and the
    classes are looked up on the first rename only."""
    ns = Namespace({f"{SRC}{n}" for n in range(3)})
    fs = adapter(ns, HDFS_FILESYSTEM, HDFS_FILECONTEXT)
    for n in range(3):
        fs.rename(f"{SRC}{n}", f"{DST}{n}")
    assert ns.paths == {f"{DST}{n}" for n in range(3)}
    assert ns.calls == {"rename": 3, "FileSystem.getClass": 1, "AbstractFileSystem.getClass": 1}


def test_an_hdfs_rename_refused_still_raises_with_its_reason():
    ns = Namespace({SRC, DST})
    fs = adapter(ns, HDFS_FILESYSTEM, HDFS_FILECONTEXT)
    with pytest.raises(LakekeeperError, match="already exists"):
        fs.rename(SRC, DST)
    ns = Namespace(set())
    fs = adapter(ns, HDFS_FILESYSTEM, HDFS_FILECONTEXT)
    with pytest.raises(LakekeeperError, match="does not exist"):
        fs.rename(SRC, DST)


@pytest.mark.parametrize("fs_class,fc_class", NOT_HDFS_ITSELF)
def test_a_rename_elsewhere_is_checked_after(fs_class, fc_class):
    """Anywhere but HDFS itself a rename's answer is not taken for its
    result: the source gone and the target there are looked at (two calls),
    and a rename that answered without moving fails the unit."""
    ns = Namespace({f"{SRC}{n}" for n in range(2)})
    fs = adapter(ns, fs_class, fc_class)
    for n in range(2):
        fs.rename(f"{SRC}{n}", f"{DST}{n}")
    assert ns.calls["exists"] == 4 and ns.calls["rename"] == 2
    assert ns.calls["FileSystem.getClass"] <= 1 and ns.calls["AbstractFileSystem.getClass"] <= 1
    ns = Namespace({SRC}, moves=False)
    with pytest.raises(LakekeeperError, match="did not complete"):
        adapter(ns, fs_class, fc_class).rename(SRC, DST)


def test_a_rename_whose_filesystem_cannot_be_told_is_checked_after():
    ns = Namespace({SRC}, moves=False)
    fs = adapter(ns, HDFS_FILESYSTEM, HDFS_FILECONTEXT)
    fc = fs._file_context(SRC)
    fc.getDefaultFileSystem = lambda: (_ for _ in ()).throw(RuntimeError("py4j: no such method"))
    with pytest.raises(LakekeeperError, match="did not complete"):
        fs.rename(SRC, DST)
