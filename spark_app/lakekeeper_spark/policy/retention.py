"""Which backups a cleanup deletes: the retention policies and how they
combine (like Hudi's cleaner: pinned backups are savepoints, ``keep_last``
is KEEP_LATEST_FILE_VERSIONS, ``older_than`` a time-based retention, and a
grace period protects readers that still hold the old files).

Pure: the command feeds the backups of one table and the clock, and acts on
the verdicts.

Combination rule. Every policy is a reason to *keep*; a backup is deleted
only when no reason to keep it holds. In order (the first that holds is the
reason reported):

1. ``pinned``: a pinned backup is never deleted;
2. ``grace``: a backup younger than the grace period is never deleted,
   whatever the other policies say;
3. ``keep_last N``, counted per partition (Hudi's
   KEEP_LATEST_FILE_VERSIONS, a backup being a version of each partition it
   holds the originals of): a backup that is one of the N newest backups of
   any of its partitions (pinned ones count) is kept, whole. A run that
   compacted only dt=a does not make the only rollback point of dt=b (an
   older run's backup) go. Counting per run instead (KEEP_LATEST_COMMITS)
   is not offered: it keeps a subset of what this keeps, and the rest are
   exactly those only rollback points. A non-partitioned table is one
   partition (``""``). Not applied to the backups of a table dropped since
   (``dropped``): nothing can be rolled back into it;
4. ``older_than D``: a backup younger than D is kept.

A kept backup is kept whole: the engine rolls a run back from its backup
table and journal as a unit, so a backup with some partitions' originals
deleted would restore part of a run.

A cleanup needs at least one of ``keep_last`` and ``older_than``
(``missing_policy``): deleting every unpinned backup outside the grace
period must be asked for, with ``older_than: all`` (``older_than_seconds``
0, ``OLDER_THAN_ALL``). The verdicts of a policy without either (what
``analyze`` shows when given none) are those of ``older_than: all``.
"""

from __future__ import annotations

import dataclasses
from typing import Any


# ``older_than: all`` (``--older-than all``): every backup that is neither
# pinned nor within the grace period may go; held as older_than_seconds 0.
OLDER_THAN_ALL = "all"

NO_POLICY_MESSAGE = (
    "cleanup needs a retention policy, and none was given: set keep_last (--keep-last N: keep the N newest "
    "backups of each partition) or older_than (--older-than 7d: keep the backups younger than that), or "
    "older_than: all (--older-than all) to delete every backup that is not pinned and not within the grace "
    "period; a rollback is impossible once its backup is gone")


@dataclasses.dataclass(frozen=True)
class BackupFacts:
    name: str  # db.table of the backup
    run_id: str
    created_at: float  # seconds since the epoch
    pinned: bool = False
    # the partitions it holds the originals of (spec strings; "" for a non-partitioned table)
    partitions: tuple[str, ...] = ("",)


@dataclasses.dataclass(frozen=True)
class RetentionPolicy:
    keep_last: int | None = None
    older_than_seconds: int | None = None
    grace_seconds: int = 0


@dataclasses.dataclass(frozen=True)
class Verdict:
    backup: BackupFacts
    delete: bool
    reason: str
    age_seconds: int
    # the policy that decided: kept by "pinned", "grace", "keep_last" or "older_than"; deleted under
    # "all" (older_than all), "older_than", "keep_last" or both ("keep_last+older_than", "keep_last+all")
    rule: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "backup_table": self.backup.name,
            "run_id": self.backup.run_id,
            "age_seconds": self.age_seconds,
            "pinned": self.backup.pinned,
            "verdict": "delete" if self.delete else "keep",
            "reason": self.reason,
            "rule": self.rule,
        }


def delete_rule(policy: RetentionPolicy) -> str:
    """The policies under which a backup no policy keeps is deleted."""
    rules = ["keep_last"] if policy.keep_last is not None else []
    if policy.older_than_seconds == 0:
        rules.append(OLDER_THAN_ALL)
    elif policy.older_than_seconds is not None:
        rules.append("older_than")
    return "+".join(rules) or OLDER_THAN_ALL  # no policy: the verdicts of older_than all


def _describe(specs: list[str]) -> str:
    if specs == [""]:
        return "the table"
    head = ", ".join(specs[:3])
    return f"partition(s) {head}" + (f" and {len(specs) - 3} more" if len(specs) > 3 else "")


def newest_per_partition(ordered: list[BackupFacts], keep_last: int) -> dict[int, list[str]]:
    """id(backup) -> the partitions of which it is one of the ``keep_last``
    newest backups (only backups that are, for at least one)."""
    by_spec: dict[str, list[BackupFacts]] = {}
    for b in ordered:
        for spec in b.partitions:
            by_spec.setdefault(spec, []).append(b)
    out: dict[int, list[str]] = {}
    for spec, holders in by_spec.items():
        for b in holders[max(0, len(holders) - keep_last):]:
            out.setdefault(id(b), []).append(spec)
    return {k: sorted(v) for k, v in out.items()}


