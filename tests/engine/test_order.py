"""The order of work without a deadline (policy/order.py, ``compact
--order``) and the table properties of other tools read as ours
(policy/table_policy.py, Amoro's ``self-optimizing.*``): the pure rules.
On real tables: tests/engine/test_policy.py."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from lakekeeper_spark.commands.compact import start_order
from lakekeeper_spark.policy.budget import Budget
from lakekeeper_spark.policy.config import build_settings
from lakekeeper_spark.policy.order import ORDERS, ordered, parse_order
from lakekeeper_spark.policy.table_policy import (apply_policy, excluded, exclusion_property, policy_sources,
                                                  table_policy)
from lakekeeper_spark.report.errors import Refused, UsageError

# name -> (files, bytes)
ITEMS = {"a": (5, 500), "b": (50, 100), "c": (1, 900), "d": (50, 300), "e": (None, None)}


def _ordered(order: str) -> list[str]:
    return ordered(list(ITEMS), order, lambda n: ITEMS[n][0], lambda n: ITEMS[n][1])


@pytest.mark.parametrize("order, expected", [
    ("default", ["a", "b", "c", "d", "e"]),  # as given
    ("bytes-asc", ["b", "d", "a", "c", "e"]),
    ("bytes-desc", ["c", "a", "d", "b", "e"]),
    ("files-asc", ["c", "a", "b", "d", "e"]),  # b and d tie: as given
    ("files-desc", ["b", "d", "a", "c", "e"]),  # e could not be looked at: after the others
])
def test_each_order_sorts_by_its_figure_ties_and_unknowns_keep_their_place(order, expected):
    assert _ordered(order) == expected


def test_an_order_is_validated_and_is_a_setting_of_compact():
    assert ORDERS == ("default", "bytes-asc", "bytes-desc", "files-asc", "files-desc")
    assert parse_order(" Files-DESC ") == "files-desc" and parse_order(None) == "default"
    with pytest.raises(UsageError, match="invalid order 'largest'"):
        parse_order("largest")
    assert build_settings({}, {}).order == "default"
    assert build_settings({"order": "bytes-asc"}, {}).order == "bytes-asc"  # the config file's key
    assert build_settings({"order": "bytes-asc"}, {"order": "files-desc"}).order == "files-desc"  # the flag wins
    with pytest.raises(UsageError, match="invalid order"):
        build_settings({}, {"order": "files"})


def _unit(spec: str, files: int, nbytes: int, target_files: int = 1):
    return SimpleNamespace(spec=spec, stats=SimpleNamespace(files=files, bytes=nbytes),
                           decision=SimpleNamespace(target_files=target_files))


def test_the_units_of_a_table_start_in_the_order_asked_for_deadline_or_not():
    units = [_unit("dt=a", 3, 3000), _unit("dt=b", 9, 900), _unit("dt=c", 5, 50_000)]

    def specs(order: str, budget=None) -> list[str]:
        ctx = SimpleNamespace(settings=build_settings({}, {"order": order}), budget=budget)
        return [u.spec for u in start_order(ctx, units)]

    assert specs("default") == ["dt=a", "dt=b", "dt=c"]  # the plan's order
    assert specs("files-desc") == ["dt=b", "dt=c", "dt=a"]
    assert specs("bytes-asc") == ["dt=b", "dt=a", "dt=c"]
    budget = Budget(deadline=4e9, clock=lambda: 0.0)
    assert specs("default", budget) == ["dt=b", "dt=a", "dt=c"]  # a deadline's default: by benefit
    assert specs("files-asc", budget) == ["dt=a", "dt=c", "dt=b"]  # an order asked for wins


def test_a_tables_own_order_is_a_policy_of_its_partitions():
    s = apply_policy(build_settings({}, {"order": "files-desc"}), table_policy({"lakekeeper.order": "bytes-asc"}))
    assert s.order == "bytes-asc"
    with pytest.raises(Refused, match="lakekeeper.order='newest'") as err:
        apply_policy(build_settings({}, {}), table_policy({"lakekeeper.order": "newest"}))
    assert err.value.code == "invalid_policy"


def test_amoros_self_optimizing_properties_are_read_as_ours_and_ours_win():
    props = {"self-optimizing.enabled": "true", "self-optimizing.target-size": "268435456",
             "self-optimizing.fragment-ratio": "4", "self-optimizing.min-target-size-ratio": "0.5",
             "self-optimizing.minor.trigger.file-count": "20", "lakekeeper.min_input_files": "6",
             "self-optimizing.group": "etl", "self-optimizing.quota": "0.2"}  # not ours: not read
    policy = table_policy(props)
    assert policy == {"lakekeeper.exclude": "false", "lakekeeper.fragment_ratio": "0.25",
                      "lakekeeper.min_input_files": "6", "lakekeeper.min_target_ratio": "0.5",
                      "lakekeeper.target_file_size_mb": "256"}
    assert policy_sources(props) == {"lakekeeper.exclude": "self-optimizing.enabled",
                                     "lakekeeper.fragment_ratio": "self-optimizing.fragment-ratio",
                                     "lakekeeper.min_target_ratio": "self-optimizing.min-target-size-ratio",
                                     "lakekeeper.target_file_size_mb": "self-optimizing.target-size"}
    s = apply_policy(build_settings({}, {}), policy)
    assert (s.target_file_size_mb, s.fragment_ratio, s.min_target_ratio, s.min_input_files) == (256.0, 0.25, 0.5, 6)
    assert not excluded(policy)
    # Amoro's defaults are ours: 128 MB target, fragments below 1/8 of it, 0.75, 12 files
    d = apply_policy(build_settings({}, {}), table_policy({"self-optimizing.target-size": "134217728",
                                                          "self-optimizing.fragment-ratio": "8"}))
    dflt = build_settings({"target_file_size_mb": 128}, {})
    assert (d.target_file_bytes, d.fragment_ratio, d.min_target_ratio, d.min_input_files) == \
        (dflt.target_file_bytes, dflt.fragment_ratio, dflt.min_target_ratio, dflt.min_input_files)


def test_self_optimizing_disabled_excludes_the_table_unless_lakekeeper_says_otherwise():
    assert excluded(table_policy({"self-optimizing.enabled": "false"}))
    assert policy_sources({"self-optimizing.enabled": "FALSE"}) == {"lakekeeper.exclude": "self-optimizing.enabled"}
    both = {"self-optimizing.enabled": "false", "lakekeeper.exclude": "false"}
    assert not excluded(table_policy(both)) and policy_sources(both) == {}
    # the property analyze's and compact's messages name
    assert exclusion_property({"self-optimizing.enabled": "false"}) == "self-optimizing.enabled=false (Amoro's)"
    assert exclusion_property({"lakekeeper.exclude": "true"}) == "lakekeeper.exclude=true"


@pytest.mark.parametrize("props, match", [
    ({"self-optimizing.target-size": "128MB"}, "self-optimizing.target-size='128MB'"),
    ({"self-optimizing.fragment-ratio": "0"}, "self-optimizing.fragment-ratio='0'.*must be > 0"),
    ({"self-optimizing.enabled": "maybe"}, "self-optimizing.enabled='maybe'"),
])
def test_an_amoro_value_that_does_not_read_refuses_the_table(props, match):
    with pytest.raises(Refused, match=match) as err:
        table_policy(props)
    assert err.value.code == "invalid_policy"


def test_an_amoro_value_ours_refuses_is_named_with_its_source():
    props = {"self-optimizing.fragment-ratio": "0.5"}  # a fragment below twice the target: no such bound of ours
    with pytest.raises(Refused, match=r"lakekeeper.fragment_ratio='2' \(read from self-optimizing.fragment-ratio\)"):
        apply_policy(build_settings({}, {}), table_policy(props), policy_sources(props))
