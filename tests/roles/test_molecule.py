"""Every role's molecule scenario (driver ``default``, localhost, no
containers): converge, idempotence (a second converge changes nothing) and
verify, as ``molecule test`` runs them from the role's directory.

The scenarios are the roles' own test plans (roles/<role>/molecule/default);
this test runs each one with the collection on ANSIBLE_COLLECTIONS_PATH and
fails with molecule's output when a step fails.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from testbed.kdc import missing_tools

REPO = Path(__file__).resolve().parents[2]
ROLES = sorted(p.parents[2].name for p in (REPO / "roles").glob("*/molecule/default/molecule.yml"))
pytestmark = pytest.mark.timeout(900)


def test_every_role_has_a_scenario():
    roles = sorted(p.name for p in (REPO / "roles").iterdir() if (p / "tasks").is_dir())
    assert ROLES == roles, f"roles without a molecule scenario: {sorted(set(roles) - set(ROLES))}"


@pytest.mark.parametrize("role", ROLES)
def test_molecule_scenario(role, collections_dir, tmp_path):
    if role == "kinit" and missing_tools():
        pytest.skip(f"MIT Kerberos programs missing: {', '.join(missing_tools())}")
    molecule = shutil.which("molecule", path=str(Path(sys.executable).parent))
    assert molecule, "molecule is not installed in the project venv (requirements.txt)"
    env = dict(os.environ)
    env.update({
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        "ANSIBLE_COLLECTIONS_PATH": str(collections_dir),
        "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-local"),
        "MOLECULE_EPHEMERAL_DIRECTORY": str(tmp_path / "molecule"),
        "NO_COLOR": "1",
        "SPARK_LOCAL_IP": "127.0.0.1",
    })
    res = subprocess.run([molecule, "test"], cwd=REPO / "roles" / role, env=env, capture_output=True,
                         text=True, check=False, timeout=840)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-6000:]
    for step in ("converge", "idempotence", "verify"):
        assert f"{step}: Executed: Successful" in " ".join(out.split()), (step, out[-3000:])
