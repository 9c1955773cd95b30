"""The maintenance window's budget (budget.py): pure, with a clock the test moves."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from lakekeeper_spark.policy.budget import Budget, benefit, parse_deadline, table_benefit
from lakekeeper_spark.report.errors import UsageError

NOW = datetime(2026, 11, 26, 1, 0, 0, tzinfo=timezone.utc).timestamp()


@pytest.mark.parametrize("text, expected", [
    ("90m", NOW + 5400),
    ("2h", NOW + 7200),
    ("05:30", datetime(2026, 11, 26, 5, 30, tzinfo=timezone.utc).timestamp()),
    ("00:30", datetime(2026, 11, 27, 0, 30, tzinfo=timezone.utc).timestamp()),  # passed today: tomorrow's
    ("2026-11-26T05:30:00Z", datetime(2026, 11, 26, 5, 30, tzinfo=timezone.utc).timestamp()),
    ("2026-11-26T06:30:00+01:00", datetime(2026, 11, 26, 5, 30, tzinfo=timezone.utc).timestamp()),
    ("2026-11-26 05:30", datetime(2026, 11, 26, 5, 30, tzinfo=timezone.utc).timestamp()),  # no zone: UTC
])
def test_deadline_forms(text, expected):
    assert parse_deadline(text, NOW) == expected


@pytest.mark.parametrize("text", ["", "soon", "25:00", "3", "2026-13-01T00:00:00"])
def test_bad_deadlines_are_refused_clearly(text):
    with pytest.raises(UsageError, match="deadline"):
        parse_deadline(text, NOW)


def test_no_unit_starts_that_would_end_after_the_deadline():
    t = [NOW]
    b = Budget(NOW + 100, clock=lambda: t[0])
    assert b.estimate(10**9) is None and b.refusal(10**9) is None  # nothing known yet: the first unit starts
    b.record(10 * 2**20, 5.0)  # 10 MB in 5 s
    t[0] = NOW + 10
    assert b.estimate(2**20) == 5.0  # never less than the quickest unit (a unit's fixed cost)
    assert b.estimate(40 * 2**20) == 20.0
    assert b.refusal(40 * 2**20) is None  # 10 + 20 < 100
    why = b.refusal(200 * 2**20)  # 100 s: would end at 110
    assert why and "about 100 s" in why and "90 s left" in why and "2026-11-26T01:01:40Z" in why
    t[0] = NOW + 100
    assert b.passed() and "has passed" in b.refusal(0)


def test_benefit_orders_small_files_first():
    dense = benefit(files=400, target_files=1, nbytes=40 * 2**20)  # 400 files of 100 KB
    bulky = benefit(files=8, target_files=1, nbytes=1024 * 2**20)  # 8 files of 128 MB
    done = benefit(files=1, target_files=1, nbytes=2**20)
    assert dense > bulky > done == 0
    assert table_benefit(400, 40 * 2**20, 128 * 2**20) > table_benefit(8, 1024 * 2**20, 128 * 2**20)
