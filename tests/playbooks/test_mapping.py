"""The playbooks map the collection-wide lakekeeper_* variables onto the
maintenance role's variables in one place (playbooks/vars/maintenance.yml).
Pure checks of that file against the role: a lakekeeper_* variable that is
not set must give the role's own default, every role variable must be
mapped, and every playbook must load the mapping."""
from __future__ import annotations

import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
MAPPING = yaml.safe_load((REPO / "playbooks" / "vars" / "maintenance.yml").read_text())
DEFAULTS = yaml.safe_load((REPO / "roles" / "maintenance" / "defaults" / "main.yml").read_text())
SPECS = yaml.safe_load((REPO / "roles" / "maintenance" / "meta" / "argument_specs.yml").read_text())["argument_specs"]
ENTRY = re.compile(r"\{\{ (lakekeeper_\w+) \| default\((.*?)\)(.*) \}\}")


def test_a_fallback_is_the_role_default_or_not_set():
    for var, expr in MAPPING.items():
        m = ENTRY.fullmatch(expr)
        assert m, (var, expr)
        fallback = None if m.group(2) == "none" else yaml.safe_load(m.group(2))  # Jinja none
        rest = m.group(3)
        if var in DEFAULTS:
            assert fallback == DEFAULTS[var] and rest == "", (var, expr, DEFAULTS[var])
        else:
            # no default in the role: null, or omitted when empty (module options)
            assert (fallback is None and rest == "") or rest.endswith(" or omit"), (var, expr)


def test_every_role_variable_is_mapped_and_documented():
    options = set().union(*(spec["options"] for spec in SPECS.values()))
    assert set(MAPPING) == options, (sorted(set(MAPPING) ^ options))
    assert set(DEFAULTS) <= set(MAPPING)


def test_every_playbook_loads_the_mapping():
    for name in ("compact", "analyze", "rollback", "cleanup"):
        [play] = yaml.safe_load((REPO / "playbooks" / f"{name}.yml").read_text())
        assert play["vars_files"] == ["vars/maintenance.yml"], name
