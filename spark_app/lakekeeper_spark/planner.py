"""What to compact, into how many files, and where the hidden directories go.

Pure functions only: the commands feed them listings from the filesystem
adapter and catalog facts, and act on the plan they return.
"""

from __future__ import annotations

import math
import re
import statistics
from datetime import datetime, timezone

from .config import Settings
from .model import Decision, FileStats, Listing, TableInfo, TablePlan, Unit

# Every directory Lakekeeper creates next to data starts with "." so that
# Hive, Spark partition discovery and MSCK REPAIR TABLE never see it.
STAGING_TAG = "lk_staging"
OLD_TAG = "lk_old"
TRASH_TAG = "lk_trash"
JOURNAL_DIR_NAME = ".lakekeeper"

_RUN_ID = re.compile(r"^\d{8}T\d{6}-[0-9a-f]{6}$")


def is_hidden(name: str) -> bool:
    """Names Hadoop's input formats and Spark skip: ``_SUCCESS``, ``.crc``..."""
    return name.startswith("_") or name.startswith(".")


def human_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1024 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"  # pragma: no cover


def file_stats(listing: Listing) -> FileStats:
    sizes = [f.size for f in listing.files]
    if not sizes:
        return FileStats(0, 0, 0.0, 0.0)
    total = sum(sizes)
    return FileStats(len(sizes), total, total / len(sizes), float(statistics.median(sizes)))


def target_file_count(total_bytes: int, target_bytes: int) -> int:
    if total_bytes <= 0:
        return 0
    return max(1, math.ceil(total_bytes / target_bytes))


def decide(stats: FileStats, settings: Settings, listing: Listing | None = None) -> Decision:
    """The reference rule, made idempotent.

    Compact when there is more than one file, the average file size is below
    ``block_size / ratio``, and rewriting would reduce the number of files.
    """
    target = target_file_count(stats.bytes, settings.target_file_bytes)
    if listing is not None and not listing.exists:
        return Decision("skip", "directory does not exist", 0)
    if listing is not None and listing.subdirs:
        return Decision(
            "skip",
            "directory has subdirectories ("
            + ", ".join(sorted(listing.subdirs)[:3])
            + "); nested layouts are not compacted",
            0,
        )
    if stats.files == 0:
        return Decision("skip", "no data files", 0)
    if stats.files == 1:
        return Decision("skip", "a single file", 1)
    threshold = settings.small_file_threshold_bytes
    if stats.avg_bytes >= threshold:
        return Decision(
            "skip",
            f"average file size {human_bytes(stats.avg_bytes)} is not below the threshold "
            f"{human_bytes(threshold)} (block {settings.block_size_mb:g} MB / ratio "
            f"{settings.compaction_ratio_threshold:g})",
            target,
        )
    if target >= stats.files:
        return Decision(
            "skip", f"rewriting {stats.files} files would not reduce the file count (target {target})", target
        )
    return Decision(
        "compact",
        f"{stats.files} files averaging {human_bytes(stats.avg_bytes)} (< {human_bytes(threshold)}); "
        f"rewrite into {target}",
        target,
    )


# ---------------------------------------------------------------- run ids, names


def new_run_id(now: datetime | None = None, token: str | None = None) -> str:
    import secrets

    now = now or datetime.now(timezone.utc)
    return now.strftime("%Y%m%dT%H%M%S") + "-" + (token or secrets.token_hex(3))


def is_run_id(value: str) -> bool:
    return bool(_RUN_ID.match(value))


def run_id_time(run_id: str) -> datetime:
    return datetime.strptime(run_id.split("-")[0], "%Y%m%dT%H%M%S").replace(tzinfo=timezone.utc)


def backup_table_name(prefix: str, table: str, run_id: str) -> str:
    """``__bkp_events_20240301_020000`` as in the reference (UTC), plus the
    run token so two runs in the same second cannot collide."""
    stamp = run_id_time(run_id).strftime("%Y%m%d_%H%M%S")
    token = run_id.split("-")[1]
    name = f"{prefix}_{table}_{stamp}_{token}"
    if len(name) > 128:
        keep = 128 - len(prefix) - len(stamp) - len(token) - 3
        name = f"{prefix}_{table[:keep]}_{stamp}_{token}"
    return name.lower()


def backup_table_pattern(prefix: str, table: str) -> re.Pattern[str]:
    return re.compile(
        "^" + re.escape(f"{prefix}_{table}_".lower()) + r"(\d{8})_(\d{6})_([0-9a-f]{6})$"
    )


# ---------------------------------------------------------------- paths


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


_HIDDEN_OURS = re.compile(r"^\.(?P<live>.+)\.(?P<tag>lk_staging|lk_old|lk_trash)_(?P<run>\d{8}T\d{6}-[0-9a-f]{6})$")


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


# ---------------------------------------------------------------- plan


def plan_table(
    table: TableInfo,
    units: list[tuple[str, dict[str, str] | None, str, Listing]],
    settings: Settings,
    run_id: str,
) -> TablePlan:
    """Build the plan of one table from its units' listings.

    ``units``: (spec, partition spec dict or None, location, listing).
    """
    planned = []
    for spec, part, location, listing in units:
        stats = file_stats(listing)
        planned.append(
            Unit(
                spec=spec,
                partition=part,
                location=location,
                listing=listing,
                stats=stats,
                decision=decide(stats, settings, listing),
                staging=staging_path(location, run_id),
                old=old_path(location, run_id),
            )
        )
    return TablePlan(
        table=table.full_name,
        run_id=run_id,
        format=table.format or "unknown",
        location=table.location or "",
        partitioned=table.is_partitioned,
        units=planned,
        backup_table=f"{table.db}.{backup_table_name(settings.backup_prefix, table.name, run_id)}",
        journal_dir=journal_dir(table),
    )
