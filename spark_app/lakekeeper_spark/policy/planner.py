"""What to compact and into how many files.

Pure functions only: the commands feed them listings from the filesystem
adapter and catalog facts, and act on the plan they return.
"""

from __future__ import annotations

import dataclasses
import math
import statistics

from .config import Settings
from ..storage.layout import backup_table_name, journal_dir, old_path, staging_path
from ..storage.readers import UNREADABLE_FILE, spark_skips, unreadable_files, unreadable_reason
from ..report.sizes import human_bytes
from ..report.model import Decision, FileEntry, FileStats, Listing, TableInfo, TablePlan, Unit

# a directory with subdirectories (Hive on Tez UNION ALL): skipped with this code, never rewritten
NESTED_LAYOUT = "nested_layout"


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


def pack_splits(sizes: list[int], split_bytes: int, open_cost: int = 1) -> list[int]:
    """Bytes of each read split Spark makes of these files with
    ``maxPartitionBytes = split_bytes`` (``FilePartition.getFilePartitions``:
    files cut into chunks of at most ``split_bytes``, largest first, a split
    closed when the next chunk would overflow it)."""
    chunks = []
    for size in sizes:
        off = 0
        while off < size:
            chunks.append(min(split_bytes, size - off))
            off += split_bytes
    chunks.sort(reverse=True)
    splits: list[int] = []
    current = data = 0
    for c in chunks:
        if current + c > split_bytes and data:
            splits.append(data)
            current = data = 0
        current += c + open_cost
        data += c
    if data:
        splits.append(data)
    return splits


def smallest_split(sizes: list[int], count: int) -> int:
    """The smallest split size with which Spark's packing makes no more than
    ``count`` splits of these files (so the splits are even: no small
    remainder)."""
    lo, hi = max(1, math.ceil(sum(sizes) / count)), sum(sizes) + len(sizes) + 1
    while lo < hi:  # the packing's split count falls (almost) monotonically with the split size
        mid = (lo + hi) // 2
        if len(pack_splits(sizes, mid)) <= count:
            hi = mid
        else:
            lo = mid + 1
    return lo


def batch_read_split(sizes: list[int], cores: int, max_split_bytes: int) -> tuple[int, int]:
    """A batch's read splits (``rewrite/batch.py``): (splits, split bytes).
    The count is a multiple of the application's ``cores`` (at least as many
    splits as ``max_split_bytes`` allows, rounded up), the size the smallest
    with which Spark's packing makes no more (``smallest_split``): every
    core reads an even share to the end. Left to Spark (a split of the
    total over the cores, packed largest file first), a 50 MB batch on two
    cores was read in three tasks, the third alone on one core while the
    other waited (measured 2026-11-30: 10.5 s for that stage, the floor's
    two even splits 17 s for read and write together)."""
    sizes = [s for s in sizes if s > 0]
    if not sizes:
        return 1, max(1, max_split_bytes)
    cores = max(1, cores)
    n = max(1, math.ceil(sum(sizes) / max(1, max_split_bytes)))
    n = math.ceil(n / cores) * cores
    split = smallest_split(sizes, n)
    return len(pack_splits(sizes, split)), split


def _output_share(shrink: float) -> float:
    """Expected output bytes per input byte, kept to a sane range."""
    return min(1.0, max(0.05, shrink))


def split_pieces(size: int, target_bytes: int, max_file_bytes: int) -> int:
    """How many files of about ``target_bytes`` a file of ``size`` becomes:
    one when it is not above ``max_file_bytes`` (0: no bound), else the
    nearest count (at least two), so that each lands within +-25% of the
    target as ``output_split``'s files do (the bound is at least 1.5 x the
    target: never an undersized file)."""
    if not max_file_bytes or size <= max_file_bytes or target_bytes <= 0:
        return 1
    return max(2, int(size / target_bytes + 0.5))


