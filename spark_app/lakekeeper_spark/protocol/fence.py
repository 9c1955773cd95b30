"""Fencing: every step that changes a table first proves the run still
holds the table's lease.

A run works on a table through fenced views of the filesystem and catalog
adapters (``fenced``): each call that changes something (a rename, a
delete, a journal record, a partition's location, a backup table) first
calls the lease's ``check``, which raises ``lease_lost`` once this run can
no longer prove it holds the table (another run took the lease over after
this one stalled, or an operator broke it). The check costs no call most of
the time (``Lease.check``: the heartbeat's own time bound, and at most one
read of the lease a second), so fencing every step is cheap enough to be
the rule, not a courtesy left to each command. Reads go straight through.

A run that loses the lease stops at that step and changes nothing more; its
journal stays as it was, for the new holder (or the next run) to finish.
``Fence.changed`` tells whether the run had already changed what the
table's readers see, so the result's ``changed`` is true only then. The window left is the time between one check and the call
it guards: the filesystem cannot refuse a call for a run's token, so this is
as close as a client can fence; the swap itself never moves a live directory
aside unless the one that replaces it is there (protocol/swap.py).
"""

from __future__ import annotations

import re
import threading
from typing import Any, Callable

# The adapters' calls that change something (storage/fs.py and its bases;
# catalog/catalog.py and its bases; the partition writer ``writer`` returns).
# An adapter's calls to its own methods are not fenced again: the call that
# a command makes is the step.
FS_MUTATING = frozenset({
    "mkdirs", "delete", "rename", "copy_file", "duplicate_file", "write_text", "replace_text", "open_log",
    "recover_lease", "create_new", "touch", "delete_if_empty", "copy_permissions", "copy_dir_attributes",
    "set_storage_policy", "set_xattr", "set_replication", "set_erasure_coding_policy", "replicate_new_files",
})
CATALOG_MUTATING = frozenset({
    "copy_partition_storage", "create_clone", "add_partitions", "drop_partition", "set_location",
    "set_locations", "set_properties", "drop_table", "set_statistics", "set_statistics_many",
})
WRITER_MUTATING = frozenset({"alter", "alter_now"})
# Calls on tables that are not the table (backup and scratch clones): fenced,
# but not what ``changed`` reports.
CATALOG_SIDE_TABLES = frozenset({"copy_partition_storage", "create_clone", "drop_table"})
# How old the lease's last reading may be at a step that moves what readers
# see (seconds): an operator's --break-lease is seen before such a step
# unless it came within this time of it.
VISIBLE_STEP_MAX_AGE = 0.2


class Fence:
    """The check a run's fenced adapters make before each change, and
    whether a change the table's readers see went through."""

    def __init__(self, check: Callable[..., None], table: str = ""):
        self.check = check
        self.table = table.lower()  # db.name: catalog calls on other tables (backup, scratch) are not it
        self._lock = threading.Lock()
        self.changed = False

    def guard(self, name: str, args: tuple[Any, ...]) -> None:
        """Before a call: the check, fresh (the lease read at most
        ``VISIBLE_STEP_MAX_AGE`` before) for a filesystem call on a path the
        table's readers see (a live directory moved aside or in, a file
        adopted), else at most a second old (``Lease.check``)."""
        if name in FS_MUTATING and any(_visible(p) for p in _paths(args)):
            self.check(max_age=VISIBLE_STEP_MAX_AGE)
        else:
            self.check()

    def passed(self, name: str, args: tuple[Any, ...]) -> None:
        """Note a change that went through: ``changed`` once a call changed
        what the table's readers see (a filesystem call naming a visible
        path (``_visible``), such as a
        live directory moved aside or the staging moved in; a change of the
        table's own partitions, locations, properties or statistics). Hidden
        staging, journal records and backup or scratch tables are not the
        table's readers' view."""
        if self.changed or name in CATALOG_SIDE_TABLES:
            return
        if name in FS_MUTATING:
            if not any(_visible(p) for p in _paths(args)):
                return
        elif self.table and _table_named(args) not in (None, self.table):
            return  # the backup table's partitions, a scratch table's
        with self._lock:
            self.changed = True


# A path argument: absolute, or a URI with a scheme, with an authority
# (``hdfs://nn/...``, ``file:///...``) or without (``file:/tmp/...``, what a
# qualified local path looks like: qualify() gives those on file://).
_PATH = re.compile(r"^(/|[A-Za-z][A-Za-z0-9+.-]*:/)")


def _table_named(args: tuple[Any, ...]) -> str | None:
    """``db.name`` of the table a catalog call names (``(db, table, ...)``
    or a ``TableInfo`` first), None when it names none that way."""
    if len(args) >= 2 and isinstance(args[0], str) and isinstance(args[1], str):
        return f"{args[0]}.{args[1]}".lower()
    full = getattr(args[0], "full_name", None) if args else None
    return full.lower() if isinstance(full, str) else None


def _paths(args: tuple[Any, ...]) -> list[str]:
    return [a for a in args if isinstance(a, str) and _PATH.match(a)]


def _visible(path: str) -> bool:
    """Whether ``path`` is seen by the table's readers: none of its last
    three names starts with ``.`` or ``_`` (Hive's hidden names: the
    journal, staging, moved-aside originals and trash all live in such; a
    journal record is three deep: ``.lakekeeper/<run>/table.json``, and so
    is a merge record, ``.lakekeeper/merged/<batch>.json``)."""
    parts = [p for p in path.rstrip("/").split("/") if p]
    return not any(p.startswith((".", "_")) for p in parts[-3:])


class Fenced:
    """A view of ``target`` whose ``mutating`` calls pass ``fence.check``
    first; everything else is the target's own. ``wrap`` names calls whose
    result is itself an adapter to fence (with its own mutating names)."""

    def __init__(self, target: Any, fence: Fence, mutating: frozenset[str],
                 wrap: dict[str, frozenset[str]] | None = None, named: tuple[Any, ...] = ()):
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "_fence", fence)
        object.__setattr__(self, "_mutating", mutating)
        object.__setattr__(self, "_wrap", wrap or {})
        object.__setattr__(self, "_named", named)  # the arguments that made it (a writer's db and table)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        if not callable(attr):
            return attr
        if name in self._mutating:
            fence = self._fence

            named = self._named

            def guarded(*args: Any, **kwargs: Any) -> Any:
                fence.guard(name, named or args)
                out = attr(*args, **kwargs)
                fence.passed(name, named or args)
                return out
            return guarded
        if name in self._wrap:
            inner = self._wrap[name]

            def wrapped(*args: Any, **kwargs: Any) -> Any:
                return Fenced(attr(*args, **kwargs), self._fence, inner, named=args)
            return wrapped
        return attr

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._target, name, value)

    def __repr__(self) -> str:
        return f"Fenced({self._target!r})"

    @property
    def unfenced(self) -> Any:
        """The adapter itself (the lease's own heartbeat and release)."""
        return self._target


def fenced_fs(fs: Any, fence: Fence) -> Any:
    return Fenced(fs, fence, FS_MUTATING)


def fenced_catalog(catalog: Any, fence: Fence) -> Any:
    return Fenced(catalog, fence, CATALOG_MUTATING, wrap={"writer": WRITER_MUTATING})
