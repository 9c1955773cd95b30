# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Shared action plugin of the lakekeeper.hive modules (private).

The collection bundles its PySpark application in ``spark_app/``. Before
running a module, the action plugin makes sure that application is on the
target, in ``<app_cache_dir>/app-<sha12>/`` where ``sha12`` is the start of a
SHA-256 over the application's files:

* the checksum is computed on the controller from the ``spark_app/`` directory
  next to this collection's ``plugins/``;
* if ``<app_cache_dir>/app-<sha12>/.lakekeeper_app.sha256`` exists on the target
  (one cheap ``test -e``), nothing is transferred;
* otherwise a ``.tar.gz`` of the application (a few tens of KB) is transferred
  into the task's remote temporary directory and the module unpacks it
  atomically (Python ``tarfile``, no ``tar``/``unzip`` needed on the target);
* the module gets the checksum and, when transferred, the archive path, and
  the AWX job id (``awx_job_id`` or ``tower_job_id`` of the job's variables,
  else ``AWX_JOB_ID``/``JOB_ID`` in the controller's environment), which goes
  into the Spark application's default name, through the environment variable
  ``LAKEKEEPER_ANSIBLE_APP`` (JSON) - not a module option, so that
  ansible-doc shows no option a user must not set.

``spark_submit.script_path`` in the task's arguments disables all of this (the
user runs an application already deployed on the target).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.lakekeeper.hive.plugins.module_utils._lakekeeper_app import (
    APP_ENTRY,
    APP_MARKER,
    DEFAULT_APP_CACHE_DIR,
    INTERNAL_ENV,
    app_dirname,
)

APP_DIRNAME = "spark_app"

_SKIP_DIRS = ("__pycache__",)
_SKIP_SUFFIXES = (".pyc", ".pyo")


def bundled_app_dir():
    """``spark_app/`` of the collection this file belongs to."""
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.normpath(os.path.join(here, "..", "..", APP_DIRNAME))


def app_files(root):
    """Relative paths (``/``-separated, sorted) of the application's files."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.startswith("."))
        for name in filenames:
            if name.startswith(".") or name.endswith(_SKIP_SUFFIXES):
                continue
            full = os.path.join(dirpath, name)
            if not os.path.isfile(full):
                continue
            found.append(os.path.relpath(full, root).replace(os.sep, "/"))
    return sorted(found)


def app_checksum(root, files=None):
    """SHA-256 (hex) over the relative paths and contents of the files."""
    digest = hashlib.sha256()
    for rel in files if files is not None else app_files(root):
        with open(os.path.join(root, *rel.split("/")), "rb") as handle:
            data = handle.read()
        digest.update(rel.encode("utf-8") + b"\0")
        digest.update(str(len(data)).encode("ascii") + b"\0")
        digest.update(data)
    return digest.hexdigest()


def app_archive(root, files=None):
    """A gzipped tar (bytes) of the files, with normalized owners and modes."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as archive:
        dirs = set()
        for rel in files if files is not None else app_files(root):
            parts = rel.split("/")
            for i in range(1, len(parts)):
                dirs.add("/".join(parts[:i]))
        for name in sorted(dirs):
            info = tarfile.TarInfo(name)
            info.type = tarfile.DIRTYPE
            info.mode = 0o755
            archive.addfile(info)
        for rel in files if files is not None else app_files(root):
            with open(os.path.join(root, *rel.split("/")), "rb") as handle:
                data = handle.read()
            info = tarfile.TarInfo(rel)
            info.size = len(data)
            info.mode = 0o755 if rel == APP_ENTRY else 0o644
            archive.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def awx_job_id(task_vars, environ):
    """The AWX (or Ansible Tower) job id of the run, or None: AWX passes
    ``awx_job_id``/``tower_job_id`` as variables and ``JOB_ID`` in the
    environment of the controller's process (not to the target)."""
    for name in ("awx_job_id", "tower_job_id"):
        value = (task_vars or {}).get(name)
        if value not in (None, ""):
            return str(value)
    for name in ("AWX_JOB_ID", "JOB_ID"):
        value = (environ or {}).get(name)
        if value:
            return str(value)
    return None


class LakekeeperAction(ActionBase):
    """Ship the bundled Spark application, then run the module."""

    TRANSFERS_FILES = True
    _supports_check_mode = True
    _supports_async = True

    def _ship_app(self, args):
        """Returns the application part of ``LAKEKEEPER_ANSIBLE_APP`` and whether it was transferred."""
        root = bundled_app_dir()
        files = app_files(root) if os.path.isdir(root) else []
        if APP_ENTRY not in files:
            raise AnsibleActionFail("the bundled Spark application %s/%s is missing from the collection; "
                                    "set spark_submit.script_path to an application deployed on the target"
                                    % (root, APP_ENTRY))
        sha256 = app_checksum(root, files)
        cache_dir = args.get("app_cache_dir") or DEFAULT_APP_CACHE_DIR
        shell = self._connection._shell
        app_dir = shell.join_path(self._remote_expand_user(cache_dir), app_dirname(sha256))
        value = dict(sha256=sha256)
        if self._remote_file_exists(shell.join_path(app_dir, APP_MARKER)):
            return value, False
        if shell.tmpdir is None:
            self._make_tmp_path()
        remote_archive = shell.join_path(shell.tmpdir, "lakekeeper-app-%s.tar.gz" % sha256[:12])
        self._transfer_data(remote_archive, app_archive(root, files))
        self._fixup_perms2((shell.tmpdir, remote_archive), execute=False)
        value["archive"] = remote_archive
        return value, True

    def run(self, tmp=None, task_vars=None):
        result = super(LakekeeperAction, self).run(tmp, task_vars)
        del tmp  # tmp no longer has any effect

        args = dict(self._task.args)
        spark_submit = args.get("spark_submit")
        script_path = spark_submit.get("script_path") if isinstance(spark_submit, dict) else None

        # async: the module runs under async_wrapper, which removes the task's
        # temporary directory (with the application archive) when it is done
        wrap_async = bool(self._task.async_val) and not self._connection.has_native_async
        transferred = False
        try:
            internal = {}
            if not script_path:
                internal, transferred = self._ship_app(args)
            job_id = awx_job_id(task_vars, os.environ)
            if job_id:
                internal["job_id"] = job_id
            environment = self._task.environment
            if internal:  # the task's environment stays the user's; this entry comes last and is the module's own
                listed = environment if isinstance(environment, list) else ([environment] if environment else [])
                self._task.environment = listed + [{INTERNAL_ENV: json.dumps(internal, sort_keys=True)}]
            try:
                result.update(self._execute_module(module_name=self._task.resolved_action or self._task.action,
                                                   module_args=args, task_vars=task_vars, wrap_async=wrap_async))
            finally:
                self._task.environment = environment
        finally:
            if not wrap_async:
                self._remove_tmp_path(self._connection._shell.tmpdir)
        result["app_transferred"] = transferred
        return result
