"""Where a table's small files come from (analyze's ``sources``): each file
attributed to the tool that wrote it by its name, grouped by that tool and
the file's owner, with the rhythm the writes keep (a cadence such as "12
files every 5 minutes since 2026-11-01 by etl") and a histogram of the
modification times. Pure: file names, sizes, owners and modification times
in (the listings analyze already made), plain data out; nothing is read.

Names, as the writers leave them:

| writer | names | one write (a "batch") |
| --- | --- | --- |
| ``spark`` | ``part-00003-<uuid>-c000.snappy.parquet`` (``.c000`` on some versions) | the job: its uuid |
| ``hive`` | ``000000_0``, ``000001_0``, ``000000_0_copy_1`` (``INSERT INTO`` again) | files close in time |
| ``mapreduce`` | ``part-m-00000`` (Sqoop imports, map-only jobs), ``part-r-00000``, ``part-00000`` | files close in time |
| ``flume`` | ``FlumeData.1730419200123`` (its HDFS sink's default prefix) | each roll: one file |
| ``impala`` | ``<hex>_<hex>_data.0.parq`` (``<query id>_<n>_data.<i>.parq``) | the query: its id |
| ``other`` | anything else, e.g. a file copied in with ``hdfs dfs -put`` | files close in time |
"""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

WRITERS = ("spark", "hive", "mapreduce", "flume", "impala", "other")
WHO = {
    "spark": "Spark (part-<n>-<job uuid>)",
    "hive": "Hive (000000_0, _copy_N)",
    "mapreduce": "MapReduce / Sqoop (part-m-, part-r-)",
    "flume": "Flume HDFS sink (FlumeData.<n>)",
    "impala": "Impala (<query id>_data.<n>.parq)",
    "other": "other (hdfs dfs -put, copies, custom names)",
}

_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_SPARK = re.compile(rf"^part-\d{{5,}}-(?P<job>{_UUID})(?:[-.]c\d{{3}})?(?:\..*)?$", re.I)
_HIVE = re.compile(r"^\d{6}_\d+(?:_copy_\d+)?(?:\.[A-Za-z0-9.]+)?$")
_MAPREDUCE = re.compile(r"^part-(?:[mr]-)?\d{5}(?:\.[A-Za-z0-9.]+)?$")
_FLUME = re.compile(r"^FlumeData\.\d+(?:\.[A-Za-z0-9.]+)?$")
_IMPALA = re.compile(r"^(?P<query>[0-9a-f]+(?:[-:][0-9a-f]+)?)_[0-9a-f]+_data\.\d+(?:\.[A-Za-z0-9]+)?$", re.I)

# Files of one writer whose modification times lie closer than this form one batch (one write), when their
# names do not say which job wrote them (Spark's and Impala's do).
BATCH_GAP_MS = 60_000
# At least this many batches before a rhythm is given (two are one interval: not a rhythm yet).
MIN_BATCHES_FOR_CADENCE = 3
# An interval within this share of the median one counts as keeping the rhythm; a cadence is "regular"
# when most intervals (REGULAR_SHARE) keep it.
TOLERANCE = 0.3
REGULAR_SHARE = 0.6
# The histogram's bins: the first width that covers the span in at most MAX_BINS bins.
BIN_WIDTHS = (60, 300, 900, 3600, 6 * 3600, 86400, 7 * 86400, 30 * 86400, 365 * 86400)
MAX_BINS = 24
EXAMPLES = 3


def classify(name: str) -> tuple[str, str | None]:
    """(writer, job): the tool that names files so, and the job or query its
    name carries (Spark's job uuid, Impala's query id), else None."""
    m = _SPARK.match(name)
    if m:
        return "spark", m.group("job").lower()
    if _HIVE.match(name):
        return "hive", None
    if _MAPREDUCE.match(name):
        return "mapreduce", None
    if _FLUME.match(name):
        return "flume", None
    m = _IMPALA.match(name)
    if m:
        return "impala", m.group("query").lower()
    return "other", None


@dataclass(frozen=True)
class SourceFile:
    """One data file as analyze listed it (``where``: its directory or partition spec)."""

    name: str
    size: int
    mtime: int  # ms since the epoch
    owner: str | None = None
    where: str = ""


def batches(files: list[SourceFile], gap_ms: int = BATCH_GAP_MS) -> list[list[SourceFile]]:
    """The writes the files came in, oldest first: by the job their names
    carry when they do, else runs of files whose modification times lie
    less than ``gap_ms`` apart."""
    jobs: dict[str, list[SourceFile]] = {}
    loose = []
    for f in files:
        job = classify(f.name)[1]
        if job:
            jobs.setdefault(job, []).append(f)
        else:
            loose.append(f)
    out = list(jobs.values())
    current: list[SourceFile] = []
    for f in sorted(loose, key=lambda f: f.mtime):
        if current and f.mtime - current[-1].mtime >= gap_ms:
            out.append(current)
            current = []
        current.append(f)
    if current:
        out.append(current)
    return sorted(out, key=lambda b: min(f.mtime for f in b))


def human_seconds(seconds: float) -> str:
    """``300`` -> ``5 minutes``; rounded to the unit that reads best."""
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size * 0.95:
            n = max(1, round(seconds / size))
            return f"{n} {unit}{'s' if n != 1 else ''}"
    n = max(1, round(seconds))
    return f"{n} second{'s' if n != 1 else ''}"


