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
``lakekeeper.quiet_period``         ``quiet_period`` (a duration)
``lakekeeper.verify``               ``verify`` (content, rows)
``lakekeeper.sort_by``              ``sort_by`` (comma-separated columns)
``lakekeeper.dedupe.keys``          ``dedupe.keys`` (comma-separated columns)
``lakekeeper.dedupe.order_by``      ``dedupe.order_by``
``lakekeeper.dedupe.delete_marker`` ``dedupe.delete_marker``
``lakekeeper.dedupe.delete_marker_value``  ``dedupe.delete_marker_value``
``lakekeeper.dedupe.trigger_ratio``  ``dedupe.trigger_ratio`` (0 < r <= 1: a
                                    unit the size rule skips is rewritten
                                    when this share of its rows would be
                                    removed by the dedupe)
``lakekeeper.retention.keep_last``  ``keep_last`` (cleanup, analyze)
``lakekeeper.retention.older_than`` ``older_than`` (cleanup, analyze)
``lakekeeper.retention.grace_period``  ``grace_period`` (cleanup, analyze)
==================================  ==========================================

Any other ``lakekeeper.*`` property (a typo, a key of a later version), or
a value that does not validate, refuses the table (code ``invalid_policy``)
rather than running it with settings its owner did not ask for. The
properties lakekeeper itself writes on its backup and scratch tables are
not policies. Pure: no Spark here.
"""

from __future__ import annotations

import copy
from typing import Any

from .config import Settings, apply_values
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
    "lakekeeper.quiet_period": "quiet_period",
    "lakekeeper.verify": "verify",
    "lakekeeper.sort_by": "sort_by",
    "lakekeeper.dedupe.keys": "dedupe_keys",
    "lakekeeper.dedupe.order_by": "dedupe_order_by",
    "lakekeeper.dedupe.delete_marker": "dedupe_delete_marker",
    "lakekeeper.dedupe.delete_marker_value": "dedupe_delete_value",
    "lakekeeper.dedupe.trigger_ratio": "dedupe_trigger_ratio",
    "lakekeeper.retention.keep_last": "keep_last",
    "lakekeeper.retention.older_than": "older_than",
    "lakekeeper.retention.grace_period": "grace_period",
}
# What lakekeeper writes on its own backup and verification tables: not policies.
INTERNAL_KEYS = {"lakekeeper.backup_of", "lakekeeper.verify_of", "lakekeeper.run_id", "lakekeeper.created_at",
                 "lakekeeper.journal_dir", "lakekeeper.pinned"}
_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")


def table_policy(properties: dict[str, Any]) -> dict[str, str]:
    """The table's policy properties (key lower-cased, value as written),
    sorted by key; raises ``Refused("invalid_policy")`` for an unknown one."""
    out = {}
    for key, value in properties.items():
        name = str(key).strip().lower()
        if not name.startswith(PREFIX) or name in INTERNAL_KEYS:
            continue
        if name != EXCLUDE and name not in POLICY_KEYS:
            known = ", ".join([EXCLUDE] + sorted(POLICY_KEYS))
            raise Refused("invalid_policy", f"unknown table property {key} (lakekeeper's table properties: {known})")
        out[name] = str(value)
    return dict(sorted(out.items()))


def excluded(policy: dict[str, str]) -> bool:
    value = policy.get(EXCLUDE)
    if value is None:
        return False
    text = value.strip().lower()
    if text not in _TRUE + _FALSE:
        raise Refused("invalid_policy", f"table property {EXCLUDE}={value!r}: true or false")
    return text in _TRUE


def apply_policy(settings: Settings, policy: dict[str, str]) -> Settings:
    """The run's settings with the table's policy on top (validated as the
    config file is); raises ``Refused("invalid_policy")`` naming the
    property whose value does not validate."""
    excluded(policy)
    values = {POLICY_KEYS[k]: v for k, v in policy.items() if k in POLICY_KEYS}
    if not values:
        return settings
    try:
        return apply_values(copy.deepcopy(settings), values)
    except UsageError as exc:
        given = ", ".join(f"{k}={v!r}" for k, v in policy.items() if k in POLICY_KEYS)
        raise Refused("invalid_policy", f"table properties {given}: {exc}") from exc
