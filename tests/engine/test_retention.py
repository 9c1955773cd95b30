"""Unit tests of the pure retention rule and size histograms: no Spark here."""

from __future__ import annotations

import pytest

from lakekeeper_spark.report import sizes
from lakekeeper_spark.policy.config import build_settings
from lakekeeper_spark.report.errors import UsageError
from lakekeeper_spark.args import parse_args
from lakekeeper_spark.policy.retention import BackupFacts, RetentionPolicy, missing_policy, policy_of, retention_verdicts

NOW = 1_000_000.0
H = 3600


def backups(*ages_pinned):
    """(age in seconds, pinned) -> facts, named b<age>."""
    return [BackupFacts(f"db.b{age}", f"r{age}", NOW - age, pinned) for age, pinned in ages_pinned]


def decide(bs, **policy):
    return {v.backup.name: (v.delete, v.reason) for v in retention_verdicts(bs, RetentionPolicy(**policy), NOW)}


def deleted(bs, **policy):
    return sorted(name for name, (delete, _r) in decide(bs, **policy).items() if delete)


BS = backups((10 * 24 * H, False), (5 * 24 * H, True), (3 * 24 * H, False), (2 * H, False), (600, False))


def test_no_policy_deletes_everything_but_pinned_and_grace():
    assert deleted(BS) == sorted(["db.b864000", "db.b259200", "db.b7200", "db.b600"])
    assert deleted(BS, grace_seconds=H) == sorted(["db.b864000", "db.b259200", "db.b7200"])


def test_keep_last_counts_pinned_backups_and_keeps_the_newest():
    assert deleted(BS, keep_last=2) == sorted(["db.b864000", "db.b259200"])
    assert deleted(BS, keep_last=10) == []
    assert "keep_last" in decide(BS, keep_last=2)["db.b600"][1]


def test_policies_combine_as_reasons_to_keep():
    # older_than 4d keeps the 3d and younger ones; keep_last 1 keeps the newest: the union is kept
    assert deleted(BS, older_than_seconds=4 * 24 * H, keep_last=1) == ["db.b864000"]
    # keep_last alone would delete the 2h backup; older_than 1d keeps it
    assert deleted(BS, keep_last=1, older_than_seconds=24 * H) == sorted(["db.b864000", "db.b259200"])


def test_grace_period_wins_over_every_other_policy():
    verdicts = decide(BS, older_than_seconds=0, grace_seconds=3 * H)
    assert verdicts["db.b600"][0] is False and "grace period" in verdicts["db.b600"][1]
    assert verdicts["db.b7200"][0] is False
    assert verdicts["db.b432000"] == (False, "pinned")  # pinned is never deleted, whatever its age


def test_reasons_say_why_a_backup_goes():
    delete, reason = decide(BS, keep_last=1, older_than_seconds=24 * H, grace_seconds=H)["db.b864000"]
    assert delete and reason == ("not pinned, outside the grace period of 3600s, not one of the 1 newest of any of "
                                 "its partitions, older than 86400s")
    assert [v.to_dict()["verdict"] for v in retention_verdicts(BS, RetentionPolicy(keep_last=1), NOW)] == [
        "delete", "keep", "delete", "delete", "keep"]  # oldest first


def test_settings_of_the_retention_options():
    s = build_settings({"keep_last": 3, "grace_period": "1h"}, {"older_than": "7d", "pin": "r1"})
    assert (s.keep_last, s.grace_seconds, s.older_than_seconds, s.pin) == (3, 3600, 7 * 86400, "r1")
    assert build_settings({}, {}).grace_seconds == 0
    for bad in (-1, 0):
        with pytest.raises(UsageError, match="keep_last must be at least 1"):
            build_settings({}, {"keep_last": bad})
    # the minimum-retention guard: older_than shorter than the grace period is refused; "all" is not
    with pytest.raises(UsageError, match=r"older_than \(1800s\) is shorter than the grace period \(3600s\)"):
        build_settings({"grace_period": "1h"}, {"older_than": "30m"})
    assert build_settings({"grace_period": "1h"}, {"older_than": "1h"}).older_than_seconds == 3600
    assert build_settings({"grace_period": "1h"}, {"older_than": "all"}).older_than_seconds == 0


