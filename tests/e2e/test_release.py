"""Release files: the changelog a release writes goes where the README and
the tarball promise it (CHANGELOG.rst at the collection root), the
license named in galaxy.yml ships with the collection, and an execution
environment built with ansible-builder gets the controller's requirements
only."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

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


EE_LEAKS = ("pyspark", "pytest", "venv-pack", "conda-pack", "ruff", "antsibull", "molecule", "ansible-lint")


def _introspect(context, collections_dir, out):
    """The build context's own introspection, run as its Containerfile runs it
    (the requirements the image would install for the collections in
    ``collections_dir``)."""
    script = os.path.join(context, "_build", "scripts", "introspect.py")
    pip, bindep = os.path.join(out, "requirements.txt"), os.path.join(out, "bindep.txt")
    res = subprocess.run([sys.executable, script, "introspect", "--write-bindep=" + bindep, "--write-pip=" + pip,
                          collections_dir], capture_output=True, text=True, check=False, env=tool_env())
    assert res.returncode == 0, res.stdout + res.stderr
    return tuple(open(path).read() if os.path.exists(path) else "" for path in (pip, bindep))


def test_execution_environment_holds_only_the_controllers_requirements(built_collection, tmp_path):
    """ansible-builder create on an EE that names the collection: the image's
    introspection of the installed collection finds only
    meta/execution-environment.yml's requirements (none beyond ansible-core's
    own), not the development requirements.txt it falls back to without that
    file (pyspark, venv-pack, conda-pack, pytest-timeout... - shown below)."""
    _tarball, installed = built_collection
    meta = yaml.safe_load(open(os.path.join(ROOT, "meta", "execution-environment.yml"), encoding="utf-8"))
    assert meta == {"version": 1, "dependencies": {"python": "meta/ee-requirements.txt"}}
    assert not os.path.exists(os.path.join(ROOT, "bindep.txt"))  # no system package on the controller
    ee = tmp_path / "execution-environment.yml"
    ee.write_text(yaml.safe_dump({"version": 3, "images": {"base_image": {"name": "quay.io/ansible/awx-ee:latest"}},
                                  "dependencies": {"galaxy": {"collections": [{"name": "lakekeeper.hive"}]}}}))
    context = str(tmp_path / "context")
    res = subprocess.run([os.path.join(BIN, "ansible-builder"), "create", "-f", str(ee), "-c", context],
                         capture_output=True, text=True, check=False, env=tool_env())
    assert res.returncode == 0, res.stdout + res.stderr
    assert "lakekeeper.hive" in open(os.path.join(context, "_build", "requirements.yml")).read()
    out = tmp_path / "out"
    out.mkdir()
    pip, bindep = _introspect(context, installed, str(out))
    assert not [leak for leak in EE_LEAKS if leak in pip.lower()], pip
    assert "lakekeeper.hive" not in bindep, bindep
    # the same collection without its meta/execution-environment.yml, with the development
    # requirements.txt the build leaves out (build_ignore): the fallback both prevent
    bare = tmp_path / "bare" / "ansible_collections" / "lakekeeper" / "hive"
    shutil.copytree(os.path.join(installed, "ansible_collections", "lakekeeper", "hive"), str(bare),
                    ignore=shutil.ignore_patterns("spark_app", "tests", "plugins"))
    assert not (bare / "requirements.txt").exists()  # not shipped
    shutil.copy(os.path.join(ROOT, "requirements.txt"), str(bare / "requirements.txt"))
    os.remove(str(bare / "meta" / "execution-environment.yml"))
    assert not (out / "requirements.txt").exists()  # nothing to install for this collection
    pip, _bindep = _introspect(context, str(tmp_path / "bare"), str(out))
    assert "pyspark" in pip and "venv-pack" in pip, pip
