"""Settings: defaults, the YAML config file, command-line overrides, durations.

Pure: no Spark here.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from ..report.errors import UsageError
from .names import validate_ident
from .order import DEFAULT as DEFAULT_ORDER
from .order import parse_order
from .retention import policy_error
from .tiering import tiering_error
from .retries import DEFAULT_BACKOFF_SECONDS, DEFAULT_RETRIES, MAX_BACKOFF_SECONDS, MAX_RETRIES
from .queues import parse_queues
from .upgrade import LEGACY_KEYS
from .verify_sample import DEFAULT_FRACTION as DEFAULT_VERIFY_SAMPLE

MB = 1024 * 1024
# max_file_size_mb: at least this many times the target file size (a written file lands within +-25% of it)
MIN_SPLIT_FACTOR = 1.5
MODES = ("ratio", "minor", "major", "smart")
# compact: what the staged copy is checked for before its swap (content.py)
# (sample: content for a seeded subset of a table's units, rows for the others; verify_sample.py)
VERIFY_MODES = ("content", "rows", "sample")
# The shortest lease a run may take (protocol/lease.py: its heartbeat comes every timeout / 6).
MIN_LEASE_TIMEOUT_SECONDS = 30

_DURATION = re.compile(r"^\s*(\d+)\s*([smhdw])\s*$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_duration(value: str | int | float | None) -> int | None:
    """``30m``, ``12h``, ``7d`` (also ``s`` and ``w``) -> seconds.

    A bare number is taken as days, like the reference's ``--older-than 7``.
    """
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise UsageError(f"invalid duration {value!r}")
    if isinstance(value, (int, float)):
        if value < 0:
            raise UsageError(f"invalid duration {value!r}: must not be negative")
        return int(value * 86400)
    text = str(value).strip().lower()
    if text.isdigit():
        return int(text) * 86400
    m = _DURATION.match(text)
    if not m:
        raise UsageError(
            f"invalid duration {value!r}: use a number and a unit, e.g. 30m, 12h, 7d"
        )
    return int(m.group(1)) * _UNIT_SECONDS[m.group(2)]


_PROPERTY_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _logical_lines(text: str) -> list[str]:
    """java.util.Properties lines: comments dropped, continuations joined."""
    out: list[str] = []
    pending = None
    for raw in text.splitlines():
        line = raw.lstrip(" \t\f")
        if pending is None and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:  # an odd number of backslashes: the line goes on
            pending = (pending or "") + line[:-1]
            continue
        out.append((pending or "") + line)
        pending = None
    if pending is not None:
        out.append(pending)
    return out


def _unescape_property(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        char = text[i]
        if char != "\\" or i + 1 == len(text):
            out.append(char)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u":
            digits = text[i + 2:i + 6]
            if len(digits) != 4 or any(c not in "0123456789abcdefABCDEF" for c in digits):
                raise UsageError(f"properties file: malformed \\u escape {text[i:i + 6]!r}")
            out.append(chr(int(digits, 16)))
            i += 6
            continue
        out.append(_PROPERTY_ESCAPES.get(nxt, nxt))
        i += 2
    joined = "".join(out)
    # surrogate pairs written as two \u escapes
    return joined.encode("utf-16", "surrogatepass").decode("utf-16")


def parse_properties(text: str) -> dict[str, str]:
    """A java.util.Properties file (the ``--properties-file`` format of
    spark-submit): ``key=value``, ``key: value`` or ``key value``."""
    props: dict[str, str] = {}
    for line in _logical_lines(text):
        i, key_end = 0, None
        while i < len(line):
            if line[i] == "\\":
                i += 2
                continue
            if line[i] in "=: \t\f":
                key_end = i
                break
            i += 1
        if key_end is None:
            props[_unescape_property(line)] = ""
            continue
        rest = line[key_end:].lstrip(" \t\f")
        if rest[:1] in ("=", ":") and line[key_end] not in "=:":
            rest = rest[1:].lstrip(" \t\f")
        elif line[key_end] in "=:":
            rest = line[key_end + 1:].lstrip(" \t\f")
        props[_unescape_property(line[:key_end])] = _unescape_property(rest)
    return props


@dataclasses.dataclass
class Settings:
    block_size_mb: float = 128.0
    compaction_ratio_threshold: float = 10.0
    target_file_size_mb: float | None = None
    backup_prefix: str = "__bkp"
    dry_run: bool = False
    log_level: str = "INFO"
    older_than_seconds: int | None = None  # cleanup: keep backups younger than this; 0 is "all"
    keep_last: int | None = None  # cleanup: keep the N newest backups of each partition
    grace_seconds: int = 0  # cleanup: never delete a backup younger than this
    pin: str | None = None  # cleanup: run id (or backup table name) to pin instead of cleaning
    unpin: str | None = None  # cleanup: run id (or backup table name) to unpin
    rollback_run: str | None = None  # rollback: restore this run's backup, not the newest (--run-id)
    quiet_period_seconds: int | None = None  # compact: skip units with a file younger than this
    deadline: str | None = None  # compact: the maintenance window's end (budget.py)
    # compact: which tables and units start first (order.py: default, bytes-asc/desc, files-asc/desc)
    order: str = DEFAULT_ORDER
    # units (partitions) in their Spark jobs at the same time (context.JobSlot); None: from the application's
    # cores (context.parallelism_for_cores), resolved when the run's Context is made
    parallelism: int | None = None
    # compact: a file may be written as pieces of at least this size by parallel tasks, then joined (0: never)
    min_piece_mb: float = 8.0
    # compact only: order rows inside each written file; keep the latest
    # version of each key (see docs/engine-contract.md, "Sort order" and "Dedupe")
    sort_by: list[str] = dataclasses.field(default_factory=list)
    dedupe_keys: list[str] = dataclasses.field(default_factory=list)
    dedupe_order_by: str | None = None
    dedupe_delete_marker: str | None = None
    dedupe_delete_value: str | None = None
    # compact/analyze, dedupe: also rewrite a unit the size rule skips when this share of its rows (0 < r <= 1)
    # are superseded versions or delete markers, i.e. rows the dedupe would remove (delete_ratio.py)
    dedupe_trigger_ratio: float | None = None
    # compact, dedupe: merge this batch (a directory URI or a non-partitioned db.table) into the partitions its
    # rows belong to (merge.py); only those partitions are rewritten
    merge_from: str | None = None

    # Compaction modes (see planner.decide): "ratio" is the reference rule;
    # minor/major/smart classify files against the target size as Amoro does.
    mode: str = "ratio"
    min_input_files: int = 12  # minor: at least this many fragment files
    fragment_ratio: float = 0.125  # fragment: smaller than target x this
    min_target_ratio: float = 0.75  # undersized: smaller than target x this (and not a fragment)
    # analyze/compact: a file above this many MB is split into files of about the target size (planner.split_rule,
    # Iceberg's max-file-size-bytes, Amoro's split); None or 0: off (the default; no file is ever split)
    max_file_size_mb: float | None = None
    where: str | None = None  # partition filter (partition_filter.py); analyze and compact only
    # compact: "content" (row checksums read back as readers decode them) or "rows" (metadata only)
    verify: str = "content"
    # verify: sample: the share of each table's units verified by content (at least one; verify_sample.py)
    verify_sample: float = DEFAULT_VERIFY_SAMPLE
    # analyze/compact: Amoro optimizer group -> YARN queue, for the tables whose self-optimizing.group names
    # one (queues.py); a group not named here is a queue of its name. Reported only: the role splits by queue
    queues: dict[str, str] = dataclasses.field(default_factory=dict)
    # compact: compact units whose files' columns drift from the table's (renamed/dropped columns) by name
    # anyway, as Spark and Hive read them (schema_drift.py); off: such units are refused
    allow_by_name_projection: bool = False
    # compact, HDFS: compact units whose files or directory belong to another owner or group than this run can
    # give its copy (it is not the HDFS superuser) anyway, with a warning; off: such units are refused (ownership)
    allow_owner_change: bool = False
    allow_replicated: bool = False  # compact/analyze: tables with repl.* properties (Hive replication replicas)
    # a refused table fails the run (exit code 1); off: reported refused, the run succeeds (docs/statuses.md)
    fail_on_refused: bool = False
    # one run per table (lease.py): a lease whose heartbeat is older than this is stale
    lease_timeout_seconds: int = 30 * 60
    # compact: a unit that failed for a reason that passes (policy/retries.py: Metastore, NameNode, lost
    # executors, IO timeouts) is settled by recovery and tried again this many times, after retry_backoff
    # seconds doubled each time; never a verification mismatch, a refusal or a lost lease
    retries: int = DEFAULT_RETRIES
    retry_backoff: float = DEFAULT_BACKOFF_SECONDS
    break_lease: bool = False  # recover: take over the lease even if it looks live (holder known dead)
    history: int = 20  # analyze: the table's newest history records returned (history.py); 0: none
    # cleanup: also remove the staging copies of killed runs that no journal or live run accounts for
    # (policy/reconcile.py: only those are provably ours and orphaned)
    orphans: bool = False
    # compact: tiering (policy/tiering.py): units whose newest file is older than this are written under the
    # storage policy and/or erasure coding policy below (rewrite/tiering.py); None: off
    tier_older_than_seconds: int | None = None
    tier_storage_policy: str | None = None
    tier_erasure_coding_policy: str | None = None

    @property
    def dedupe(self) -> bool:
        return bool(self.dedupe_keys)

    @property
    def block_size_bytes(self) -> int:
        return int(self.block_size_mb * MB)

    @property
    def target_file_bytes(self) -> int:
        mb = self.target_file_size_mb if self.target_file_size_mb else self.block_size_mb
        return int(mb * MB)

    @property
    def min_piece_bytes(self) -> int:
        return int(self.min_piece_mb * MB)

    @property
    def fragment_bytes(self) -> float:
        return self.target_file_bytes * self.fragment_ratio

    @property
    def min_target_bytes(self) -> float:
        return self.target_file_bytes * self.min_target_ratio

    @property
    def max_file_bytes(self) -> int:
        """The split bound in bytes; 0: off."""
        return int(self.max_file_size_mb * MB) if self.max_file_size_mb else 0

    @property
    def small_file_threshold_bytes(self) -> float:
        """The reference rule: compact when average file size < block / ratio."""
        return self.block_size_bytes / self.compaction_ratio_threshold

    def validate(self) -> "Settings":
        if self.block_size_mb <= 0:
            raise UsageError("block_size_mb must be > 0")
        if self.compaction_ratio_threshold <= 0:
            raise UsageError("compaction_ratio_threshold must be > 0")
        if self.parallelism is not None and not 1 <= self.parallelism <= 64:
            raise UsageError("parallelism must be between 1 and 64")
        if self.min_piece_mb < 0:
            raise UsageError("min_piece_mb must be >= 0 (0: files are never written in pieces)")
        if not 0 <= self.retries <= MAX_RETRIES:
            raise UsageError(f"retries must be between 0 and {MAX_RETRIES} (0: a failed unit is not tried again)")
        if not 0 <= self.retry_backoff <= MAX_BACKOFF_SECONDS:
            raise UsageError(f"retry_backoff must be between 0 and {MAX_BACKOFF_SECONDS:g} seconds")
        if self.history < 0:
            raise UsageError("history must be >= 0 (0: no history)")
        retention_error = policy_error(self.keep_last, self.older_than_seconds, self.grace_seconds or 0)
        if retention_error:
            raise UsageError(retention_error)
        if self.target_file_size_mb is not None and self.target_file_size_mb <= 0:
            raise UsageError("target_file_size_mb must be > 0")
        self.mode = str(self.mode).strip().lower()
        if self.lease_timeout_seconds < MIN_LEASE_TIMEOUT_SECONDS:
            raise UsageError(f"lease_timeout must be at least {MIN_LEASE_TIMEOUT_SECONDS}s: the heartbeat comes "
                             f"every timeout/6, and a shorter lease would be lost to a NameNode failover or a long "
                             f"garbage collection")
        self.order = parse_order(self.order)
        if self.verify not in VERIFY_MODES:
            raise UsageError(f"invalid verify {self.verify!r}: {', '.join(VERIFY_MODES)}")
        if not 0 < self.verify_sample <= 1:
            raise UsageError("verify_sample must be > 0 and <= 1 (the share of each table's units verified by "
                             "content with verify: sample)")
        if self.mode not in MODES:
            raise UsageError(f"invalid mode {self.mode!r}: {', '.join(MODES)}")
        if self.min_input_files < 2:
            raise UsageError("min_input_files must be at least 2")
        if not 0 < self.fragment_ratio <= 1:
            raise UsageError("fragment_ratio must be > 0 and <= 1")
        if not 0 < self.min_target_ratio <= 1:
            raise UsageError("min_target_ratio must be > 0 and <= 1")
        if self.fragment_ratio > self.min_target_ratio:
            raise UsageError(f"fragment_ratio ({self.fragment_ratio:g}) must not exceed min_target_ratio "
                             f"({self.min_target_ratio:g})")
        if self.max_file_size_mb is not None and self.max_file_size_mb < 0:
            raise UsageError("max_file_size_mb must be >= 0 (0: no file is split)")
        if self.max_file_bytes and self.max_file_bytes < MIN_SPLIT_FACTOR * self.target_file_bytes:
            raise UsageError(f"max_file_size_mb ({self.max_file_size_mb:g}) must be at least {MIN_SPLIT_FACTOR:g} x "
                             f"the target file size ({self.target_file_bytes / MB:g} MB): the files a rewrite "
                             f"writes land within +-25% of the target and must never be split again")
        if self.where is not None:
            from .partition_filter import parse_where

            if not str(self.where).strip():
                self.where = None
            else:
                parse_where(self.where)  # syntax errors are usage errors, before anything runs
        prefix = self.backup_prefix
        if not prefix or not re.match(r"^[A-Za-z0-9_]{1,40}$", prefix):
            raise UsageError(f"invalid backup_prefix {prefix!r}: letters, digits, underscore, max 40")
        validate_ident(prefix + "_x", "backup prefix")
        level = str(self.log_level).upper()
        if level not in ("DEBUG", "INFO", "WARNING", "ERROR"):
            raise UsageError(f"invalid log_level {self.log_level!r}: DEBUG, INFO, WARNING or ERROR")
        self.log_level = level
        self._validate_rewrite_options()
        for attr in ("tier_storage_policy", "tier_erasure_coding_policy"):
            value = getattr(self, attr)
            setattr(self, attr, None if value is None or not str(value).strip() else str(value).strip())
        if self.tier_storage_policy is not None:
            self.tier_storage_policy = self.tier_storage_policy.upper()  # HDFS's names: HOT, WARM, COLD, ...
        tier_error = tiering_error(self.tier_older_than_seconds, self.tier_storage_policy,
                                   self.tier_erasure_coding_policy)
        if tier_error:
            raise UsageError(tier_error)
        return self

    def _validate_rewrite_options(self) -> None:
        self.sort_by = _sort_list(self.sort_by)
        self.dedupe_keys = _column_list(self.dedupe_keys, "dedupe keys")
        for attr, what in (("dedupe_order_by", "dedupe order_by"), ("dedupe_delete_marker", "dedupe delete_marker")):
            value = getattr(self, attr)
            if value in (None, ""):
                setattr(self, attr, None)
            else:
                setattr(self, attr, validate_ident(str(value).strip(), f"{what} column"))
        if isinstance(self.dedupe_delete_value, bool):  # YAML true/false: as Spark casts a boolean
            self.dedupe_delete_value = "true" if self.dedupe_delete_value else "false"
        elif self.dedupe_delete_value is not None:
            self.dedupe_delete_value = str(self.dedupe_delete_value)
        self.dedupe_trigger_ratio = _trigger_ratio(self.dedupe_trigger_ratio)
        if self.merge_from is not None and not str(self.merge_from).strip():
            self.merge_from = None
        if self.merge_from is not None:
            self.merge_from = str(self.merge_from).strip()
            if not self.dedupe_keys:
                raise UsageError("merge_from (--merge-from) needs dedupe keys and order_by (--dedupe-keys, "
                                 "--dedupe-order-by): they say which rows are versions of the same key")
            if self.where is not None:
                raise UsageError("merge_from (--merge-from) cannot be combined with where: the batch's rows decide "
                                 "which partitions are rewritten")
        if not self.dedupe_keys:
            if self.dedupe_trigger_ratio is not None:
                raise UsageError("dedupe trigger_ratio (--dedupe-trigger-ratio) needs dedupe keys and order_by: "
                                 "it measures the rows the dedupe would remove")
            if self.dedupe_order_by or self.dedupe_delete_marker or self.dedupe_delete_value is not None:
                raise UsageError("dedupe needs its key columns (dedupe keys / --dedupe-keys)")
            return
        if not self.dedupe_order_by:
            raise UsageError("dedupe needs an ordering column (dedupe order_by / --dedupe-order-by) "
                             "that tells which version of a key is the latest")
        if self.dedupe_order_by in self.dedupe_keys:
            raise UsageError(f"dedupe order_by {self.dedupe_order_by} must not be one of the key columns")
        marker = self.dedupe_delete_marker
        if marker and (marker in self.dedupe_keys or marker == self.dedupe_order_by):
            raise UsageError(f"dedupe delete_marker {marker} must not be a key or the ordering column")
        if self.dedupe_delete_value is not None and not marker:
            raise UsageError("dedupe delete_marker_value needs dedupe delete_marker")


def _trigger_ratio(value: Any) -> float | None:
    """dedupe trigger_ratio: None (not set) or a float in (0, 1]."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool):
        raise UsageError(f"invalid dedupe trigger_ratio {value!r}: a number greater than 0 and at most 1")
    try:
        ratio = float(value)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"invalid dedupe trigger_ratio {value!r}: a number greater than 0 and at most 1") from exc
    if not 0 < ratio <= 1:  # also NaN
        raise UsageError(f"dedupe trigger_ratio must be greater than 0 and at most 1 (the share of a unit's rows "
                         f"that the dedupe would remove), got {value!r}")
    return ratio


