"""The journal's unit record names (pure): a run with more than 999,999
units keeps every unit visible to recovery (the names used to be parsed as
exactly six digits, so unit 1,000,000 and later were invisible)."""
from __future__ import annotations

import pytest

from lakekeeper_spark.journal import unit_index, unit_record_name


@pytest.mark.parametrize("idx", [0, 7, 999_999, 1_000_000, 12_345_678])
def test_every_unit_record_name_reads_back_as_its_index(idx):
    name = unit_record_name(idx)
    assert name.startswith("unit-") and name.endswith(".json")
    assert unit_index(name) == idx


def test_names_that_are_not_unit_records_are_ignored():
    for name in ("table.json", "unit-12345.json", "unit-000001.json.new.5", "unit-abcdef.json", "unit-.json",
                 "xunit-000001.json"):
        assert unit_index(name) is None, name
    assert unit_record_name(5) == "unit-000005.json"  # unchanged for runs written before
