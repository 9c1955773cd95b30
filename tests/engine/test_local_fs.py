"""The engine suite's ``file://`` (tests/testbed/testbed/localfs.py): Hadoop's
LocalFileSystem with permissions set and read in the JVM instead of a chmod
or ``ls -ld`` process. The same operations through it and through Hadoop's
own class leave the same modes (umask applied, directories and checksum files
included), a mode java.nio cannot set (sticky bit) still reaches the disk
through Hadoop's code, and statuses, listings and located listings give the
same permission, owner, group, length, kind and time."""

from __future__ import annotations

import os
import stat

import pytest

pytestmark = pytest.mark.integration


def _modes(root: str) -> dict[str, int]:
    out = {}
    for d, dirs, names in os.walk(root):
        for n in dirs + names:
            p = os.path.join(d, n)
            out[os.path.relpath(p, root)] = stat.S_IMODE(os.lstat(p).st_mode)
    return out


def test_the_sessions_local_filesystem_sets_the_modes_hadoops_own_sets(spark, tmp_path):
    jvm = spark._jvm  # pylint: disable=protected-access
    conf = spark._jsc.hadoopConfiguration()  # pylint: disable=protected-access
    path = jvm.org.apache.hadoop.fs.Path
    perm = jvm.org.apache.hadoop.fs.permission.FsPermission
    ours = path(f"file://{tmp_path}/ours").getFileSystem(conf)
    if os.environ.get("LAKEKEEPER_TEST_LOCALFS", "1") == "0" or "Posix" not in ours.getClass().getName():
        pytest.skip("the session runs with Hadoop's LocalFileSystem (LAKEKEEPER_TEST_LOCALFS=0 or no javac)")
    hadoops = jvm.org.apache.hadoop.fs.LocalFileSystem()
    hadoops.initialize(jvm.java.net.URI("file:///"), conf)
    assert hadoops.getClass().getName() == "org.apache.hadoop.fs.LocalFileSystem"

    def exercise(fs, base):
        fs.mkdirs(path(f"{base}/a/b/c"))
        fs.create(path(f"{base}/a/b/c/f1"), True).close()
        fs.mkdirs(path(f"{base}/m"), perm.createImmutable(0o750))
        fs.create(path(f"{base}/m/f2"), True).close()
        fs.setPermission(path(f"{base}/m/f2"), perm.createImmutable(0o604))
        fs.setPermission(path(f"{base}/a/b"), perm.createImmutable(0o711))
        fs.setPermission(path(f"{base}/a/b/c/f1"), perm.createImmutable(0o1750))  # sticky: Hadoop's own path
        fc = jvm.org.apache.hadoop.fs.FileContext.getFileContext(path(base).toUri(), conf)
        fc.mkdir(path(f"{base}/fc/d"), perm.createImmutable(0o755), True)
        opts = spark.sparkContext._gateway.new_array(jvm.org.apache.hadoop.fs.Options.CreateOpts, 1)  # pylint: disable=protected-access
        opts[0] = jvm.org.apache.hadoop.fs.Options.CreateOpts.perms(perm.createImmutable(0o640))
        fc.create(path(f"{base}/fc/d/f3"), jvm.java.util.EnumSet.of(jvm.org.apache.hadoop.fs.CreateFlag.CREATE),
                  opts).close()
        return fc

    fc = exercise(ours, f"file://{tmp_path}/ours")
    assert "Posix" in fc.getDefaultFileSystem().getClass().getName()
    exercise(hadoops, f"file://{tmp_path}/hadoops")
    mine, theirs = _modes(str(tmp_path / "ours")), _modes(str(tmp_path / "hadoops"))
    assert mine == theirs
    assert mine["a/b/c/f1"] == 0o1750 and mine["m/f2"] == 0o604 and mine["a/b"] == 0o711, mine
    assert ".f1.crc" in os.listdir(tmp_path / "ours" / "a" / "b" / "c")  # the checksum files, as Hadoop's

    # statuses: one path, a directory's listing, a located listing; a link's own status
    os.symlink(tmp_path / "ours" / "m" / "f2", tmp_path / "ours" / "m" / "link")

    def seen(st):
        return (str(st.getPath().getName()), st.getLen(), st.isDirectory(), st.isSymlink(), st.getModificationTime(),
                st.getPermission().toShort(), st.getOwner(), st.getGroup())

    def statuses(fs):
        base = f"file://{tmp_path}/ours"
        out = [seen(fs.getFileStatus(path(f"{base}/{p}"))) for p in ("a", "a/b", "a/b/c/f1", "m/f2", "m/link")]
        out += sorted(seen(st) for st in fs.listStatus(path(f"{base}/m")))
        located = fs.listLocatedStatus(path(f"{base}/a/b/c"))
        while located.hasNext():
            out.append(seen(located.next()))
        out.append(seen(fs.getFileLinkStatus(path(f"{base}/m/link"))))
        return out

    raw_ours, raw_hadoops = ours.getRawFileSystem(), hadoops.getRawFileSystem()
    assert "Posix" in raw_ours.getClass().getName()
    assert statuses(ours) == statuses(hadoops)
    assert statuses(raw_ours) == statuses(raw_hadoops)  # the checksum files listed too
    assert [s[5] for s in statuses(ours)[:4]] == [0o755, 0o711, 0o1750, 0o604]
