"""Fixtures of the security and bad-input tests.

* ``file_world`` / ``hdfs_world`` (tests/crash/world.py): the engine-level
  bad-input tables and the owner/mode tables live in the crash worlds, so
  their setup and verification processes are shared (built once per pytest
  process, see tests/crash/worlds_fixture.py).
* ``module_run``: ONE real ``ansible-playbook -vvv`` run with one local host
  per module-level case (playbooks/modules.yml), including the runs that
  carry secrets and the Kerberos ticket cases (real KDC, testbed.kdc).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
for p in (HERE, REPO / "tests" / "crash", REPO / "tests" / "testbed"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from testbed.kdc import kdc  # noqa: E402,F401  pylint: disable=unused-import
from testbed.pytest_plugin import testbed  # noqa: E402,F401  pylint: disable=unused-import
from worlds_fixture import file_world, hdfs_world  # noqa: E402,F401  pylint: disable=unused-import
from security_cases import CASES, KINIT_CASES, SECRETS, SYSLOG_CAPTURE  # noqa: E402

BIN = Path(sys.executable).parent


@pytest.fixture(scope="session")
def collections_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("collections")
    ns = root / "ansible_collections" / "lakekeeper"
    ns.mkdir(parents=True)
    (ns / "hive").symlink_to(REPO, target_is_directory=True)
    return root


@pytest.fixture(scope="session")
def module_run(tmp_path_factory, collections_dir, kdc) -> dict:
    """Run playbooks/modules.yml once (-vvv); returns per-case results, the
    whole output, what was sent to syslog, and timings."""
    work = tmp_path_factory.mktemp("modules")
    capture = work / "syslog_capture"
    capture.mkdir()
    (capture / "sitecustomize.py").write_text(SYSLOG_CAPTURE)
    syslog_dir = work / "syslog"
    syslog_dir.mkdir()
    principal, keytab = kdc.add_principal("lkmodules")
    loose = work / "loose.keytab"
    loose.write_bytes(Path(keytab).read_bytes())
    loose.chmod(0o644)
    # tickets that expired: a 3-second ticket, then wait
    caches = {c: f"FILE:{work}/krb5cc_{c}" for c in KINIT_CASES}
    for cache in caches.values():
        kdc.kinit(principal, keytab, cache, lifetime="3s")
    expired_at = time.time() + 4
    engine_env = {"SPARK_LOCAL_IP": "127.0.0.1",
                  "JAVA_TOOL_OPTIONS": f"-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Dderby.stream.error.file={work}/derby.log",
                  "PYTHONPATH": str(capture), "LK_SYSLOG_DIR": str(syslog_dir)}
    common = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, "lk_work": str(work),
              "lk_env": engine_env, "lk_spark_submit": str(BIN / "spark-submit"), "lk_principal": principal,
              "lk_loose_keytab": str(loose), "lk_secret1": SECRETS[0], "lk_secret2": SECRETS[1]}
    kinit_vars = {
        "kinit_expired_ticket": {"kinit_krb5_config": str(kdc.krb5_conf)},
        "kinit_expired_kdc_down": {"kinit_krb5_config": str(kdc.dead_krb5_conf())},
    }
    inventory = {"all": {"children": {
        "modules": {"hosts": {c: dict(common) for c in CASES}},
        "kinit": {"hosts": {c: dict(common, kinit_principal=principal, kinit_keytab=str(keytab),
                                    kinit_ccache=caches[c], kinit_min_lifetime="1h", **kinit_vars[c])
                            for c in KINIT_CASES}},
    }}}
    inv = work / "inventory.json"
    inv.write_text(json.dumps(inventory))
    while time.time() < expired_at:
        time.sleep(0.2)
    expired_before = {c: subprocess.run(["klist", "-s", "-c", caches[c]], env=kdc._run_env(), check=False).returncode  # pylint: disable=protected-access
                      for c in KINIT_CASES}
    env = dict(os.environ)
    env.update(ANSIBLE_COLLECTIONS_PATH=str(collections_dir), ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0",
               ANSIBLE_RETRY_FILES_ENABLED="0", ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_DEPRECATION_WARNINGS="0",
               ANSIBLE_HOST_KEY_CHECKING="0", PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    t0 = time.monotonic()
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-vvv", "-f", "10", "-i", str(inv),
                           str(HERE / "playbooks" / "modules.yml")], cwd=work, env=env, capture_output=True,
                          text=True, timeout=1800, check=False)
    seconds = round(time.monotonic() - t0, 1)
    results = {}
    for c in CASES + KINIT_CASES:
        p = work / f"result-{c}.json"
        results[c] = json.loads(p.read_text()) if p.exists() else None
    syslog = "".join(p.read_text() for p in sorted(syslog_dir.glob("syslog-*.txt")))
    files_text = "".join(p.read_text() for p in sorted(work.glob("result-*.json")))
    return {"rc": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr, "results": results,
            "syslog": syslog, "result_files": files_text, "seconds": seconds, "work": work,
            "expired_before": expired_before, "caches": caches, "kdc": kdc}
