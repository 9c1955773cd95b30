"""The one adapter over the Hadoop FileSystem API (through Spark's JVM gateway).

The same calls serve ``hdfs://`` and ``file://``. Their rename semantics
differ (HDFS moves a directory *into* an existing target directory and
returns false for a missing source; the local filesystem replaces an empty
target and throws for a missing source), so ``rename`` here goes through
``FileContext.rename(src, dst, Options.Rename.NONE)``: on both it fails
(``FileAlreadyExistsException``) when the target exists, whatever it is,
instead of moving the source inside a directory re-created there, and it
fails for a missing source or target parent. The result is still checked
(source gone, target present).

``create_new`` is the atomic "create unless it exists" the lease needs
(HDFS: ``create(path, overwrite=false)``, decided by the NameNode; the local
filesystem's ``create`` checks and then opens, so plain local paths are
created with ``O_CREAT|O_EXCL`` instead).
"""

from __future__ import annotations

import logging
import os
import re
import stat
import threading
import time
from typing import Any, Iterable

from ..report.errors import LakekeeperError, java_message
from ..report.model import FileEntry, Listing
from .layout import is_hidden
from ..compat.jvm import java_class

log = logging.getLogger(__name__)

_STATUS = re.compile(
    r"\w+\{path=(?P<path>.*?); isDirectory=(?P<dir>true|false)"
    r"(?:; length=(?P<len>\d+)(?:; replication=(?P<repl>\d+))?)?.*?; modification_time=(?P<mtime>\d+)"
    r"(?:; access_time=\d+; owner=(?P<owner>[^;{}]*); group=(?P<group>[^;{}]*);)?"
)


def parse_status_dump(text: str, details: bool = False) -> list[tuple[Any, ...]] | None:
    """Parse ``ArrayUtils.toString(FileStatus[])`` (``{A{...},B{...}}``; the
    ``[A{...}, B{...}]`` form of ``Arrays.toString`` is accepted too).

    Returns (path, is_dir, length, mtime) tuples, or None when the text does not
    parse cleanly (the caller then falls back to per-field calls). With
    ``details`` each tuple also has (replication, owner, group) (None where
    the text does not say).
    """
    text = text.strip()
    if text in ("[]", "{}"):
        return []
    if not ((text.startswith("[") and text.endswith("}]")) or (text.startswith("{") and text.endswith("}}"))):
        return None
    out: list[tuple[Any, ...]] = []
    for m in _STATUS.finditer(text):
        entry: tuple[Any, ...] = (m.group("path"), m.group("dir") == "true", int(m.group("len") or 0),
                                  int(m.group("mtime")))
        if details:
            entry += (int(m.group("repl")) if m.group("repl") else None, m.group("owner"), m.group("group"))
        out.append(entry)
    # Every entry must have been recognised (one "{path=" per status).
    if len(out) != text.count("{path="):
        return None
    return out


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


_PLAIN = re.compile(r"^(?P<scheme>[a-z][a-z0-9+.-]*):(?://(?P<auth>[A-Za-z0-9.:_-]*))?(?P<path>(?:/[A-Za-z0-9_=+,.~@-]+)+)$")


def is_checksum_name(name: str) -> bool:
    """A checksum file of Hadoop's local filesystem (``.<name>.crc``), which
    it leaves out of every listing it gives."""
    return name.startswith(".") and name.endswith(".crc")


def _plain_uri(uri: str) -> tuple[str, str] | None:
    """(filesystem key, the URI as Hadoop qualifies it) for a fully qualified
    URI made only of unremarkable characters and segments, else None."""
    m = _PLAIN.match(uri)
    if not m or any(seg in (".", "..") for seg in m.group("path").split("/")):
        return None
    scheme, auth, path = m.group("scheme"), m.group("auth") or "", m.group("path")
    if scheme == "file":
        if auth:
            return None
        return "file://", "file:" + path
    if not auth:
        return None
    return f"{scheme}://{auth}", f"{scheme}://{auth}{path}"


