"""Per-table policies: table owners tag their tables in the Metastore
instead of editing playbooks (like Hive's ``compactor.*`` and Amoro's table
properties). A table property ``lakekeeper.<key>`` overrides the run's
setting of the same name for that table only:

==================================  ==========================================
table property                      what it sets (config key / engine flag)
==================================  ==========================================
``lakekeeper.exclude``              ``true``: compact leaves the table alone
                                    (``refused``, code ``excluded``; skipped in
                                    a database run); analyze still reports it
``lakekeeper.mode``                 ``mode`` (ratio, minor, major, smart)
``lakekeeper.block_size_mb``        ``block_size_mb``
``lakekeeper.target_file_size_mb``  ``target_file_size_mb``
``lakekeeper.ratio_threshold``      ``compaction_ratio_threshold``
``lakekeeper.min_input_files``      ``min_input_files``
``lakekeeper.fragment_ratio``       ``fragment_ratio``
``lakekeeper.min_target_ratio``     ``min_target_ratio``
``lakekeeper.max_file_size_mb``     ``max_file_size_mb`` (a file above it is
                                    split; planner.split_rule)
``lakekeeper.quiet_period``         ``quiet_period`` (a duration)
``lakekeeper.verify``               ``verify`` (content, rows, sample)
``lakekeeper.verify_sample``        ``verify_sample`` (verify sample: the share of
                                    the table's units verified by content)
``lakekeeper.queue``                the YARN queue the table's compaction runs
                                    in (not a setting: reported as ``queue``;
                                    the maintenance role starts one application
                                    per queue; queues.py)
``lakekeeper.order``                ``order`` (the order of the table's
                                    partitions: default, bytes-asc,
                                    bytes-desc, files-asc, files-desc; the
                                    order of the tables is the run's)
``lakekeeper.sort_by``              ``sort_by`` (comma-separated columns, or
                                    ``zorder(a, b)``: up to four columns)
``lakekeeper.dedupe.keys``          ``dedupe.keys`` (comma-separated columns)
``lakekeeper.dedupe.order_by``      ``dedupe.order_by``
``lakekeeper.dedupe.delete_marker`` ``dedupe.delete_marker``
``lakekeeper.dedupe.delete_marker_value``  ``dedupe.delete_marker_value``
``lakekeeper.dedupe.trigger_ratio``  ``dedupe.trigger_ratio`` (0 < r <= 1: a
                                    unit the size rule skips is rewritten
                                    when this share of its rows would be
                                    removed by the dedupe)
``lakekeeper.retries``              ``retries`` (compact: tries of a unit
                                    that failed for a reason that passes;
                                    retries.py)
``lakekeeper.tier.older_than``      ``tiering.older_than`` (compact: units
``lakekeeper.tier.storage_policy``  whose newest file is older are written
``lakekeeper.tier.erasure_coding_policy``  under that HDFS storage policy /
                                    erasure coding policy; tiering.py)
``lakekeeper.retention.keep_last``  ``keep_last`` (cleanup, analyze)
``lakekeeper.retention.older_than`` ``older_than`` (cleanup, analyze)
``lakekeeper.retention.grace_period``  ``grace_period`` (cleanup, analyze)
==================================  ==========================================

Apache Amoro's ``self-optimizing.*`` table properties that mean what a
setting of ours means are read too (``AMORO``; docs/engine-contract.md,
"Amoro's and Hive's table properties", lists them and why the others are
not), so a table its owner tuned for Amoro is
compacted the same way; the table's own ``lakekeeper.*`` property wins when
both are set. Each one read is in the policy under the ``lakekeeper.*`` key
it stands for, and named in ``policy_from``. Hive's ``compactor.*``,
``compactorthreshold.*`` and ``NO_AUTO_COMPACTION`` are not read: they
steer Hive's compactor, which only works on transactional (ACID) tables,
which lakekeeper refuses.

Any other ``lakekeeper.*`` property (a typo, a key of a later version), or
a value that does not validate, refuses the table (code ``invalid_policy``)
rather than running it with settings its owner did not ask for. The
properties lakekeeper itself writes on its backup and scratch tables are
not policies. Pure: no Spark here.
"""

