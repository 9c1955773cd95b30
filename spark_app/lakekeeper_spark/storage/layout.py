"""Where Lakekeeper puts things, by name: the hidden directories next to a
table's data (staging copy, moved-aside original, rollback trash), the
journal directory, run ids, and the names of backup tables.

Every directory Lakekeeper creates next to data starts with ``.`` so that
Hive, Spark partition discovery and ``MSCK REPAIR TABLE`` never see it
(``readers``: which names each reader skips). For
a unit (the table's directory, or one partition's) at ``<parent>/<dir>``:

    <parent>/.<dir>.lk_staging_<run>     compacted copy being written
    <parent>/.<dir>.lk_old_<run>         original files (the backup)
    <parent>/.<dir>.lk_trash_<run>       compacted data during a rollback
    <table>/.lk_batch-<n>.lk_staging_<run>  a batch of partitions written by one job,
                                          each then renamed to its staging (``batch_root``)

and the journal (``journal_dir``) in ``<table>/.lakekeeper`` (partitioned)
or ``<parent>/.<table dir>.lakekeeper`` (not partitioned), with the table's
run history in its ``history`` subdirectory (``history_dir``: never
removed, it outlives the runs and their backups). Pure functions.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone

from ..report.model import TableInfo

STAGING_TAG = "lk_staging"
OLD_TAG = "lk_old"
TRASH_TAG = "lk_trash"
JOURNAL_DIR_NAME = ".lakekeeper"
HISTORY_DIR_NAME = "history"

_RUN_ID_TEXT = r"\d{8}T\d{6}-[0-9a-f]{6}"  # 20240301T020000-3f9a1c: UTC time and a random token
_RUN_ID = re.compile(f"^{_RUN_ID_TEXT}$")
RUN_ID_REGEX = _RUN_ID_TEXT  # the same, for other modules (replication's distcp filters)


# ---------------------------------------------------------------- run ids, backup table names


def new_run_id(now: datetime | None = None, token: str | None = None) -> str:
    import secrets

    now = now or datetime.now(timezone.utc)
    return now.strftime("%Y%m%dT%H%M%S") + "-" + (token or secrets.token_hex(3))


def is_run_id(value: str) -> bool:
    return bool(_RUN_ID.match(value))


def run_id_time(run_id: str) -> datetime:
    return datetime.strptime(run_id.split("-")[0], "%Y%m%dT%H%M%S").replace(tzinfo=timezone.utc)


# The backup table's property naming the table it backs up: what makes a
# table a backup (its name only says so under the prefix of its day).
BACKUP_OF_PROPERTY = "lakekeeper.backup_of"
# The property that marks a scratch table made to read a staged copy back
# (rewrite/content.py): such a table is never compacted (catalog/tables.py).
SCRATCH_OF_PROPERTY = "lakekeeper.verify_of"

# The longest backup table name made (older Metastore schemas hold 128
# characters) and the run's tail of it: ``_<yyyymmdd>_<hhmmss>_<token>``.
BACKUP_NAME_MAX = 128
_BACKUP_TAIL = len("_20240301_020000_abcdef")


def _backup_head(prefix: str, table: str) -> str:
    """``<prefix>_<table>``, the table's name cut so that the whole backup
    name fits ``BACKUP_NAME_MAX`` (name and lookup pattern share this cut;
    two long names with one head are told apart by the backup's
    ``lakekeeper.backup_of`` property)."""
    keep = BACKUP_NAME_MAX - len(prefix) - 1 - _BACKUP_TAIL
    return f"{prefix}_{table[:keep]}".lower()


def backup_table_name(prefix: str, table: str, run_id: str) -> str:
    """``__bkp_events_20240301_020000`` as in the reference (UTC), plus the
    run token so two runs in the same second cannot collide."""
    stamp = run_id_time(run_id).strftime("%Y%m%d_%H%M%S")
    token = run_id.split("-")[1]
    return f"{_backup_head(prefix, table)}_{stamp}_{token}".lower()


def backup_table_pattern(prefix: str, table: str | None = None) -> re.Pattern[str]:
    """The names ``backup_table_name`` gives the backups of ``table`` (its
    groups: date, time, token); without ``table``, of any table."""
    head = re.escape(_backup_head(prefix, table) + "_") if table is not None else re.escape(prefix.lower()) + "_.+_"
    return re.compile("^" + head + r"(\d{8})_(\d{6})_([0-9a-f]{6})$")


def maybe_backup_of(table: str) -> re.Pattern[str]:
    """Names that may be a backup of ``table`` under any prefix (one made
    before the prefix was changed): the run's tail and the start of the
    table's name. A candidate is a backup of ``table`` only if its
    ``BACKUP_OF_PROPERTY`` says so."""
    return re.compile("^.+_" + re.escape(table[:16].lower()) + r".*_(\d{8})_(\d{6})_([0-9a-f]{6})$")


# ---------------------------------------------------------------- hidden directories


def split_path(path: str) -> tuple[str, str]:
    """``hdfs://nn/a/b`` -> (``hdfs://nn/a``, ``b``)."""
    path = path.rstrip("/")
    parent, _sep, name = path.rpartition("/")
    if not name or not parent:
        raise ValueError(f"cannot split path {path!r}")
    return parent, name


def sibling(path: str, name: str) -> str:
    return split_path(path)[0] + "/" + name


def staging_path(location: str, run_id: str) -> str:
    return sibling(location, f".{split_path(location)[1]}.{STAGING_TAG}_{run_id}")


def old_path(location: str, run_id: str) -> str:
    return sibling(location, f".{split_path(location)[1]}.{OLD_TAG}_{run_id}")


def trash_path(location: str, run_id: str) -> str:
    return sibling(location, f".{split_path(location)[1]}.{TRASH_TAG}_{run_id}")


# A batch of units written by one job (rewrite/batch.py) goes into ``<table>/.lk_batch-<n>.lk_staging_<run>``
# first, one subdirectory a unit, each then renamed to its unit's staging directory.
BATCH_TAG = "lk_batch"


def batch_root(table_location: str, run_id: str, number: int) -> str:
    """The hidden directory batch ``number`` of a run is written into, in the table's root."""
    return f"{table_location.rstrip('/')}/.{BATCH_TAG}-{number}.{STAGING_TAG}_{run_id}"


_HIDDEN_OURS = re.compile(rf"^\.(?P<live>.+)\.(?P<tag>{STAGING_TAG}|{OLD_TAG}|{TRASH_TAG})_(?P<run>{_RUN_ID_TEXT})$")


def parse_hidden_name(name: str) -> tuple[str, str, str] | None:
    """``.month=01.lk_old_<run>`` -> (``month=01``, ``lk_old``, run_id)."""
    m = _HIDDEN_OURS.match(name)
    if not m:
        return None
    return m.group("live"), m.group("tag"), m.group("run")


def journal_dir(table: TableInfo) -> str:
    """Where the table's journal lives: a hidden directory that no swap moves.

    Partitioned tables keep it inside the table root (only partition
    directories are renamed); a non-partitioned table's own directory is
    renamed, so its journal sits next to it.
    """
    assert table.location
    if table.is_partitioned:
        return table.location.rstrip("/") + "/" + JOURNAL_DIR_NAME
    parent, name = split_path(table.location)
    return f"{parent}/.{name}{JOURNAL_DIR_NAME}"


def history_dir(table: TableInfo) -> str:
    """Where the table's run history lives (history.py): inside its journal
    directory, whose run records come and go; the history stays."""
    return f"{journal_dir(table)}/{HISTORY_DIR_NAME}"
