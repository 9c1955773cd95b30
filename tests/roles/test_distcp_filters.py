"""The maintenance role's ``distcp_filters`` entry point, run for real with
ansible-playbook: it puts the collection's distcp ``-filters`` file where it
is asked to, byte for byte, and a second run changes nothing. (What the
lines leave out of a copy: tests/engine/test_replication.py.)"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

PLAY = """
- name: Ship the distcp filter file
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Twice, the second time nothing changes
      ansible.builtin.include_role:
        name: lakekeeper.hive.maintenance
        tasks_from: distcp_filters
      vars:
        maintenance_distcp_filters_path: {dest}
      loop: [1, 2]
"""


def test_the_role_ships_the_filter_file(playbook, tmp_path):
    dest = tmp_path / "etc" / "lakekeeper-distcp-filters.txt"
    dest.parent.mkdir()
    run = playbook(PLAY.format(dest=dest))
    assert run.rc == 0, run
    assert dest.read_bytes() == (REPO / "roles" / "maintenance" / "files" / "lakekeeper-distcp-filters.txt").read_bytes()
    assert oct(dest.stat().st_mode & 0o777) == "0o644"
    assert run.output.count("distcp -filters") == 2 and "(written)" in run.output and "(unchanged)" in run.output, run


def test_the_path_is_required(playbook):
    run = playbook(PLAY.replace("      vars:\n        maintenance_distcp_filters_path: {dest}\n", "").format())
    assert run.rc != 0 and "maintenance_distcp_filters_path" in run.output, run
