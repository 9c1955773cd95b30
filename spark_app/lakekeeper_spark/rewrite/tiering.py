"""Tiering while compacting: the units the age rule (policy/tiering.py)
selects get their compacted copy written under the rule's HDFS storage
policy and/or erasure coding policy, through the filesystem adapter.

* ``plan_tiering`` (before anything is written, after the HDFS pre-flight):
  the NameNode's storage policies and erasure coding policies are read
  once; a policy it does not know or has not enabled refuses the table
  (``tier_policy_unknown``). Each unit due gets its ``HdfsCarry`` set so
  that ``hdfs_checks.prepare_staging`` creates the staging with the
  policies before the files are written (a file takes its erasure coding
  policy when it is created, its blocks are placed by the storage policy
  as they are written), and the erasure coding check of verification
  expects the tier's policy. Its space consumed
  (``getContentSummary().getSpaceConsumed()``) is read. Where a policy
  cannot be given (not HDFS; a NameNode without erasure coding; a text or
  Avro copy, written by Hive, for erasure coding) the unit is compacted
  without it and its ``tiering.not_applied`` says why.
* ``finish_tiering`` (after verification and the carried attributes,
  before the swap): each new file's storage policy is checked
  (``getStoragePolicy``; erasure coding was checked by verification), else
  ``verification_failed`` and the original stays; the copy's space
  consumed is read: the partition result's ``tiering``.

The swap is a rename: the directory keeps its policies, its files theirs.
Rollback renames the original directory back, with its own policies.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from ..policy.tiering import DAY, TIER_POLICY_UNKNOWN, is_due, not_applied, space_saved, tier_rule, \
    unit_age_seconds, unknown_policies
from ..report.errors import LakekeeperError, Refused
from ..report.model import TablePlan, Unit
from ..storage.fs import HadoopFS
from ..storage.threads import threaded

log = logging.getLogger(__name__)


def plan_tiering(fs: HadoopFS, p: TablePlan, settings: Any, fmt: str | None, now_ms: int | None = None) -> None:
    """Decide each unit to compact's tier (``u.tier``, ``u.hdfs``); raises
    ``Refused(tier_policy_unknown)`` before anything is written."""
    rule = tier_rule(settings)
    if rule is None:
        return
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    on_hdfs = [u for u in p.to_compact if fs.is_hdfs(u.location) and u.hdfs is not None]
    ec_states: dict[str, str] | None = None
    if on_hdfs:
        where = on_hdfs[0].location
        names = set(fs.storage_policy_names(where).values()) if rule.storage_policy else None
        if rule.erasure_coding_policy:
            ec_states = fs.erasure_coding_policy_states(where)
        enabled = None if ec_states is None else {k for k, v in ec_states.items() if v == "ENABLED"}
        why = unknown_policies(rule, names, enabled, set(ec_states or {}))
        if why:
            raise Refused(TIER_POLICY_UNKNOWN, why)
    for u in p.to_compact:
        mtimes = [f.mtime for f in u.listing.files]
        if not is_due(rule, mtimes, now_ms):
            continue
        hdfs = fs.is_hdfs(u.location) and u.hdfs is not None
        missing = not_applied(rule, hdfs, fmt, ec_states is not None)
        age = unit_age_seconds(mtimes, now_ms) or 0.0
        tier: dict[str, Any] = {"older_than_days": round(rule.older_than_seconds / DAY, 3),
                                "age_days": round(age / DAY, 3)}
        c = u.hdfs
        if rule.storage_policy and "storage_policy" not in missing and c is not None:
            tier["storage_policy"] = rule.storage_policy
            c.storage_policy = rule.storage_policy  # carried (set again) after the write: never the original's
            if fmt in ("parquet", "orc"):
                c.tier_storage_policy = rule.storage_policy  # the staging is created with it (prepare_staging)
            else:
                tier["note"] = (f"a {fmt} copy is written by Hive into its own directory: the storage policy is "
                                f"set on it after the write, its blocks move to that storage when the HDFS Mover "
                                f"runs")
        if rule.erasure_coding_policy and "erasure_coding_policy" not in missing and c is not None:
            tier["erasure_coding_policy"] = rule.erasure_coding_policy
            c.erasure_coding = rule.erasure_coding_policy
            c.ec_check, c.ec_expected = True, rule.erasure_coding_policy
            c.replication = None  # an erasure coded file has no replication factor (setReplication: false)
        if missing:
            tier["not_applied"] = missing
        if ("storage_policy" in tier or "erasure_coding_policy" in tier) and not settings.dry_run:
            tier["space_before"] = fs.content_summary(u.location)["space_consumed"]
        u.tier = tier


def finish_tiering(fs: HadoopFS, u: Unit) -> dict[str, Any]:
    """The partition result's ``tiering`` (after the copy's attributes were
    set, before the swap): each new file's storage policy checked, the
    space the copy consumes. {} when the unit is not tiered."""
    if u.tier is None:
        return {}
    tier = dict(u.tier)
    if "storage_policy" not in tier and "erasure_coding_policy" not in tier:
        return {"tiering": tier}
    want = tier.get("storage_policy")
    if want:
        base = u.staging.rstrip("/")
        names = [f.name for f in fs.list_dir(u.staging).files]
        got = threaded(lambda n: fs.storage_policy_of(f"{base}/{n}"), names)
        wrong = [(n, g) for n, g in zip(names, got) if (g or "").upper() != want.upper()]
        if wrong:
            shown = ", ".join(f"{n}: {g}" for n, g in wrong[:3])
            raise LakekeeperError("verification_failed",
                                  f"tiering: the compacted files of {u.location} must have the storage policy "
                                  f"{want}, {len(wrong)} have another ({shown})")
    after = fs.content_summary(u.staging)["space_consumed"]
    tier["space_after"] = after
    tier["space_saved"] = space_saved(tier.get("space_before"), after)
    log.info("%s: tiered (%s), space consumed %s -> %s", u.location,
             ", ".join(f"{k} {tier[k]}" for k in ("storage_policy", "erasure_coding_policy") if k in tier),
             tier.get("space_before"), after)
    return {"tiering": tier}


def tier_totals(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """A table's ``tiered`` (partitions compacted under a tier's policy) and
    ``tier_space_saved`` (their space consumed before minus after)."""
    tiered = [x["tiering"] for x in parts if x.get("status") == "compacted" and isinstance(x.get("tiering"), dict)
              and ("storage_policy" in x["tiering"] or "erasure_coding_policy" in x["tiering"])]
    if not tiered:
        return {}
    return {"tiered": len(tiered), "tier_space_saved": sum(int(t.get("space_saved") or 0) for t in tiered)}
