"""Byte counts as text, and file-size histograms for analyze and its report. Pure: computed from
the listings a command already has (no extra I/O).

Fixed buckets, so histograms of different tables, clusters and runs add up
and compare: ``[upper bound in bytes, label]``; the last bucket is open.
"""

from __future__ import annotations

from typing import Any, Iterable

KB = 1024
MB = 1024 * KB
GB = 1024 * MB


def human_bytes(n: float) -> str:
    """A byte count as people read it (``512 B``, ``1.5 MB``): the planner's
    reasons and the space pre-flight's refusals."""
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1024 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"  # pragma: no cover


BUCKETS: list[tuple[int | None, str]] = [
    (64 * KB, "< 64 KB"),
    (1 * MB, "64 KB - 1 MB"),
    (16 * MB, "1 - 16 MB"),
    (64 * MB, "16 - 64 MB"),
    (128 * MB, "64 - 128 MB"),
    (256 * MB, "128 - 256 MB"),
    (1 * GB, "256 MB - 1 GB"),
    (None, ">= 1 GB"),
]


def bucket_index(size: int) -> int:
    for i, (upper, _label) in enumerate(BUCKETS):
        if upper is None or size < upper:
            return i
    return len(BUCKETS) - 1  # pragma: no cover


def histogram(sizes: Iterable[int]) -> list[int]:
    """File counts per bucket of ``BUCKETS``."""
    counts = [0] * len(BUCKETS)
    for size in sizes:
        counts[bucket_index(int(size))] += 1
    return counts


def projected_sizes(total_bytes: int, files: int) -> list[int]:
    """The sizes a rewrite of ``total_bytes`` into ``files`` files gives
    (the planner's projection: even split)."""
    if files <= 0 or total_bytes <= 0:
        return []
    base, extra = divmod(total_bytes, files)
    return [base + (1 if i < extra else 0) for i in range(files)]


def add(*histograms: list[int]) -> list[int]:
    out = [0] * len(BUCKETS)
    for h in histograms:
        for i, n in enumerate(h):
            out[i] += n
    return out


def describe() -> list[dict[str, Any]]:
    """The bucket definitions, for the JSON result."""
    return [{"label": label, "max_bytes": upper} for upper, label in BUCKETS]
