"""Issue 50 item 5 and issue 49's ``verify: sample``, the pure rules: which
YARN queue a table's properties name (policy/queues.py: ``lakekeeper.queue``,
Amoro's ``self-optimizing.group`` through the run's ``queues``; Amoro's
``self-optimizing.quota`` reported as not read) and which units a sample
verifies by content (policy/verify_sample.py). On a real table:
tests/engine/test_content_verification.py; through ansible-playbook:
tests/playbooks/test_mixed_fleet.py."""

from __future__ import annotations

import pytest

from lakekeeper_spark.policy.config import build_settings
from lakekeeper_spark.policy.queues import parse_queues, queue_facts, table_queue
from lakekeeper_spark.policy.table_policy import apply_policy, table_policy
from lakekeeper_spark.policy.verify_sample import choose_sample, sample_seed
from lakekeeper_spark.report.errors import Refused, UsageError


def test_a_table_names_its_queue_or_its_group_mapped_to_one():
    assert table_queue({}) is None and queue_facts({"owner": "x"}) == {}
    assert table_queue({"lakekeeper.queue": "root.etl"}) == {"queue": "root.etl", "from": "lakekeeper.queue"}
    # a group: through the run's mapping, else a queue of its name
    mapping = {"nightly": "root.etl.nightly"}
    assert table_queue({"self-optimizing.group": "nightly"}, mapping) == {
        "queue": "root.etl.nightly", "from": "self-optimizing.group", "group": "nightly"}
    assert table_queue({"Self-Optimizing.Group": "adhoc"}, mapping)["queue"] == "adhoc"
    # the table's own lakekeeper.queue wins over its group
    both = {"self-optimizing.group": "nightly", "lakekeeper.queue": "urgent"}
    assert table_queue(both, mapping) == {"queue": "urgent", "from": "lakekeeper.queue"}
    with pytest.raises(Refused) as exc:
        table_queue({"lakekeeper.queue": "a queue; drop"})
    assert exc.value.code == "invalid_policy"


def test_the_quota_is_reported_as_not_read_and_the_queue_is_no_setting():
    facts = queue_facts({"self-optimizing.group": "g", "self-optimizing.quota": "0.5"}, {"g": "q"})
    assert facts["queue"] == "q" and facts["optimizer_group"] == "g" and facts["queue_from"] == "self-optimizing.group"
    assert "YARN queue" in facts["policy_not_read"]["self-optimizing.quota"], facts
    # lakekeeper.queue is a known table property (not invalid_policy) and changes no setting
    policy = table_policy({"lakekeeper.queue": "root.etl", "lakekeeper.verify": "sample",
                           "lakekeeper.verify_sample": "0.25"})
    settings = apply_policy(build_settings({}, {}), policy)
    assert (settings.verify, settings.verify_sample) == ("sample", 0.25)


def test_the_runs_queues_parse_from_the_flag_and_the_config_file():
    parsed = parse_queues("nightly=root.etl.nightly, adhoc=root.adhoc")
    assert parsed == {"nightly": "root.etl.nightly", "adhoc": "root.adhoc"}
    assert build_settings({"queues": {"g": "q"}}, {}).queues == {"g": "q"}
    assert build_settings({"queues": {"g": "q"}}, {"queues": "h=r"}).queues == {"h": "r"}  # the flag wins
    for bad in ("nightly", "g=q,g=r", "g=", {"g": ["q"]}, ["g"]):
        with pytest.raises(UsageError):
            parse_queues(bad)


def test_a_sample_is_seeded_at_least_one_and_rounded_up():
    specs = [f"dt={d:02d}" for d in range(1, 21)]
    one = choose_sample(specs, 0.1, "run-a/db.t")
    assert len(one) == 2 and one == sorted(one) and set(one) <= set(specs)
    assert choose_sample(list(reversed(specs)), 0.1, "run-a/db.t") == one  # the units' order does not matter
    others = {tuple(choose_sample(specs, 0.1, f"run-{i}/db.t")) for i in range(20)}
    assert len(others) > 5  # another run, another sample
    assert choose_sample(specs, 0.01, "s") != [] and len(choose_sample(specs, 0.01, "s")) == 1
    assert choose_sample(specs, 0.25, "s") == choose_sample(specs, 0.25, "s") and len(choose_sample(specs, 0.25, "s")) == 5
    assert choose_sample(specs, 1.0, "s") == specs
    assert choose_sample([""], 0.1, "s") == [""] and choose_sample([], 0.5, "s") == []
    assert sample_seed("20261129T010000-abcdef", "db.t") == "20261129T010000-abcdef/db.t"


def test_verify_sample_is_checked():
    assert build_settings({}, {"verify": "sample"}).verify_sample == 0.1
    for bad in (0, -0.1, 1.5):
        with pytest.raises(UsageError):
            build_settings({}, {"verify": "sample", "verify_sample": bad})