def retention_verdicts(backups: list[BackupFacts], policy: RetentionPolicy, now: float,
                       dropped: bool = False) -> list[Verdict]:
    """One verdict per backup, oldest first. ``dropped``: the backups of a
    table dropped since (keep_last does not keep them)."""
    ordered = sorted(backups, key=lambda b: (b.created_at, b.run_id))
    newest = newest_per_partition(ordered, policy.keep_last) if policy.keep_last and not dropped else {}
    out = []
    for b in ordered:
        age = max(0, int(now - b.created_at))
        if b.pinned:
            out.append(Verdict(b, False, "pinned", age, "pinned"))
        elif age < policy.grace_seconds:
            out.append(Verdict(b, False, f"within the grace period ({age}s old, grace {policy.grace_seconds}s): "
                                         "readers may still use its files", age, "grace"))
        elif id(b) in newest:
            what = "the newest backup" if policy.keep_last == 1 else f"one of the {policy.keep_last} newest backups"
            out.append(Verdict(b, False, f"{what} of {_describe(newest[id(b)])} (keep_last, per partition): "
                                         "a rollback point", age, "keep_last"))
        elif policy.older_than_seconds is not None and age < policy.older_than_seconds:
            out.append(Verdict(b, False, f"younger than older_than ({age}s old, older_than "
                                         f"{policy.older_than_seconds}s)", age, "older_than"))
        else:
            why = ["not pinned", f"outside the grace period of {policy.grace_seconds}s"]
            if policy.keep_last is not None and dropped:
                why.append("the table was dropped (keep_last keeps the rollback points of existing tables only)")
            elif policy.keep_last is not None:
                why.append(f"not one of the {policy.keep_last} newest of any of its partitions")
            if policy.older_than_seconds == 0:
                why.append("older_than all")
            elif policy.older_than_seconds is not None:
                why.append(f"older than {policy.older_than_seconds}s")
            rule = delete_rule(dataclasses.replace(policy, keep_last=None)) if dropped else delete_rule(policy)
            if dropped and policy.older_than_seconds is None:
                rule = "table_dropped"
            out.append(Verdict(b, True, ", ".join(why), age, rule))
    return out


def policy_error(keep_last: int | None, older_than_seconds: int | None, grace_seconds: int) -> str | None:
    """Why a retention policy is refused (like Hudi, which refuses to retain
    fewer commits than its cleaner needs), or None: keep_last below 1, or an
    older_than shorter than the grace period (it would ask to delete backups
    the grace period protects; ``older_than: all`` is the explicit "every
    backup outside the grace period")."""
    if keep_last is not None and keep_last < 1:
        return (f"keep_last must be at least 1 (got {keep_last}): it keeps the N newest backups of each partition, "
                "its rollback points; to keep none on that account leave keep_last unset and set older_than")
    if older_than_seconds and grace_seconds and older_than_seconds < grace_seconds:
        return (f"older_than ({older_than_seconds}s) is shorter than the grace period ({grace_seconds}s): a "
                "backup younger than the grace period is never deleted, so the policy cannot do what it says; "
                "set older_than to at least the grace period (or older_than: all for every backup outside it)")
    return None


def missing_policy(policy: RetentionPolicy) -> str | None:
    """Why a cleanup under ``policy`` must not run (neither keep_last nor
    older_than given), or None."""
    if policy.keep_last is None and policy.older_than_seconds is None:
        return NO_POLICY_MESSAGE
    return None


def policy_of(settings: Any) -> RetentionPolicy:
    """The retention policies of the run's settings."""
    return RetentionPolicy(keep_last=settings.keep_last, older_than_seconds=settings.older_than_seconds,
                           grace_seconds=settings.grace_seconds or 0)


def backup_verdicts(backups: list[Any], settings: Any, now: float, partitions: Any = None,
                    dropped: bool = False) -> list[tuple[Any, Verdict]]:
    """(backup, verdict) of a table's backups (``backup.BackupRef``) under
    the run's retention settings, oldest first. ``partitions(backup)``: the
    partitions it holds (spec strings), read only when keep_last needs them."""
    by_name = {b.full_name: b for b in backups}
    need = partitions is not None and settings.keep_last and not dropped
    facts = [BackupFacts(b.full_name, b.run_id, b.created_at, b.pinned,
                         tuple(partitions(b)) if need else ("",)) for b in backups]
    return [(by_name[v.backup.name], v) for v in retention_verdicts(facts, policy_of(settings), now, dropped)]
