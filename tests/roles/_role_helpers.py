"""Run the real ``ansible-playbook`` on localhost against the collection in
this checkout (``lakekeeper.hive``); used by the role tests."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
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
    hosts: dict = field(default_factory=dict)  # host -> {"ok", "changed", "failed", ...}

    def __str__(self) -> str:  # shown by pytest when an assert fails
        return f"ansible-playbook rc={self.rc}\n{self.output[-8000:]}"

    def fatal(self, host: str) -> str:
        """The ``fatal: [host]: FAILED! => {...}`` line of ``host`` ('' if none)."""
        match = re.search(r"^fatal: \[" + re.escape(host) + r"\]: FAILED! => (.*)$", self.output, re.M)
        return match.group(1) if match else ""


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
    counter = {"n": 0}

    def run(text: str, check: bool = False, extra_args=(), env=None,
            hosts: dict[str, dict] | None = None) -> Run:
        """``hosts``: several local hosts (name -> host vars) run the play in
        parallel, one ansible-playbook for several cases; default: localhost."""
        counter["n"] += 1
        path = workdir / f"playbook{counter['n']}.yml"
        path.write_text(textwrap.dedent(text))
        inventory = workdir / f"inventory{counter['n']}.json"
        host_vars = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
        inventory.write_text(json.dumps({"all": {"hosts": {
            name: {**host_vars, **extra} for name, extra in (hosts or {"localhost": {}}).items()}}}))
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
                              text=True, timeout=600, check=False)
        out = proc.stdout + proc.stderr
        result = Run(proc.returncode, out)
        for match in RECAP.finditer(out):
            result.hosts[match.group(1)] = {
                "ok": int(match.group(2)), "changed": int(match.group(3)),
                "failed": int(match.group(5)), "skipped": int(match.group(6))}
        if result.hosts:
            for key in ("ok", "changed", "failed", "skipped"):
                setattr(result, key, sum(h[key] for h in result.hosts.values()))
        return result

    return run