def sort_key(item: str) -> tuple[str, bool]:
    """A sort_by item (``col`` or ``col desc``, as validated) -> (column, descending)."""
    name, _sep, direction = item.partition(" ")
    return name, direction == "desc"


# sort_by's Z-order strategy: ``zorder(a, b)`` (Iceberg's sort_order spelling, Delta's ZORDER BY columns)
ZORDER_MAX_COLUMNS = 4
_ZORDER = re.compile(r"^\s*zorder\s*\((.*)\)\s*$", re.IGNORECASE | re.DOTALL)


def zorder_columns(sort_by: Any) -> list[str] | None:
    """The columns of a validated sort_by that is a Z-order (``["zorder(a,b)"]``), else None."""
    if isinstance(sort_by, (list, tuple)) and len(sort_by) == 1:
        m = _ZORDER.match(str(sort_by[0]))
        if m:
            return m.group(1).split(",")
    return None


def _zorder_text(value: Any) -> str | None:
    """sort_by as one text when it is a Z-order: a string, or a list whose
    items joined by commas are one (an Ansible list option splits
    ``zorder(a,b)`` on its comma into ``["zorder(a", "b)"]``)."""
    if isinstance(value, str):
        text = value
    elif isinstance(value, (list, tuple)) and value:
        text = ",".join("" if v is None else str(v) for v in value)
    else:
        return None
    return text if _ZORDER.match(text) or text.strip().lower().startswith("zorder(") else None


