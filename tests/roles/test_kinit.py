"""Role lakekeeper.hive.kinit against a real MIT KDC on loopback (testbed.kdc)
with the real ansible-playbook on localhost."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from datetime import datetime

import pytest

pytestmark = pytest.mark.timeout(120)


def kinit_play(principal, keytab, ccache, krb5_conf, **extra) -> str:
    role_vars = {
        "kinit_principal": principal,
        "kinit_keytab": str(keytab),
        "kinit_ccache": ccache,
        "kinit_krb5_config": str(krb5_conf),
        **extra,
    }
    return f"""
    - name: Kinit
      hosts: localhost
      gather_facts: false
      tasks:
        - name: Include the role
          ansible.builtin.include_role:
            name: lakekeeper.hive.kinit
          vars: {json.dumps(role_vars)}
        - name: Show the exported environment
          ansible.builtin.debug:
            msg: "KINIT_ENV={{{{ kinit_env | to_json }}}}"
    """


def exported_env(output: str) -> dict:
    match = re.search(r'"msg": "KINIT_ENV=(.*)"\s*$', output, re.M)
    assert match, output
    return json.loads(match.group(1).replace('\\"', '"'))


@pytest.fixture
def principal(kdc):
    # one principal + keytab shared by the tests (keys stay the same)
    return kdc.principal("lakekeeper")


@pytest.fixture(scope="session")
def keytabs(kdc):
    principal, keytab = kdc.add_principal("lakekeeper")
    _, other = kdc.add_principal("someone-else")
    return {"good": keytab, "other": other}


@pytest.fixture
def ccache(tmp_path):
    return f"FILE:{tmp_path}/krb5cc_test"


def cache_principal(kdc, ccache) -> str | None:
    res = kdc.klist(ccache)
    if res.returncode != 0:
        return None
    return re.search(r"^Default principal: (\S+)", res.stdout, re.M).group(1)


def klist_valid(kdc, ccache) -> bool:
    return subprocess.run(["klist", "-s", "-c", ccache], env=kdc._run_env()).returncode == 0


def test_obtains_ticket_once(kdc, keytabs, principal, ccache, playbook):
    play = kinit_play(principal, keytabs["good"], ccache, kdc.krb5_conf)
    first = playbook(play)
    assert first.rc == 0, first
    assert first.changed == 1, first
    assert cache_principal(kdc, ccache) == principal
    assert exported_env(first.output) == {"KRB5CCNAME": ccache,
                                          "KRB5_CONFIG": str(kdc.krb5_conf)}

    second = playbook(play)
    assert second.rc == 0, second
    assert second.changed == 0, second
    assert second.failed == 0, second


def test_check_mode_changes_nothing(kdc, keytabs, principal, ccache, tmp_path, playbook):
    res = playbook(kinit_play(principal, keytabs["good"], ccache, kdc.krb5_conf), check=True)
    assert res.rc == 0, res
    assert res.changed == 1, res  # reports the ticket it would obtain
    assert "Would obtain a ticket for" in res.output
    assert not (tmp_path / "krb5cc_test").exists()


def test_wrong_keytab_fails_with_kinit_error(kdc, keytabs, principal, ccache, playbook):
    res = playbook(kinit_play(principal, keytabs["other"], ccache, kdc.krb5_conf))
    assert res.rc != 0 and res.failed == 1, res
    assert f"Keytab contains no suitable keys for {principal}" in res.output, res
    assert f"kinit failed for {principal} with keytab {keytabs['other']}" in res.output, res


def test_kdc_down_fails_with_kinit_error(kdc, keytabs, principal, ccache, playbook):
    dead = kdc.dead_krb5_conf()
    res = playbook(kinit_play(principal, keytabs["good"], ccache, dead))
    assert res.rc != 0 and res.failed == 1, res
    assert f"Cannot contact any KDC for realm '{kdc.realm}'" in res.output, res


def test_world_readable_keytab_refused(kdc, keytabs, principal, ccache, tmp_path, playbook):
    loose = tmp_path / "loose.keytab"
    shutil.copy(keytabs["good"], loose)
    loose.chmod(0o644)
    res = playbook(kinit_play(principal, loose, ccache, kdc.krb5_conf))
    assert res.failed == 1, res
    assert f"Keytab {loose} on localhost is world-readable (mode 0644)" in res.output, res
    assert not (tmp_path / "krb5cc_test").exists()


def test_missing_keytab_refused(kdc, principal, ccache, tmp_path, playbook):
    res = playbook(kinit_play(principal, tmp_path / "nope.keytab", ccache, kdc.krb5_conf))
    assert res.failed == 1, res
    assert f"Keytab {tmp_path / 'nope.keytab'} on localhost does not exist" in res.output, res


def ticket_times(kdc, ccache) -> tuple[datetime, datetime]:
    """(valid starting, expires) of the TGT in ``ccache``."""
    out = kdc.klist(ccache).stdout
    match = re.search(r"^(\S+ \S+)\s+(\S+ \S+)\s+krbtgt/", out, re.M)
    assert match, out
    return tuple(datetime.strptime(t, "%m/%d/%y %H:%M:%S") for t in match.groups())


def test_ticket_renewed_when_expired(kdc, keytabs, principal, ccache, playbook):
    # kinit_lifetime is passed as kinit -l: a 4 s ticket
    short = playbook(kinit_play(principal, keytabs["good"], ccache, kdc.krb5_conf,
                                kinit_lifetime="4s", kinit_min_lifetime="0"))
    assert short.rc == 0 and short.changed == 1, short
    start, end = ticket_times(kdc, ccache)
    assert (end - start).total_seconds() == 4
    deadline = time.monotonic() + 15
    while klist_valid(kdc, ccache) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not klist_valid(kdc, ccache)  # expired, still in the cache
    assert cache_principal(kdc, ccache) == principal

    renewed = playbook(kinit_play(principal, keytabs["good"], ccache, kdc.krb5_conf,
                                  kinit_min_lifetime="0"))
    assert renewed.rc == 0 and renewed.changed == 1, renewed
    assert klist_valid(kdc, ccache)
    assert ticket_times(kdc, ccache)[0] > start


def test_ticket_renewed_when_lifetime_too_short(kdc, keytabs, principal, ccache, playbook):
    # a valid ticket with 10 minutes left does not satisfy kinit_min_lifetime=1h
    kdc.kinit(principal, keytabs["good"], ccache, lifetime="10m")
    res = playbook(kinit_play(principal, keytabs["good"], ccache, kdc.krb5_conf,
                              kinit_min_lifetime="1h"))
    assert res.rc == 0 and res.changed == 1, res
    assert cache_principal(kdc, ccache) == principal


def test_ticket_of_other_principal_replaced(kdc, keytabs, principal, ccache, playbook):
    kdc.kinit("someone-else", keytabs["other"], ccache)
    assert cache_principal(kdc, ccache) == kdc.principal("someone-else")
    res = playbook(kinit_play(principal, keytabs["good"], ccache, kdc.krb5_conf))
    assert res.rc == 0 and res.changed == 1, res
    assert cache_principal(kdc, ccache) == principal


def test_destroy(kdc, keytabs, principal, ccache, tmp_path, playbook):
    kdc.kinit(principal, keytabs["good"], ccache)
    play = f"""
    - name: Kdestroy
      hosts: localhost
      gather_facts: false
      tasks:
        - name: Destroy through the destroy entry point
          ansible.builtin.include_role:
            name: lakekeeper.hive.kinit
            tasks_from: destroy
          vars:
            kinit_ccache: "{ccache}"
            kinit_krb5_config: "{kdc.krb5_conf}"
    """
    check = playbook(play, check=True)
    assert check.rc == 0 and check.changed == 1, check
    assert cache_principal(kdc, ccache) == principal

    first = playbook(play)
    assert first.rc == 0 and first.changed == 1, first
    assert cache_principal(kdc, ccache) is None
    assert not (tmp_path / "krb5cc_test").exists()

    # kinit_state=absent through main: nothing left to destroy
    again = playbook(kinit_play(principal, keytabs["good"], ccache, kdc.krb5_conf,
                                kinit_state="absent"))
    assert again.rc == 0 and again.changed == 0, again