from __future__ import annotations

import copy
from typing import Any, Callable

from .config import Settings, apply_values
from .queues import QUEUE
from .retries import MAX_RETRIES
from ..report.errors import Refused, UsageError

PREFIX = "lakekeeper."
EXCLUDE = "lakekeeper.exclude"
# table property -> the config key it sets (config.apply_values)
POLICY_KEYS = {
    "lakekeeper.mode": "mode",
    "lakekeeper.block_size_mb": "block_size_mb",
    "lakekeeper.target_file_size_mb": "target_file_size_mb",
    "lakekeeper.ratio_threshold": "compaction_ratio_threshold",
    "lakekeeper.min_input_files": "min_input_files",
    "lakekeeper.fragment_ratio": "fragment_ratio",
    "lakekeeper.min_target_ratio": "min_target_ratio",
    "lakekeeper.max_file_size_mb": "max_file_size_mb",
    "lakekeeper.quiet_period": "quiet_period",
    "lakekeeper.verify": "verify",
    "lakekeeper.verify_sample": "verify_sample",
    "lakekeeper.order": "order",
    "lakekeeper.sort_by": "sort_by",
    "lakekeeper.dedupe.keys": "dedupe_keys",
    "lakekeeper.dedupe.order_by": "dedupe_order_by",
    "lakekeeper.dedupe.delete_marker": "dedupe_delete_marker",
    "lakekeeper.dedupe.delete_marker_value": "dedupe_delete_value",
    "lakekeeper.dedupe.trigger_ratio": "dedupe_trigger_ratio",
    "lakekeeper.retries": "retries",
    "lakekeeper.tier.older_than": "tier_older_than",
    "lakekeeper.tier.storage_policy": "tier_storage_policy",
    "lakekeeper.tier.erasure_coding_policy": "tier_erasure_coding_policy",
    "lakekeeper.retention.keep_last": "keep_last",
    "lakekeeper.retention.older_than": "older_than",
    "lakekeeper.retention.grace_period": "grace_period",
}
# What lakekeeper writes on its own backup and verification tables: not policies.
INTERNAL_KEYS = {"lakekeeper.backup_of", "lakekeeper.verify_of", "lakekeeper.run_id", "lakekeeper.created_at",
                 "lakekeeper.journal_dir", "lakekeeper.pinned"}
_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")


MB = 1024 * 1024


def _amoro_target_size(value: str) -> str:
    """``self-optimizing.target-size`` is in bytes (Amoro's default 128 MB)."""
    return f"{int(value.strip()) / MB:g}"


def _amoro_fragment_ratio(value: str) -> str:
    """Amoro's fragment ratio divides the target size (default 8: a fragment
    is below 1/8 of it); ours multiplies it (default 0.125)."""
    ratio = float(value.strip())
    if ratio <= 0:
        raise ValueError("must be > 0")
    return f"{1 / ratio:g}"


def _amoro_retries(value: str) -> str:
    """``self-optimizing.execute.num-retries`` (Amoro's default 5): how many times a
    failed task is tried again; more than ours allows (``MAX_RETRIES``) is
    read as our most, not refused."""
    n = int(value.strip())
    if n < 0:
        raise ValueError("must be >= 0")
    return str(min(n, MAX_RETRIES))


def _amoro_enabled(value: str) -> str:
    text = value.strip().lower()
    if text not in ("true", "false"):
        raise ValueError("true or false")
    return "false" if text == "true" else "true"  # self-optimizing disabled: lakekeeper leaves it alone too


