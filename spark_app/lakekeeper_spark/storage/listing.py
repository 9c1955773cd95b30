"""Listing directories through the adapter (``HadoopFS``'s listing calls):
many directories per NameNode call (``listStatus(Path[])``), the text of
the statuses parsed at once (status.py), plain local directories read
with ``os.scandir``."""

from __future__ import annotations

import functools
import os
from typing import Any, Iterable

from ..report.errors import LakekeeperError
from ..report.model import FileEntry, Listing
from ..compat.jvm import java_class
from .readers import hive_skips
from .status import is_checksum_name, parse_status_dump, plain_uri
from .threads import threaded


@functools.lru_cache(maxsize=256)
def _user_name(uid: int) -> str:
    try:
        import pwd

        return pwd.getpwuid(uid).pw_name
    except (ImportError, KeyError):
        return str(uid)


@functools.lru_cache(maxsize=256)
def _group_name(gid: int) -> str:
    try:
        import grp

        return grp.getgrgid(gid).gr_name
    except (ImportError, KeyError):
        return str(gid)


class NameCache:
    """A read-only view of a ``HadoopFS`` whose ``list_names`` answers each
    directory once: analyze's several passes over the same parents (its
    leftovers, lakekeeper 0.0.x's, the reconciliation) share one listing.
    Everything else goes to the adapter."""

    def __init__(self, fs: object):
        self._fs = fs
        self._names: dict[str, list[tuple[str, bool]]] = {}

    def __getattr__(self, name: str) -> object:
        return getattr(self._fs, name)

    def list_names(self, uri: str) -> list[tuple[str, bool]]:
        key = uri.rstrip("/")
        if key not in self._names:
            self._names[key] = self._fs.list_names(uri)  # type: ignore[attr-defined]
        return self._names[key]


class Listings:
    """The listing calls of ``HadoopFS`` (fs.py), which this is a base of."""

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
            plain = plain_uri(u)
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
        remote = self.scheme_of(fs) != "file"
        if remote:
            # One round trip for the whole batch. Not on file://, where
            # toString() would load each file's owner and permission.
            entries = parse_status_dump(self._statuses_text(statuses), details=True)
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
            if hive_skips(name):
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
            if not q.startswith("file:/") or plain_uri(q) is None or not os.path.isdir(q[5:]):
                return None
            listing = Listing(path=qualified[q])
            with os.scandir(q[5:]) as it:
                for entry in it:
                    if hive_skips(entry.name):
                        if not entry.is_dir(follow_symlinks=True):
                            listing.hidden_files.append(entry.name)
                        continue
                    st = entry.stat(follow_symlinks=True)
                    if entry.is_dir(follow_symlinks=True):
                        listing.subdirs.append(entry.name)
                    else:
                        # the owner, as Hadoop's local filesystem reports it (analyze's sources name writers by it)
                        listing.files.append(FileEntry(name=entry.name, size=st.st_size,
                                                       mtime=int(st.st_mtime_ns // 1_000_000),
                                                       owner=_user_name(st.st_uid), group=_group_name(st.st_gid)))
            out[q] = listing
        return out

    def _statuses_text(self, statuses: Any) -> str:
        """A ``FileStatus[]`` as one text (``ArrayUtils.toString``: one gateway
        call for them all), for ``storage/status.py``'s parsers. Not on
        ``file://`` without need: there each status's text loads its owner and
        permission."""
        return str(java_class(self._jvm, "org.apache.commons.lang3.ArrayUtils").toString(statuses))

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
        entries = parse_status_dump(self._statuses_text(statuses))
        if entries is None:  # a name the text cannot carry unambiguously: field by field
            return [(str(st.getPath().getName()), bool(st.isDirectory())) for st in statuses]
        return [(path.rstrip("/").rpartition("/")[2], is_dir) for path, is_dir, *_rest in entries]
