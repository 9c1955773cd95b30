"""Plain data: what the adapters return and what the planner produces.

A plan is data: it can be printed (``to_dict``) and tested without Spark.
"""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass(frozen=True)
class FileEntry:
    """One data file of a table or partition directory."""

    name: str
    size: int
    mtime: int  # milliseconds since the epoch, as the FileSystem API reports
    # HDFS listings only (None elsewhere), not part of the fingerprint: what the HDFS pre-flight compares
    replication: int | None = dataclasses.field(default=None, compare=False)
    owner: str | None = dataclasses.field(default=None, compare=False)
    group: str | None = dataclasses.field(default=None, compare=False)

    def key(self) -> tuple[str, int, int]:
        return (self.name, self.size, self.mtime)


@dataclasses.dataclass
class Listing:
    """The visible content of one directory (hidden names excluded)."""

    path: str
    exists: bool = True
    files: list[FileEntry] = dataclasses.field(default_factory=list)
    subdirs: list[str] = dataclasses.field(default_factory=list)  # visible subdirectory names
    # hidden files (``_SUCCESS``, a writer's ``.x.tmp``): not data, but they move with the directory
    hidden_files: list[str] = dataclasses.field(default_factory=list)

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files)

    def fingerprint(self) -> list[list[Any]]:
        """Names, sizes and modification times: what concurrent-write checks compare."""
        return [list(f.key()) for f in sorted(self.files, key=lambda f: f.name)]


def spec_string(spec: dict[str, str]) -> str:
    """``a=1/b=x``: a partition spec as units and results name it."""
    return "/".join(f"{k}={v}" for k, v in spec.items())


@dataclasses.dataclass
class PartitionInfo:
    spec: dict[str, str]  # ordered as the table's partition columns
    location: str

    @property
    def spec_str(self) -> str:
        return spec_string(self.spec)


@dataclasses.dataclass
class Storage:
    """A partition's own storage descriptor, as the Metastore keeps it: it
    may differ from the table's (``ALTER TABLE ... SET SERDEPROPERTIES``
    without ``CASCADE`` leaves existing partitions as they were)."""

    serde: str | None
    input_format: str | None
    output_format: str | None
    serde_properties: dict[str, str]
    parameters: dict[str, str]  # the partition's parameters (readers layer them over its SerDe properties)


@dataclasses.dataclass
class TableInfo:
    db: str
    name: str
    table_type: str  # EXTERNAL, MANAGED, VIEW
    location: str | None
    provider: str | None  # hive, parquet, ...
    serde: str | None
    input_format: str | None
    output_format: str | None
    serde_properties: dict[str, str]
    properties: dict[str, str]
    data_columns: list[tuple[str, str]]  # (name, Spark SQL type)
    partition_columns: list[tuple[str, str]]
    num_buckets: int = 0
    format: str | None = None  # parquet, orc, avro, text (see formats.detect_format)
    data_schema_json: str = ""  # Spark StructType JSON of the data (non-partition) columns  # parquet, orc, avro, text (see formats.detect_format)

    @property
    def full_name(self) -> str:
        return f"{self.db}.{self.name}"

    @property
    def is_partitioned(self) -> bool:
        return bool(self.partition_columns)


@dataclasses.dataclass
class FileStats:
    files: int
    bytes: int
    avg_bytes: float
    median_bytes: float


@dataclasses.dataclass
class Decision:
    action: str  # "compact", "skip", or "refuse" (compact would change what readers see; see ``code``)
    reason: str
    target_files: int  # files the unit holds after compaction (minor: merged + copied)
    rule: str = "ratio"  # the rule that chose or declined: ratio, minor, major
    rewrite: tuple[str, ...] | None = None  # minor: the fragment files to rewrite; None: every file
    # action "refuse": the reason code (the unit cannot be rewritten faithfully); also a skip that is a
    # refusal (e.g. schema_drift)
    code: str | None = None
    # the files above max_file_size_mb that the rewrite splits into files of about the target size
    # (planner.split_rule); they are among the files rewritten
    split: tuple[str, ...] = ()