# Amoro's table property -> (the lakekeeper.* property it stands for, its value as ours)
AMORO: dict[str, tuple[str, Callable[[str], str]]] = {
    "self-optimizing.enabled": (EXCLUDE, _amoro_enabled),
    "self-optimizing.target-size": ("lakekeeper.target_file_size_mb", _amoro_target_size),
    "self-optimizing.fragment-ratio": ("lakekeeper.fragment_ratio", _amoro_fragment_ratio),
    "self-optimizing.min-target-size-ratio": ("lakekeeper.min_target_ratio", lambda v: v.strip()),
    "self-optimizing.minor.trigger.file-count": ("lakekeeper.min_input_files", lambda v: v.strip()),
    "self-optimizing.execute.num-retries": ("lakekeeper.retries", _amoro_retries),
}


def mapped_policy(properties: dict[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    """The policy read from other tools' properties (``AMORO``): (lakekeeper
    key -> value, lakekeeper key -> the property it came from), without the
    keys the table's own ``lakekeeper.*`` properties set (those win). A
    value that does not read refuses the table (``invalid_policy``)."""
    own = {str(k).strip().lower() for k in properties}
    values, sources = {}, {}
    for key, value in properties.items():
        name = str(key).strip().lower()
        if name not in AMORO:
            continue
        ours, convert = AMORO[name]
        if ours in own:
            continue
        try:
            values[ours] = convert(str(value))
        except ValueError as exc:
            raise Refused("invalid_policy", f"table property {key}={value!r} (Amoro's, read as {ours}): "
                                            f"{exc}") from exc
        sources[ours] = name
    return values, sources


def table_policy(properties: dict[str, Any]) -> dict[str, str]:
    """The table's policy properties (key lower-cased, value as written),
    sorted by key; raises ``Refused("invalid_policy")`` for an unknown one."""
    out = {}
    for key, value in properties.items():
        name = str(key).strip().lower()
        if not name.startswith(PREFIX) or name in INTERNAL_KEYS:
            continue
        if name not in (EXCLUDE, QUEUE) and name not in POLICY_KEYS:
            known = ", ".join([EXCLUDE, QUEUE] + sorted(POLICY_KEYS))
            raise Refused("invalid_policy", f"unknown table property {key} (lakekeeper's table properties: {known})")
        out[name] = str(value)
    out.update(mapped_policy(properties)[0])
    return dict(sorted(out.items()))


def policy_sources(properties: dict[str, Any]) -> dict[str, str]:
    """Which keys of the table's policy come from another tool's property
    (lakekeeper key -> that property): reported as ``policy_from``."""
    return mapped_policy(properties)[1]


def excluded(policy: dict[str, str]) -> bool:
    value = policy.get(EXCLUDE)
    if value is None:
        return False
    text = value.strip().lower()
    if text not in _TRUE + _FALSE:
        raise Refused("invalid_policy", f"table property {EXCLUDE}={value!r}: true or false")
    return text in _TRUE


def exclusion_property(properties: dict[str, Any]) -> str:
    """The table property that excludes a table, as the messages name it."""
    if policy_sources(properties).get(EXCLUDE):
        return "self-optimizing.enabled=false (Amoro's)"
    return f"{EXCLUDE}=true"


def exclusion_reason(full_name: str, properties: dict[str, Any]) -> str:
    """Why an excluded table is left alone, naming the property that says so."""
    return f"{full_name} has the table property {exclusion_property(properties)}: compact leaves it alone"


def apply_policy(settings: Settings, policy: dict[str, str], sources: dict[str, str] | None = None) -> Settings:
    """The run's settings with the table's policy on top (validated as the
    config file is); raises ``Refused("invalid_policy")`` naming the
    property whose value does not validate (and, from ``sources``
    (``policy_sources``), the Amoro property a value was read from)."""
    excluded(policy)
    values = {POLICY_KEYS[k]: v for k, v in policy.items() if k in POLICY_KEYS}
    if not values:
        return settings
    try:
        return apply_values(copy.deepcopy(settings), values)
    except UsageError as exc:
        given = ", ".join(f"{k}={v!r}" + (f" (read from {sources[k]})" if k in (sources or {}) else "")
                          for k, v in policy.items() if k in POLICY_KEYS)
        raise Refused("invalid_policy", f"table properties {given}: {exc}") from exc
