"""The journal's record names (pure): a run with more than 999,999 units
(or record files) keeps every record visible to recovery (the names used to
be parsed as exactly six digits, so unit 1,000,000 and later were invisible)."""
from __future__ import annotations

import pytest

from lakekeeper_spark.protocol.journal import unit_index, unit_log_index, unit_log_name


@pytest.mark.parametrize("n", [0, 7, 999_999, 1_000_000, 12_345_678])
def test_every_record_file_name_reads_back_as_its_number(n):
    name = unit_log_name(n)
    assert name.startswith("units-") and name.endswith(".jsonl")
    assert unit_log_index(name) == n
    # an earlier version's one-record-per-unit names, past six digits too
    assert unit_index(f"unit-{n:06d}.json") == n


def test_names_that_are_not_records_are_ignored():
    for name in ("table.json", "unit-12345.json", "unit-000001.json.new.5", "unit-abcdef.json", "unit-.json",
                 "xunit-000001.json", "units-000001.json", "plan-000000.json"):
        assert unit_index(name) is None, name
    for name in ("table.json", "units-12345.jsonl", "units-000001.jsonl.crc", ".units-000001.jsonl", "units-.jsonl",
                 "units-000001.json", "unit-000001.json", "plan-000000.json"):
        assert unit_log_index(name) is None, name
    assert unit_log_name(5) == "units-000005.jsonl"
