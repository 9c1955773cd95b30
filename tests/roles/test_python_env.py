"""Role lakekeeper.hive.python_env with the real ansible-playbook, pip
(PyPI) and venv-pack on localhost. One build per test session (module
fixture); the other checks are check-mode or no-change runs."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from _role_helpers import make_runner

pytestmark = pytest.mark.timeout(300)

# A Python that exists on the "cluster" too: the base interpreter of the
# test venv, with its prefix as venv-pack --python-prefix.
BASE_PREFIX = sys.base_prefix
INTERPRETER = str(Path(BASE_PREFIX) / "bin" / f"python{sys.version_info[0]}.{sys.version_info[1]}")


def env_vars(dest, **extra) -> dict:
    return {
        "python_env_dest": str(dest),
        "python_env_interpreter": INTERPRETER,
        "python_env_python_prefix": BASE_PREFIX,
        "python_env_packages": ["PyYAML==6.0.3"],
        **extra,
    }


def env_play(dest=None, **extra) -> str:
    """A play including the role; without ``dest`` the role variables come
    from the host vars (several cases in one run)."""
    role_vars = env_vars(dest, **extra) if dest is not None else {}
    return f"""
    - name: Python env
      hosts: all
      gather_facts: false
      tasks:
        - name: Include the role
          ansible.builtin.include_role:
            name: lakekeeper.hive.python_env
          vars: {json.dumps(role_vars)}
        - name: Show the exported facts
          ansible.builtin.debug:
            msg: "PYENV_FACTS={{{{ {{'archives': python_env_archives, 'python': python_env_python,
                  'archive': python_env_archive, 'checksum': python_env_checksum}} | to_json }}}}"
    """


def facts(output: str) -> dict:
    match = re.search(r'"msg": "PYENV_FACTS=(.*)"\s*$', output, re.M)
    assert match, output
    return json.loads(match.group(1).replace('\\"', '"'))


@pytest.fixture(scope="module")
def built(tmp_path_factory, collections_dir):
    """Check mode on an empty destination, then the real build."""
    work = tmp_path_factory.mktemp("python_env")
    dest = work / "dest"
    run = make_runner(work, collections_dir)
    check = run(env_play(dest), check=True)
    left_by_check = dest.exists() or any(Path("/tmp").glob("ansible.*.lakekeeper_python_env"))
    build = run(env_play(dest))
    return {"dest": dest, "check": check, "left_by_check": left_by_check, "build": build,
            "run": run, "work": work}


def test_check_mode_builds_nothing(built):
    check = built["check"]
    assert check.rc == 0, check
    assert check.changed == 1, check
    assert "Would build lakekeeper_env.tar.gz with venv" in check.output
    assert not built["left_by_check"]  # no destination, no build directory
    # the facts are set in check mode as well
    assert facts(check.output)["archives"] == f"{built['dest']}/lakekeeper_env.tar.gz#lakekeeper_env"


def test_build_publishes_archive_and_facts(built):
    build = built["build"]
    assert build.rc == 0, build
    assert build.changed > 0, build
    archive = built["dest"] / "lakekeeper_env.tar.gz"
    sidecar = built["dest"] / "lakekeeper_env.tar.gz.content-sha256"
    assert archive.is_file() and sidecar.is_file()
    got = facts(build.output)
    assert got == {
        "archives": f"{archive}#lakekeeper_env",
        "python": "./lakekeeper_env/bin/python",
        "archive": str(archive),
        "checksum": sidecar.read_text().strip(),
    }
    assert got["checksum"] == facts(built["check"].output)["checksum"]


def test_second_run_changes_nothing(built):
    archive = built["dest"] / "lakekeeper_env.tar.gz"
    mtime = archive.stat().st_mtime_ns
    again = built["run"](env_play(built["dest"]))
    assert again.rc == 0, again
    assert again.changed == 0, again
    assert archive.stat().st_mtime_ns == mtime
    assert facts(again.output) == facts(built["build"].output)


def test_unpacked_python_imports_yaml(built, tmp_path):
    # what a YARN container does with --archives env.tar.gz#lakekeeper_env
    target = tmp_path / "lakekeeper_env"
    with tarfile.open(built["dest"] / "lakekeeper_env.tar.gz") as tar:
        tar.extractall(target, filter="fully_trusted")
    assert (target / "bin" / "python").exists()
    # the interpreter link goes to <python_prefix>/bin/python3.X, not the build venv
    python3 = next(p for p in (target / "bin").iterdir() if p.is_symlink() and Path(p.readlink()).is_absolute())
    assert str(python3.readlink()) == f"{BASE_PREFIX}/bin/python{sys.version_info[0]}.{sys.version_info[1]}"
    out = subprocess.run(
        ["./lakekeeper_env/bin/python", "-c",
         "import sys, yaml; print(yaml.__version__, sys.prefix)"],
        cwd=tmp_path, capture_output=True, text=True, check=True).stdout.split()
    assert out[0] == "6.0.3"
    assert Path(out[1]).resolve() == target.resolve()


def test_check_mode_sees_changed_content(built, tmp_path):
    # a copy of the archive whose checksum file says something else is not trusted
    stale = tmp_path / "stale"
    stale.mkdir()
    (stale / "lakekeeper_env.tar.gz").write_bytes((built["dest"] / "lakekeeper_env.tar.gz").read_bytes())
    (stale / "lakekeeper_env.tar.gz.content-sha256").write_text("0" * 64 + "\n")
    res = built["run"](env_play(), check=True, hosts={
        "other_packages": env_vars(built["dest"], python_env_packages=["PyYAML==6.0.2"]),
        "stale_sidecar": env_vars(stale),
    })
    assert res.rc == 0, res
    assert res.hosts["other_packages"]["changed"] == 1, res
    assert res.hosts["stale_sidecar"]["changed"] == 1, res
    assert f"published: {'0' * 64}" in res.output
    built_checksum = facts(built["build"].output)["checksum"]
    assert f"published: {built_checksum}" in res.output  # other_packages: differs from it
    assert (stale / "lakekeeper_env.tar.gz.content-sha256").read_text() == "0" * 64 + "\n"


def test_clear_failures(built, tmp_path):
    res = built["run"](env_play(), hosts={
        "no_conda": env_vars(tmp_path / "d1", python_env_builder="conda", python_env_conda_env="lakekeeper",
                             python_env_conda_executable="conda-not-installed-here"),
        "no_conda_env": env_vars(tmp_path / "d2", python_env_builder="conda"),
        "no_hdfs_cli": env_vars("hdfs://127.0.0.1:1/apps/lakekeeper",
                                python_env_hdfs_executable="hdfs-not-installed-here"),
        "relative_dest": env_vars("relative/dir"),
    })
    assert res.rc != 0, res
    assert all(h["failed"] == 1 for h in res.hosts.values()) and len(res.hosts) == 4, res
    msg = {h: json.loads(res.fatal(h))["msg"] for h in res.hosts}
    assert msg["no_conda"].startswith(
        'python_env_builder=conda needs conda, but "conda-not-installed-here" was not found on no_conda'), msg
    assert "python_env_conda_env (a conda environment name or prefix) is required with python_env_builder=conda" \
        in msg["no_conda_env"], msg
    assert msg["no_hdfs_cli"].startswith(
        "python_env_dest hdfs://127.0.0.1:1/apps/lakekeeper is a Hadoop filesystem URI, "
        'but the "hdfs-not-installed-here" CLI was not found on no_hdfs_cli'), msg
    assert msg["relative_dest"].startswith('python_env_dest "relative/dir" must be an absolute directory'), msg
    assert not list(tmp_path.iterdir())
