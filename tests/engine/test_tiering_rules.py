"""Tiering while compacting (issue 50 item 7): the pure age rule and its
settings (policy/tiering.py, config, ``lakekeeper.tier.*``, the module's
``tiering`` option as engine flags), and rewrite/tiering.py's decisions and
checks against a fake filesystem (each check where it fires and where it
does not). No Spark; the real NameNode: tests/testbed/test_erasure_coding.py."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from lakekeeper_spark.policy import planner
from lakekeeper_spark.policy.batching import why_not
from lakekeeper_spark.policy.config import Settings, build_settings, config_file_values
from lakekeeper_spark.policy.table_policy import apply_policy, table_policy
from lakekeeper_spark.policy.tiering import (
    DAY, TIER_POLICY_UNKNOWN, TierRule, is_due, not_applied, tier_rule, tiering_error, unit_age_seconds,
    unknown_policies,
)
from lakekeeper_spark.report.errors import LakekeeperError, Refused, UsageError
from lakekeeper_spark.report.model import Decision, FileEntry, HdfsCarry, Listing, TablePlan, Unit
from lakekeeper_spark.rewrite.tiering import finish_tiering, plan_tiering, tier_totals

_SPEC = importlib.util.spec_from_file_location(
    "_lakekeeper_argv", Path(__file__).resolve().parents[2] / "plugins" / "module_utils" / "_lakekeeper_argv.py")
ARGV = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(ARGV)

NOW = 1_800_000_000_000  # ms
XOR = "XOR-2-1-1024k"


def days_ago(n: float) -> int:
    return int(NOW - n * DAY * 1000)


# ---------------------------------------------------------------- the age rule


def test_a_unit_is_as_old_as_its_newest_file():
    rule = TierRule(30 * DAY, "COLD")
    assert unit_age_seconds([days_ago(90), days_ago(40)], NOW) == 40 * DAY
    assert is_due(rule, [days_ago(90), days_ago(31)], NOW)
    assert is_due(rule, [days_ago(30)], NOW)  # exactly older_than: due
    assert not is_due(rule, [days_ago(90), days_ago(29.9)], NOW)  # one late file keeps the partition warm
    assert not is_due(rule, [], NOW) and unit_age_seconds([], NOW) is None  # no files: nothing to tier
    assert unit_age_seconds([NOW + 5000], NOW) == 0.0  # a clock ahead: age 0, never negative
    assert is_due(TierRule(0, "COLD"), [NOW], NOW)


def test_settings_config_file_and_flags():
    s = build_settings({}, {"tier_older_than": "30d", "tier_storage_policy": "cold"})
    assert (s.tier_older_than_seconds, s.tier_storage_policy, s.tier_erasure_coding_policy) == (30 * DAY, "COLD", None)
    assert tier_rule(s) == TierRule(30 * DAY, "COLD", None) and tier_rule(Settings()) is None
    s = build_settings(config_file_values({"tiering": {"older_than": "90d", "erasure_coding_policy": XOR}}, "c.yml"),
                       {})
    assert tier_rule(s) == TierRule(90 * DAY, None, XOR)
    for bad, words in (({"tier_older_than": "30d"}, "needs a storage_policy"),
                       ({"tier_storage_policy": "COLD"}, "needs older_than"),
                       ({"tier_older_than": "soon", "tier_storage_policy": "COLD"}, "invalid duration"),
                       ({"tier_older_than": "1d", "tier_erasure_coding_policy": "RS 6"}, "invalid tiering policy"),
                       # HDFS reads WARM on an erasure coded file as unset (HOT): the test bed's NameNode did
                       ({"tier_older_than": "1d", "tier_storage_policy": "WARM", "tier_erasure_coding_policy": XOR},
                        "only HOT, COLD, ALL_SSD")):
        with pytest.raises(UsageError, match=words):
            build_settings({}, bad)
    with pytest.raises(UsageError, match="unknown tiering key"):
        config_file_values({"tiering": {"older_than": "1d", "policy": "COLD"}}, "c.yml")
    assert tiering_error(None, None, None) is None
    assert tiering_error(DAY, "all_ssd", XOR) is None and tiering_error(DAY, "WARM", None) is None


def test_table_properties_set_the_rule_for_their_table():
    props = {"lakekeeper.tier.older_than": "30d", "lakekeeper.tier.storage_policy": "COLD",
             "lakekeeper.tier.erasure_coding_policy": XOR}
    s = apply_policy(Settings(), table_policy(props))
    assert tier_rule(s) == TierRule(30 * DAY, "COLD", XOR)
    with pytest.raises(Refused) as exc:  # a rule without its policy: the table refused, invalid_policy
        apply_policy(Settings(), table_policy({"lakekeeper.tier.older_than": "30d"}))
    assert exc.value.code == "invalid_policy"
    with pytest.raises(Refused, match="unknown table property lakekeeper.tier.policy"):
        table_policy({"lakekeeper.tier.policy": "COLD"})


def test_the_module_writes_the_tiering_option_as_engine_flags():
    argv = ARGV.engine_args("compact", ["--table", "db.t"],
                            {"tiering": {"older_than": "30d", "storage_policy": "COLD", "erasure_coding_policy": None}})
    assert argv[argv.index("--tier-older-than"):][:4] == ["--tier-older-than", "30d", "--tier-storage-policy", "COLD"]
    assert "--tier-ec-policy" not in argv
    tiering = {"older_than": "90d", "erasure_coding_policy": XOR}
    argv = ARGV.engine_args("compact", ["--table", "db.t"], {"tiering": tiering})
    assert argv[argv.index("--tier-older-than"):][:4] == ["--tier-older-than", "90d", "--tier-ec-policy", XOR]
    for bad, words in (({"older_than": "30d"}, "needs older_than"), ({"storage_policy": "COLD"}, "needs older_than"),
                       ({"older_than": "1d", "tier": "COLD"}, "unknown tiering keys")):
        with pytest.raises(ARGV.LakekeeperError, match=words):
            ARGV.engine_args("compact", ["--table", "db.t"], {"tiering": bad})
    with pytest.raises(ARGV.LakekeeperError, match="only applies to compact"):
        ARGV.tiering_args("analyze", {"older_than": "1d", "storage_policy": "COLD"})
    assert ARGV.tiering_args("compact", None) == [] and ARGV.tiering_args("compact", {}) == []


# ---------------------------------------------------------------- what the NameNode has


def test_a_policy_the_namenode_does_not_have_refuses_the_table():
    storage = {"HOT", "WARM", "COLD", "ALL_SSD", "ONE_SSD", "LAZY_PERSIST", "PROVIDED"}
    enabled, known = {XOR, "RS-6-3-1024k"}, {XOR, "RS-6-3-1024k", "RS-3-2-1024k"}
    assert unknown_policies(TierRule(DAY, "cold", XOR), storage, enabled, known) is None
    assert "FROZEN is not a storage policy" in unknown_policies(TierRule(DAY, "FROZEN"), storage, enabled, known)
    why = unknown_policies(TierRule(DAY, None, "RS-3-2-1024k"), storage, enabled, known)
    assert "is not enabled" in why and "hdfs ec -enablePolicy -policy RS-3-2-1024k" in why
    assert "is not an erasure coding policy" in unknown_policies(TierRule(DAY, None, "RS-99"), storage, enabled, known)
    # a NameNode without erasure coding (Hadoop 2): not a refusal, the unit goes untiered (not_applied)
    assert unknown_policies(TierRule(DAY, None, XOR), storage, None, None) is None


def test_why_a_policy_is_not_applied():
    both = TierRule(DAY, "COLD", XOR)
    local = not_applied(both, hdfs=False, fmt="parquet", has_ec=True)
    assert set(local) == {"storage_policy", "erasure_coding_policy"} and "not HDFS" in local["storage_policy"]
    assert not_applied(both, hdfs=True, fmt="orc", has_ec=True) == {}
    assert set(not_applied(both, hdfs=True, fmt="parquet", has_ec=False)) == {"erasure_coding_policy"}
    assert "INSERT OVERWRITE DIRECTORY" in not_applied(both, hdfs=True, fmt="text", has_ec=True)["erasure_coding_policy"]


# ---------------------------------------------------------------- rewrite/tiering.py on a fake filesystem


class FakeFS:
    """The adapter calls tiering makes, answered from dicts."""

    def __init__(self, ec_states="default", storage=None, space=None):
        self.ec_states = {XOR: "ENABLED", "RS-3-2-1024k": "DISABLED"} if ec_states == "default" else ec_states
        self.storage = storage or {}  # file uri -> storage policy name
        self.space = space or {}
        self.files: dict[str, list[str]] = {}

    def is_hdfs(self, uri):
        return uri.startswith("hdfs://")

    def storage_policy_names(self, _uri):
        return {7: "HOT", 5: "WARM", 2: "COLD"}

    def erasure_coding_policy_states(self, _uri):
        return self.ec_states

    def content_summary(self, uri):
        return {"space_consumed": self.space[uri]}

    def list_dir(self, uri):
        return Listing(uri, files=[FileEntry(n, 1, 1) for n in self.files.get(uri, [])])

    def storage_policy_of(self, uri):
        return self.storage.get(uri)


def _plan(scheme="hdfs", fmt="parquet", ages=(90, 1)) -> TablePlan:
    units = []
    for i, age in enumerate(ages):
        loc = f"{scheme}://nn/wh/t/dt={i}"
        lst = Listing(loc, files=[FileEntry(f"part-{k}.parquet", 100, days_ago(age + k)) for k in range(3)])
        u = Unit(f"dt={i}", {"dt": str(i)}, loc, lst, planner.file_stats(lst), Decision("compact", "small", 1),
                 f"{scheme}://nn/wh/t/.dt={i}.lk_staging_r", f"{scheme}://nn/wh/t/.dt={i}.lk_old_r")
        u.hdfs = HdfsCarry(replication=3) if scheme == "hdfs" else None
        units.append(u)
    return TablePlan("db.t", "r", fmt, f"{scheme}://nn/wh/t", True, units, "db.__bkp_t", f"{scheme}://nn/wh/t/.lakekeeper")


def _settings(**kw):
    return build_settings({}, dict({"tier_older_than": "30d"}, **kw))


def test_plan_gives_the_old_units_staging_the_policies_and_reads_their_space():
    p = _plan()
    fs = FakeFS(space={p.units[0].location: 3000})
    plan_tiering(fs, p, _settings(tier_storage_policy="COLD", tier_erasure_coding_policy=XOR), "parquet", NOW)
    old, new = p.units
    assert new.tier is None and new.hdfs.tier_storage_policy is None and new.hdfs.erasure_coding is None
    assert old.tier == {"older_than_days": 30.0, "age_days": 90.0, "storage_policy": "COLD",
                        "erasure_coding_policy": XOR, "space_before": 3000}
    c = old.hdfs
    assert (c.tier_storage_policy, c.storage_policy, c.erasure_coding, c.ec_check, c.ec_expected) == \
        ("COLD", "COLD", XOR, True, XOR)
    assert c.replication is None  # an erasure coded file has no replication factor to carry
    # written on its own: its staging is prepared (not batched)
    assert "storage policy of its own" in why_not("parquet", "hdfs://nn/wh/t", old, 1 << 30, 1.0, 0) or \
        "erasure coding policy of its own" in why_not("parquet", "hdfs://nn/wh/t", old, 1 << 30, 1.0, 0)


def test_plan_refuses_a_policy_the_namenode_has_not_enabled_before_anything_is_written():
    for kw in ({"tier_storage_policy": "FROZEN"}, {"tier_erasure_coding_policy": "RS-3-2-1024k"}):
        p = _plan()
        with pytest.raises(Refused) as exc:
            plan_tiering(FakeFS(), p, _settings(**kw), "parquet", NOW)
        assert exc.value.code == TIER_POLICY_UNKNOWN
        assert all(u.tier is None for u in p.units)


def test_plan_on_file_or_without_erasure_coding_compacts_untiered_and_says_why():
    p = _plan(scheme="file")
    plan_tiering(FakeFS(), p, _settings(tier_storage_policy="COLD"), "parquet", NOW)
    assert "not HDFS" in p.units[0].tier["not_applied"]["storage_policy"] and "storage_policy" not in p.units[0].tier
    assert p.units[1].tier is None
    assert finish_tiering(FakeFS(), p.units[0]) == {"tiering": p.units[0].tier}  # reported, nothing checked
    p = _plan()
    fs = FakeFS(ec_states=None, space={p.units[0].location: 10})  # Hadoop 2: no erasure coding
    plan_tiering(fs, p, _settings(tier_storage_policy="COLD", tier_erasure_coding_policy=XOR), "parquet", NOW)
    t = p.units[0].tier
    assert t["storage_policy"] == "COLD" and "erasure_coding_policy" not in t and "Hadoop 2" in \
        t["not_applied"]["erasure_coding_policy"] and p.units[0].hdfs.erasure_coding is None
    p = _plan()  # text: the storage policy set after Hive's write, no erasure coding
    fs = FakeFS(space={p.units[0].location: 10})
    plan_tiering(fs, p, _settings(tier_storage_policy="COLD", tier_erasure_coding_policy=XOR), "text", NOW)
    t, c = p.units[0].tier, p.units[0].hdfs
    assert c.tier_storage_policy is None and c.storage_policy == "COLD" and "Mover" in t["note"]
    assert "erasure_coding_policy" in t["not_applied"]


def test_finish_checks_each_new_files_storage_policy_and_reports_the_space_saved():
    p = _plan()
    old = p.units[0]
    fs = FakeFS(space={old.location: 3000, old.staging: 1000})
    plan_tiering(fs, p, _settings(tier_storage_policy="WARM"), "parquet", NOW)
    fs.files[old.staging] = ["part-00000.parquet", "part-00001.parquet"]
    fs.storage = {f"{old.staging}/part-00000.parquet": "WARM", f"{old.staging}/part-00001.parquet": "WARM"}
    got = finish_tiering(fs, old)["tiering"]
    assert (got["space_before"], got["space_after"], got["space_saved"]) == (3000, 1000, 2000)
    parts = [{"status": "compacted", "tiering": got}, {"status": "compacted"},
             {"status": "compacted", "tiering": {"not_applied": {"storage_policy": "x"}}}]
    assert tier_totals(parts) == {"tiered": 1, "tier_space_saved": 2000}
    assert tier_totals([{"status": "compacted"}]) == {}
    assert finish_tiering(fs, p.units[1]) == {}  # not old enough: nothing
    fs.storage[f"{old.staging}/part-00001.parquet"] = "HOT"  # the check fires: the original stays
    with pytest.raises(LakekeeperError) as exc:
        finish_tiering(fs, old)
    assert exc.value.code == "verification_failed" and "part-00001.parquet: HOT" in exc.value.message


def test_the_history_record_keeps_the_tiering():
    from lakekeeper_spark.report.history import build_record

    tier = {"storage_policy": "COLD", "age_days": 90.0, "space_before": 3000, "space_after": 1000, "space_saved": 2000}
    result = {"table": "db.t", "status": "compacted", "changed": True, "run_id": "20261129T000000-abcdef",
              "tiered": 1, "tier_space_saved": 2000,
              "partitions": [{"spec": "dt=1", "status": "compacted", "files_before": 3, "files_after": 1,
                              "tiering": tier},
                             {"spec": "dt=2", "status": "compacted", "files_before": 3, "files_after": 1}]}
    rec = build_record("compact", result, 1.0, 2.0)
    assert rec["totals"]["tiered"] == 1 and rec["totals"]["tier_space_saved"] == 2000, rec["totals"]
    assert [u.get("tiering") for u in rec["units"]] == [tier, None], rec["units"]
    rec = build_record("compact", dict(result, tiered=None, tier_space_saved=None), 1.0, 2.0)
    assert "tiered" not in rec["totals"]