def _sort_list(value: Any) -> list[str]:
    """sort_by: ``a, b DESC`` or ``[a, "b desc"]`` -> ``["a", "b desc"]``:
    validated column names, each optionally followed by ASC (dropped) or
    DESC (largest first), without repeats. ``zorder(a, b)`` (1 to
    ``ZORDER_MAX_COLUMNS`` columns, ascending only) -> ``["zorder(a,b)"]``:
    rows ordered by the columns' interleaved ranks (rewrite/zorder.py)."""
    text = _zorder_text(value)
    if text is not None:
        m = _ZORDER.match(text)
        if not m:
            raise UsageError(f"sort_by: {text!r} is not zorder(col, ...) (one to {ZORDER_MAX_COLUMNS} column names)")
        names = _column_list([c.strip() for c in m.group(1).split(",")], "sort_by zorder")
        if not 1 <= len(names) <= ZORDER_MAX_COLUMNS:
            raise UsageError(f"sort_by: zorder takes 1 to {ZORDER_MAX_COLUMNS} columns, got {len(names)} "
                             f"({', '.join(names)})")
        return [f"zorder({','.join(names)})"]
    items = value.split(",") if isinstance(value, str) else value
    if isinstance(items, (list, tuple)):
        plain, directions = [], []
        for item in items:
            words = str(item if item is not None else "").split()
            direction = words[1].lower() if len(words) == 2 else ""
            if len(words) > 2 or direction not in ("", "asc", "desc"):
                raise UsageError(f"sort_by: {item!r} is not a column name, optionally followed by ASC or DESC")
            plain.append(words[0] if words else "")
            directions.append(direction)
        names = _column_list(plain, "sort_by")
        return [n + (" desc" if d == "desc" else "") for n, d in zip(names, directions)]
    return _column_list(value, "sort_by")


