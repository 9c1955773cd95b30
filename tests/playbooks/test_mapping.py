"""The playbooks map the collection-wide lakekeeper_* variables onto the
maintenance role's variables in one place: playbooks/vars/maintenance.yml
(vars_files: the role variables with a default in the role) and
playbooks/tasks/maintenance.yml (one set_fact, imported before the role: the
role variables without a default, set only when their lakekeeper_* variable
is set). Pure checks of those files against the role: a lakekeeper_*
variable that is not set must give the role's own default, or leave the role
variable undefined (never omit or null in a variable file: ansible-core 2.16
hands the role's argument validation the omit placeholder, or '' for null,
and its typed options refuse both); every role variable must be mapped once,
and every playbook must load the mapping before the role.
tests/playbooks/test_playbooks_unset.py runs the playbooks."""
from __future__ import annotations

import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
MAPPING = yaml.safe_load((REPO / "playbooks" / "vars" / "maintenance.yml").read_text())
[MAP_TASK] = yaml.safe_load((REPO / "playbooks" / "tasks" / "maintenance.yml").read_text())
FACTS = {k: v for k, v in MAP_TASK["ansible.builtin.set_fact"].items() if k != "_maintenance_mapped"}
DEFAULTS = yaml.safe_load((REPO / "roles" / "maintenance" / "defaults" / "main.yml").read_text())
SPECS = yaml.safe_load((REPO / "roles" / "maintenance" / "meta" / "argument_specs.yml").read_text())["argument_specs"]
ENTRY = re.compile(r"\{\{ (lakekeeper_\w+) \| default\((.*?)\)(.*) \}\}")


def test_a_fallback_in_the_variable_file_is_the_role_default():
    for var, expr in MAPPING.items():
        m = ENTRY.fullmatch(expr)
        assert m, (var, expr)
        assert var in DEFAULTS, ("no default in the role: map it in playbooks/tasks/maintenance.yml", var)
        assert yaml.safe_load(m.group(2)) == DEFAULTS[var] and m.group(3) == "", (var, expr, DEFAULTS[var])
        assert "omit" not in expr and "none" not in expr, (var, expr)


def test_a_variable_without_a_role_default_is_left_undefined_when_not_set():
    assert MAP_TASK["ansible.builtin.set_fact"]["_maintenance_mapped"] is True  # set_fact needs one key
    for var, expr in FACTS.items():
        m = ENTRY.fullmatch(expr)
        assert m, (var, expr)
        assert var not in DEFAULTS, (var, "has a role default: map it in playbooks/vars/maintenance.yml")
        # not set: omitted (no fact); an empty survey answer of a module option counts as not set
        assert (m.group(2) == "omit" and m.group(3) == "") or \
            (m.group(2) == "''" and m.group(3) in (" or omit", " | string | trim or omit")), (var, expr)


def test_every_role_variable_is_mapped_once_and_documented():
    options = set().union(*(spec["options"] for spec in SPECS.values()))
    assert not set(MAPPING) & set(FACTS), sorted(set(MAPPING) & set(FACTS))
    mapped = set(MAPPING) | set(FACTS)
    assert mapped == options, (sorted(mapped ^ options))
    assert set(DEFAULTS) <= set(MAPPING)


def test_every_playbook_loads_the_mapping_before_the_role():
    for name in ("compact", "analyze", "rollback", "cleanup"):
        [play] = yaml.safe_load((REPO / "playbooks" / f"{name}.yml").read_text())
        assert play["vars_files"] == ["vars/maintenance.yml"], name
        first, second = play["tasks"][:2]
        assert first["ansible.builtin.import_tasks"] == "tasks/maintenance.yml", (name, first)
        assert second["ansible.builtin.import_role"]["name"] == "lakekeeper.hive.maintenance", (name, second)
