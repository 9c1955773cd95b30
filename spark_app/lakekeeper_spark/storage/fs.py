"""The one adapter over the Hadoop FileSystem API (through Spark's JVM gateway).

The same calls serve ``hdfs://`` and ``file://``. Their rename semantics
differ (HDFS moves a directory *into* an existing target directory and
returns false for a missing source; the local filesystem replaces an empty
target and throws for a missing source), so ``rename`` here goes through
``FileContext.rename(src, dst, Options.Rename.NONE)``: on both it fails
(``FileAlreadyExistsException``) when the target exists, whatever it is,
instead of moving the source inside a directory re-created there, and it
fails for a missing source or target parent. The result is checked (source
gone, target present) everywhere but on HDFS itself, where the NameNode's
one atomic rename has already said so (``rename``).

``create_new`` is the atomic "create unless it exists" the lease needs
(HDFS: ``create(path, overwrite=false)``, decided by the NameNode; the local
filesystem's ``create`` checks and then opens, so plain local paths are
created with ``O_CREAT|O_EXCL`` instead).

``HadoopFS`` is one class in four modules, by concern: its core calls here
(the gateway's filesystems and paths, renames and deletes, copies, small
files), listing (``Listings``, listing.py), permissions, space and HDFS
attributes (``Attributes``, attributes.py); beside them the append log
(append_log.py), the parsing of the filesystem's answers (status.py) and
the NameNode calls' shared threads (threads.py).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Any

from ..report.errors import LakekeeperError, java_message
from ..compat.jvm import java_class
from .append_log import AppendLog, HadoopAppendLog, LocalAppendLog, create_local
from .attributes import Attributes
from .listing import Listings
from .status import plain_uri

log = logging.getLogger(__name__)

# An HDFS client that closes a file asks the NameNode whether its last block
# is complete; when the DataNode's report of that block has not reached the
# NameNode yet, the client sleeps 400 ms (then 800, 1,600 ...; 5 retries)
# before asking again. Journal records are tiny files closed one after the
# other, so most closes find the report not yet there: on the test bed a
# record took 18 ms at the median, 55 ms on average and 440 ms at worst
# alone, 180 ms on average with four units running. The adapter's own HDFS
# client starts at 25 ms and doubles 9 times (25.6 s in all, against the
# default's 12.4 s: as patient, in finer steps): 27 ms on average. Settings
# the cluster's configuration makes itself are kept.
HDFS_CLOSE_RETRY = {
    "dfs.client.block.write.locateFollowingBlock.initial.delay.ms": "25",
    "dfs.client.block.write.locateFollowingBlock.retries": "9",
}
# The adapter's HDFS clients, one per JVM, filesystem and user, for every HadoopFS to share.
_HDFS_CLIENTS: dict[tuple[int, str, str], Any] = {}
_HDFS_CLIENTS_LOCK = threading.Lock()


# The Java classes whose rename is HDFS's own (see ``HadoopFS.rename``): the FileSystem and FileContext's
# AbstractFileSystem for hdfs://. Exactly these: a subclass may rename otherwise.
HDFS_FILESYSTEM = "org.apache.hadoop.hdfs.DistributedFileSystem"
HDFS_FILECONTEXT = "org.apache.hadoop.fs.Hdfs"


def atomic_rename(filesystem_class: str, filecontext_class: str) -> bool:
    """Whether a ``FileContext.rename`` through these classes is one atomic
    NameNode RPC whose success needs no second look: HDFS itself only."""
    return filesystem_class == HDFS_FILESYSTEM and filecontext_class == HDFS_FILECONTEXT


def write_private(jvm: Any, fs: Any, path: Any, text: str) -> None:
    """``text`` to ``path`` (a Java ``Path`` of the Java ``FileSystem`` ``fs``)
    for its owner's eyes only: a missing parent directory is made 0700, the
    file is made 0600 while still empty (as ``FileSystem.create(fs, path,
    permission)`` does: the mode as given, whatever the umask) under a hidden temporary name
    beside it and renamed onto ``path`` once written and closed, so a reader
    sees the whole file or none. The one writer of the files a run hands
    to its launcher through the cluster's filesystem: the result of a
    cluster-mode driver (``--result-uri``) and its analysis
    (``analyze_first``)."""
    owner_only = java_class(jvm, "org.apache.hadoop.fs.permission.FsPermission")
    path = fs.makeQualified(path)  # a relative name in the user's home directory, as every call below takes it
    parent = path.getParent()
    if parent is not None and not fs.exists(parent):
        # what FileSystem.mkdirs(fs, dir, permission) does (py4j cannot call that static method: FileSystem's
        # instance methods of the same name hide it): the mode as given, whatever the umask
        fs.mkdirs(parent, owner_only("700"))
        fs.setPermission(parent, owner_only("700"))
    tmp = java_class(jvm, "org.apache.hadoop.fs.Path")(parent, f".{path.getName()}.tmp-{os.getpid()}")
    out = fs.create(tmp, True)
    try:
        fs.setPermission(tmp, owner_only("600"))  # while it is still empty (FileSystem.create(fs, file, permission))
        out.write(bytearray(text.encode("utf-8")))
    finally:
        out.close()
    fs.delete(path, False)  # an earlier file of the name (a second write replaces it)
    if not fs.rename(tmp, path):
        fs.delete(tmp, False)
        raise LakekeeperError("fs_error", f"could not rename {tmp.toString()} onto {path.toString()}")


class HadoopFS(Listings, Attributes):
    """Thin wrapper: URIs in, plain Python values out."""

    BATCH = 256  # directories per listStatus(Path[]) call
    LIST_THREADS = 8  # listStatus(Path[]) calls at once: one NameNode call per directory, latency-bound

    def __init__(self, spark: Any):
        self._spark = spark
        self._jvm = spark._jvm
        self._conf = spark._jsc.hadoopConfiguration()
        self._fs_cache: dict[str, Any] = {}
        self._identity: set[str] = set()  # filesystems whose plain URIs qualify to themselves
        self._no_acls: set[str] = set()  # filesystems whose NameNode said ACLs are disabled (it says so until restarted)
        self._schemes: dict[int, tuple[Any, str]] = {}  # scheme_of: by the filesystem object's id, with the object

    # ------------------------------------------------------------ basics
    def path(self, uri: str) -> Any:
        return java_class(self._jvm, "org.apache.hadoop.fs.Path")(uri)

    def _path_array(self, uris: list[str]) -> Any:
        """A Java ``Path[]`` of ``uris`` in three gateway calls, not two per
        path: the URIs go over joined by NUL (which no path holds), split
        and made paths in the JVM (``new Path(uri)`` each, as ``path``)."""
        literal = java_class(self._jvm, "java.util.regex.Pattern").compile("\u0000", 16)  # 16: Pattern.LITERAL
        strings = literal.split("\u0000".join(uris), -1)
        return java_class(self._jvm, "org.apache.hadoop.util.StringUtils").stringToPath(strings)

    def fs(self, uri: str) -> Any:
        plain = plain_uri(uri)
        if plain is not None and plain[0] in self._fs_cache:
            return self._fs_cache[plain[0]]
        p = self.path(uri)
        u = p.toUri()
        key = f"{u.getScheme()}://{u.getAuthority() or ''}"
        if key not in self._fs_cache:
            if str(u.getScheme()) == "hdfs":
                shared = (id(self._jvm), key, str(java_class(self._jvm, "org.apache.hadoop.security.UserGroupInformation")
                                                  .getCurrentUser().toString()))
                with _HDFS_CLIENTS_LOCK:
                    if shared not in _HDFS_CLIENTS:
                        _HDFS_CLIENTS[shared] = java_class(self._jvm, "org.apache.hadoop.fs.FileSystem").newInstance(
                            u, self.hdfs_conf())
                self._fs_cache[key] = _HDFS_CLIENTS[shared]
            else:
                self._fs_cache[key] = p.getFileSystem(self._conf)
        return self._fs_cache[key]

    def hdfs_conf(self) -> Any:
        """The configuration of the adapter's HDFS clients: the session's,
        with ``HDFS_CLOSE_RETRY`` where the cluster's files set nothing."""
        conf = java_class(self._jvm, "org.apache.hadoop.conf.Configuration")(self._conf)
        for name, value in HDFS_CLOSE_RETRY.items():
            sources = conf.getPropertySources(name)
            if sources is None or all(str(x).endswith("-default.xml") for x in sources):
                conf.set(name, value)
        return conf

    def scheme(self, uri: str) -> str:
        return self.scheme_of(self.fs(uri))

    def scheme_of(self, fs: Any) -> str:
        """A Java ``FileSystem``'s scheme, asked once per filesystem object
        (which is kept with the answer: its id cannot be reused meanwhile)."""
        known = self._schemes.get(id(fs))
        if known is None or known[0] is not fs:
            known = self._schemes[id(fs)] = (fs, str(fs.getScheme()))
        return known[1]

    def qualify(self, uri: str) -> str:
        plain = plain_uri(uri)
        if plain is not None and plain[0] in self._identity:  # no gateway call for the common case
            return plain[1]
        q = str(self.fs(uri).makeQualified(self.path(uri)).toString())
        if plain is not None and q == plain[1]:
            self._identity.add(plain[0])  # Hadoop spells this filesystem's plain URIs as we do
        return q

    def exists(self, uri: str) -> bool:
        return bool(self.fs(uri).exists(self.path(uri)))

    # ------------------------------------------------------------ mutations
    def mkdirs(self, uri: str) -> None:
        if not self.fs(uri).mkdirs(self.path(uri)):
            raise LakekeeperError("fs_error", f"could not create directory {uri}")

    def delete(self, uri: str, recursive: bool = True) -> bool:
        """Delete ``uri``; False when there was nothing there. Checked
        afterwards (``FileSystem.delete`` answers false for a missing path
        and for one it could not remove alike): two calls."""
        fs = self.fs(uri)
        p = self.path(uri)
        deleted = bool(fs.delete(p, recursive))
        if fs.exists(p):
            raise LakekeeperError("fs_error", f"could not delete {uri}")
        return deleted

    def rename(self, src: str, dst: str) -> None:
        """Rename that means the same on every filesystem, or raises: never
        onto (or into) an existing target, never into a missing parent
        (``FileContext.rename`` with ``Options.Rename.NONE``, whose checks
        run where the filesystem is: on HDFS inside the NameNode's rename,
        atomically; on ``file://`` in the client, as ours would). The reason
        for a refusal is looked up only when there is one.

        Then it is checked (the source gone, the target there: two more
        calls) on every filesystem but HDFS itself. On HDFS (the
        FileSystem is ``DistributedFileSystem`` and FileContext's
        AbstractFileSystem ``org.apache.hadoop.fs.Hdfs``, exactly, not a
        subclass, ``viewfs``, ``webhdfs`` or an object store) the rename is
        one NameNode RPC (``rename2`` with ``NONE``), carried out under the
        namespace lock, atomically, and logged before it answers; it
        throws for a missing source, an existing target, a missing parent
        and any other refusal, and returns only when the source is at the
        target. Looking again would ask the same NameNode what it has just
        answered: one call. Elsewhere a rename may be copy-then-delete, or
        its checks made by the client (``file://``: ENVIRONMENT.md), so
        its result is not trusted there. Which filesystem is which is
        looked up once per filesystem (``_rename_is_atomic``)."""
        fs = self.fs(src)
        s, d = self.path(src), self.path(dst)
        if self._local_path(src) is not None and self._local_path(dst) is not None:
            # file://: FileContext looks each path up by starting a process (readlink, stat) when Hadoop's
            # native library is missing, as in pip's pyspark: about 29 ms a rename. Its checks run in the
            # client there anyway; the same checks here, then FileSystem.rename (no process).
            refused = self._rename_obstacle(fs, src, dst, s, d)
            if refused is not None:
                raise refused
            if not fs.rename(s, d):
                raise LakekeeperError("fs_error", f"rename {src} -> {dst} failed")
        else:
            fc = self._file_context(src)
            try:
                fc.rename(s, d, self._rename_none())
            except Exception as exc:  # noqa: BLE001 - Py4JJavaError carries the Java exception
                raise (self._rename_obstacle(fs, src, dst, s, d)
                       or LakekeeperError("fs_error", f"rename {src} -> {dst} failed: {java_message(exc)}")) from exc
            if self._rename_is_atomic(src, fc):
                return
        if fs.exists(s) or not fs.exists(d):
            raise LakekeeperError("fs_error", f"rename {src} -> {dst} did not complete")

    @staticmethod
    def _rename_obstacle(fs: Any, src: str, dst: str, s: Any, d: Any) -> LakekeeperError | None:
        """What makes ``src -> dst`` a refused rename (a missing source, an
        existing target, a missing parent), else None. ``FileContext``'s
        exceptions do not say which path they mean in a form to rely on."""
        try:
            if not fs.exists(s):
                return LakekeeperError("fs_error", f"rename source {src} does not exist")
            if fs.exists(d):
                return LakekeeperError("fs_error", f"rename target {dst} already exists; refusing to move {src} "
                                                   f"into it")
            if not fs.exists(d.getParent()):
                return LakekeeperError("fs_error", f"rename target's parent {d.getParent().toString()} does not "
                                                   f"exist")
        except Exception:  # noqa: BLE001 - the filesystem's own message, at the caller
            pass
        return None

    def _file_context(self, uri: str) -> Any:
        plain = plain_uri(uri)
        known = self._fs_cache.get(f"fc:{plain[0]}") if plain is not None else None
        if known is not None:  # no gateway call for the common case
            return known
        p = self.fs(uri).makeQualified(self.path(uri)).toUri()
        key = f"fc:{p.getScheme()}://{p.getAuthority() or ''}"
        if key not in self._fs_cache:
            self._fs_cache[key] = java_class(self._jvm, "org.apache.hadoop.fs.FileContext").getFileContext(p, self._conf)
        return self._fs_cache[key]

    def _rename_is_atomic(self, uri: str, fc: Any) -> bool:
        """Whether ``fc.rename`` (``_file_context(uri)``, kept for the run in
        ``_fs_cache``) on ``uri``'s filesystem is HDFS's own: one NameNode
        RPC that has completed when it returns (see ``rename``). Decided
        once per filesystem from the Java classes doing it; anything
        unexpected: not trusted."""
        key = f"atomic_rename:{id(fc)}"  # fc is one object per filesystem, kept as long as the adapter
        if key not in self._fs_cache:
            try:
                classes = (str(self.fs(uri).getClass().getName()),
                           str(fc.getDefaultFileSystem().getClass().getName()))
            except Exception:  # noqa: BLE001 - not decidable: keep the checks
                classes = ("", "")
            self._fs_cache[key] = atomic_rename(*classes)
        return bool(self._fs_cache[key])

    def _rename_none(self) -> Any:
        if "rename_none" not in self._fs_cache:
            rename = java_class(self._jvm, "org.apache.hadoop.fs.Options$Rename")
            arr = self._spark.sparkContext._gateway.new_array(rename, 1)
            arr[0] = rename.NONE
            self._fs_cache["rename_none"] = arr
        return self._fs_cache["rename_none"]

    def copy_file(self, src: str, dst: str) -> dict[str, Any]:
        """Copy one file byte for byte (no decoding), keeping its block size
        and replication; ``dst`` must not exist. The bytes stream through
        this JVM once (read ``src``, write ``dst``) and are digested on the
        way. Returns ``{"length", "md5"}`` of what was read."""
        fs, s, d = self.fs(src), self.path(src), self.path(dst)
        st = fs.getFileStatus(s)
        digest = java_class(self._jvm, "java.security.MessageDigest").getInstance("MD5")
        stream = java_class(self._jvm, "java.security.DigestInputStream")(fs.open(s), digest)
        try:
            out = self.fs(dst).create(d, False, 1 << 16, st.getReplication(), st.getBlockSize())
        except Exception:
            stream.close()
            raise
        # copyBytes closes both streams, also when it fails
        java_class(self._jvm, "org.apache.hadoop.io.IOUtils").copyBytes(stream, out, 1 << 16, True)
        return {"length": int(self.fs(dst).getFileStatus(d).getLen()), "md5": bytes(digest.digest()).hex()}

    def md5(self, uri: str) -> str:
        """MD5 of a file's bytes, streamed through this JVM."""
        stream = self.fs(uri).open(self.path(uri))
        try:
            return str(java_class(self._jvm, "org.apache.commons.codec.digest.DigestUtils").md5Hex(stream))
        finally:
            stream.close()

    def file_checksum(self, uri: str) -> str | None:
        """The filesystem's own checksum of a file (HDFS: computed by the
        DataNodes from their stored CRCs, no data through this process), or
        None where there is none (the local filesystem)."""
        try:
            cs = self.fs(uri).getFileChecksum(self.path(uri))
        except Exception:  # noqa: BLE001 - e.g. a filesystem that does not implement it
            return None
        if cs is None:
            return None
        return f"{cs.getAlgorithmName()}:{bytes(cs.getBytes()).hex()}"

    def duplicate_file(self, src: str, dst: str) -> None:
        fs = self.fs(src)
        java_class(self._jvm, "org.apache.hadoop.fs.FileUtil").copy(fs, self.path(src), fs, self.path(dst), False, self._conf)

    # ------------------------------------------------------------ small files
    def write_text(self, uri: str, text: str) -> None:
        """Create a new file (fails if it exists), synced to disk."""
        local = self._local_path(uri)
        if local is not None:
            # file://: Hadoop's local filesystem starts a chmod process for every file it creates when its
            # native library is missing (pip's pyspark has none); the same file, made here: parents as
            # FileSystem.create makes them, the mode the umask gives, no checksum file (readers need none).
            create_local(local, text, 0o666)
            return
        log_file = HadoopAppendLog(self.fs(uri).create(self.path(uri), False))
        try:
            log_file.append(text)
        finally:
            log_file.close()

    def write_private(self, uri: str, text: str) -> None:
        """``text`` to ``uri`` readable by its owner only, whole or not at all (``write_private``)."""
        write_private(self._jvm, self.fs(uri), self.path(uri), text)

    def open_log(self, uri: str) -> AppendLog | None:
        """A new file (fails if it exists) kept open for records appended one
        after another, each synced before ``append`` returns (``hsync`` on
        HDFS: on the DataNodes' disks and visible to any reader). None on a
        filesystem whose streams cannot be synced (an object store): there
        every durable write has to be a file of its own."""
        local = self._local_path(uri)
        if local is not None:
            return LocalAppendLog(local)
        fs, path = self.fs(uri), self.path(uri)
        out = fs.create(path, False)
        try:
            syncs = bool(out.hasCapability("hsync"))
        except Exception:  # noqa: BLE001 - a client without StreamCapabilities: HDFS syncs, others are unknown
            syncs = self.scheme_of(fs) == "hdfs"
        if syncs:
            return HadoopAppendLog(out)
        out.close()
        fs.delete(path, False)
        return None

    def recover_lease(self, uri: str, timeout: float = 120.0) -> bool:
        """HDFS: close a file a writer that stopped left open (lease
        recovery: the NameNode settles its last block at the length the
        DataNodes hold, what was synced at least). True once it is closed;
        False on other filesystems or after ``timeout`` seconds."""
        fs = self.fs(uri)
        if self.scheme_of(fs) != "hdfs":
            return False
        path = self.path(uri)
        deadline = time.time() + timeout
        closed = bool(fs.recoverLease(path))
        while not closed and time.time() < deadline:
            time.sleep(0.5)
            closed = bool(fs.isFileClosed(path))
        return closed

    def create_new(self, uri: str, text: str) -> bool:
        """Create ``uri`` with ``text`` unless it exists, atomically: True
        when this call created it, False when it was there (or being
        created by another client)."""
        local = self._local_path(uri)
        if local is not None:
            for attempt in range(3):  # the directory may be removed (empty) by a run releasing its lease
                try:
                    create_local(local, text, 0o644)
                    return True
                except FileExistsError:
                    return False
                except FileNotFoundError:
                    if attempt == 2:
                        raise
        try:
            self.write_text(uri, text)
        except Exception as exc:  # noqa: BLE001 - Py4JJavaError carries the Java exception
            msg = java_message(exc) + " " + str(exc)[:2000]
            if "FileAlreadyExistsException" in msg or "AlreadyBeingCreatedException" in msg:
                return False
            raise
        return True

    @staticmethod
    def _local_path(uri: str) -> str | None:
        plain = plain_uri(uri)
        if plain is None or plain[0] != "file://":
            return None
        return plain[1][len("file:"):]

    def replace_text(self, uri: str, text: str) -> None:
        """Write ``uri`` whether or not it exists (a file only its writer
        writes: the lease's heartbeat). Its modification time is the
        filesystem's own clock (HDFS: the NameNode's, set at close), never
        the caller's."""
        local = self._local_path(uri)
        if local is not None:
            tmp = f"{local}.{os.getpid()}.{threading.get_ident()}.tmp"
            create_local(tmp, text, 0o644)
            os.replace(tmp, local)
            return
        log_file = HadoopAppendLog(self.fs(uri).create(self.path(uri), True))
        try:
            log_file.append(text)
        finally:
            log_file.close()

    def touch(self, uri: str, mtime_ms: int) -> None:
        """Set a file's modification time (the lease's heartbeat)."""
        self.fs(uri).setTimes(self.path(uri), int(mtime_ms), -1)

    def mtime(self, uri: str) -> int | None:
        """A file's modification time (ms), None when it does not exist.
        A plain local path is looked at by this process (no gateway call;
        a missing file costs no Java exception either: ``read_text``)."""
        local = self._local_path(uri)
        if local is not None:
            try:
                return os.stat(local).st_mtime_ns // 1_000_000  # what Hadoop's local filesystem reports
            except FileNotFoundError:
                return None
        fs, p = self.fs(uri), self.path(uri)
        try:
            return int(fs.getFileStatus(p).getModificationTime())
        except Exception as exc:  # noqa: BLE001
            if "FileNotFoundException" in java_message(exc) or not fs.exists(p):
                return None
            raise

    def delete_if_empty(self, uri: str) -> bool:
        """Remove a directory only if it is empty (never recursively, so a
        file created in it meanwhile survives)."""
        fs, p = self.fs(uri), self.path(uri)
        try:
            if not fs.exists(p) or fs.listStatus(p):
                return False
            return bool(fs.delete(p, False))
        except Exception:  # noqa: BLE001 - not empty any more, or gone: leave it
            return False

    def read_text(self, uri: str) -> str:
        """A small file's text. A plain local path is read by this process:
        no gateway call, and a missing file is a Python ``FileNotFoundError``
        instead of a Java exception, which PySpark's error handler inspects
        through about 80 gateway calls (the lease's checks read its file
        several times a partition)."""
        local = self._local_path(uri)
        if local is not None:
            with open(local, encoding="utf-8", newline="") as fh:  # the bytes as written, line ends too
                return fh.read()
        stream = self.fs(uri).open(self.path(uri))
        try:
            # byte[] returned by a JVM method arrives as Python bytes
            return bytes(java_class(self._jvm, "org.apache.commons.io.IOUtils").toByteArray(stream)).decode("utf-8")
        finally:
            stream.close()
