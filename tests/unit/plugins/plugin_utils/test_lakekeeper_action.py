# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The shipping of the bundled application: checksum, archive, unpacking."""

from __future__ import annotations

import io
import os
import tarfile

import pytest

from ansible_collections.lakekeeper.hive.plugins.module_utils import _lakekeeper_app as runner
from ansible_collections.lakekeeper.hive.plugins.module_utils._lakekeeper_app import AppError
from ansible_collections.lakekeeper.hive.plugins.plugin_utils import _lakekeeper_action as action


def make_app(root, entry='print("engine")\n'):
    pkg = root / "lakekeeper_spark"
    pkg.mkdir(parents=True)
    (root / "run_lakekeeper.py").write_text(entry)
    (pkg / "__init__.py").write_text("")
    (pkg / "core.py").write_text("X = 1\n")
    cache = pkg / "__pycache__"
    cache.mkdir()
    (cache / "core.cpython-311.pyc").write_bytes(b"\0\1")
    (root / ".hidden").write_text("editor swap")
    return root


def test_bundled_app_dir_is_the_collections_spark_app():
    here = os.path.dirname(os.path.abspath(action.__file__))
    assert action.bundled_app_dir() == os.path.normpath(os.path.join(here, "..", "..", "spark_app"))


def test_app_files_skip_caches_and_hidden_files(tmp_path):
    root = make_app(tmp_path / "spark_app")
    assert action.app_files(str(root)) == ["lakekeeper_spark/__init__.py", "lakekeeper_spark/core.py",
                                           "run_lakekeeper.py"]


def test_checksum_is_stable_and_follows_content(tmp_path):
    root = make_app(tmp_path / "spark_app")
    first = action.app_checksum(str(root))
    assert len(first) == 64
    (root / "lakekeeper_spark" / "__pycache__" / "other.pyc").write_bytes(b"x")
    assert action.app_checksum(str(root)) == first
    (root / "lakekeeper_spark" / "core.py").write_text("X = 2\n")
    assert action.app_checksum(str(root)) != first


def test_checksum_includes_names(tmp_path):
    a = make_app(tmp_path / "a")
    b = make_app(tmp_path / "b")
    os.rename(str(b / "lakekeeper_spark" / "core.py"), str(b / "lakekeeper_spark" / "core2.py"))
    assert action.app_checksum(str(a)) != action.app_checksum(str(b))


def test_archive_unpacks_to_the_same_files(tmp_path):
    root = make_app(tmp_path / "spark_app")
    sha = action.app_checksum(str(root))
    archive = tmp_path / "app.tar.gz"
    archive.write_bytes(action.app_archive(str(root)))
    app_dir = tmp_path / "cache" / ("app-%s" % sha[:12])
    runner.unpack_app(str(archive), str(app_dir), sha)
    assert (app_dir / runner.APP_MARKER).read_text().strip() == sha
    assert action.app_files(str(app_dir)) == action.app_files(str(root))
    assert action.app_checksum(str(app_dir)) == sha
    assert os.access(str(app_dir / "run_lakekeeper.py"), os.X_OK)
    assert sorted(os.listdir(str(tmp_path / "cache"))) == ["app-%s" % sha[:12]]  # no staging left over
    # A second unpack (a concurrent run) keeps the existing directory.
    runner.unpack_app(str(archive), str(app_dir), sha)
    assert sorted(os.listdir(str(tmp_path / "cache"))) == ["app-%s" % sha[:12]]


@pytest.mark.parametrize("name", ["../evil.py", "/etc/evil.py"])
def test_unsafe_archive_refused(tmp_path, name):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as archive:
        info = tarfile.TarInfo(name)
        info.size = 1
        archive.addfile(info, io.BytesIO(b"x"))
    path = tmp_path / "bad.tar.gz"
    path.write_bytes(buf.getvalue())
    with pytest.raises(AppError, match="unsafe"):
        runner.unpack_app(str(path), str(tmp_path / "cache" / "app-x"), "x" * 64)
    assert os.listdir(str(tmp_path / "cache")) == []


def test_symlink_in_archive_refused(tmp_path):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as archive:
        info = tarfile.TarInfo("link")
        info.type = tarfile.SYMTYPE
        info.linkname = "/etc/passwd"
        archive.addfile(info)
    path = tmp_path / "bad.tar.gz"
    path.write_bytes(buf.getvalue())
    with pytest.raises(AppError, match="non-regular"):
        runner.unpack_app(str(path), str(tmp_path / "cache" / "app-x"), "x" * 64)


def test_awx_job_id_from_the_job_variables_or_the_controller_environment():
    assert action.awx_job_id({"awx_job_id": 42, "tower_job_id": 1}, {"JOB_ID": "7"}) == "42"
    assert action.awx_job_id({"tower_job_id": 43}, {}) == "43"
    assert action.awx_job_id({}, {"AWX_JOB_ID": "44", "JOB_ID": "7"}) == "44"
    assert action.awx_job_id({"awx_job_id": ""}, {"JOB_ID": "45"}) == "45"
    assert action.awx_job_id({}, {}) is None and action.awx_job_id(None, {"JOB_ID": ""}) is None
