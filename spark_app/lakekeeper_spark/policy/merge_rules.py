"""Merge mode of compact (``--merge-from``): the pure rules.

A batch (a flat directory of data files with the table's columns, partition
columns included as ordinary columns) is merged into the partitions its rows
belong to: each touched partition is rewritten as
``dedupe(original rows + batch rows of that partition)`` through the usual
staging -> verification -> swap -> backup protocol (merge.py does the I/O).

Here, without Spark: the partition spec of a batch row, the batch's identity
(its path and the names, sizes and modification times of its files), the
routing of the batch's partitions onto the table's units, the refusals, the
decisions, and the record of which partitions a batch was applied to.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

from ..report.errors import Refused
from ..report.model import Decision, FileEntry, Unit

MERGE_RULE = "merge"

# Reason codes.
ALREADY_APPLIED = "batch_already_applied"  # status skipped: every partition of the batch was merged before
KEY_MOVED = "merge_key_moved"  # a batch key in another partition than where the table (or the batch) has it
NEW_PARTITION = "merge_new_partition"  # a batch row for a partition the table does not have
PARTITION_VALUE = "merge_partition_value"  # a batch row with a NULL partition value
BATCH_SCHEMA = "merge_batch_schema"  # the batch's columns are not the table's
BATCH_LAYOUT = "merge_batch_layout"  # the batch is not a flat directory of data files
BATCH_EMPTY = "merge_batch_empty"


def spec_string(columns: list[str], values: list[Any]) -> str | None:
    """``dt=a/h=1`` as the catalog spells a partition (``PartitionInfo.spec_str``);
    None when a value is NULL. Values are compared as their text (a batch
    value ``9`` matches a partition ``h=9``, not ``h=09``: that one counts as
    missing and the merge is refused)."""
    if any(v is None for v in values):
        return None
    return "/".join(f"{c}={v}" for c, v in zip(columns, values))


def batch_identity(uri: str, files: list[FileEntry]) -> str:
    """A stable id of the batch: its qualified path and the name, size and
    modification time of each of its data files (a file added, rewritten or
    touched makes another batch)."""
    text = json.dumps([uri.rstrip("/"), sorted(list(f.key()) for f in files)], separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def check_batch_schema(table_columns: list[tuple[str, str]], batch_columns: list[tuple[str, str]]) -> str | None:
    """Why the batch cannot be merged (every column of the table, data and
    partition columns, with the same type; extra batch columns are not
    allowed), or None. Names are compared case-insensitively."""
    have = {n.lower(): t.lower() for n, t in batch_columns}
    missing = [n for n, _t in table_columns if n.lower() not in have]
    if missing:
        return f"the batch lacks the column(s) {', '.join(missing)}"
    wrong = [f"{n} is {have[n.lower()]}, the table's {t.lower()}" for n, t in table_columns if have[n.lower()] != t.lower()]
    if wrong:
        return "column types differ: " + "; ".join(wrong)
    extra = sorted(set(have) - {n.lower() for n, _t in table_columns})
    if extra:
        return f"the batch has column(s) the table does not: {', '.join(extra)}"
    return None


@dataclasses.dataclass(frozen=True)
class BatchPart:
    """What the batch holds for one partition, as it states it: its rows,
    and its distinct keys split by what their latest batch version does to
    the partition (a key not in the partition: inserted, or a delete of a
    key that is not there; a key in it: updated or deleted). Whether a batch
    version wins over the partition's own is decided by the ordering column
    in the rewrite; these figures are what the batch asks for."""

    rows: int
    inserted: int = 0
    updated: int = 0
    deleted: int = 0
    absent_deletes: int = 0  # delete markers of keys the partition does not hold (nothing to remove)

    def to_dict(self) -> dict[str, int]:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class Routing:
    todo: dict[str, BatchPart]  # spec -> what to merge now
    already: list[str]  # specs this batch was merged into before (skipped)


def route(parts: dict[str | None, int], unit_specs: list[str], applied: set[str], table: str) -> Routing:
    """Map the batch's partitions (spec -> rows; None: a NULL partition
    value) onto the table's units. Refuses the whole merge (nothing written)
    when a row has a NULL partition value or belongs to a partition the
    table does not have (partitions are not created by a merge)."""
    if None in parts:
        raise Refused(PARTITION_VALUE, f"{table}: {parts[None]} batch row(s) have a NULL partition value; "
                                       f"nothing was merged")
    known = set(unit_specs)
    missing = sorted(s for s in parts if s not in known)
    if missing:
        raise Refused(NEW_PARTITION, f"{table}: the batch has rows for {len(missing)} partition(s) the table does "
                                     f"not have ({', '.join(missing[:5])}); a merge does not create partitions: add "
                                     f"them first (e.g. ALTER TABLE ... ADD PARTITION); nothing was merged")
    todo = {s: BatchPart(rows=n) for s, n in parts.items() if s is not None and s not in applied}
    already = sorted(s for s in parts if s is not None and s in applied)
    return Routing(todo=todo, already=already)


def moved_keys_refusal(table: str, in_batch: int, in_table: int, samples: list[str]) -> Refused | None:
    """A key the batch puts into one partition while the batch also has it
    in another (``in_batch``), or while the table holds it in another
    partition (``in_table``): the merge would leave two live versions of
    the key. Refused as a whole."""
    if not in_batch and not in_table:
        return None
    what = []
    if in_batch:
        what.append(f"{in_batch} key(s) appear in two or more partitions of the batch")
    if in_table:
        what.append(f"{in_table} batch key(s) already exist in another partition of the table")
    example = f" (e.g. {'; '.join(samples[:3])})" if samples else ""
    return Refused(KEY_MOVED, f"{table}: {' and '.join(what)}{example}; a merge does not move keys between "
                              f"partitions; nothing was merged")


def merge_decision(unit: Unit, part: BatchPart | None, already: bool = False) -> Decision:
    """A unit the batch touches is rewritten whatever the size rule says
    (every file, rule ``merge``); the others are left alone."""
    if part is None:
        why = ("the batch was already merged into this partition" if already
               else "the batch has no rows for this partition")
        return Decision("skip", f"merge: {why}", unit.stats.files, MERGE_RULE)
    return Decision("compact", f"merge: {part.rows} batch row(s) ({part.inserted} inserted, {part.updated} updated, "
                               f"{part.deleted} deleted as the batch states them); every file is rewritten with them",
                    max(1, unit.decision.target_files), MERGE_RULE)


def apply_merge_decisions(units: list[Unit], routing: Routing) -> None:
    """Replace the size rule's decisions (a refusal stays a refusal)."""
    already = set(routing.already)
    for u in units:
        if u.decision.action == "refuse":
            continue
        u.decision = merge_decision(u, routing.todo.get(u.spec), u.spec in already)


# ---------------------------------------------------------------- the applied-batch record

def record_name(identity: str) -> str:
    return f"{identity}.json"


def applied_specs(doc: dict[str, Any] | None) -> set[str]:
    return set((doc or {}).get("applied", {}))


def with_applied(doc: dict[str, Any] | None, batch: dict[str, Any], specs: list[str], run_id: str) -> dict[str, Any]:
    """The record of ``batch`` (identity, source, files) with ``specs``
    marked as merged by ``run_id`` (earlier entries kept)."""
    out = dict(doc or {})
    out.update({k: batch[k] for k in ("identity", "source", "files") if k in batch})
    applied = dict(out.get("applied", {}))
    for s in specs:
        applied.setdefault(s, run_id)
    out["applied"] = applied
    return out
