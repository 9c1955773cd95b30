"""Tiering while compacting (pure): which units to compact are old enough to
be written under a colder HDFS storage policy or an erasure coding policy.

A unit's age is the age of its NEWEST file (modification time, as the
listing reports it): a partition is tiered when no file in it was written
for ``older_than``. Not a date partition column's value: it works for any
partitioning (and for a non-partitioned table), needs no date format, and a
late file landing in an old partition makes it young again, so a partition
still being written is never sent to cold storage.

Settings (config ``tiering: {older_than, storage_policy,
erasure_coding_policy}``, flags ``--tier-older-than``,
``--tier-storage-policy``, ``--tier-ec-policy``, table properties
``lakekeeper.tier.*``): ``older_than`` and at least one policy go
together. The I/O (the NameNode's policies, the staging directory given
them before the write, the check after it, the space consumed) is
storage/tiering.py.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

# refused table: a policy the NameNode does not know or has not enabled (nothing written)
TIER_POLICY_UNKNOWN = "tier_policy_unknown"
_POLICY_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")
# The storage policies HDFS applies to an erasure coded (striped) file; it reads any other as unset, i.e. HOT
# (INodeFile.getStoragePolicyID, ErasureCodingPolicyManager.checkStoragePolicySuitableForECStripedMode)
EC_STORAGE_POLICIES = ("HOT", "COLD", "ALL_SSD")
DAY = 86400


@dataclasses.dataclass(frozen=True)
class TierRule:
    older_than_seconds: int
    storage_policy: str | None = None
    erasure_coding_policy: str | None = None


def tiering_error(older_than_seconds: int | None, storage_policy: str | None,
                  erasure_coding_policy: str | None) -> str | None:
    """Why these settings do not make a tiering rule, or None."""
    given = [p for p in (storage_policy, erasure_coding_policy) if p is not None]
    if older_than_seconds is None and not given:
        return None
    if older_than_seconds is None:
        return "tiering needs older_than (tier_older_than, e.g. 30d) with its storage_policy or erasure_coding_policy"
    if not given:
        return "tiering older_than needs a storage_policy (e.g. COLD) or an erasure_coding_policy (e.g. RS-6-3-1024k)"
    if older_than_seconds < 0:
        return "tiering older_than must not be negative"
    for p in given:
        if not _POLICY_NAME.match(p):
            return f"invalid tiering policy name {p!r}: letters, digits, '_', '.', '-' (as HDFS names them)"
    if erasure_coding_policy is not None and storage_policy is not None and \
            storage_policy.upper() not in EC_STORAGE_POLICIES:
        return (f"tiering storage_policy {storage_policy} with an erasure_coding_policy: HDFS gives an erasure coded "
                f"file only {', '.join(EC_STORAGE_POLICIES)} and reads any other as unset (HOT)")
    return None


def tier_rule(settings: Any) -> TierRule | None:
    """The run's (or table's) rule, None when tiering is off."""
    if getattr(settings, "tier_older_than_seconds", None) is None:
        return None
    return TierRule(settings.tier_older_than_seconds, settings.tier_storage_policy,
                    settings.tier_erasure_coding_policy)


def unit_age_seconds(mtimes_ms: list[int], now_ms: int) -> float | None:
    """The age of a unit's newest file; None for a unit without files."""
    if not mtimes_ms:
        return None
    return max(0.0, (now_ms - max(mtimes_ms)) / 1000.0)


def is_due(rule: TierRule, mtimes_ms: list[int], now_ms: int) -> bool:
    """Tiered when its newest file is at least ``older_than`` old."""
    age = unit_age_seconds(mtimes_ms, now_ms)
    return age is not None and age >= rule.older_than_seconds


def unknown_policies(rule: TierRule, storage_policies: set[str] | None, ec_enabled: set[str] | None,
                     ec_known: set[str] | None = None) -> str | None:
    """Why the NameNode cannot give a directory the rule's policies (the
    table is refused, ``TIER_POLICY_UNKNOWN``), or None. ``storage_policies``:
    the names ``getAllStoragePolicies`` lists; ``ec_enabled``/``ec_known``: the
    erasure coding policies enabled / known at all (None: a NameNode without
    erasure coding, Hadoop 2 - not a refusal, the unit is compacted
    untiered, ``not_applied``)."""
    sp = rule.storage_policy
    if sp is not None and storage_policies is not None and sp.upper() not in {s.upper() for s in storage_policies}:
        return (f"tiering storage_policy {sp} is not a storage policy of this NameNode (it has: "
                f"{', '.join(sorted(storage_policies))}); nothing was written")
    ec = rule.erasure_coding_policy
    if ec is not None and ec_enabled is not None and ec not in ec_enabled:
        known = ec_known if ec_known is not None else set()
        what = "is not enabled on this NameNode (hdfs ec -enablePolicy -policy %s)" % ec if ec in known else \
            "is not an erasure coding policy of this NameNode"
        return (f"tiering erasure_coding_policy {ec} {what}; enabled: {', '.join(sorted(ec_enabled)) or 'none'}; "
                f"nothing was written")
    return None


def not_applied(rule: TierRule, hdfs: bool, fmt: str | None, has_ec: bool) -> dict[str, str]:
    """What of the rule a due unit cannot get, and why: {"storage_policy" |
    "erasure_coding_policy": reason}. Such a unit is compacted without it."""
    out: dict[str, str] = {}
    if not hdfs:
        why = "its filesystem is not HDFS: it has no storage or erasure coding policies; compacted without tiering"
        if rule.storage_policy:
            out["storage_policy"] = why
        if rule.erasure_coding_policy:
            out["erasure_coding_policy"] = why
        return out
    if rule.erasure_coding_policy:
        if not has_ec:
            out["erasure_coding_policy"] = ("this NameNode has no erasure coding (Hadoop 2): compacted without the "
                                            "erasure coding policy")
        elif fmt not in ("parquet", "orc"):
            out["erasure_coding_policy"] = (f"a {fmt} copy is written by Hive's INSERT OVERWRITE DIRECTORY, not into "
                                            f"a prepared directory: compacted without the erasure coding policy")
    return out


def space_saved(before: int | None, after: int | None) -> int | None:
    if before is None or after is None:
        return None
    return before - after
