"""The NameNode calls a unit's renames and open-file checks cost (issue 49),
as pure functions and on fakes of the Java objects (no Spark):

* ``HadoopFS.rename`` trusts the answer of HDFS's own rename (one atomic
  NameNode RPC that throws on every refusal) and looks again (source gone,
  target there) on every other filesystem, decided once per filesystem
  from the Java classes;
* ``HadoopFS.open_files`` reads a directory's files' under-construction
  state from one located listing, and asks ``isFileClosed`` only for what
  that listing does not say.

The same on real HDFS: tests/engine/test_hdfs_attributes.py (files held
open by another process, the engine's runs on the test bed)."""

from __future__ import annotations

import collections

import pytest

from lakekeeper_spark.report.errors import LakekeeperError
from lakekeeper_spark.storage.attributes import located_flags, open_by_listing
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

    def no_such_method():
        raise RuntimeError("py4j: no such method")

    fc.getDefaultFileSystem = no_such_method
    with pytest.raises(LakekeeperError, match="did not complete"):
        fs.rename(SRC, DST)


# ---------------------------------------------------------------- open files

def test_located_flags_line_up_names_and_states():
    names = ["part-0", "FlumeData.1.tmp", "_tmp"]
    assert located_flags(names, "[false, true, null]") == {"part-0": False, "FlumeData.1.tmp": True, "_tmp": None}
    assert located_flags([], "[]") == {}
    # anything that does not line up: no answer from the listing (every file asked on its own)
    assert located_flags(names, "[false, true]") is None
    assert located_flags(names[:2], "[false, true, null]") is None
    assert located_flags(names, "[false, true, maybe]") is None
    assert located_flags(names, "false, true, null") is None


def test_open_by_listing():
    flags = {"a": False, "b": True, "c": None}
    assert open_by_listing(["a", "b", "c", "gone"], flags) == (["b"], ["c"])  # gone meanwhile: not open
    assert open_by_listing(["a", "b"], None) == ([], ["a", "b"])  # no listing to go by: ask each
    assert open_by_listing(["a"], {}) == ([], [])  # the directory is gone


def test_open_files_ask_each_file_only_where_the_listing_says_nothing():
    """One located listing per directory; ``isFileClosed`` (one NameNode call
    each) only for a file the listing has no state for, or a directory
    without such a listing; the answer in the order the names were asked."""
    fs = object.__new__(HadoopFS)
    fs._fs_cache = {}
    listed, by_file = [], []
    listings = {"hdfs://nn/a": {"x": True, "y": False, "z": None, "w": True},
                "hdfs://nn/b": None,  # not readable from the listing: each file asked
                "hdfs://nn/c": {}}  # gone
    open_by_file = {"hdfs://nn/a": {"z"}, "hdfs://nn/b": {"q"}}

    def under_construction(uri):
        listed.append(uri)
        return listings[uri]

    def open_one_by_one(names, _threads):
        by_file.append(names)
        return {uri: [n for n in ns if n in open_by_file[uri]] for uri, ns in names.items()}

    fs._under_construction = under_construction
    fs._open_by_file = open_one_by_one
    got = fs.open_files({"hdfs://nn/a": ["w", "x", "y", "z"], "hdfs://nn/b": ["p", "q"], "hdfs://nn/c": ["r"],
                         "hdfs://nn/d": []})
    assert got == {"hdfs://nn/a": ["w", "x", "z"], "hdfs://nn/b": ["q"], "hdfs://nn/c": [], "hdfs://nn/d": []}
    assert sorted(listed) == ["hdfs://nn/a", "hdfs://nn/b", "hdfs://nn/c"]  # one listing each, none for no names
    assert by_file == [{"hdfs://nn/a": ["z"], "hdfs://nn/b": ["p", "q"]}]


def test_only_distributed_filesystem_is_listed_for_its_open_files():
    """``_under_construction`` goes by the FileSystem's Java class, looked up
    once per filesystem: anything but ``DistributedFileSystem`` is asked
    file by file (its listing's statuses carry no such state)."""
    ns = Namespace(set())
    fs = adapter(ns, VIEWFS[0], VIEWFS[1])
    for _call in range(3):
        assert fs._under_construction("viewfs://cluster/wh/t/dt=1") is None
    assert ns.calls["FileSystem.getClass"] == 1