def test_older_than_all_is_every_unpinned_backup_outside_the_grace_period():
    s = build_settings({}, {"older_than": "all", "grace_period": "1h"})
    assert s.older_than_seconds == 0 and build_settings({"older_than": " ALL "}, {}).older_than_seconds == 0
    policy = policy_of(s)
    assert deleted(BS, older_than_seconds=0, grace_seconds=H) == sorted(["db.b864000", "db.b259200", "db.b7200"])
    assert deleted(BS, older_than_seconds=0, keep_last=2) == sorted(["db.b864000", "db.b259200"])
    reason = decide(BS, older_than_seconds=0, grace_seconds=H)["db.b7200"][1]
    assert reason == "not pinned, outside the grace period of 3600s, older_than all"
    assert missing_policy(policy) is None and missing_policy(RetentionPolicy(keep_last=1)) is None
    assert "older_than: all" in missing_policy(RetentionPolicy(grace_seconds=H))


def test_cleanup_without_a_retention_policy_is_a_usage_error(tmp_path):
    """Refused on the command line, before Spark starts: deleting every
    backup must be asked for (--older-than all)."""
    for argv in (["cleanup", "--table", "db.t"], ["cleanup", "--database", "db", "--grace-period", "1h"]):
        with pytest.raises(UsageError, match="cleanup needs a retention policy"):
            parse_args(argv)
    config = tmp_path / "lk.yaml"
    config.write_text("keep_last: 2\n")
    with pytest.raises(UsageError, match="keep_last must be at least 1"):
        parse_args(["cleanup", "--table", "db.t", "--keep-last", "0"])
    for argv in (["cleanup", "--table", "db.t", "--older-than", "all"], ["cleanup", "--table", "db.t", "--keep-last", "1"],
                 ["cleanup", "--table", "db.t", "--pin", "r1"], ["cleanup", "--table", "db.t", "--config-file", str(config)],
                 ["analyze", "--table", "db.t"]):
        assert parse_args(argv)[0].command == argv[0]


def test_keep_last_counts_per_partition():
    """KEEP_LATEST_FILE_VERSIONS: run 1 compacted a and b, run 2 only a,
    run 3 only c: keep_last 1 keeps run 1 (the only rollback point of b)
    and deletes nothing; run 4 compacts b: run 1 is no one's newest."""
    def bk(age, parts, pinned=False):
        return BackupFacts(f"db.b{age}", f"r{age}", NOW - age, pinned, parts)

    runs = [bk(4 * H, ("dt=a", "dt=b")), bk(3 * H, ("dt=a",)), bk(2 * H, ("dt=c",))]
    verdicts = decide(runs, keep_last=1)
    assert verdicts["db.b14400"] == (False, "the newest backup of partition(s) dt=b (keep_last, per partition): "
                                            "a rollback point")
    assert verdicts["db.b10800"][0] is False and "dt=a" in verdicts["db.b10800"][1]
    assert [v.rule for v in retention_verdicts(runs, RetentionPolicy(keep_last=1), NOW)] == ["keep_last"] * 3
    runs.append(bk(H, ("dt=b",)))
    assert deleted(runs, keep_last=1) == ["db.b14400"]
    assert deleted(runs, keep_last=2) == []
    # a pinned backup counts: it is dt=b's newest version under keep_last 1 if it is the newest
    assert deleted([bk(4 * H, ("dt=b",)), bk(H, ("dt=b",), True)], keep_last=1) == ["db.b14400"]
    # a dropped table's backups: keep_last does not keep them, older_than does
    dropped = retention_verdicts(runs, RetentionPolicy(keep_last=1, older_than_seconds=2 * H + 1), NOW, dropped=True)
    assert [(v.delete, v.rule) for v in dropped] == [(True, "older_than"), (True, "older_than"),
                                                     (False, "older_than"), (False, "older_than")]
    assert "the table was dropped" in dropped[0].reason
    only_keep_last = retention_verdicts(runs, RetentionPolicy(keep_last=1), NOW, dropped=True)
    assert {v.rule for v in only_keep_last} == {"table_dropped"}


def test_histograms_and_projection():
    assert sizes.histogram([0, 1000, 64 * 1024, 2 * 1024 * 1024, 200 * 1024 * 1024, 5 * 1024 ** 3]) == [
        2, 1, 1, 0, 0, 1, 0, 1]
    assert sizes.projected_sizes(10, 3) == [4, 3, 3] and sizes.projected_sizes(0, 3) == []
    assert sizes.add([1, 2] + [0] * 6, [3, 4] + [0] * 6)[:2] == [4, 6]
    assert len(sizes.describe()) == len(sizes.BUCKETS) and sizes.describe()[-1]["max_bytes"] is None
