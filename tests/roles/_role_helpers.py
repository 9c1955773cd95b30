"""Run the real ``ansible-playbook`` on localhost against the collection in
this checkout (``lakekeeper.hive``); used by the role tests."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
RECAP = re.compile(r"^(\S+)\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)"
                   r"\s+skipped=(\d+)\s+rescued=(\d+)\s+ignored=(\d+)", re.M)


@dataclass
class Run:
    rc: int
    output: str
    ok: int = 0
    changed: int = 0
    failed: int = 0
    skipped: int = 0

    def __str__(self) -> str:  # shown by pytest when an assert fails
        return f"ansible-playbook rc={self.rc}\n{self.output[-6000:]}"


def link_collection(root: Path) -> Path:
    """Make ``root`` an ANSIBLE_COLLECTIONS_PATH where lakekeeper.hive is this checkout."""
    ns = root / "ansible_collections" / "lakekeeper"
    ns.mkdir(parents=True, exist_ok=True)
    if not (ns / "hive").exists():
        (ns / "hive").symlink_to(REPO, target_is_directory=True)
    return root


def make_runner(workdir: Path, collections_dir: Path):
    """``run(yaml_text, check=False, extra_args=(), env=None) -> Run``: write
    the playbook into ``workdir`` and run it on localhost (connection local,
    this Python as the interpreter)."""
    workdir = Path(workdir)
    inventory = workdir / "inventory.ini"
    inventory.write_text(
        f"localhost ansible_connection=local ansible_python_interpreter={sys.executable}\n")
    counter = {"n": 0}

    def run(text: str, check: bool = False, extra_args=(), env=None) -> Run:
        counter["n"] += 1
        path = workdir / f"playbook{counter['n']}.yml"
        path.write_text(textwrap.dedent(text))
        argv = [str(BIN / "ansible-playbook"), "-i", str(inventory), str(path), *extra_args]
        if check:
            argv.append("--check")
        full_env = dict(os.environ)
        full_env.update({
            "ANSIBLE_COLLECTIONS_PATH": str(collections_dir),
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_FORCE_COLOR": "0",
            "ANSIBLE_RETRY_FILES_ENABLED": "0",
            "ANSIBLE_LOCALHOST_WARNING": "0",
            "ANSIBLE_DEPRECATION_WARNINGS": "0",
            "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        })
        full_env.update(env or {})
        proc = subprocess.run(argv, cwd=workdir, env=full_env, capture_output=True,
                              text=True, timeout=600)
        out = proc.stdout + proc.stderr
        result = Run(proc.returncode, out)
        match = RECAP.search(out)
        if match:
            result.ok, result.changed = int(match.group(2)), int(match.group(3))
            result.failed, result.skipped = int(match.group(5)), int(match.group(6))
        return result

    return run
