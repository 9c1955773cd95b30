"""The names lakekeeper 0.0.x (the ``lakekeeper`` pip CLI this engine
descends from; 0.0.6 is the last) gave what it left behind, so that analyze,
rollback and cleanup find them (docs/upgrading-from-0.0.x.md). Pure.

0.0.6, by file of its wheel (``lakekeeper-0.0.6-py3-none-any.whl``):

- ``core/backup.py`` ``create_backup``: the backup table
  ``<db>.<backup_prefix>_<table>_<%Y%m%d_%H%M%S>``, the time the local time of
  the machine that ran it; no property but ``external.table.purge=false``;
  a partitioned backup holds only the partitions it compacted.
- ``core/compactor.py`` ``_compact_non_partitioned`` / ``_compact_single_partition``:
  ``<dir>__compact_tmp_<unix seconds>`` (the copy being written) and
  ``<dir>__old_<unix seconds>`` (the original files, which the backup table, or
  its partition, is repointed at), siblings of the table's (or partition's)
  directory, not hidden.
- ``engine/hive_external.py`` ``rollback``: the live directory of an
  ``__old_`` one is its path with ``__old_<digits>`` cut off.
"""

from __future__ import annotations

import re
import time
from datetime import datetime

LEGACY_VERSION = "0.0.x"
OLD_KIND = "old"  # <dir>__old_<ts>: original files
TMP_KIND = "compact_tmp"  # <dir>__compact_tmp_<ts>: a copy a crashed run left

_OLD_SUFFIX = re.compile(r"__old_\d+$")
_LEFTOVER = re.compile(r"^(?P<live>.+)__(?P<kind>old|compact_tmp)_(?P<ts>\d+)$")
_STAMP = "%Y%m%d_%H%M%S"


def legacy_backup_pattern(prefix: str, table: str | None = None) -> re.Pattern[str]:
    """The names 0.0.x gave the backups of ``table`` (any table without it):
    ``__bkp_events_20240301_020000`` (no run token, unlike today's names)."""
    head = re.escape(f"{prefix}_{table}_") if table is not None else re.escape(prefix + "_") + r"(?P<table>.+)_"
    return re.compile("^" + head + r"(?P<stamp>\d{8}_\d{6})$", re.IGNORECASE)


def legacy_backup_time(name: str, prefix: str, table: str | None = None) -> float | None:
    """When a 0.0.x backup was made (its name, in the local time of the
    machine that made it, as 0.0.x wrote and read it), or None: not one."""
    m = legacy_backup_pattern(prefix, table).match(name)
    if not m:
        return None
    try:
        return time.mktime(datetime.strptime(m.group("stamp"), _STAMP).timetuple())
    except ValueError:
        return None


def is_legacy_old(path: str) -> bool:
    return bool(_OLD_SUFFIX.search(path.rstrip("/")))


def legacy_live_of(old: str) -> str:
    """``.../events__old_1709257200`` -> ``.../events`` (0.0.6's rollback rule)."""
    return _OLD_SUFFIX.sub("", old.rstrip("/"))


def parse_legacy_leftover(name: str) -> tuple[str, str, str] | None:
    """``month=01__old_1709257200`` -> (``month=01``, ``old``, ``1709257200``)."""
    m = _LEFTOVER.match(name)
    return (m.group("live"), m.group("kind"), m.group("ts")) if m else None