def _column_list(value: Any, what: str) -> list[str]:
    """``a,b`` or ``[a, b]`` -> validated, lower-cased, without repeats."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        items = [v.strip() for v in value.split(",")]
    elif isinstance(value, (list, tuple)):
        items = [str(v).strip() if v is not None else "" for v in value]
    else:
        raise UsageError(f"{what} must be a list of column names, got {value!r}")
    out: list[str] = []
    for item in items:
        name = validate_ident(item, f"{what} column")
        if name in out:
            raise UsageError(f"{what}: column {name} is given twice")
        out.append(name)
    return out


# Keys of the reference configuration file that the engine reads. The
# ``spark_submit`` section belongs to the launcher (the Ansible modules) and is
# ignored here.
_FILE_KEYS = {
    "block_size_mb": float,
    "compaction_ratio_threshold": float,
    "target_file_size_mb": float,
    "backup_prefix": str,
    "dry_run": bool,
    "log_level": str,
    "older_than": str,
    "keep_last": int,
    "grace_period": str,
    "quiet_period": str,
    "deadline": str,
    "order": str,
    "parallelism": int,
    "min_piece_mb": float,
    "sort_by": list,
    "mode": str,
    "min_input_files": int,
    "fragment_ratio": float,
    "min_target_ratio": float,
    "max_file_size_mb": float,
    "where": str,
    "verify": str,
    "verify_sample": float,
    "queues": dict,
    "allow_by_name_projection": bool,
    "allow_owner_change": bool,
    "allow_replicated": bool,
    "orphans": bool,
    "fail_on_refused": bool,
    "lease_timeout": str,
    "retries": int,
    "retry_backoff": float,
}
# ``dedupe:`` in the file is a mapping of these keys -> Settings attributes.
_DEDUPE_KEYS = {"keys": "dedupe_keys", "order_by": "dedupe_order_by", "delete_marker": "dedupe_delete_marker",
                "delete_marker_value": "dedupe_delete_value", "trigger_ratio": "dedupe_trigger_ratio"}
# ``tiering:`` in the file is a mapping of these keys -> Settings keys (apply_values).
_TIERING_KEYS = {"older_than": "tier_older_than", "storage_policy": "tier_storage_policy",
                 "erasure_coding_policy": "tier_erasure_coding_policy"}
_LAUNCHER_KEYS = {"spark_submit"}


def load_config_file(path: str) -> dict[str, Any]:
    return config_file_values(read_config_file(path), path)


def read_config_file(path: str) -> dict[str, Any]:
    """The config file's mapping, as written (``config_file_values`` reads its settings)."""
    import yaml  # only needed when a config file is used

    try:
        with open(path, encoding="utf-8") as fh:
            data = yaml.safe_load(fh) or {}
    except OSError as exc:
        raise UsageError(f"cannot read config file {path}: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise UsageError(f"config file {path} is not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise UsageError(f"config file {path} must hold a mapping of settings")
    return data


def config_file_values(data: dict[str, Any], path: str) -> dict[str, Any]:
    """The settings of a config file's mapping; lakekeeper 0.0.x's own keys
    (upgrade.LEGACY_KEYS) are left to upgrade.py."""
    unknown = sorted(set(data) - set(_FILE_KEYS) - _LAUNCHER_KEYS - {"dedupe", "tiering"} - set(LEGACY_KEYS))
    if unknown:
        raise UsageError(f"config file {path}: unknown key(s) {', '.join(unknown)}")
    out = {k: v for k, v in data.items() if k in _FILE_KEYS}
    out.update(dedupe_file_values(data.get("dedupe"), f"config file {path}"))
    out.update(tiering_file_values(data.get("tiering"), f"config file {path}"))
    return out


def tiering_file_values(section: Any, where: str = "config file") -> dict[str, Any]:
    """The ``tiering:`` mapping (older_than, storage_policy,
    erasure_coding_policy) -> Settings keys (apply_values)."""
    if section is None:
        return {}
    if not isinstance(section, dict):
        raise UsageError(f"{where}: tiering must be a mapping (older_than, storage_policy, erasure_coding_policy)")
    unknown = sorted(str(k) for k in set(section) - set(_TIERING_KEYS))
    if unknown:
        raise UsageError(f"{where}: unknown tiering key(s) {', '.join(unknown)}")
    return {_TIERING_KEYS[k]: v for k, v in section.items()}


def dedupe_file_values(section: Any, where: str = "config file") -> dict[str, Any]:
    """The ``dedupe:`` mapping (keys, order_by, delete_marker,
    delete_marker_value, trigger_ratio) -> Settings attributes."""
    if section is None:
        return {}
    if not isinstance(section, dict):
        raise UsageError(f"{where}: dedupe must be a mapping (keys, order_by, delete_marker, delete_marker_value, "
                         f"trigger_ratio)")
    unknown = sorted(str(k) for k in set(section) - set(_DEDUPE_KEYS))
    if unknown:
        raise UsageError(f"{where}: unknown dedupe key(s) {', '.join(unknown)}")
    return {_DEDUPE_KEYS[k]: v for k, v in section.items()}


def build_settings(file_values: dict[str, Any], overrides: dict[str, Any]) -> Settings:
    """Defaults < config file < command line (``None`` means not given)."""
    merged: dict[str, Any] = {}
    for source in (file_values, overrides):
        for key, value in source.items():
            if value is not None:
                merged[key] = value
    return apply_values(Settings(), merged)


def apply_values(s: Settings, merged: dict[str, Any]) -> Settings:
    """``s`` with config-file-style values set on it (durations parsed,
    types coerced), validated. Also how a table's policy (policy.py)
    lands on the run's settings."""
    for key, value in merged.items():
        if key == "older_than":
            # "all": every unpinned backup outside the grace period (retention.OLDER_THAN_ALL)
            all_ = isinstance(value, str) and value.strip().lower() == "all"
            s.older_than_seconds = 0 if all_ else parse_duration(value)
            continue
        if key in ("pin", "unpin", "rollback_run"):  # command line only
            setattr(s, key, str(value))
            continue
        if key == "grace_period":
            s.grace_seconds = parse_duration(value) or 0
            continue
        if key == "lease_timeout":
            s.lease_timeout_seconds = parse_duration(value) or 0
            continue
        if key == "history":  # command line only
            try:
                s.history = int(value)
            except (TypeError, ValueError) as exc:
                raise UsageError(f"invalid value for history: {value!r}") from exc
            continue
        if key == "break_lease":  # command line only
            s.break_lease = bool(value)
            continue
        if key == "quiet_period":
            s.quiet_period_seconds = parse_duration(value)
            continue
        if key == "tier_older_than":
            s.tier_older_than_seconds = parse_duration(value)
            continue
        if key in ("tier_storage_policy", "tier_erasure_coding_policy"):
            setattr(s, key, None if value is None else str(value))  # checked by validate()
            continue
        if key in _DEDUPE_KEYS.values():
            setattr(s, key, value)  # checked by validate()
            continue
        if key == "merge_from":  # command line only (the batch of one run)
            s.merge_from = str(value)
            continue
        if key == "queues":  # a mapping (config file), or group=queue,... (--queues)
            s.queues = parse_queues(value)
            continue
        if key not in _FILE_KEYS:
            continue
        caster = _FILE_KEYS[key]
        if caster is list:
            setattr(s, key, value)  # checked by validate()
            continue
        try:
            if caster is bool and isinstance(value, str):
                value = value.strip().lower() in ("1", "true", "yes", "on")
            setattr(s, key, caster(value))
        except (TypeError, ValueError) as exc:
            raise UsageError(f"invalid value for {key}: {value!r}") from exc
    return s.validate()
