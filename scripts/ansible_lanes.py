"""The older ansible-core lanes.

The collection declares ``requires_ansible: ">=2.16.0"`` (meta/runtime.yml):
AWX and AAP execution environments still ship 2.16 to 2.18 while the main
test run uses the pinned ansible-core (requirements.txt). Each lane here
installs another ansible-core into its own virtualenv (cached by its pins in
``~/.cache/lakekeeper/lanes``, like the Spark lanes) and runs, with that
line, what can differ between ansible-core lines:

- ``ansible-test sanity`` of that line, its version-dependent tests only:
  validate-modules (the documentation and argument-spec schema of that
  line), ansible-doc, import, compile, action-plugin-docs, runtime-metadata
  (the linters pep8/pylint/yamllint run once, on the main line);
- ``ansible-test units`` of that line (tests/unit: the modules' argv, the
  filters, the action plugins' pure parts, under that line's module_utils);
- the real ``ansible-playbook``, ``ansible-galaxy`` and ``ansible-doc`` of
  that line: ``LANE_TESTS`` (the collection built and installed, documented;
  the maintenance role's judgement of module results, its checks of a merge
  and of the retention through the playbooks' mapping; one module running the
  engine in the background, waited for by ``lakekeeper_wait``; the four
  playbooks with the lakekeeper_* variables unset, set and wrongly typed,
  through the role to a stand-in engine). The engine's
  own Python stays the project's virtualenv (``LAKEKEEPER_ENGINE_PYTHON``):
  the engine does not depend on ansible-core.

Lanes are ``# ansible-lane <name> [default] <pins>`` lines of
requirements.txt; ``default`` lanes run in scripts/test.

    scripts/ansible-lanes --list
    scripts/ansible-lanes ansible-2.16
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import spark_lanes  # noqa: E402  pylint: disable=wrong-import-position

_LANE = re.compile(r"^#\s*ansible-lane\s+(?P<name>[A-Za-z0-9_.-]+)\s+(?P<rest>.+)$")

SANITY_TESTS = ["validate-modules", "ansible-doc", "import", "compile", "action-plugin-docs", "runtime-metadata"]
LANE_TESTS = [
    "tests/e2e/test_e2e.py",
    "tests/roles/test_maintenance_judgement.py",
    "tests/roles/test_maintenance_merge_check.py",
    "tests/roles/test_maintenance_retention.py",
    "tests/roles/test_modules_engine_run.py",
    "tests/playbooks/test_playbooks_unset.py",
]


def lanes() -> list[dict]:
    out = []
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        m = _LANE.match(line.strip())
        if not m:
            continue
        words = m.group("rest").split()
        lane = {"name": m.group("name"), "default": "default" in words,
                "pins": [w for w in words if w != "default"]}
        if not any(p.startswith("ansible-core==") for p in lane["pins"]):
            raise SystemExit(f"ansible-lanes: lane {lane['name']} needs ansible-core==V: {line}")
        out.append(lane)
    return out


def ensure_venv(lane: dict, base: Path) -> Path:
    """The lane's virtualenv on this interpreter's base Python (created, or
    reused while its pins are unchanged)."""
    interp = getattr(sys, "_base_executable", sys.executable)
    venv = base / lane["name"]
    py = venv / "bin" / "python"
    want = hashlib.sha256((interp + "\n" + "\n".join(lane["pins"])).encode()).hexdigest()
    stamp = venv / ".lane.sha256"
    if py.exists() and stamp.exists() and stamp.read_text().strip() == want:
        return py
    if venv.exists():
        shutil.rmtree(venv)
    t0 = time.monotonic()
    subprocess.run([interp, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", *lane["pins"]], check=True)
    stamp.write_text(want + "\n")
    print(f"ansible-lanes: {lane['name']}: installed {' '.join(lane['pins'])} in {time.monotonic() - t0:.0f} s",
          flush=True)
    return py


def run_lane(lane: dict, base: Path, extra: list[str]) -> int:
    py = ensure_venv(lane, base)
    venv = py.parent.parent
    env = dict(os.environ, LAKEKEEPER_VENV=str(venv), LAKEKEEPER_ENGINE_PYTHON=sys.executable,
               PATH=f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
    version = subprocess.run([str(venv / "bin" / "ansible"), "--version"], capture_output=True, text=True,
                             check=False, env=env).stdout.splitlines()[:1]
    print(f"ansible-lanes: {lane['name']}: {' '.join(version)}", flush=True)
    steps = [
        ("sanity", [str(ROOT / "scripts" / "sanity"), *[a for t in SANITY_TESTS for a in ("--test", t)]]),
        ("units", [str(ROOT / "scripts" / "sanity"), "units"]),
        ("playbooks", [str(py), "-m", "pytest", "-p", "no:cacheprovider", "-q", "--durations=5",
                       *(extra or LANE_TESTS)]),
    ]
    failed = []
    for name, argv in steps:
        t0 = time.monotonic()
        rc = subprocess.run(argv, cwd=ROOT, env=env, check=False).returncode
        print(f"ansible-lanes: {lane['name']} {name}: rc={rc} in {time.monotonic() - t0:.0f} s", flush=True)
        if rc != 0:
            failed.append(name)
    print(f"ansible-lanes: {lane['name']}: {'failed: ' + ', '.join(failed) if failed else 'passed'}", flush=True)
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Run the collection's tests under older ansible-core lines.")
    ap.add_argument("lane", nargs="?", help="lane name (default: every default lane)")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--install", action="store_true", help="only make the lanes' virtualenvs (scripts/test)")
    ap.add_argument("pytest_args", nargs="*", help="pytest arguments instead of the lane's playbook tests")
    args = ap.parse_args(argv)
    all_lanes = lanes()
    if args.list:
        for lane in all_lanes:
            print(f"{lane['name']}\t{'default' if lane['default'] else ''}\t{' '.join(lane['pins'])}")
        return 0
    chosen = [lane for lane in all_lanes if (lane["name"] == args.lane if args.lane else lane["default"])]
    if not chosen:
        print(f"ansible-lanes: no lane {args.lane!r}; --list shows them", file=sys.stderr)
        return 2
    base = spark_lanes.cache_dir() / "lanes"
    base.mkdir(parents=True, exist_ok=True)
    if args.install:
        for lane in chosen:
            ensure_venv(lane, base)
        return 0
    return max(run_lane(lane, base, args.pytest_args) for lane in chosen)


if __name__ == "__main__":
    sys.exit(main())
