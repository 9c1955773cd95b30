"""What lives on a file or directory beside its bytes, through the adapter
(``HadoopFS``'s attribute calls): owner, group and mode copied to a copy;
space (content summary, quotas, replication, block size); a directory's
ACL, quotas, storage policy, encryption zone, erasure coding, snapshots,
extended attributes; files open for write; what this user may do
(``owner_probe``). The checks that decide from them: hdfs_checks.py."""

from __future__ import annotations

import logging
import os
import stat
from typing import Any

from ..report.errors import LakekeeperError, java_message
from ..compat.jvm import java_class
from .status import is_checksum_name, parse_attributes, plain_uri
from .threads import threaded

log = logging.getLogger(__name__)

# The name of HDFS's replication "erasure coding policy" (ErasureCodeConstants.REPLICATION_POLICY_NAME,
# Hadoop 3): given to a directory, the files created in it are replicated whatever its parent's policy.
REPLICATION_POLICY = "replication"


class Attributes:
    """The permission, space and HDFS-attribute calls of ``HadoopFS``
    (fs.py), which this is a base of."""

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
        fs = self.fs(src)
        src_path, dst_path = self.path(src), self.path(dst)
        warnings: list[str] = self.copy_dir_attributes(src, dst, src_path, dst_path)
        targets = self._permission_targets(fs, src_path, dst_path, recursive_files)
        if targets is None:  # a status whose text does not parse: field by field
            return warnings + self._copy_permissions_by_fields(fs, src_path, dst_path, recursive_files, keep_owner)
        # Only what differs is changed: every setPermission or setOwner is a NameNode edit (a journal
        # transaction on an HA cluster), and a copy written with the usual umask mostly has the mode already.
        perm = None
        for name, (mode, owner, group), (want_mode, want_owner, want_group) in targets:
            path = dst_path if name is None else self.path(name)  # None: dst itself
            if mode != want_mode:
                perm = perm or java_class(self._jvm, "org.apache.hadoop.fs.permission.FsPermission")
                try:
                    fs.setPermission(path, perm.createImmutable(want_mode))
                except Exception as exc:  # noqa: BLE001
                    warnings.append(f"setPermission {name or dst}: {java_message(exc)}")
            if keep_owner and (owner, group) != (want_owner, want_group):
                try:
                    fs.setOwner(path, want_owner, want_group)
                except Exception as exc:  # noqa: BLE001
                    warnings.append(f"setOwner {name or dst}: {java_message(exc)}")
        return warnings

    def _permission_targets(self, fs: Any, src_path: Any, dst_path: Any, recursive_files: bool) -> list[Any] | None:
        """(name, (mode, owner, group) now, (mode, owner, group) to give it)
        for ``dst`` (name None; from ``src``) and each of its files (their
        paths; from ``src``'s first file), read from the statuses' text: a
        status and a listing are one call each, not four per entry. None when
        a text does not parse."""
        got = parse_attributes(str(fs.getFileStatus(src_path).toString()))
        now = parse_attributes(str(fs.getFileStatus(dst_path).toString()))
        if not got or not now:
            return None
        targets: list[Any] = [(None, now[0][2:], got[0][2:])]
        if not recursive_files:
            return targets
        first = None  # the first file of src: stop there (one gateway call per entry looked at)
        it = fs.listStatusIterator(src_path)
        while first is None and it.hasNext():
            entry = parse_attributes(str(it.next().toString()))
            if not entry:
                return None
            if not entry[0][1]:
                first = entry[0]
        if first is None:
            return targets
        files = parse_attributes(self._statuses_text(fs.listStatus(dst_path)))
        if files is None:
            return None
        targets += [(path, (mode, owner, group), first[2:]) for path, is_dir, mode, owner, group in files if not is_dir]
        return targets

    @staticmethod
    def _copy_permissions_by_fields(fs: Any, src_path: Any, dst_path: Any, recursive_files: bool,
                                    keep_owner: bool) -> list[str]:
        """``copy_permissions`` asking each status for its fields (a status
        text that ``parse_attributes`` does not read)."""
        warnings: list[str] = []
        st = fs.getFileStatus(src_path)
        targets = [(dst_path, fs.getFileStatus(dst_path), st)]  # (path, its status now, the status to give it)
        if recursive_files:
            fst = None  # the first file of src: stop there (one gateway call per entry looked at)
            it = fs.listStatusIterator(src_path)
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

    def quota_limits(self, uri: str, path: Any = None) -> dict[str, Any]:
        """A directory's namespace and space quotas alone (``quota``,
        ``space_quota``: -1 for none), what a copy of it is given: two fields
        of ``getQuotaUsage`` where ``quota_usage`` reads four; its answer
        (and its fallbacks) otherwise."""
        try:
            q = self.fs(uri).getQuotaUsage(self.path(uri) if path is None else path)
            return {"quota": int(q.getQuota()), "space_quota": int(q.getSpaceQuota())}
        except Exception:  # noqa: BLE001 - Hadoop 2.7, or a refusal: quota_usage says which
            return self.quota_usage(uri)

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

    def copy_dir_attributes(self, src: str, dst: str, src_path: Any = None, dst_path: Any = None) -> list[str]:
        """What lives on a directory's inode and would stay behind with the
        moved-aside original: its ACL and its quotas (HDFS). Best effort on
        filesystems without them; returns warnings. ``src_path``,
        ``dst_path``: their Hadoop paths, when the caller has them."""
        warnings: list[str] = []
        fs = self.fs(src)
        if self.scheme_of(fs) != "hdfs":
            return warnings
        s = self.path(src) if src_path is None else src_path
        d = self.path(dst) if dst_path is None else dst_path
        plain = plain_uri(src)
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
        q = self.quota_limits(src, s)
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

    def enabled_erasure_coding_policies(self, uri: str) -> set[str]:
        """The names of the erasure coding policies enabled on the NameNode
        (``getAllErasureCodingPolicies``, state ENABLED), once per
        filesystem (read from ``erasure_coding_policy_states``, one NameNode call
        for both): the ones a directory can be given; none on a NameNode
        without erasure coding."""
        states = self.erasure_coding_policy_states(uri)
        return {name for name, state in (states or {}).items() if state == "ENABLED"}

    def erasure_coding_policy_states(self, uri: str) -> dict[str, str] | None:
        """Every erasure coding policy the NameNode knows -> its state
        (ENABLED, DISABLED, REMOVED), once per filesystem; None for a NameNode
        (or client) without erasure coding (Hadoop 2: "Unknown method")."""
        key = "ec_states:" + str(self.fs(uri).getUri().toString())
        if key not in self._fs_cache:
            try:
                got = self.fs(uri).getAllErasureCodingPolicies()
            except Exception as exc:  # noqa: BLE001
                text = java_message(exc) + " " + str(exc)[:2000]
                if "Unknown method" in text or "getAllErasureCodingPolicies" in text:
                    self._fs_cache[key] = None
                    return None
                raise
            self._fs_cache[key] = {str(i.getPolicy().getName()): str(i.getState()) for i in got}
        return self._fs_cache[key]

    def storage_policy_of(self, uri: str) -> str | None:
        """The effective storage policy's name of a file or directory (its
        own, else inherited; ``getStoragePolicy``, Hadoop 2.8+; on a Hadoop
        2.7 NameNode, which answers "Unknown method", the id its status
        carries, as ``dir_facts``); None where the filesystem has none."""
        try:
            pol = self.fs(uri).getStoragePolicy(self.path(uri))
        except Exception as exc:  # noqa: BLE001
            text = java_message(exc) + " " + str(exc)[:2000]
            if "UnsupportedOperationException" in text:
                return None
            if "Unknown method" not in text:
                raise
            fs, p = self.fs(uri), self.path(uri)
            policy = int(fs.getClient().getFileInfo(p.toUri().getPath()).getStoragePolicy())
            return self.storage_policy_names(uri).get(policy)
        return str(pol.getName()) if pol is not None else None

    def set_erasure_coding_policy(self, uri: str, name: str | None) -> None:
        """Give a directory an erasure coding policy for the files created in
        it from now on (files keep theirs, also when renamed); None: the
        replication policy (``"replication"``), which a directory under an
        erasure coded parent needs to have replicated files."""
        self.fs(uri).setErasureCodingPolicy(self.path(uri), name or REPLICATION_POLICY)

    def replicate_new_files(self, uri: str) -> bool:
        """Make the files created in an HDFS directory from now on replicated
        where it is erasure coded (its own policy or inherited): an erasure
        coded file's stream (``DFSStripedOutputStream``) cannot be synced
        (``hsync`` does nothing, a reader sees none of it before ``close``).
        True when the policy was set; one ``getFileStatus`` otherwise. Not on
        HDFS, or a client without erasure coding (Hadoop 2): False."""
        if not self.is_hdfs(uri):
            return False
        fs, p = self.fs(uri), self.path(uri)
        st = fs.getFileStatus(p)
        try:
            coded = bool(st.isErasureCoded())
        except Exception:  # noqa: BLE001 - py4j: a Hadoop 2 client's status has no such method
            return False
        if not coded:
            return False
        fs.setErasureCodingPolicy(p, REPLICATION_POLICY)
        return True

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
        still holds open (under construction on the NameNode: their length
        and time not final). A file gone meanwhile is not open (the listing
        checks see it).

        On HDFS itself (``DistributedFileSystem``) one located listing of the
        directory (``listLocatedStatus``: the NameNode sends each file's
        blocks with its under-construction state, ``dfs.ls.limit`` entries
        per RPC) answers for all of its files, read in the JVM
        (``_under_construction``); the directories on up to ``threads``
        threads. Where that listing does not say it for a file (no located
        blocks in its status), on other filesystems and on a client that
        cannot read it, ``isFileClosed``: one NameNode call per file, through
        the HDFS client with the path as a string (one gateway call each;
        else through the FileSystem with a Path, two)."""
        out: dict[str, list[str]] = {uri: [] for uri in names}
        asked = [uri for uri, files in names.items() if files]
        listed = threaded(self._under_construction, asked, threads)
        rest: dict[str, list[str]] = {}
        for uri, flags in zip(asked, listed):
            held, unknown = open_by_listing(names[uri], flags)
            out[uri].extend(held)
            if unknown:
                rest[uri] = unknown
        for uri, held in (self._open_by_file(rest, threads) if rest else {}).items():
            out[uri] = [n for n in names[uri] if n in set(out[uri]) | set(held)]  # in the order asked
        return out

    def _under_construction(self, uri: str) -> dict[str, bool | None] | None:
        """Each entry of an HDFS directory -> whether it is under construction
        (a file open for write), from one located listing; None for an entry
        whose status carries no located blocks (a directory). {} when the
        directory is gone. None (ask each file) where the filesystem is not
        ``DistributedFileSystem`` or the listing's statuses do not carry it:
        a Hadoop 2 client, or any error but the directory's absence.

        A few gateway calls for the whole directory, whatever its size: the
        statuses are gathered in the JVM, and their names (joined by NUL,
        which no name holds) and their blocks' state are read there
        (commons-collections' transformers, by method name), short texts:
        a gateway answer of more than about 8 KB (the statuses' own text for
        a few dozen files) waits 40 ms for the loopback's delayed ACK."""
        fs = self.fs(uri)
        if self._fs_class(uri) != "org.apache.hadoop.hdfs.DistributedFileSystem":
            return None
        try:
            to_list, join, collect = self._static_methods()
            statuses = to_list(fs.listLocatedStatus(self.path(uri)))
            names = str(join("\u0000", collect(statuses, self._transformer("name", "getPath", "getName"))))
            flags = str(collect(statuses, self._transformer("uc", "getLocatedBlocks", "isUnderConstruction")).toString())
        except Exception as exc:  # noqa: BLE001 - Py4JJavaError carries the Java exception
            if "FileNotFoundException" in java_message(exc) + " " + str(exc)[:2000]:
                return {}
            log.debug("no located listing of %s (%s): isFileClosed per file", uri, java_message(exc))
            return None
        return located_flags(names.split("\u0000") if names else [], flags)

    def _static_methods(self) -> tuple[Any, Any, Any]:
        """``RemoteIterators.toList``, ``String.join``, ``CollectionUtils.collect``,
        looked up once per adapter (py4j asks the JVM for a static member each
        time it is named)."""
        if "located_statics" not in self._fs_cache:
            self._fs_cache["located_statics"] = (
                java_class(self._jvm, "org.apache.hadoop.util.functional.RemoteIterators").toList,
                java_class(self._jvm, "java.lang.String").join,
                java_class(self._jvm, "org.apache.commons.collections4.CollectionUtils").collect)
        return self._fs_cache["located_statics"]

    def _transformer(self, name: str, *methods: str) -> Any:
        """x -> ``x.m1().m2()...`` (null where one answers null) as a Java
        transformer, made once per adapter."""
        key = f"transformer:{name}"
        if key not in self._fs_cache:
            invoker = java_class(self._jvm, "org.apache.commons.collections4.functors.InvokerTransformer")
            steps = self._spark.sparkContext._gateway.new_array(
                java_class(self._jvm, "org.apache.commons.collections4.Transformer"), len(methods))
            for i, method in enumerate(methods):
                steps[i] = invoker.invokerTransformer(method)
            self._fs_cache[key] = java_class(
                self._jvm, "org.apache.commons.collections4.functors.ChainedTransformer").chainedTransformer(steps)
        return self._fs_cache[key]

    def _fs_class(self, uri: str) -> str:
        """The Java class of ``uri``'s FileSystem, looked up once per filesystem."""
        fs = self.fs(uri)
        key = f"class:{id(fs)}"  # one object per filesystem, kept as long as the adapter (fs.py)
        if key not in self._fs_cache:
            self._fs_cache[key] = str(fs.getClass().getName())
        return self._fs_cache[key]

    def _open_by_file(self, names: dict[str, list[str]], threads: int) -> dict[str, list[str]]:
        """``open_files`` one ``isFileClosed`` per file."""
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


def located_flags(names: list[str], flags: str) -> dict[str, bool | None] | None:
    """A located listing's entry names and the text of their
    under-construction states in the same order (``[false, true, null]``) ->
    name -> True (open for write), False (closed) or None (not said: no
    located blocks). None when the two do not line up (then every file is
    asked on its own)."""
    text = flags.strip()
    if not (text.startswith("[") and text.endswith("]")):
        return None
    states = [x.strip() for x in text[1:-1].split(",")] if text[1:-1].strip() else []
    if len(states) != len(names) or any(x not in ("true", "false", "null") for x in states):
        return None
    return {name: (None if x == "null" else x == "true") for name, x in zip(names, states)}


def open_by_listing(names: list[str], flags: dict[str, bool | None] | None) -> tuple[list[str], list[str]]:
    """(open, unknown) of ``names`` by a located listing's states
    (``located_flags``): open where it says under construction; unknown
    (to ask ``isFileClosed``) where it says nothing, or where there is no
    listing to go by (None: every name). A name the listing does not have
    is gone: not open."""
    if flags is None:
        return [], list(names)
    held = [n for n in names if flags.get(n) is True]
    unknown = [n for n in names if n in flags and flags[n] is None]
    return held, unknown


def _access_denied(exc: Exception) -> bool:
    """The NameNode refused this user (``AccessControlException``)."""
    return "AccessControlException" in java_message(exc) + " " + str(exc)[:2000]
