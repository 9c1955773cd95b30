"""Which units of a table are written together (pure: a plan is data).

A partitioned Parquet or ORC table's small partitions cost Spark a job each
for their write and another for their read-back; most of that is the
driver planning small jobs, not data (docs/benchmarks.md, "Where a
partition's time goes"). Units that can be written by one scan over their
directories and one job (``rewrite/batch.py``) are grouped here into
batches of up to ``max_units`` units; every other unit, and every unit of a
batch that fails, takes the per-unit path.

A unit is *batchable* when (``why_not`` says why not otherwise):

- the table is Parquet or ORC, partitioned, and the run neither sorts,
  dedupes nor merges and verifies content (``verify: content``);
- the unit is read as its directory (``planner.read_paths``: every file
  there is rewritten, nothing kept, no subdirectory);
- it is written as one file in one piece (``planner.write_layout`` with the
  unit's own sizes and one slot): the batch's shuffle puts each unit's rows
  in one task, which writes exactly one file for it;
- its directory is the table's root followed by its partition spec, each
  value made only of characters no path escaping touches (``SAFE_VALUE``):
  the batch reads the values from the paths (``basePath``) and writes them
  back with ``partitionBy``, so the directory Spark writes for it is its
  spec, unambiguously;
- its staging directory needs no preparation (HDFS erasure coding of its
  own: ``hdfs_checks.prepare_staging``).

Units are batched with units of the same codec and layout (``codec_key``),
in plan order.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Callable

from .planner import read_paths, write_layout
from ..report.model import Unit

# Units a batch holds at most (``spark.lakekeeper.batch.units``; 0 or 1 turns batching off).
DEFAULT_BATCH_UNITS = 200
# Fewer batchable units than this in a group: written one by one (a batch of one is a unit).
MIN_BATCH_UNITS = 2
# A partition value the batch reads from its path and writes back as it is.
SAFE_VALUE = re.compile(r"^[A-Za-z0-9_.+,@~-]+$")
HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"


@dataclasses.dataclass(frozen=True)
class UnitBatch:
    """Units (their indexes in the table's ``todo``) written by one job.
    ``key``: the codec and layout they share."""

    number: int
    units: tuple[int, ...]
    key: tuple[Any, ...]

    def describe(self, todo: list[Unit]) -> str:
        specs = [todo[i].spec for i in self.units]
        shown = ", ".join(specs[:3]) + (f", ... ({len(specs)} units)" if len(specs) > 3 else "")
        return f"batch {self.number}: {shown} [{', '.join(str(k) for k in self.key)}]"


@dataclasses.dataclass(frozen=True)
class BatchPlan:
    """The table's batches, and why each unit left out of them was."""

    batches: tuple[UnitBatch, ...]
    alone: dict[int, str]  # unit index -> why it is written on its own

    def batch_of(self) -> dict[int, UnitBatch]:
        return {i: b for b in self.batches for i in b.units}

    def lines(self, todo: list[Unit]) -> list[str]:
        """Printable: one line a batch, then the units written alone and why."""
        out = [b.describe(todo) for b in self.batches]
        out += [f"alone: {todo[i].spec or '(table)'}: {why}" for i, why in sorted(self.alone.items())]
        return out


def codec_key(codec: dict[str, Any]) -> tuple[Any, ...]:
    """What units of one batch share: the codec, the Parquet layout and timestamp type."""
    return (str(codec.get("codec")), codec.get("legacy"), codec.get("timestamp_type"))


def why_not(fmt: str | None, table_location: str, u: Unit, target_bytes: int, payload: float,
            min_piece_bytes: int) -> str | None:
    """None when ``u`` can be written in a batch, else why it cannot (the
    table-wide conditions are ``plan_batches``' caller's)."""
    if fmt not in ("parquet", "orc"):
        return f"format {fmt}"
    if u.decision.split:  # written as the files it is split into (planner.split_rule), never one
        return "it splits a file above max_file_size_mb"
    if not u.partition or not u.spec:
        return "not a partition"
    root = table_location.rstrip("/")
    if u.location.rstrip("/") != f"{root}/{u.spec}":
        return "its directory is not the table's root and its spec"
    segments = u.spec.split("/")
    if len(segments) != len(u.partition):
        return "its spec does not name each partition column once"
    for seg, (k, v) in zip(segments, u.partition.items()):
        if seg != f"{k}={v}" or v == HIVE_DEFAULT_PARTITION or not SAFE_VALUE.match(v) or not SAFE_VALUE.match(k):
            return f"partition value {seg!r} is not written back unchanged by a path"
    if read_paths(u) != [u.location.rstrip("/")]:
        return "not read as its whole directory"
    layout = write_layout([f.size for f in u.rewrite_files], target_bytes, payload, 1, min_piece_bytes)
    if layout.files != 1:
        return f"written as {layout.files} files"
    if u.hdfs is not None and u.hdfs.erasure_coding is not None:
        return "its staging needs an erasure coding policy of its own"
    if u.hdfs is not None and u.hdfs.tier_storage_policy is not None:
        return "its staging needs a storage policy of its own (tiering)"
    return None


def plan_batches(todo: list[Unit], reason: Callable[[Unit], str | None], key: Callable[[Unit], tuple[Any, ...]],
                 max_units: int = DEFAULT_BATCH_UNITS, min_units: int = MIN_BATCH_UNITS) -> BatchPlan:
    """Group the batchable units of ``todo`` (``reason(u)`` None) by
    ``key(u)`` in plan order, ``max_units`` a batch at most; a group of
    fewer than ``min_units`` is written unit by unit."""
    alone: dict[int, str] = {}
    groups: dict[tuple[Any, ...], list[int]] = {}
    for i, u in enumerate(todo):
        why = reason(u) if max_units >= min_units else "batching off"
        if why is not None:
            alone[i] = why
            continue
        groups.setdefault(key(u), []).append(i)
    batches: list[UnitBatch] = []
    for k, members in groups.items():
        chunks = [members[s:s + max_units] for s in range(0, len(members), max_units)]
        for chunk in chunks:
            if len(chunk) < min_units:
                for i in chunk:
                    alone[i] = "too few batchable units alike"
                continue
            batches.append(UnitBatch(len(batches), tuple(chunk), k))
    return BatchPlan(tuple(batches), alone)
