# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Helpers of the playbook tests (imported by conftest.py and test_e2e.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile

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
