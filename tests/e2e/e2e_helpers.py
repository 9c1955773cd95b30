# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Helpers of the playbook tests (imported by tests/conftest.py, test_e2e.py
and tests/playbooks)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time

from return_docs import return_errors  # pylint: disable=import-error

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.path.dirname(os.path.abspath(sys.executable))


def tool_env(**extra):
    """Environment of the ansible tools: the venv's bin first, no stray config."""
    env = dict(os.environ)
    env["PATH"] = BIN + os.pathsep + env.get("PATH", "")
    env.pop("ANSIBLE_CONFIG", None)
    env.update(ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0", ANSIBLE_HOST_KEY_CHECKING="0",
               ANSIBLE_RETRY_FILES_ENABLED="0", ANSIBLE_DEPRECATION_WARNINGS="0", PYTHONUNBUFFERED="1")
    env.update(extra)
    return env


def run(cmd, timeout=600, **kwargs):
    kwargs.setdefault("env", tool_env())
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout,
                          check=False, **kwargs)


def tarball_names(path):
    with tarfile.open(path) as archive:
        return archive.getnames()


def tail(text, count=150):
    return "\n".join(text.splitlines()[-count:])


def run_lifecycle(collection_path, workdir, state_dir, data_dir, database):
    """tests/e2e/playbooks/lifecycle.yml on the tables events and clicks of
    DATABASE (made by create_tables.py, data under DATA_DIR, Metastore in
    STATE_DIR), with the built and installed collection: the modules one by
    one (analyze, analyze through spark-submit, compact in check mode,
    compact, compact again, rollback, compact with a refresh command, cleanup
    in check mode, cleanup, a missing table), each checked by the playbook's
    own asserts; then the application name the spark-submit run had in Spark
    and every module's RETURN documentation against its real result
    (return_docs.py). Returns the playbook's duration."""
    os.makedirs(str(workdir))
    for table, expected in (("events", 60), ("clicks", 60)):
        files = [f for _d, _s, names in os.walk(os.path.join(data_dir, table)) for f in names
                 if f.endswith(".parquet")]
        assert len(files) == expected, (table, len(files))
    inventory = os.path.join(str(workdir), "inventory.ini")
    with open(inventory, "w", encoding="utf-8") as f:
        f.write("localhost ansible_connection=local ansible_python_interpreter=%s\n" % sys.executable)
    extra = os.path.join(str(workdir), "vars.json")
    with open(extra, "w", encoding="utf-8") as f:
        json.dump(dict(state_dir=str(state_dir), data_dir=str(data_dir), e2e_db=database,
                       app_cache_dir=os.path.join(str(workdir), "app-cache"),
                       config_file=os.path.join(str(workdir), "lakekeeper.yaml"),
                       refresh_script=os.path.join(ROOT, "tests", "e2e", "record_argv.py"),
                       results_file=os.path.join(str(workdir), "results.json"),
                       e2e_extras=os.environ.get("LAKEKEEPER_E2E_EXTRAS", "1") != "0"), f)
    # The playbook runs from workdir, so stray files (derby.log, ...) would show in its listing below.
    playbook = os.path.join(str(workdir), "lifecycle.yml")
    shutil.copy(os.path.join(ROOT, "tests", "e2e", "playbooks", "lifecycle.yml"), playbook)
    started = time.time()
    res = run([os.path.join(BIN, "ansible-playbook"), "-i", inventory, "-e", "@%s" % extra, playbook],
              timeout=1500, cwd=str(workdir),
              env=tool_env(ANSIBLE_COLLECTIONS_PATH=collection_path,
                           ANSIBLE_LOCAL_TEMP=os.path.join(str(workdir), "ltmp"),
                           ANSIBLE_REMOTE_TEMP=os.path.join(str(workdir), "rtmp")))
    seconds = time.time() - started
    assert res.returncode == 0, "lifecycle playbook failed:\n" + tail(res.stdout)
    assert "E2E_SUMMARY" in res.stdout
    if os.environ.get("LAKEKEEPER_E2E_EXTRAS", "1") != "0":
        # spark-submit's --name reached Spark (the engine no longer renames the application)
        (log,) = os.listdir(os.path.join(str(state_dir), "eventlog"))
        with open(os.path.join(str(state_dir), "eventlog", log), encoding="utf-8") as handle:
            start = [json.loads(line) for line in handle if '"SparkListenerApplicationStart"' in line]
        names = [e["App Name"] for e in start]  # ... ending in the run id the module chose (checked in the playbook)
        assert len(names) == 1 and re.match(r"^lakekeeper-analyze-%s\.events-awx-4242-\d{8}T\d{6}-[0-9a-f]{6}$"
                                            % re.escape(database), names[0]), names
    # Every module's RETURN documentation against its real result in this run.
    with open(os.path.join(str(workdir), "results.json"), encoding="utf-8") as handle:
        results = json.load(handle)
    assert sorted(results) == ["lakekeeper_analyze", "lakekeeper_cleanup", "lakekeeper_compact", "lakekeeper_rollback"]
    errors = [e for module, result in sorted(results.items()) for e in return_errors(module, result)]
    assert not errors, "\n".join(errors)
    # The cached application: one app-<sha12> directory, unpacked once.
    cached = os.listdir(os.path.join(str(workdir), "app-cache"))
    assert len(cached) == 1 and cached[0].startswith("app-"), cached
    # Nothing of the engine's working files outside the state dir.
    assert sorted(os.listdir(str(workdir))) == sorted(
        ["app-cache", "inventory.ini", "lakekeeper.yaml", "lifecycle.yml", "ltmp", "results.json", "rtmp",
         "vars.json"])
    return seconds