@dataclasses.dataclass
class HdfsCarry:
    """What the HDFS pre-flight (hdfs_checks.py) found on a unit directory that
    its compacted copy must be given before the swap (the copy is a new
    directory inode, written next to it)."""

    storage_policy: str | None = None  # the directory's own storage policy (not its parent's)
    xattrs: dict[str, bytes] = dataclasses.field(default_factory=dict)  # user.* (trusted.* as superuser)
    replication: int | None = None  # the one replication factor of the files rewritten, if they share one
    keep_owner: bool = True  # False: allow_owner_change, this run cannot give the copy the owner
    owner_note: str | None = None  # the warning that says whose files changed owner
    # erasure coding (Hadoop 3; hdfs_checks.check_units): whether the new files' policy is checked (the
    # directory or its parent is erasure coded), the directory's effective policy they must have (None:
    # replicated), and the policy the staging is created with when it differs from the parent's, which the
    # staging would otherwise take ("replication" for a replicated directory under an erasure coded parent)
    ec_check: bool = False
    ec_expected: str | None = None
    erasure_coding: str | None = None
    # tiering (rewrite/tiering.py): the storage policy the staging is created with before the write
    tier_storage_policy: str | None = None


@dataclasses.dataclass
class Unit:
    """One directory that is compacted and swapped as a whole: the table's
    location for a non-partitioned table, else one partition's location."""

    spec: str  # "" for a non-partitioned table, else "k=v/k2=v2"
    partition: dict[str, str] | None
    location: str
    listing: Listing
    stats: FileStats
    decision: Decision
    staging: str
    old: str
    # a partition's own storage descriptor (tables.resolve_storage); None: the table's
    storage: Storage | None = None
    # HDFS attributes to carry onto the compacted copy (hdfs_checks.check_units); None: not on HDFS
    hdfs: HdfsCarry | None = None
    # dedupe trigger_ratio: the share of its rows the dedupe would remove, where it was measured (delete_ratio.py)
    delete_ratio: float | None = None
    # tiering (rewrite/tiering.py): the policies this unit's copy is written under, its age, why a policy is
    # not applied, the space it consumed before; None: not old enough, or no tiering
    tier: dict[str, Any] | None = None

    @property
    def rewrite_files(self) -> list[FileEntry]:
        """The files the compaction rewrites (minor mode: only the fragments)."""
        chosen = self.decision.rewrite
        if chosen is None:
            return list(self.listing.files)
        names = set(chosen)
        return [f for f in self.listing.files if f.name in names]

    @property
    def kept_files(self) -> list[FileEntry]:
        """The files kept unchanged (minor mode, a split): moved by rename into
        the staging right before the swap (``swap.move_kept``)."""
        chosen = self.decision.rewrite
        if chosen is None:
            return []
        names = set(chosen)
        return [f for f in self.listing.files if f.name not in names]

    def to_dict(self) -> dict[str, Any]:
        return {
            "spec": self.spec,
            "location": self.location,
            "files": self.stats.files,
            "bytes": self.stats.bytes,
            "avg_file_bytes": round(self.stats.avg_bytes, 1),
            "median_file_bytes": round(self.stats.median_bytes, 1),
            "decision": self.decision.action,
            "reason": self.decision.reason,
            "rule": self.decision.rule,
            "target_files": self.decision.target_files,
            **({"delete_ratio": self.delete_ratio} if self.delete_ratio is not None else {}),
            "staging": self.staging,
            "old": self.old,
        }


@dataclasses.dataclass
class TablePlan:
    table: str
    run_id: str
    format: str
    location: str
    partitioned: bool
    units: list[Unit]
    backup_table: str
    journal_dir: str

    @property
    def to_compact(self) -> list[Unit]:
        return [u for u in self.units if u.decision.action == "compact"]

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "run_id": self.run_id,
            "format": self.format,
            "location": self.location,
            "partitioned": self.partitioned,
            "backup_table": self.backup_table,
            "journal_dir": self.journal_dir,
            "units": [u.to_dict() for u in self.units],
        }