def output_split(sizes: list[int], target_bytes: int, shrink: float = 1.0,
                 max_file_bytes: int = 0) -> tuple[int, int]:
    """How to pack a unit's files into read splits so that each split (one
    read task, one output file) writes about ``target_bytes``.

    ``shrink`` is the expected output bytes per input byte (estimated from
    the input files' own footers: merged rows no longer carry per-file
    footers and indexes). Returns (output files, split bytes): the nearest
    file count ``n``, so that every file lands within +-25% of the target
    once there are two or more, and the smallest split size with which
    Spark's packing makes no more than ``n`` splits, so the files are even
    (no small remainder file).
    A file above ``max_file_bytes`` (0: no bound) counts as the files it is
    split into (``split_pieces``): without it no unit is written as more
    files than it has (Spark cuts such a file at its row groups or stripes).
    """
    sizes = [s for s in sizes if s > 0]
    if not sizes or target_bytes <= 0:
        return 0, max(1, target_bytes)
    most = sum(split_pieces(s, target_bytes, max_file_bytes) for s in sizes)
    n = max(1, min(most, int(sum(sizes) * _output_share(shrink) / target_bytes + 0.5)))
    return n, smallest_split(sizes, n)


@dataclasses.dataclass(frozen=True)
class WriteLayout:
    """How a unit's output is written: ``files`` output files, each written
    as ``pieces`` pieces by as many parallel read tasks (read splits of
    ``split_bytes``), joined afterwards without decoding (ORC stripes,
    Parquet row groups: ``compat.file_joins.join_files``)."""

    files: int
    pieces: int
    split_bytes: int

    @property
    def tasks(self) -> int:
        return self.files * self.pieces


