# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private helpers of the lakekeeper.hive modules (not a public API): the
bundled Spark application's cache on the target.

The action plugin (plugin_utils/_lakekeeper_action.py, on the controller)
transfers the application when ``<app_cache_dir>/app-<sha12>/`` lacks its
marker; the module unpacks it here. Both sides take the names below from
this file.
"""

from __future__ import annotations

import json
import os
import shutil
import tarfile
import tempfile
import zipfile

APP_ENTRY = "run_lakekeeper.py"
# The engine's package, beside APP_ENTRY.
APP_PACKAGE = "lakekeeper_spark"
APP_MARKER = ".lakekeeper_app.sha256"
DEFAULT_APP_CACHE_DIR = "~/.cache/lakekeeper"
# The environment variable through which the action plugin passes the
# application (its checksum, the transferred archive) and the AWX job id to
# the module: not a module option, so that ansible-doc shows none that users
# must not set.
INTERNAL_ENV = "LAKEKEEPER_ANSIBLE_APP"


_INTERNAL = []


def internal_info():
    """What the action plugin passed (``{}`` when run without it). The first
    call takes it out of the environment, so that the engine and spark-submit
    do not inherit it."""
    if not _INTERNAL:
        raw = os.environ.pop(INTERNAL_ENV, "")
        try:
            info = json.loads(raw) if raw else {}
        except ValueError:
            info = {}
        _INTERNAL.append(info if isinstance(info, dict) else {})
    return _INTERNAL[0]


class AppError(Exception):
    """The application archive or its cache cannot be used."""


def app_dirname(sha256):
    """The cache directory name of the application with this checksum."""
    return "app-%s" % sha256[:12]


def _read_text(path):
    with open(path, "rb") as handle:
        return handle.read().decode("utf-8", errors="replace")


def _safe_members(archive):
    for member in archive.getmembers():
        name = member.name
        parts = name.replace("\\", "/").split("/")
        if name.startswith("/") or ".." in parts:
            raise AppError("refusing unsafe path %r in the application archive" % name)
        if not (member.isfile() or member.isdir()):
            raise AppError("refusing non-regular entry %r in the application archive" % name)
        yield member


def unpack_app(archive_path, app_dir, sha256):
    """Unpack the transferred archive into app_dir, atomically.

    The archive is unpacked into a hidden sibling, the checksum marker is
    written last, and the directory is renamed into place; a concurrent run
    that won the race is kept.
    """
    cache_dir = os.path.dirname(app_dir)
    if not os.path.isdir(cache_dir):
        os.makedirs(cache_dir, 0o700)
    staging = tempfile.mkdtemp(prefix=".%s." % os.path.basename(app_dir), dir=cache_dir)
    try:
        with tarfile.open(archive_path, "r:gz") as archive:
            for member in _safe_members(archive):
                if hasattr(tarfile, "data_filter"):
                    archive.extract(member, staging, filter="data")
                else:
                    archive.extract(member, staging)
        with open(os.path.join(staging, APP_MARKER), "w") as handle:
            handle.write(sha256 + "\n")
        os.chmod(staging, 0o755)
        try:
            os.rename(staging, app_dir)
        except OSError:
            if not os.path.isfile(os.path.join(app_dir, APP_MARKER)):
                raise
    finally:
        if os.path.isdir(staging):
            shutil.rmtree(staging, ignore_errors=True)


def ensure_app(module):
    """The directory of the bundled application on the target, or None."""
    info = internal_info()
    sha256 = info.get("sha256")
    if not sha256:
        return None
    cache_dir = os.path.abspath(os.path.expanduser(module.params["app_cache_dir"] or DEFAULT_APP_CACHE_DIR))
    app_dir = os.path.join(cache_dir, app_dirname(sha256))
    marker = os.path.join(app_dir, APP_MARKER)
    archive = info.get("archive")
    if archive and not os.path.isfile(marker):
        try:
            unpack_app(archive, app_dir, sha256)
        except (OSError, tarfile.TarError, AppError) as exc:
            module.fail_json(msg="could not unpack the Spark application into %s: %s" % (app_dir, exc))
    if not os.path.isfile(marker):
        module.fail_json(msg="the cached Spark application %s is missing; run the task again" % app_dir)
    if _read_text(marker).strip() != sha256:
        module.fail_json(msg="the cached Spark application %s does not match checksum %s; delete that directory "
                             "and run the task again" % (app_dir, sha256))
    return app_dir


def package_zip(script, dest):
    """Zip the engine's package (``lakekeeper_spark/`` beside ``script``) into
    the file ``dest``, for ``spark-submit --py-files``: a cluster-mode driver
    runs in a YARN container, which gets the script itself and nothing
    beside it. Python files only (no ``__pycache__``). Returns ``dest``."""
    root = os.path.join(os.path.dirname(script), APP_PACKAGE)
    if not os.path.isfile(os.path.join(root, "__init__.py")):
        raise AppError("the engine's package %s is not beside %s" % (root, script))
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as archive:
        for directory, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith(".py"):
                    path = os.path.join(directory, name)
                    # a fixed time: the cached application's files have the archive's (1970: before ZIP's epoch)
                    entry = zipfile.ZipInfo(os.path.relpath(path, os.path.dirname(root)), (1980, 1, 1, 0, 0, 0))
                    entry.compress_type = zipfile.ZIP_DEFLATED
                    entry.external_attr = 0o644 << 16
                    with open(path, "rb") as handle:
                        archive.writestr(entry, handle.read())
    return dest