def iso_date(ms: int) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(ms / 1000))


def iso_time(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ms / 1000))


def cadence(files: list[SourceFile], owner: str | None = None, gap_ms: int = BATCH_GAP_MS) -> dict[str, Any]:
    """The rhythm of one writer's files: ``batches``, ``files_per_batch``
    (median), ``interval_seconds`` (median between batch starts, None below
    ``MIN_BATCHES_FOR_CADENCE`` batches), ``regular`` (most intervals within
    ``TOLERANCE`` of it), ``first``/``last`` (UTC) and ``text``, e.g.
    ``12 files every 5 minutes since 2026-11-01 by etl``."""
    if not files:
        return {"batches": 0, "files_per_batch": 0, "interval_seconds": None, "regular": False,
                "first": None, "last": None, "text": "no files"}
    groups = batches(files, gap_ms)
    starts = [min(f.mtime for f in b) for b in groups]
    first, last = min(f.mtime for f in files), max(f.mtime for f in files)
    per = round(statistics.median(len(b) for b in groups))
    by = f" by {owner}" if owner else ""
    out: dict[str, Any] = {"batches": len(groups), "files_per_batch": per, "interval_seconds": None,
                           "regular": False, "first": iso_time(first), "last": iso_time(last)}
    noun = "file" if per == 1 else "files"
    if len(groups) < MIN_BATCHES_FOR_CADENCE:
        span = f"on {iso_date(first)}" if iso_date(first) == iso_date(last) else \
            f"between {iso_date(first)} and {iso_date(last)}"
        out["text"] = f"{len(files)} file(s) in {len(groups)} write(s) {span}{by}"
        return out
    gaps = [(b - a) / 1000 for a, b in zip(starts, starts[1:])]
    median = statistics.median(gaps)
    keep = sum(1 for g in gaps if abs(g - median) <= max(TOLERANCE * median, 1.0))
    regular = median > 0 and keep / len(gaps) >= REGULAR_SHARE
    out.update(interval_seconds=round(median, 1), regular=regular)
    every = human_seconds(median) if median > 0 else "the same moment"
    if regular:
        out["text"] = f"{per} {noun} every {every} since {iso_date(first)}{by}"
    else:
        out["text"] = (f"{len(files)} files in {len(groups)} writes, irregular (about every {every}) "
                       f"since {iso_date(first)}{by}")
    return out


def mtime_histogram(mtimes: Iterable[int]) -> dict[str, Any]:
    """Modification times (ms) counted in bins of one width (``BIN_WIDTHS``:
    the first that covers the span in at most ``MAX_BINS``): ``bin_seconds``
    and ``bins`` (``start`` UTC, ``count``), oldest first; empty bins kept."""
    values = sorted(mtimes)
    if not values:
        return {"bin_seconds": None, "bins": []}
    lo, hi = values[0] // 1000, values[-1] // 1000
    width = next((w for w in BIN_WIDTHS if (hi - lo) // w + 1 <= MAX_BINS), BIN_WIDTHS[-1])
    start = lo - lo % width
    counts = [0] * int((hi - start) // width + 1)
    for v in values:
        counts[int((v // 1000 - start) // width)] += 1
    return {"bin_seconds": width,
            "bins": [{"start": iso_time((start + i * width) * 1000), "count": c} for i, c in enumerate(counts)]}


def attribute(files: list[SourceFile], small_bytes: float) -> dict[str, Any]:
    """The ``sources`` of a table: its small files (smaller than
    ``small_bytes``) by writer and owner, most small files first, each with
    ``files``, ``bytes``, ``small_files``, ``small_bytes``, ``jobs`` (distinct
    job or query ids, where names carry them), up to ``EXAMPLES`` names,
    ``where`` (its partitions, first few) and the ``cadence`` of its small
    files; plus ``small_files``, ``writers`` and the table's small files'
    ``mtime_histogram``."""
    groups: dict[tuple[str, str | None], list[SourceFile]] = {}
    for f in files:
        groups.setdefault((classify(f.name)[0], f.owner), []).append(f)
    out = []
    for (writer, owner), mine in groups.items():
        small = [f for f in mine if f.size < small_bytes]
        jobs = {j for j in (classify(f.name)[1] for f in mine) if j}
        places = sorted({f.where for f in small or mine})
        entry = {"writer": writer, "who": WHO[writer], "owner": owner, "files": len(mine),
                 "bytes": sum(f.size for f in mine), "small_files": len(small),
                 "small_bytes": sum(f.size for f in small),
                 "examples": [f.name for f in sorted(small or mine, key=lambda f: f.mtime, reverse=True)[:EXAMPLES]],
                 "where": places[:5], "where_count": len(places),
                 "cadence": cadence(small, owner) if small else None}
        if writer in ("spark", "impala"):
            entry["jobs"] = len(jobs)
        out.append(entry)
    out.sort(key=lambda e: (-e["small_files"], -e["files"], e["writer"], e["owner"] or ""))
    small_all = [f for f in files if f.size < small_bytes]
    return {"small_file_bytes": int(small_bytes), "small_files": len(small_all), "writers": out,
            "mtime_histogram": mtime_histogram(f.mtime for f in small_all)}