def write_layout(sizes: list[int], target_bytes: int, shrink: float = 1.0, slots: int = 1,
                 min_piece_bytes: int = 0, max_file_bytes: int = 0) -> WriteLayout:
    """The output files (``output_split``) and how many pieces to write
    each in, given the task slots the unit can count on.

    One task encodes one output file, so a unit whose files are fewer than
    its slots (or do not divide evenly among them) leaves slots idle for
    the whole write: one 128 MB file on an 8-core executor uses one core.
    Writing each file as ``k`` pieces of 1/k of it takes ``ceil(files * k /
    slots) / k`` rounds of one whole file's time; the smallest ``k`` with
    the fewest rounds is taken, as long as each piece still holds
    ``min_piece_bytes`` (the pieces become the joined file's stripes or row
    groups) and Spark's packing makes exactly ``files * k`` even splits.
    ``min_piece_bytes <= 0`` turns pieces off. ``max_file_bytes``: the split
    bound (``output_split``); a unit that splits a file writes no pieces.
    """
    files, split = output_split(sizes, target_bytes, shrink, max_file_bytes)
    sizes = [s for s in sizes if s > 0]
    if files == 0 or slots <= 1 or min_piece_bytes <= 0:
        return WriteLayout(files, 1, split)
    out_bytes = sum(sizes) * _output_share(shrink)
    max_k = min(int(out_bytes / files / min_piece_bytes), len(sizes) // files, slots)
    best, best_rounds = 1, math.ceil(files / slots)
    for k in range(2, max_k + 1):
        rounds = math.ceil(files * k / slots) / k
        if rounds < best_rounds - 1e-9:
            best, best_rounds = k, rounds
    while best > 1:  # exactly files * k splits, else the pieces cannot be grouped evenly
        piece_split = smallest_split(sizes, files * best)
        if len(pack_splits(sizes, piece_split)) == files * best:
            return WriteLayout(files, best, piece_split)
        best -= 1
    return WriteLayout(files, 1, split)


def read_paths(unit: Unit) -> list[str]:
    """What a Parquet or ORC rewrite of ``unit`` reads: its directory itself
    when that read takes exactly the files it rewrites (every file there is
    rewritten, none is kept, no subdirectory, every hidden name one Spark
    skips, no data file it would skip); else each file by name. Spark checks
    that each named path exists and lists each one (2,000 files: about 1.9 s
    on ``file://``, two NameNode calls a file on HDFS); a directory is one
    listing. A file added or removed meanwhile changes what a directory read
    takes, and it changes the listing that the check before the swap
    compares (``swap.check_unchanged``), so that unit is not swapped."""
    loc = unit.location.rstrip("/")
    files = unit.rewrite_files
    whole = (bool(files) and not unit.kept_files and not unit.listing.subdirs
             and not any(spark_skips(f.name) for f in files)
             and all(spark_skips(h) for h in unit.listing.hidden_files))
    return [loc] if whole else [f"{loc}/{f.name}" for f in files]


def group_pieces(sizes: list[int], files: int) -> list[list[int]]:
    """Indexes of the written pieces, grouped into ``files`` joined files of
    about equal bytes (largest piece first into the lightest group); each
    group in index order, the groups ordered by their first piece."""
    files = max(1, min(files, len(sizes)))
    groups: list[list[int]] = [[] for _g in range(files)]
    load = [0] * files
    for i in sorted(range(len(sizes)), key=lambda i: (-sizes[i], i)):
        g = min(range(files), key=lambda g: (load[g], g))
        groups[g].append(i)
        load[g] += sizes[i]
    return sorted((sorted(g) for g in groups if g), key=lambda g: g[0])


def decide(stats: FileStats, settings: Settings, listing: Listing | None = None,
           fmt: str | None = None, pieces: dict[str, int] | None = None) -> Decision:
    """Whether and how to compact one unit: the mode's rule (``size_rule``),
    then, with a ``max_file_size_mb`` bound, ``split_rule`` (``pieces``: its
    files' largest row group or stripe, where they were read)."""
    decision = size_rule(stats, settings, listing, fmt)
    if listing is not None and settings.max_file_bytes:
        return split_rule(decision, listing, settings, fmt, pieces)
    return decision


def size_rule(stats: FileStats, settings: Settings, listing: Listing | None = None,
              fmt: str | None = None) -> Decision:
    """Whether and how to compact one unit, by ``settings.mode``:

    ``ratio`` (default, the reference rule, made idempotent): compact when
    there is more than one file, the average file size is below
    ``block_size / ratio``, and rewriting would reduce the number of files.
    ``minor``, ``major``, ``smart``: see ``minor_rule``, ``major_rule`` and
    ``smart_rule`` (they need the listing: file sizes, not only averages).
    Whatever the mode, a unit holding a file Hive reads and Spark skips
    (``storage.readers``: ``x._COPYING_``) is refused (``unreadable_file``):
    its copy, written and verified through Spark, would lack that file's rows.
    """
    mode = settings.mode
    target = target_file_count(stats.bytes, settings.target_file_bytes)
    early = None
    unreadable = unreadable_files([f.name for f in listing.files]) if listing is not None else []
    if listing is not None and not listing.exists:
        early = Decision("skip", "directory does not exist", 0)
    elif unreadable:  # before every skip: a merge rewrites a skipped unit anyway (merge_rules)
        early = Decision("refuse", unreadable_reason(listing.path, unreadable, "nothing of it was written or moved"),
                         stats.files, code=UNREADABLE_FILE)
    elif listing is not None and listing.subdirs:
        early = Decision(
            "skip",
            "directory has subdirectories ("
            + ", ".join(sorted(listing.subdirs)[:3])
            + "); nested layouts are not compacted",
            0,
            code=NESTED_LAYOUT,
        )
    elif stats.files == 0:
        early = Decision("skip", "no data files", 0)
    elif stats.files == 1:
        early = Decision("skip", "a single file", 1)
    if early is not None:
        early.rule = mode
        return early
    if mode != "ratio":
        if listing is None:
            raise ValueError(f"mode {mode} needs the unit's listing")
        if mode == "minor":
            return minor_rule(listing, settings, fmt)
        if mode == "major":
            return major_rule(listing, settings)
        return smart_rule(listing, settings, fmt)
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


# ---------------------------------------------------------------- compaction modes
#
# Files are classified against the target file size T (Amoro's evaluator, as
# Hive's Iceberg compaction uses it):
#   fragment:   size <  T x fragment_ratio             (default 1/8)
#   undersized: T x fragment_ratio <= size < T x min_target_ratio (default 3/4)
#   segment:    size >= T x min_target_ratio


@dataclasses.dataclass
class FileClasses:
    fragments: list[FileEntry]
    undersized: list[FileEntry]
    segments: list[FileEntry]


def classify(files: list[FileEntry], settings: Settings) -> FileClasses:
    frag, low = settings.fragment_bytes, settings.min_target_bytes
    out = FileClasses([], [], [])
    for f in files:
        if f.size < frag:
            out.fragments.append(f)
        elif f.size < low:
            out.undersized.append(f)
        else:
            out.segments.append(f)
    return out


def _sizes(settings: Settings) -> str:
    return (f"fragment < {human_bytes(settings.fragment_bytes)}, undersized < "
            f"{human_bytes(settings.min_target_bytes)}, target {human_bytes(settings.target_file_bytes)}")


def minor_rule(listing: Listing, settings: Settings, fmt: str | None = None, smart: bool = False) -> Decision:
    """Minor: rewrite only the fragment files, when there are at least
    ``min_input_files`` of them; every other file is copied unchanged.

    Text and Avro are rewritten through the table's SerDe, which reads whole
    partitions, and dedupe must see every row of a partition: an explicit
    minor skips such a partition when there are files to keep; smart
    rewrites the whole partition instead."""
    c = classify(listing.files, settings)
    T = settings.target_file_bytes
    n = len(c.fragments)
    if n < settings.min_input_files:
        return Decision("skip", f"minor: {n} fragment file(s), fewer than min_input_files "
                                f"{settings.min_input_files} ({_sizes(settings)})", len(listing.files), "minor")
    frag_bytes = sum(f.size for f in c.fragments)
    merged = target_file_count(frag_bytes, T)
    if merged >= n:
        return Decision("skip", f"minor: rewriting {n} fragment files would not reduce the file count "
                                f"(target {merged})", len(listing.files), "minor")
    kept = len(listing.files) - n
    why = f"minor: {n} fragment files ({human_bytes(frag_bytes)}, each < {human_bytes(settings.fragment_bytes)})"
    if not kept:
        return Decision("compact", f"{why}; rewrite into {merged}", merged, "minor")
    whole = None
    if fmt in ("text", "avro"):
        whole = (fmt, "rewriting only some files of a partition needs Parquet or ORC")
    elif settings.dedupe_keys:
        whole = ("dedupe", "dedupe must see every row of the partition")
    if whole:
        if not smart:
            return Decision("skip", f"{why}, but {whole[1]}; use mode major or smart", len(listing.files), "minor")
        total = listing.total_bytes
        target = target_file_count(total, T)
        if target >= len(listing.files):
            return Decision("skip", f"{why}; {whole[0]}: rewriting the whole partition would not reduce the file "
                                    f"count", len(listing.files), "minor")
        return Decision("compact", f"{why}; {whole[0]}: the whole partition ({len(listing.files)} files) is "
                                   f"rewritten into {target}", target, "minor")
    return Decision("compact", f"{why}; rewrite them into {merged}, copy the other {kept} file(s) unchanged",
                    merged + kept, "minor", tuple(sorted(f.name for f in c.fragments)))


def major_rule(listing: Listing, settings: Settings) -> Decision:
    """Major: rewrite every file of the unit when its undersized files add up
    to more than the target size, or when the two smallest of them fit in
    one target file (and the rewrite reduces the file count)."""
    c = classify(listing.files, settings)
    T = settings.target_file_bytes
    sizes = sorted(f.size for f in c.undersized)
    total_u = sum(sizes)
    if total_u > T:
        why = f"major: {len(sizes)} undersized files add up to {human_bytes(total_u)} (> target {human_bytes(T)})"
    elif len(sizes) >= 2 and sizes[0] + sizes[1] < T:
        why = (f"major: the two smallest undersized files ({human_bytes(sizes[0])} + {human_bytes(sizes[1])}) "
               f"fit in one target file of {human_bytes(T)}")
    else:
        return Decision("skip", f"major: {len(sizes)} undersized file(s), {human_bytes(total_u)} in all, not above "
                                f"the target and no two fit in one target file ({_sizes(settings)})",
                        len(listing.files), "major")
    total = listing.total_bytes
    target = target_file_count(total, T)
    if target >= len(listing.files):
        return Decision("skip", f"{why}, but rewriting {len(listing.files)} files would not reduce the file count "
                                f"(target {target})", len(listing.files), "major")
    return Decision("compact", f"{why}; rewrite all {len(listing.files)} files into {target}", target, "major")


def smart_rule(listing: Listing, settings: Settings, fmt: str | None = None) -> Decision:
    """Smart: major when its rule holds, else minor when its rule holds,
    else skip with both reasons."""
    major = major_rule(listing, settings)
    if major.action == "compact":
        return major
    minor = minor_rule(listing, settings, fmt, smart=True)
    if minor.action == "compact":
        return minor
    return Decision("skip", f"smart: {major.reason}; {minor.reason}", len(listing.files), "smart")


# ---------------------------------------------------------------- files too large: the split bound
#
# Iceberg's max-file-size-bytes, Amoro's split: a file above max_file_size_mb
# is rewritten into files of about the target size T through the ordinary
# rewrite (its content verified as any rewrite's). Files within the band -
# not a fragment and not above the bound - are left as they are where the
# mode allows it (minor, and a split alone); ratio and major still rewrite
# every file of a partition they compact, the large ones split with them.

SPLIT = "split"


def oversized(files: list[FileEntry], settings: Settings) -> list[FileEntry]:
    """The files above the split bound (none when it is off)."""
    bound = settings.max_file_bytes
    return [f for f in files if bound and f.size > bound]


def unsplittable(files: list[FileEntry], settings: Settings, pieces: dict[str, int] | None) -> dict[str, int]:
    """The files above the split bound whose largest row group (Parquet) or
    stripe (ORC), ``pieces[name]`` in bytes, is above it too: the rewrite
    reads and writes whole row groups and stripes (no shuffle), so such a
    file would come out above the bound again, and be rewritten by every
    run. Name -> that piece's size."""
    bound = settings.max_file_bytes
    return {f.name: pieces[f.name] for f in oversized(files, settings)
            if pieces and pieces.get(f.name, 0) > bound}


def split_rule(decision: Decision, listing: Listing, settings: Settings, fmt: str | None = None,
               pieces: dict[str, int] | None = None) -> Decision:
    """The mode's ``decision`` for a unit, with its files above
    ``max_file_size_mb`` split into files of about the target size:

    - a compaction that rewrites every file splits them anyway (the written
      files are of about the target size): named in ``split`` and the reason;
    - minor: they join the fragments it rewrites; the files in the band stay
      as they are (copied into the staging, as minor's other files);
    - a unit the size rule skipped (``a single file`` among them): compacted
      with rule ``split``, only its large files rewritten and the others kept -
      or every file where a partition is rewritten whole (text and Avro
      through their SerDe, dedupe);
    - refusals and the other skips (a missing directory, nested layouts, no
      data files) are left as they are;
    - a file that cannot be cut below the bound (``unsplittable``) is not
      split: the reason says so, and a unit with nothing else to do is left
      as the size rule decided.
    """
    stuck = unsplittable(listing.files, settings, pieces)
    big = [f for f in oversized(listing.files, settings) if f.name not in stuck]
    if stuck and listing.exists and not listing.subdirs:
        decision = dataclasses.replace(decision, reason=(
            f"{decision.reason}; {len(stuck)} file(s) above max_file_size {human_bytes(settings.max_file_bytes)} "
            f"not split: a row group or stripe of up to {human_bytes(max(stuck.values()))} is above it "
            f"(rewriting cannot cut one; lower the writers' row group or stripe size)"))
    if not big or not listing.exists or listing.subdirs:
        return decision
    T = settings.target_file_bytes
    pieces = sum(split_pieces(f.size, T, settings.max_file_bytes) for f in big)
    names = tuple(sorted(f.name for f in big))
    what = (f"{len(big)} file(s) above max_file_size {human_bytes(settings.max_file_bytes)} "
            f"({human_bytes(sum(f.size for f in big))}) split into about {pieces} of {human_bytes(T)}")
    if decision.action == "compact":
        if decision.rewrite is None:  # every file rewritten into files of about T: the large ones with them
            return dataclasses.replace(decision, reason=f"{decision.reason}; {what}", split=names)
        chosen = tuple(sorted(set(decision.rewrite) | set(names)))
        return dataclasses.replace(decision, reason=f"{decision.reason}; {what}", rewrite=chosen, split=names,
                                   target_files=decision.target_files - len(big) + pieces)
    if decision.action != "skip" or decision.code is not None:
        return decision
    kept = len(listing.files) - len(big)
    whole = fmt in ("text", "avro") or settings.dedupe
    if whole or not kept:  # the whole unit read and written: every file rewritten
        target = target_file_count(listing.total_bytes, T)
        why = ("every file is rewritten (" + ("dedupe must see every row" if settings.dedupe else
                                              f"{fmt} is rewritten whole through its SerDe") + ")") if kept else ""
        return Decision("compact", f"{SPLIT}: {what}" + (f"; {why}, into {target}" if why else "") +
                        f" (size rule: {decision.reason})", target, SPLIT, split=names)
    return Decision("compact", f"{SPLIT}: {what}; the other {kept} file(s) kept unchanged "
                               f"(size rule: {decision.reason})", pieces + kept, SPLIT, rewrite=names, split=names)


# ---------------------------------------------------------------- dedupe: the delete-ratio trigger
#
# A partition compacted once (few big files) that then receives a small
# batch of updates or delete markers is not selected by any size rule, so
# readers keep seeing the superseded versions and the markers. With
# ``dedupe_trigger_ratio`` such a unit is rewritten anyway when the share of
# its rows that the dedupe would remove reaches the trigger.

DELETE_RATIO = "delete_ratio"


@dataclasses.dataclass(frozen=True)
class DedupeCounts:
    """What a column-pruned read of a unit's key, ordering and marker
    columns counts: its rows, distinct keys, and keys whose latest version
    is a delete marker (as the rewrite's own dedupe counts them)."""

    rows: int
    keys: int
    deletes: int

    @property
    def removed(self) -> int:
        """Rows the dedupe would remove: superseded versions, and every row of a deleted key."""
        return self.rows - (self.keys - self.deletes)

    @property
    def ratio(self) -> float:
        return self.removed / self.rows if self.rows else 0.0


def delete_ratio_candidates(units: list[Unit]) -> list[Unit]:
    """The units the trigger may still select: skipped by the size rule
    (not refused, not a skip that is a refusal), an existing directory with
    data files and no subdirectories."""
    return [u for u in units if u.decision.action == "skip" and u.decision.code is None and u.listing.exists
            and not u.listing.subdirs and u.listing.files]


def delete_ratio_rule(decision: Decision, counts: DedupeCounts, trigger: float, unit_bytes: int,
                      target_bytes: int) -> Decision:
    """A unit the size rule skipped (``decision``), given its measured
    ``counts``: compacted (rule ``delete_ratio``, every file rewritten)
    when the share of its rows the dedupe would remove reaches ``trigger``
    (0 < trigger <= 1), else the same skip with the measured share added to
    its reason."""
    ratio = counts.ratio
    measured = (f"{counts.removed} of {counts.rows} rows ({ratio:.2%}) are superseded versions or delete "
                f"markers")
    if counts.rows <= 0 or counts.removed <= 0 or ratio < trigger:
        return dataclasses.replace(decision, reason=f"{decision.reason}; {DELETE_RATIO}: {measured}, below the "
                                                    f"trigger {trigger:g}")
    # the output is sized by the rows that survive (as the rewrite sizes it)
    target = max(1, target_file_count(int(unit_bytes * (counts.rows - counts.removed) / counts.rows), target_bytes))
    return Decision("compact", f"{DELETE_RATIO}: {measured}, at or above the trigger {trigger:g}; every file is "
                               f"rewritten with dedupe into about {target} (size rule: {decision.reason})",
                    target, DELETE_RATIO)


# ---------------------------------------------------------------- plan


def plan_table(
    table: TableInfo,
    units: list[tuple[str, dict[str, str] | None, str, Listing]],
    settings: Settings,
    run_id: str,
    pieces: dict[str, dict[str, int]] | None = None,
) -> TablePlan:
    """Build the plan of one table from its units' listings.

    ``units``: (spec, partition spec dict or None, location, listing).
    ``pieces``: location -> file name -> its largest row group or stripe
    (bytes), for the files above the split bound (``split_rule``).
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
                decision=decide(stats, settings, listing, table.format, (pieces or {}).get(location)),
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