class HadoopFS:
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
        plain = _plain_uri(uri)
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
        return str(self.fs(uri).getScheme())

    def qualify(self, uri: str) -> str:
        plain = _plain_uri(uri)
        if plain is not None and plain[0] in self._identity:  # no gateway call for the common case
            return plain[1]
        q = str(self.fs(uri).makeQualified(self.path(uri)).toString())
        if plain is not None and q == plain[1]:
            self._identity.add(plain[0])  # Hadoop spells this filesystem's plain URIs as we do
        return q

    def exists(self, uri: str) -> bool:
        return bool(self.fs(uri).exists(self.path(uri)))

    # ------------------------------------------------------------ listing
    def list_dir(self, uri: str) -> Listing:
        return self.list_dirs([uri])[uri]

    def list_dirs(self, uris: Iterable[str]) -> dict[str, Listing]:
        """Visible files and subdirectories of many directories, batched:
        one ``listStatus(Path[])`` per batch instead of one call per
        directory. Missing directories come back with ``exists=False``."""
        uris = list(dict.fromkeys(uris))
        out: dict[str, Listing] = {}
        by_fs: dict[str, list[str]] = {}
        for u in uris:  # one batch never mixes filesystems
            plain = _plain_uri(u)
            if plain is not None:
                key = plain[0]
            else:
                uri = self.path(u).toUri()
                key = f"{uri.getScheme()}://{uri.getAuthority() or ''}"
            by_fs.setdefault(key, []).append(u)
        batches = [group[i : i + self.BATCH] for group in by_fs.values() for i in range(0, len(group), self.BATCH)]

        def one(batch: list[str]) -> dict[str, Listing]:
            try:
                return self._list_batch(batch)
            except Exception as exc:  # a missing directory fails the whole batch
                if "FileNotFoundException" not in str(exc) and "does not exist" not in str(exc):
                    raise
                alone: dict[str, Listing] = {}
                for u in batch:
                    alone.update(self._list_batch([u], missing_ok=True))
                return alone

        # one NameNode call per directory: a few batches at once overlap their round trips
        for found in threaded(one, batches, self.LIST_THREADS):
            out.update(found)
        return out

    def _list_batch(self, uris: list[str], missing_ok: bool = False) -> dict[str, Listing]:
        fs = self.fs(uris[0])
        qualified = {self.qualify(u).rstrip("/"): u for u in uris}
        listings = {u: Listing(path=u) for u in uris}
        if missing_ok:
            for q, u in qualified.items():
                if not fs.exists(self.path(q)):
                    listings[u].exists = False
            uris = [u for u in uris if listings[u].exists]
            if not uris:
                return listings
        local = self._list_local(qualified)
        if local is not None:
            return {u: local[q] for q, u in qualified.items()}
        statuses = fs.listStatus(self._path_array(uris))
        entries = None
        remote = str(fs.getScheme()) != "file"
        if remote:
            # One round trip for the whole batch. Not on file://, where
            # toString() would load each file's owner and permission.
            dump = java_class(self._jvm, "org.apache.commons.lang3.ArrayUtils").toString(statuses)
            entries = parse_status_dump(dump, details=True)
        if entries is None:
            entries = []
            for st in statuses:
                entry = (str(st.getPath().toString()), bool(st.isDirectory()), int(st.getLen()),
                         int(st.getModificationTime()))
                if remote:  # owners and replication: what the HDFS pre-flight compares (hdfs_checks.py)
                    entry += (int(st.getReplication()), str(st.getOwner()), str(st.getGroup()))
                entries.append(entry)
        for path, is_dir, length, mtime, *more in entries:
            parent, _sep, name = path.rstrip("/").rpartition("/")
            u = qualified.get(parent)
            if u is None:  # e.g. file:/x vs file:///x spellings
                u = qualified.get(self.qualify(parent).rstrip("/"))
            if u is None:
                raise LakekeeperError("fs_error", f"unexpected entry {path} in batch listing")
            if is_hidden(name):
                if not is_dir:
                    listings[u].hidden_files.append(name)
                continue
            if is_dir:
                listings[u].subdirs.append(name)
            else:
                repl, owner, group = more if more else (None, None, None)
                listings[u].files.append(FileEntry(name=name, size=length, mtime=mtime, replication=repl,
                                                   owner=owner, group=group))
        return listings

    @staticmethod
    def _list_local(qualified: dict[str, str]) -> dict[str, Listing] | None:
        """file:// directories listed by the operating system (what Hadoop's
        local filesystem does underneath, without a gateway call per file
        entry); None when a directory is not a plain local one."""
        out = {}
        for q in qualified:
            if not q.startswith("file:/") or _plain_uri(q) is None or not os.path.isdir(q[5:]):
                return None
            listing = Listing(path=qualified[q])
            with os.scandir(q[5:]) as it:
                for entry in it:
                    if is_hidden(entry.name):
                        if not entry.is_dir(follow_symlinks=True):
                            listing.hidden_files.append(entry.name)
                        continue
                    st = entry.stat(follow_symlinks=True)
                    if entry.is_dir(follow_symlinks=True):
                        listing.subdirs.append(entry.name)
                    else:
                        listing.files.append(FileEntry(name=entry.name, size=st.st_size,
                                                       mtime=int(st.st_mtime_ns // 1_000_000)))
            out[q] = listing
        return out

    def list_names(self, uri: str) -> list[tuple[str, bool]]:
        """All entries (hidden included) of a directory: (name, is_dir); none
        when it does not exist. A table root can hold 100,000 partition
        directories: one gateway round trip for them all (the statuses
        rendered as text), the operating system's listing on ``file://``."""
        local = self._local_path(self.qualify(uri).rstrip("/"))
        if local is not None:
            try:
                with os.scandir(local) as it:
                    return [(e.name, e.is_dir(follow_symlinks=True)) for e in it if not is_checksum_name(e.name)]
            except FileNotFoundError:
                return []
            except NotADirectoryError:  # a file: itself, as Hadoop's listStatus answers
                return [(os.path.basename(local), False)]
        fs = self.fs(uri)
        p = self.path(uri)
        if not fs.exists(p):
            return []
        statuses = fs.listStatus(p)
        dump = java_class(self._jvm, "org.apache.commons.lang3.ArrayUtils").toString(statuses)
        entries = parse_status_dump(dump)
        if entries is None:  # a name the text cannot carry unambiguously: field by field
            return [(str(st.getPath().getName()), bool(st.isDirectory())) for st in statuses]
        return [(path.rstrip("/").rpartition("/")[2], is_dir) for path, is_dir, *_rest in entries]

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
        atomically; on ``file://`` in the client, as ours would). Then it is
        checked, since a rename is never trusted: the source gone, the
        target there. Three calls; the reason for a refusal is looked up
        only when there is one."""
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
            try:
                self._file_context(src).rename(s, d, self._rename_none())
            except Exception as exc:  # noqa: BLE001 - Py4JJavaError carries the Java exception
                raise (self._rename_obstacle(fs, src, dst, s, d)
                       or LakekeeperError("fs_error", f"rename {src} -> {dst} failed: {java_message(exc)}")) from exc
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
        p = self.fs(uri).makeQualified(self.path(uri)).toUri()
        key = f"fc:{p.getScheme()}://{p.getAuthority() or ''}"
        if key not in self._fs_cache:
            self._fs_cache[key] = java_class(self._jvm, "org.apache.hadoop.fs.FileContext").getFileContext(p, self._conf)
        return self._fs_cache[key]

    def _rename_none(self) -> Any:
        if "rename_none" not in self._fs_cache:
            rename = java_class(self._jvm, "org.apache.hadoop.fs.Options$Rename")
            arr = self._spark.sparkContext._gateway.new_array(rename, 1)
            arr[0] = rename.NONE
            self._fs_cache["rename_none"] = arr
        return self._fs_cache["rename_none"]

    def copy_permissions(self, src: str, dst: str, recursive_files: bool = True, keep_owner: bool = True) -> list[str]:
        """Give ``dst`` (and its files) the owner, group and mode of ``src``
        (and its first file), and the directory's ACL and quotas (see
        ``copy_dir_attributes``). Returns warnings for what the filesystem
        refused. ``keep_owner=False``: the owner and group are left as this
        run wrote them (the HDFS pre-flight found it cannot change them and
        ``allow_owner_change`` let the unit go on; its warning says so)."""
        local_src, local_dst = self._local_path(src), self._local_path(dst)
        if local_src is not None and local_dst is not None:
            return self._copy_local_permissions(local_src, local_dst, recursive_files, keep_owner)
        warnings: list[str] = self.copy_dir_attributes(src, dst)
        fs = self.fs(src)
        st = fs.getFileStatus(self.path(src))
        dst_path = self.path(dst)
        targets = [(dst_path, fs.getFileStatus(dst_path), st)]  # (path, its status now, the status to give it)
        if recursive_files:
            fst = None  # the first file of src: stop there (one gateway call per entry looked at)
            it = fs.listStatusIterator(self.path(src))
            while fst is None and it.hasNext():
                x = it.next()
                if not x.isDirectory():
                    fst = x
            if fst is not None:
                for x in fs.listStatus(dst_path):
                    if not x.isDirectory():
                        targets.append((x.getPath(), x, fst))
        # Only what differs is changed: every setPermission or setOwner is a NameNode edit (a journal
        # transaction on an HA cluster), and a copy written with the usual umask mostly has the mode already.
        wanted: dict[int, tuple[int, str, str]] = {}  # by the reference status's identity: read once
        for path, cur, ref in targets:
            if id(ref) not in wanted:
                wanted[id(ref)] = (int(ref.getPermission().toShort()), str(ref.getOwner()), str(ref.getGroup()))
            mode, owner, group = wanted[id(ref)]
            if int(cur.getPermission().toShort()) != mode:
                try:
                    fs.setPermission(path, ref.getPermission())
                except Exception as exc:  # noqa: BLE001
                    warnings.append(f"setPermission {path.toString()}: {java_message(exc)}")
            if not keep_owner:
                continue
            if str(cur.getOwner()) != owner or str(cur.getGroup()) != group:
                try:
                    fs.setOwner(path, ref.getOwner(), ref.getGroup())
                except Exception as exc:  # noqa: BLE001
                    warnings.append(f"setOwner {path.toString()}: {java_message(exc)}")
        return warnings

    @staticmethod
    def _copy_local_permissions(src: str, dst: str, recursive_files: bool, keep_owner: bool) -> list[str]:
        """``copy_permissions`` on ``file://``, with the same targets and
        warnings. Hadoop's local filesystem starts an ``ls``, ``chmod`` or
        ``chown`` process for each status, mode and owner when its native
        library is missing (pip's pyspark has none); the same calls, made here."""
        warnings: list[str] = []
        ref_dir = os.stat(src)
        targets = [(dst, ref_dir)]
        if recursive_files:
            with os.scandir(src) as it:  # the first data file of src, as the listing gives it
                first = next((e for e in it if not e.is_dir(follow_symlinks=False) and not is_checksum_name(e.name)),
                             None)
            if first is not None:
                ref_file = os.stat(first.path)
                with os.scandir(dst) as it:
                    targets += [(e.path, ref_file) for e in it if not e.is_dir(follow_symlinks=False)]
        for path, ref in targets:
            try:
                os.chmod(path, stat.S_IMODE(ref.st_mode))
            except OSError as exc:
                warnings.append(f"setPermission file:{path}: {exc}")
            if not keep_owner:
                continue
            cur = os.stat(path)
            if (cur.st_uid, cur.st_gid) != (ref.st_uid, ref.st_gid):
                try:
                    os.chown(path, ref.st_uid, ref.st_gid)
                except OSError as exc:
                    warnings.append(f"setOwner file:{path}: {exc}")
        return warnings

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
            _create_local(local, text, 0o666)
            return
        log_file = HadoopAppendLog(self.fs(uri).create(self.path(uri), False))
        try:
            log_file.append(text)
        finally:
            log_file.close()

    def open_log(self, uri: str) -> "AppendLog | None":
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
            syncs = str(fs.getScheme()) == "hdfs"
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
        if str(fs.getScheme()) != "hdfs":
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
                    _create_local(local, text, 0o644)
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
        plain = _plain_uri(uri)
        if plain is None or plain[0] != "file://":
            return None
        return plain[1][len("file:"):]

    def touch(self, uri: str, mtime_ms: int) -> None:
        """Set a file's modification time (the lease's heartbeat)."""
        self.fs(uri).setTimes(self.path(uri), int(mtime_ms), -1)

    def mtime(self, uri: str) -> int | None:
        """A file's modification time (ms), None when it does not exist."""
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
        stream = self.fs(uri).open(self.path(uri))
        try:
            # byte[] returned by a JVM method arrives as Python bytes
            return bytes(java_class(self._jvm, "org.apache.commons.io.IOUtils").toByteArray(stream)).decode("utf-8")
        finally:
            stream.close()

    # ------------------------------------------------------------ space
    def content_summary(self, uri: str) -> dict[str, int]:
        cs = self.fs(uri).getContentSummary(self.path(uri))
        return {
            "length": int(cs.getLength()),
            "file_count": int(cs.getFileCount()),
            "directory_count": int(cs.getDirectoryCount()),
            "quota": int(cs.getQuota()),
            "space_consumed": int(cs.getSpaceConsumed()),
            "space_quota": int(cs.getSpaceQuota()),
        }

    def quota_usage(self, uri: str) -> dict[str, Any]:
        """Namespace and space quota of a directory and what counts against
        them. ``getQuotaUsage`` is cheap on the NameNode; Hadoop 2.7 lacks it,
        then the content summary gives the same figures (a Hadoop 3 client
        falls back to it by itself). A content summary walks everything below
        the directory, and the NameNode gives it only to a user who may read
        all of that: on a real cluster hardly anyone for ``/``. Then the quota
        is unknown: -1 figures and ``unknown`` (the NameNode's refusal)."""
        fs, p = self.fs(uri), self.path(uri)
        try:
            try:
                q = fs.getQuotaUsage(p)
                return {
                    "quota": int(q.getQuota()),
                    "namespace_used": int(q.getFileAndDirectoryCount()),
                    "space_quota": int(q.getSpaceQuota()),
                    "space_consumed": int(q.getSpaceConsumed()),
                }
            except Exception as exc:  # noqa: BLE001 - older clients or NameNodes: no getQuotaUsage
                if _access_denied(exc):
                    raise
            cs = self.content_summary(uri)
        except Exception as exc:  # noqa: BLE001
            if not _access_denied(exc):
                raise
            return {"quota": -1, "namespace_used": -1, "space_quota": -1, "space_consumed": -1,
                    "unknown": " ".join(java_message(exc).split())[:300]}
        return {
            "quota": cs["quota"],
            "namespace_used": cs["file_count"] + cs["directory_count"],
            "space_quota": cs["space_quota"],
            "space_consumed": cs["space_consumed"],
        }

    def fs_status(self, uri: str) -> dict[str, int]:
        st = self.fs(uri).getStatus(self.path(uri))
        return {"capacity": int(st.getCapacity()), "used": int(st.getUsed()), "remaining": int(st.getRemaining())}

    def replication(self, uri: str) -> int:
        return int(self.fs(uri).getDefaultReplication(self.path(uri)))

    def block_size(self, uri: str) -> int:
        return int(self.fs(uri).getDefaultBlockSize(self.path(uri)))

    def copy_dir_attributes(self, src: str, dst: str) -> list[str]:
        """What lives on a directory's inode and would stay behind with the
        moved-aside original: its ACL and its quotas (HDFS). Best effort on
        filesystems without them; returns warnings."""
        warnings: list[str] = []
        fs, s, d = self.fs(src), self.path(src), self.path(dst)
        if str(fs.getScheme()) != "hdfs":
            return warnings
        plain = _plain_uri(src)
        key = plain[0] if plain is not None else None
        if key not in self._no_acls:  # asked once a run: the refusal is an exception, about 30 ms through the gateway
            try:
                acl = fs.getAclStatus(s)
                entries = acl.getEntries()
                if entries.size():
                    fs.setAcl(d, entries)
            except Exception as exc:  # noqa: BLE001 - ACLs disabled on the NameNode
                if "AclException" not in str(exc) and "disabled" not in str(exc):
                    warnings.append(f"ACL of {src}: {java_message(exc)}")
                elif key is not None and "disabled" in str(exc):
                    self._no_acls.add(key)  # no directory there can have an ACL to lose
        q = self.quota_usage(src)
        if q.get("unknown"):
            warnings.append(f"quota of {src} not readable, not copied to {dst}: {q['unknown']}")
        elif q["quota"] >= 0 or q["space_quota"] >= 0:
            try:
                fs.setQuota(d, q["quota"], q["space_quota"])
            except Exception as exc:  # noqa: BLE001 - needs superuser
                warnings.append(f"quota of {src} not copied to {dst}: {java_message(exc)}")
        return warnings

    # ------------------------------------------------------------ HDFS attributes (hdfs_checks.py)
    # What lives on an HDFS directory's inode or is the NameNode's state of a
    # file. Called for hdfs:// units only, one NameNode call each.

    @staticmethod
    def is_hdfs(uri: str) -> bool:
        return uri.startswith("hdfs://")

    def current_user(self) -> str:
        return str(java_class(self._jvm, "org.apache.hadoop.security.UserGroupInformation").getCurrentUser().getShortUserName())

    def dir_facts(self, uri: str) -> dict[str, Any]:
        """One ``getFileStatus``: owner, group, whether the directory is in an
        encryption zone or erasure coded, and its effective storage policy id
        (inherited from its ancestors; 0: none set anywhere; None: unknown)."""
        fs, p = self.fs(uri), self.path(uri)
        st = fs.getFileStatus(p)
        try:  # Hadoop 3 clients: the status is an HdfsFileStatus
            policy: int | None = int(st.getStoragePolicy())
        except Exception:  # noqa: BLE001 - py4j: no such method on this client's status class
            try:
                policy = int(fs.getClient().getFileInfo(p.toUri().getPath()).getStoragePolicy())
            except Exception:  # noqa: BLE001
                policy = None
        return {"owner": str(st.getOwner()), "group": str(st.getGroup()), "encrypted": bool(st.isEncrypted()),
                "erasure_coded": bool(st.isErasureCoded()), "storage_policy": policy}

    def storage_policy_names(self, uri: str) -> dict[int, str]:
        """Storage policy id -> name (``getAllStoragePolicies``, Hadoop 2.7 and later), once per filesystem."""
        key = "policies:" + str(self.fs(uri).getUri().toString())
        if key not in self._fs_cache:
            self._fs_cache[key] = {int(x.getId()): str(x.getName()) for x in self.fs(uri).getAllStoragePolicies()}
        return self._fs_cache[key]

    def encryption_zone(self, uri: str) -> str | None:
        """The root path (``/a/b``) of the encryption zone ``uri`` is in, or None."""
        zone = self.fs(uri).getEZForPath(self.path(uri))
        if zone is None:
            return None
        return str(zone.getPath()).rstrip("/") or "/"

    def erasure_coding_policy(self, uri: str) -> str | None:
        """The effective erasure coding policy's name, None when replicated. A
        NameNode without erasure coding (Hadoop 2) answers "Unknown method":
        nothing there is erasure coded."""
        try:
            pol = self.fs(uri).getErasureCodingPolicy(self.path(uri))
        except Exception as exc:  # noqa: BLE001
            text = java_message(exc) + " " + str(exc)[:2000]
            if "Unknown method getErasureCodingPolicy" in text:
                return None
            raise
        return str(pol.getName()) if pol is not None else None

    def is_snapshottable(self, uri: str) -> bool:
        """Whether snapshots are allowed on the directory (``hdfs dfsadmin
        -allowSnapshot``): its ``.snapshot`` exists. Works for any user on
        Hadoop 2.7 and 3 (the snapshottable listing shows a user only the
        directories it owns). ``exists`` answers inside the JVM: a missing
        path raised through the gateway cost 49 ms, ``exists`` 3 ms (test bed)."""
        return bool(self.fs(uri).exists(self.path(uri.rstrip("/") + "/.snapshot")))

    def xattrs(self, uri: str) -> dict[str, bytes]:
        """The extended attributes this user can read (``user.*``; ``trusted.*``
        for the superuser); {} where the NameNode has them disabled."""
        try:
            got = self.fs(uri).getXAttrs(self.path(uri))
        except Exception as exc:  # noqa: BLE001
            if "disabled" in java_message(exc).lower():
                return {}
            raise
        if not int(got.size()):  # the common case; walking an empty map through the gateway took 36 ms
            return {}
        return {str(k): bytes(got.get(k)) for k in list(got.keySet().toArray())}

    def open_files(self, names: dict[str, list[str]], threads: int = 8) -> dict[str, list[str]]:
        """For each directory (``{uri: [file name, ...]}``), the files a writer
        still holds open (``isFileClosed`` false: under construction on the
        NameNode, their length and time not final). One NameNode call per
        file, on up to ``threads`` threads, through the HDFS client with the
        path as a string (one gateway call each; else through the FileSystem
        with a Path, two). A file gone meanwhile is not open (the listing
        checks see it)."""
        calls: dict[str, Any] = {}
        for uri in names:
            fs = self.fs(uri)
            try:
                client, base = fs.getClient(), str(self.path(uri).toUri().getPath()).rstrip("/")
                calls[uri] = (lambda name, c=client, b=base: c.isFileClosed(f"{b}/{name}"))
            except Exception:  # noqa: BLE001 - not a DistributedFileSystem underneath
                calls[uri] = (lambda name, f=fs, u=uri.rstrip("/"): f.isFileClosed(self.path(f"{u}/{name}")))
        pairs = [(uri, name) for uri, files in names.items() for name in files]

        def closed(pair: tuple[str, str]) -> bool:
            uri, name = pair
            try:
                return bool(calls[uri](name))
            except Exception as exc:  # noqa: BLE001
                if "FileNotFoundException" in java_message(exc) + " " + str(exc)[:2000]:
                    return True
                raise

        out: dict[str, list[str]] = {uri: [] for uri in names}
        for (uri, name), ok in zip(pairs, threaded(closed, pairs, threads)):
            if not ok:
                out[uri].append(name)
        return out

    def set_storage_policy(self, uri: str, name: str) -> None:
        self.fs(uri).setStoragePolicy(self.path(uri), name)

    def set_xattr(self, uri: str, name: str, value: bytes) -> None:
        self.fs(uri).setXAttr(self.path(uri), name, bytearray(value))

    def set_replication(self, uri: str, replication: int) -> None:
        if not self.fs(uri).setReplication(self.path(uri), int(replication)):
            raise LakekeeperError("fs_error", f"could not set the replication of {uri} to {replication}")

    def replication_of(self, uri: str) -> int:
        return int(self.fs(uri).getFileStatus(self.path(uri)).getReplication())

    def owner_probe(self, probe: str, targets: list[tuple[str, str]]) -> dict[tuple[str, str], str | None]:
        """Whether this run may give its files each (owner, group) of
        ``targets``, tried for real: ``probe`` (a new, empty file this creates
        and removes) is given each in turn. None where it worked, else the
        NameNode's refusal (``AccessControlException``: not the superuser, not
        a member of the group)."""
        fs, p = self.fs(probe), self.path(probe)
        fs.create(p, False).close()
        out: dict[tuple[str, str], str | None] = {}
        try:
            for owner, group in targets:
                try:
                    fs.setOwner(p, owner, group)
                    out[(owner, group)] = None
                except Exception as exc:  # noqa: BLE001
                    text = java_message(exc)
                    if not _access_denied(exc):
                        raise
                    out[(owner, group)] = text
        finally:
            fs.delete(p, False)
        return out


def _access_denied(exc: Exception) -> bool:
    """The NameNode refused this user (``AccessControlException``)."""
    return "AccessControlException" in java_message(exc) + " " + str(exc)[:2000]


class AppendLog:
    """A file open for appending records (``HadoopFS.open_log``)."""

    def append(self, text: str) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class LocalAppendLog(AppendLog):
    """``file://``: appended with ``write`` and synced with ``fsync``."""

    def __init__(self, path: str, mode: int = 0o666):
        self._fd: int | None = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_APPEND, mode)

    def append(self, text: str) -> None:
        if self._fd is None:
            raise ValueError("append to a closed log")
        data = memoryview(text.encode("utf-8"))
        while data:
            data = data[os.write(self._fd, data):]
        os.fsync(self._fd)

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)


class HadoopAppendLog(AppendLog):
    """A Hadoop output stream: ``write`` then ``hsync``."""

    def __init__(self, out: Any):
        self._out = out

    def append(self, text: str) -> None:
        if self._out is None:
            raise ValueError("append to a closed log")
        self._out.write(bytearray(text.encode("utf-8")))
        self._out.hsync()

    def close(self) -> None:
        if self._out is not None:
            out, self._out = self._out, None
            out.close()


def _create_local(path: str, text: str, mode: int) -> None:
    """A new local file (``FileExistsError`` if there is one) with ``text``,
    synced to disk; its parent directories made as needed."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    log_file = LocalAppendLog(path, mode)
    try:
        log_file.append(text)
    finally:
        log_file.close()


# One pool of threads for the NameNode calls of every ``threaded`` in the process, kept: a Python thread
# that calls into the JVM opens its own gateway connection (and the JVM a thread for it) the first time,
# which made a pool started per call about 3-5 ms dearer than the calls it ran (4 short calls, local).
POOL_THREADS = 8
_pool: Any = None
_pool_lock = threading.Lock()
_worker = threading.local()


def _shared_pool() -> Any:
    global _pool  # noqa: PLW0603 - created on first use, kept for the process
    with _pool_lock:
        if _pool is None:
            from concurrent.futures import ThreadPoolExecutor

            _pool = ThreadPoolExecutor(max_workers=POOL_THREADS, thread_name_prefix="lakekeeper-nn",
                                       initializer=lambda: setattr(_worker, "in_pool", True))
        return _pool


def threaded(fn: Any, items: list[Any], limit: int = 8) -> list[Any]:
    """``fn`` over ``items`` on up to ``limit`` threads of the shared pool
    (each NameNode call a gateway round trip: many of them overlap); results
    in order. Returns once every call has ended; the first error, in order,
    is raised. Called from one of the pool's own threads it runs in that
    thread (a pool waiting on itself could wait for ever)."""
    if len(items) <= 1 or limit <= 1 or getattr(_worker, "in_pool", False):
        return [fn(x) for x in items]
    from concurrent.futures import wait

    k = min(limit, len(items), POOL_THREADS)
    groups = [list(range(i, len(items), k)) for i in range(k)]

    def run(indexes: list[int]) -> list[tuple[int, Any]]:
        return [(i, fn(items[i])) for i in indexes]

    futures = [_shared_pool().submit(run, g) for g in groups]
    wait(futures)
    out: list[Any] = [None] * len(items)
    for f in futures:
        for i, r in f.result():  # raises the group's error
            out[i] = r
    return out
