"""Release files: the changelog a release writes goes where the README and
the tarball promise it (CHANGELOG.rst at the collection root), and the
license named in galaxy.yml ships with the collection."""

from __future__ import annotations

import os
import shutil
import subprocess

import yaml

from e2e_helpers import BIN, ROOT, tool_env  # pylint: disable=import-error


def test_changelog_release_writes_the_root_changelog(tmp_path):
    work = tmp_path / "collection"
    work.mkdir()
    for name in ("galaxy.yml", "changelogs", "meta", "plugins"):
        src = os.path.join(ROOT, name)
        (shutil.copytree if os.path.isdir(src) else shutil.copy)(src, str(work / name))
    version = yaml.safe_load((work / "galaxy.yml").read_text())["version"]
    res = subprocess.run([os.path.join(BIN, "antsibull-changelog"), "lint"], cwd=str(work), env=tool_env(),
                         capture_output=True, text=True, check=False)
    assert res.returncode == 0 and not res.stdout.strip(), res.stdout + res.stderr
    res = subprocess.run([os.path.join(BIN, "antsibull-changelog"), "release", "--version", version],
                         cwd=str(work), env=tool_env(), capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stdout + res.stderr
    written = sorted(str(p.relative_to(work)) for p in work.rglob("*.rst"))
    assert written == ["CHANGELOG.rst"], written
    text = (work / "CHANGELOG.rst").read_text()
    assert f"v{version}\n" in text and "Release Summary" in text


def test_license_file_matches_galaxy():
    galaxy = yaml.safe_load(open(os.path.join(ROOT, "galaxy.yml"), encoding="utf-8"))
    assert galaxy["license"] == ["GPL-3.0-or-later"]
    with open(os.path.join(ROOT, "LICENSE"), encoding="utf-8") as fh:
        head = fh.read(400)
    assert "GNU GENERAL PUBLIC LICENSE" in head and "Version 3, 29 June 2007" in head
