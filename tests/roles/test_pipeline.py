"""Real multi-host tests of the lakekeeper.hive.pipeline role.

Three hosts from tests/multihost (network namespaces, each with its own sshd
and its own systemd as PID 1): h1 and h2 run stand-in ingestion pipelines
(group "ingestion"), h3 runs a stand-in scheduler API (Airflow/Oozie calls)
and is not touched by the role. Every pipeline is a real process appending
timestamped lines to a file on its host, so the tests see it stop (the file
stops growing) and resume (it grows again). ansible-playbook runs from the
controller namespace over SSH.
"""
from __future__ import annotations

import json
import re
import shutil
import sys
import time
from pathlib import Path

import pytest

_TESTS = Path(__file__).resolve().parents[1]
if str(_TESTS) not in sys.path:
    sys.path.insert(0, str(_TESTS))

# the session fixture, registered by importing it
from multihost.fixture import multihost  # noqa: E402,F401 pylint: disable=unused-import

pytestmark = pytest.mark.timeout(600)

# ---------------------------------------------------------------- stand-ins
AIRFLOW_USER = "airflow"
AIRFLOW_PASSWORD = "Airfl0w-S3cret-pw-7731"
SCHEDULER_PORT = 8080
OOZIE_JOB = "0000001-ingest-h1-C"

# The stand-ins are small Python programs (no fork per line written: they
# cost next to no CPU on a busy machine).
WRITER = r"""#!/usr/bin/python3
# writer FILE: appends a timestamped line every 0.2 s, forever
import sys, time
while True:
    with open(sys.argv[1], "a") as fh:
        fh.write(f"{time.time():.3f}\n")
    time.sleep(0.2)
"""

BATCH = r"""#!/usr/bin/python3
# one batch run (started by ingest-batch.timer): start, 8 lines in 1.6 s, end
import time
def note(text):
    with open("/srv/ingest/batch.log", "a") as fh:
        fh.write(text + "\n")
note(f"start {time.time():.3f}")
for _ in range(8):
    note(f"{time.time():.3f}")
    time.sleep(0.2)
note(f"end {time.time():.3f}")
"""

CRON_JOB = r"""#!/usr/bin/python3
# ingest-cron-job MODE: stand-in for a run that cron started.
#   follow - runs until the "ingest-hourly" cron entry is disabled, then 1.6 s more
#   N      - runs N seconds
import subprocess, sys, time
def note(text):
    with open("/srv/ingest/cronjob.log", "a") as fh:
        fh.write(text + "\n")
def entry_enabled():
    tab = subprocess.run(["crontab", "-l"], capture_output=True, text=True).stdout
    return any(line.startswith("17 ") for line in tab.splitlines())
note(f"start {time.time():.3f}")
if sys.argv[1] == "follow":
    while entry_enabled():
        note(f"{time.time():.3f}")
        time.sleep(0.3)
    end = time.time() + 1.6
else:
    end = time.time() + float(sys.argv[1])
while time.time() < end:
    note(f"{time.time():.3f}")
    time.sleep(0.2)
note(f"end {time.time():.3f}")
"""

GENERIC = r"""#!/usr/bin/python3
# ingest-generic: writes chunks of 3 lines unless the pause flag exists;
# /run/ingest-generic.busy exists while a chunk is in flight (created before
# the flag is checked, so "not busy" after the flag appeared means "no more writes")
import os, time
FLAG, BUSY = "/var/lib/ingest-generic/paused", "/run/ingest-generic.busy"
while True:
    open(BUSY, "w").close()
    if os.path.exists(FLAG):
        os.unlink(BUSY)
        time.sleep(0.1)
        continue
    for _ in range(3):
        with open("/srv/ingest/generic.log", "a") as fh:
            fh.write(f"{time.time():.3f}\n")
        time.sleep(0.2)
    os.unlink(BUSY)
    time.sleep(0.1)
"""

QUIET_CHECK = r"""#!/bin/sh
# quiet-check SECONDS FILE...: the compaction stand-in. Fails when any FILE
# grows within SECONDS; notes its start time in /srv/ingest/compaction.log.
secs=$1; shift
mkdir -p /srv/ingest
echo "compaction-start $(date +%s.%N)" >> /srv/ingest/compaction.log
before=$(stat -c '%n=%s' "$@" | tr '\n' ' ')
sleep "$secs"
after=$(stat -c '%n=%s' "$@" | tr '\n' ' ')
if [ "$before" = "$after" ]; then echo "QUIET $before"; else echo "WRITING $before -> $after"; exit 1; fi
"""

UNITS = {
    "ingest-stream.service": """[Unit]
Description=stand-in streaming ingestion
[Service]
ExecStart=/opt/ingest/bin/writer /srv/ingest/stream.log
[Install]
WantedBy=multi-user.target
""",
    "ingest-batch.service": """[Unit]
Description=stand-in batch ingestion run
[Service]
Type=oneshot
ExecStart=/opt/ingest/bin/batch
""",
    "ingest-batch.timer": """[Unit]
Description=stand-in batch ingestion schedule
[Timer]
OnActiveSec=0.1s
OnUnitInactiveSec=0.4s
AccuracySec=50ms
[Install]
WantedBy=timers.target
""",
    "ingest-legacy.service": """[Unit]
Description=stand-in legacy ingestion (enabled but stopped before the maintenance)
[Service]
ExecStart=/opt/ingest/bin/writer /srv/ingest/legacy.log
[Install]
WantedBy=multi-user.target
""",
}

GENERIC_UNIT = """[Unit]
Description=stand-in ingestion paused through a flag file (command hook)
[Service]
ExecStart=/opt/ingest/bin/ingest-generic
[Install]
WantedBy=multi-user.target
"""

# a TAB and several spaces on purpose: the restore must be byte-exact
CRONTAB = (
    'MAILTO=""\n'
    "#Ansible: ingest-hourly\n"
    "17 * * * * /opt/ingest/bin/ingest-cron-job 30   >> /srv/ingest/cron.out 2>&1\n"
    "*/5 * * * *\t/opt/ingest/bin/ingest-cron-job 5 # lakekeeper-pause\n"
    "#*/7 * * * * /opt/ingest/bin/ingest-cron-job 7 # lakekeeper-pause\n"
    "0 3 * * * /usr/bin/find /srv/ingest -name '*.old' -delete\n"
)

CRON_FILE = (
    "SHELL=/bin/sh\n"
    "*/10 * * * * root /opt/ingest/bin/ingest-cron-job 3 # lakekeeper-pause\n"
    "30 4 * * * root /usr/bin/true\n"
)

SCHEDULER_API = r'''#!/usr/bin/python3
"""Stand-in scheduler: a few Airflow DAGs and an Oozie coordinator whose
runs append lines to /srv/scheduler/<id>.log while not paused. Speaks the
REST calls the pipeline role makes; Airflow calls need basic auth. Every
call is appended to /srv/scheduler/calls.log, the state to state.json."""
import base64, json, os, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit, parse_qs

D = "/srv/scheduler"
os.makedirs(D, exist_ok=True)
AUTH = "Basic " + base64.b64encode(sys.argv[2].encode()).decode()
jobs = json.loads(sys.argv[3])  # id -> {"kind": "dag"|"oozie", "paused": bool}
for j in jobs.values():
    j["running"] = False
lock = threading.Lock()

def save():
    with open(D + "/state.json.tmp", "w") as fh:
        json.dump(jobs, fh)
    os.replace(D + "/state.json.tmp", D + "/state.json")

def runner(jid):
    while True:
        with lock:
            start = not jobs[jid]["paused"]
            if jobs[jid]["running"] != start:
                jobs[jid]["running"] = start
                save()
        if not start:
            time.sleep(0.1)
            continue
        for _ in range(5):  # one run: 1 s
            with open(f"{D}/{jid}.log", "a") as fh:
                fh.write(f"{time.time():.3f}\n")
            time.sleep(0.2)
        with lock:
            jobs[jid]["running"] = False
            save()
        time.sleep(0.3)

class H(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def reply(self, code, doc=None):
        body = b"" if doc is None else json.dumps(doc).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def handle_any(self, method):
        u = urlsplit(self.path)
        q = parse_qs(u.query)
        parts = [p for p in u.path.split("/") if p]
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with open(D + "/calls.log", "a") as fh:
            fh.write(f"{method} {self.path}\n")
        if parts[:3] == ["api", "v1", "dags"] and len(parts) >= 4:
            if self.headers.get("Authorization") != AUTH:
                return self.reply(401, {"title": "Unauthorized"})
            jid = parts[3]
            if jid not in jobs or jobs[jid]["kind"] != "dag":
                return self.reply(404, {"title": "DAG not found"})
            if len(parts) == 4 and method == "PATCH":
                with lock:
                    jobs[jid]["paused"] = bool(json.loads(body)["is_paused"])
                    save()
                return self.reply(200, {"dag_id": jid, "is_paused": jobs[jid]["paused"]})
            if len(parts) == 4 and method == "GET":
                return self.reply(200, {"dag_id": jid, "is_paused": jobs[jid]["paused"]})
            if len(parts) == 5 and parts[4] == "dagRuns" and method == "GET":
                runs = [{"dag_id": jid, "state": "running"}] if jobs[jid]["running"] else []
                if q.get("state", ["running"])[0] != "running":
                    runs = []
                return self.reply(200, {"dag_runs": runs, "total_entries": len(runs)})
        if parts[:3] == ["oozie", "v1", "job"] and len(parts) == 4:
            jid = parts[3]
            if jid not in jobs or jobs[jid]["kind"] != "oozie":
                return self.reply(404, {"error": "job not found"})
            if method == "PUT" and q.get("action", [""])[0] in ("suspend", "resume"):
                with lock:
                    jobs[jid]["paused"] = q["action"][0] == "suspend"
                    save()
                return self.reply(200)
            if method == "GET":
                return self.reply(200, {"id": jid, "status": "SUSPENDED" if jobs[jid]["paused"] else "RUNNING",
                                        "running_actions": 1 if jobs[jid]["running"] else 0})
        return self.reply(400, {"error": "unsupported"})

    def do_GET(self):
        self.handle_any("GET")

    def do_PUT(self):
        self.handle_any("PUT")

    def do_PATCH(self):
        self.handle_any("PATCH")

save()
for jid in jobs:
    threading.Thread(target=runner, args=(jid,), daemon=True).start()
ThreadingHTTPServer(("0.0.0.0", int(sys.argv[1])), H).serve_forever()
'''


def provision_script(files: dict[str, tuple[str, str]], commands: str) -> str:
    """A /bin/sh script writing files {path: (mode, content)} then running commands."""
    out = ["set -eu"]
    for i, (path, (mode, content)) in enumerate(files.items()):
        marker = f"__STANDIN_{i}__"
        out.append(f"mkdir -p \"$(dirname '{path}')\"")
        out.append(f"cat > '{path}' <<'{marker}'\n{content}{'' if content.endswith(chr(10)) else chr(10)}{marker}")
        out.append(f"chmod {mode} '{path}'")
    out.append(commands)
    return "\n".join(out) + "\n"


# ------------------------------------------------------------ configuration
INGESTION = ("h1", "h2")
SCHEDULER = "h3"
SCHEDULER_URL = f"http://198.51.100.13:{SCHEDULER_PORT}"
STATE_FILE = "/var/lib/lakekeeper/pipeline-default.json"
SCHEDULER_JOBS = {
    "events_h2": {"kind": "dag", "paused": False},
    "legacy_h2": {"kind": "dag", "paused": True},  # paused before: must stay paused
    OOZIE_JOB: {"kind": "oozie", "paused": False},
}
COMMON_LOGS = ["/srv/ingest/stream.log", "/srv/ingest/batch.log", "/srv/ingest/cronjob.log"]


def _airflow(path: str, method: str = "GET", body: dict | None = None) -> dict:
    call = {"url": f"{SCHEDULER_URL}/api/v1/dags/{path}", "method": method,
            "url_username": AIRFLOW_USER, "url_password": AIRFLOW_PASSWORD, "force_basic_auth": True}
    if body is not None:
        call |= {"body": body, "body_format": "json"}
    return call


def _airflow_hook(dag: str) -> dict:
    return {
        "name": f"airflow-{dag}",
        "pause": {"uri": _airflow(dag, "PATCH", {"is_paused": True})},
        "resume": {"uri": _airflow(dag, "PATCH", {"is_paused": False})},
        "paused": {"uri": _airflow(dag), "expect": {"json": {"is_paused": True}}},
        "idle": {"uri": _airflow(f"{dag}/dagRuns?state=running"), "expect": {"json": {"total_entries": 0}}},
    }


def _oozie(query: str, method: str = "GET") -> dict:
    # called from the scheduler host itself (delegate_to), hence loopback
    return {"url": f"http://127.0.0.1:{SCHEDULER_PORT}/oozie/v1/job/{OOZIE_JOB}?{query}", "method": method}


GROUP_VARS = {
    "ingestion": {
        "pipeline_systemd_units": [
            {"name": "ingest-batch.timer"},
            {"name": "ingest-stream.service"},
            {"name": "ingest-legacy.service"},
        ],
        "pipeline_crontabs": [{"user": "root", "names": ["ingest-hourly"], "marker": "# lakekeeper-pause"}],
        "pipeline_drain_processes": ["ingest-cron-job"],
        "pipeline_drain_timeout": 40,
        "pipeline_drain_poll": 0.3,
    },
}
HOST_VARS = {
    "h1": {
        "ingest_logs": COMMON_LOGS,
        "scheduler_logs": [f"/srv/scheduler/{OOZIE_JOB}.log"],
        "pipeline_crontabs": [
            {"user": "root", "names": ["ingest-hourly"], "marker": "# lakekeeper-pause"},
            {"cron_file": "ingest-extra", "marker": "# lakekeeper-pause"},
        ],
        "pipeline_hooks": [{
            "name": "oozie-ingest-h1",
            "delegate_to": SCHEDULER,
            "pause": {"uri": _oozie("action=suspend", "PUT")},
            "resume": {"uri": _oozie("action=resume", "PUT")},
            "paused": {"uri": _oozie("show=info"), "expect": {"json": {"status": "SUSPENDED"}}},
            "idle": {"uri": _oozie("show=info"), "expect": {"json": {"running_actions": 0}}},
        }],
    },
    "h2": {
        "ingest_logs": COMMON_LOGS + ["/srv/ingest/generic.log"],
        "scheduler_logs": ["/srv/scheduler/events_h2.log"],
        "pipeline_hooks": [
            _airflow_hook("events_h2"),
            _airflow_hook("legacy_h2"),
            {
                "name": "generic-flag",
                "pause": {"command": ["touch", "/var/lib/ingest-generic/paused"]},
                "resume": {"command": ["rm", "-f", "/var/lib/ingest-generic/paused"]},
                "paused": {"command": ["test", "-e", "/var/lib/ingest-generic/paused"]},
                "idle": {"command": ["test", "!", "-e", "/run/ingest-generic.busy"]},
            },
        ],
    },
}

# The maintenance play of the role's README, with a compaction stand-in that
# fails when anything is still writing.
MAINTENANCE = """\
- name: Nightly compaction with the ingestion paused
  hosts: ingestion
  gather_facts: false
  any_errors_fatal: true
  tasks:
    - name: Compact while the ingestion is paused
      block:
        - name: Pause the ingestion
          ansible.builtin.include_role:
            name: lakekeeper.hive.pipeline
            tasks_from: pause

        - name: Compaction stand-in - nothing may write on this host
          ansible.builtin.command:
            argv: "{{ ['/opt/ingest/bin/quiet-check', '1.0'] + ingest_logs }}"
          changed_when: false

        - name: Compaction stand-in - nothing may run in the scheduler for this host
          ansible.builtin.command:
            argv: "{{ ['/opt/ingest/bin/quiet-check', '1.0'] + scheduler_logs }}"
          delegate_to: h3
          changed_when: false

        - name: Compaction stand-in - forced failure
          ansible.builtin.fail:
            msg: compaction failed (forced by the test)
          when: compaction_fail | default(false) | bool
      always:
        - name: Resume the ingestion
          ansible.builtin.include_role:
            name: lakekeeper.hive.pipeline
            tasks_from: resume
"""

ENTRY = """\
- name: {action} the ingestion
  hosts: ingestion
  gather_facts: false
  tasks:
    - name: {action} the ingestion
      ansible.builtin.include_role:
        name: lakekeeper.hive.pipeline
        tasks_from: {entry}
"""

RECAP = re.compile(r"^(\S+)\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)"
                   r"\s+skipped=(\d+)\s+rescued=(\d+)\s+ignored=(\d+)", re.M)


class Run:
    def __init__(self, proc, seconds: float):
        self.rc = proc.returncode
        self.output = proc.stdout
        self.seconds = seconds
        self.recap = {m[0]: dict(zip(("ok", "changed", "unreachable", "failed", "skipped", "rescued", "ignored"),
                                     map(int, m[1:]))) for m in RECAP.findall(self.output)}

    def __str__(self) -> str:
        return f"ansible-playbook rc={self.rc} in {self.seconds:.1f}s\n{self.output[-8000:]}"

    __repr__ = __str__  # what pytest shows of a failed "assert run.rc == 0, run"


class Bed:
    """The provisioned hosts, their inventory and playbooks."""

    def __init__(self, mh, workdir: Path, collections_dir: Path):
        self.mh, self.work, self.collections = mh, workdir, collections_dir
        self.inventory = mh.write_inventory({"ingestion": list(INGESTION), "scheduler": [SCHEDULER]},
                                            host_vars=HOST_VARS, group_vars=GROUP_VARS,
                                            path=workdir / "inventory.yml")
        (workdir / "maintenance.yml").write_text(MAINTENANCE)
        (workdir / "pause.yml").write_text(ENTRY.format(action="Pause", entry="pause"))
        (workdir / "resume.yml").write_text(ENTRY.format(action="Resume", entry="resume"))
        self.times: dict[str, float] = {}
        self.crontab: dict[str, str] = {}
        self.cron_file = ""

    def h(self, name: str):
        return self.mh[name]

    def run(self, playbook: str, *args: str) -> Run:
        t0 = time.monotonic()
        proc = self.mh.ansible_playbook(
            ["-i", str(self.inventory), str(self.work / playbook), *args], cwd=self.work,
            env={"ANSIBLE_COLLECTIONS_PATH": str(self.collections), "ANSIBLE_FORKS": "5"})
        run = Run(proc, time.monotonic() - t0)
        self.times[f"{playbook} {' '.join(args)}".strip()] = round(run.seconds, 1)
        print(f"{playbook} {' '.join(args)}: rc={run.rc} {run.seconds:.1f}s")
        return run


def _provision(mh) -> None:
    bins = {"/opt/ingest/bin/writer": ("0755", WRITER), "/opt/ingest/bin/batch": ("0755", BATCH),
            "/opt/ingest/bin/ingest-cron-job": ("0755", CRON_JOB),
            "/opt/ingest/bin/quiet-check": ("0755", QUIET_CHECK)}
    units = {f"/etc/systemd/system/{n}": ("0644", text) for n, text in UNITS.items()}
    for name in INGESTION:
        files = dict(bins) | units | {"/root/standin.crontab": ("0600", CRONTAB)}
        enable_now = "ingest-stream.service ingest-batch.timer"
        if name == "h1":
            files["/etc/cron.d/ingest-extra"] = ("0644", CRON_FILE)
        if name == "h2":
            files["/opt/ingest/bin/ingest-generic"] = ("0755", GENERIC)
            files["/etc/systemd/system/ingest-generic.service"] = ("0644", GENERIC_UNIT)
            enable_now += " ingest-generic.service"
        mh[name].exec(provision_script(files, f"""
mkdir -p /srv/ingest /var/lib/ingest-generic
systemctl daemon-reload
systemctl enable --quiet --now {enable_now}
systemctl enable --quiet ingest-legacy.service
crontab /root/standin.crontab
"""))
    api_unit = f"""[Unit]
Description=stand-in scheduler API (Airflow and Oozie calls)
[Service]
ExecStart=/usr/bin/python3 /opt/ingest/bin/scheduler-api.py {SCHEDULER_PORT} {AIRFLOW_USER}:{AIRFLOW_PASSWORD} '{json.dumps(SCHEDULER_JOBS)}'
[Install]
WantedBy=multi-user.target
"""
    files = dict(bins) | {"/opt/ingest/bin/scheduler-api.py": ("0755", SCHEDULER_API),
                          "/etc/systemd/system/scheduler-api.service": ("0644", api_unit),
                          "/etc/systemd/system/ingest-stream.service": ("0644", UNITS["ingest-stream.service"])}
    mh[SCHEDULER].exec(provision_script(files, """
mkdir -p /srv/ingest /srv/scheduler
systemctl daemon-reload
systemctl enable --quiet --now scheduler-api.service ingest-stream.service
"""))


@pytest.fixture(scope="module")
def bed(multihost, collections_dir, tmp_path_factory):
    if not multihost.systemd:
        pytest.skip("the pipeline tests need systemd in the multihost hosts")
    if shutil.which("crontab") is None:
        pytest.skip("crontab not found: apt-get install cron")
    workdir = tmp_path_factory.mktemp("pipeline")
    t0 = time.monotonic()
    _provision(multihost)
    b = Bed(multihost, workdir, collections_dir)
    for name in INGESTION:
        b.crontab[name] = b.h(name).exec(["crontab", "-l"]).stdout
    assert b.crontab["h1"] == CRONTAB
    b.cron_file = b.h("h1").read_text("/etc/cron.d/ingest-extra")
    _wait(lambda: b.h(SCHEDULER).read_text("/srv/scheduler/state.json", default="") != "", 10, "scheduler API up")
    b.times["provision"] = round(time.monotonic() - t0, 1)
    yield b
    cpu = {n: round(c, 1) for n, c in multihost.cpu_seconds().items()}
    print("timings (s):", json.dumps(b.times | {"hosts up": round(multihost.started_in, 2)}),
          "CPU inside the hosts (s):", json.dumps(cpu))


# ------------------------------------------------------------------ helpers
def _wait(cond, timeout: float, what: str, poll: float = 0.1) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(poll)


def _watched(b: Bed) -> list[tuple[str, str]]:
    """Every pipeline output that must grow while the ingestion runs."""
    files = [(n, "/srv/ingest/stream.log") for n in INGESTION]
    files += [(n, "/srv/ingest/batch.log") for n in INGESTION]
    files += [("h2", "/srv/ingest/generic.log"),
              (SCHEDULER, "/srv/scheduler/events_h2.log"), (SCHEDULER, f"/srv/scheduler/{OOZIE_JOB}.log")]
    return files


def _growing(b: Bed, files, within: float = 4.0) -> list[str]:
    """The (host, path) of files that did NOT grow within `within` seconds."""
    start = {f: b.h(f[0]).size(f[1]) for f in files}
    pending = set(files)
    deadline = time.monotonic() + within
    while pending and time.monotonic() < deadline:
        time.sleep(0.2)
        pending = {f for f in pending if b.h(f[0]).size(f[1]) <= start[f]}
    return sorted(f"{h}:{p}" for h, p in pending)


def _quiet(b: Bed, files, seconds: float = 1.2) -> list[str]:
    """The (host, path) of files that DID grow during `seconds`."""
    start = {f: b.h(f[0]).size(f[1]) for f in files}
    time.sleep(seconds)
    return sorted(f"{h}:{p}" for (h, p) in files if b.h(h).size(p) != start[(h, p)])


def _scheduler_state(b: Bed) -> dict:
    return json.loads(b.h(SCHEDULER).read_text("/srv/scheduler/state.json"))


def _unit_states(b: Bed, name: str) -> dict:
    units = ["ingest-stream.service", "ingest-batch.timer", "ingest-legacy.service"]
    active = b.h(name).exec(["systemctl", "is-active", *units], check=False).stdout.split()
    enabled = b.h(name).exec(["systemctl", "is-enabled", *units], check=False).stdout.split()
    return {u: (a, e) for u, a, e in zip(units, active, enabled)}


def _assert_all_running(b: Bed) -> None:
    """The state before any pause: everything that ran runs, what was stopped
    or paused before still is, crontabs byte-identical, no state file."""
    for name in INGESTION:
        assert _unit_states(b, name) == {
            "ingest-stream.service": ("active", "enabled"),
            "ingest-batch.timer": ("active", "enabled"),
            "ingest-legacy.service": ("inactive", "enabled"),  # was stopped before: stays stopped
        }, name
        assert b.h(name).exec(["crontab", "-l"]).stdout == b.crontab[name], name
        assert b.h(name).read_text(STATE_FILE, default="<none>") == "<none>", name
    assert b.h("h1").read_text("/etc/cron.d/ingest-extra") == b.cron_file
    assert b.h("h1").exec(["stat", "-c", "%a", "/etc/cron.d/ingest-extra"]).stdout.strip() == "644"
    assert b.h("h2").read_text("/var/lib/ingest-generic/paused", default="<none>") == "<none>"
    jobs = _scheduler_state(b)
    assert {j: v["paused"] for j, v in jobs.items()} == {j: v["paused"] for j, v in SCHEDULER_JOBS.items()}
    assert _growing(b, _watched(b)) == []
    assert b.h("h1").read_text("/srv/ingest/legacy.log", default="<none>") == "<none>"


def _markers(text: str) -> list[tuple[str, float]]:
    return [(w[0], float(w[1])) for w in (line.split() for line in text.splitlines())
            if len(w) == 2 and w[0] in ("start", "end", "compaction-start")]


def _runs_never_cut(text: str) -> bool:
    """start/end markers alternate: no run was killed half-way (the last run
    may still be in flight)."""
    kinds = [kind for kind, _when in _markers(text)]
    return all(a != b for a, b in zip(kinds, kinds[1:])) and (not kinds or kinds[0] == "start")


def _calls(b: Bed) -> list[str]:
    return b.h(SCHEDULER).read_text("/srv/scheduler/calls.log", default="").splitlines()


# -------------------------------------------------------------------- tests
def test_hosts_are_real_and_separate(multihost):
    """Three hosts, each its own sshd, systemd, hostname and filesystem view."""
    assert multihost.started_in < 10
    for h in multihost.hosts:
        out = multihost.ssh(h, "hostname; cat /proc/1/comm; ip -4 -o addr show eth0; "
                               "hostname > /srv/whoami; systemctl is-system-running").stdout.split("\n")
        assert out[0] == h.name
        assert out[1] == ("systemd" if multihost.systemd else "sshd")
        assert f"{h.address}/24" in out[2]
        if multihost.systemd:
            assert out[3] in ("running", "degraded")
    # the same path holds a different file on each host (and none on the machine)
    assert {h.name: h.read_text("/srv/whoami").strip() for h in multihost.hosts} == {
        h.name: h.name for h in multihost.hosts}
    assert not Path("/srv/whoami").exists()


def test_check_mode_changes_nothing(bed):
    calls = len(_calls(bed))
    run = bed.run("pause.yml", "--check")
    assert run.rc == 0, run
    for name in INGESTION:
        assert f"Would pause on {name}" in run.output, run
    assert "ingest-stream.service" in run.output
    assert AIRFLOW_PASSWORD not in run.output
    # only read-only checks reached the scheduler
    assert [c for c in _calls(bed)[calls:] if not c.startswith("GET ")] == []
    _assert_all_running(bed)


def test_maintenance_pauses_before_compaction_and_resumes(bed):
    for name in INGESTION:
        bed.h(name).exec(["rm", "-f", "/srv/ingest/compaction.log", "/srv/ingest/cronjob.log"])
        # an in-flight run "started by cron": it only finishes 1.6 s after the
        # pause has disabled the cron entry, so the drain has to wait for it.
        # Its timeout only bounds a failed test: on a loaded 2-core machine
        # the play reached its pause more than 60 s after the start (a 60 s
        # timeout killed the job first: CI of 2026-12-01)
        bed.h(name).spawn(["timeout", "900", "/opt/ingest/bin/ingest-cron-job", "follow"])
    _wait(lambda: all(bed.h(n).size("/srv/ingest/cronjob.log") > 0 for n in INGESTION), 5, "cron jobs")
    calls = len(_calls(bed))

    # with a guard on each host, which the play's resume ends before its expiry
    run = bed.run("maintenance.yml", "-e", "pipeline_guard_seconds=600", "-e", "pipeline_guard_poll=0.3")
    assert run.rc == 0, run
    assert all(run.recap[n]["failed"] == 0 for n in INGESTION), run
    assert AIRFLOW_PASSWORD not in run.output
    _no_guard_left(bed)
    for name in INGESTION:
        assert bed.h(name).read_text(GUARD_REPORT, default="<none>") == "<none>", name

    for name in INGESTION:
        marks = _markers(bed.h(name).read_text("/srv/ingest/cronjob.log"))
        compaction = [t for k, t in _markers(bed.h(name).read_text("/srv/ingest/compaction.log"))]
        assert marks[-1][0] == "end", (name, marks)
        assert marks[-1][1] < compaction[0], f"{name}: the in-flight cron job ended after compaction began"
        assert _runs_never_cut(bed.h(name).read_text("/srv/ingest/batch.log")), name
    new_calls = _calls(bed)[calls:]
    assert new_calls.count("PATCH /api/v1/dags/events_h2") == 2  # paused, resumed
    assert not [c for c in new_calls if c.startswith("PATCH /api/v1/dags/legacy_h2")]  # was paused before
    assert new_calls.count(f"PUT /oozie/v1/job/{OOZIE_JOB}?action=suspend") == 1
    assert new_calls.count(f"PUT /oozie/v1/job/{OOZIE_JOB}?action=resume") == 1
    _assert_all_running(bed)


def test_second_pause_changes_nothing_and_a_failed_compaction_still_resumes(bed):
    first = bed.run("pause.yml")
    assert first.rc == 0, first
    records = {n: json.loads(bed.h(n).read_text(STATE_FILE)) for n in INGESTION}
    assert [u["name"] for u in records["h1"]["systemd"]] == ["ingest-batch.timer", "ingest-stream.service"]
    assert records["h1"]["systemd"][0]["disabled"] is True  # the timer: stopped and disabled
    assert [h["name"] for h in records["h1"]["hooks"]] == ["oozie-ingest-h1"]
    assert [h["name"] for h in records["h2"]["hooks"]] == ["airflow-events_h2", "generic-flag"]
    assert [c.get("cron_file") or c["user"] for c in records["h1"]["cron"]] == ["root", "ingest-extra"]
    assert AIRFLOW_PASSWORD not in json.dumps(records)  # credentials never reach the state file
    assert _quiet(bed, _watched(bed)) == []
    for name in INGESTION:
        assert _unit_states(bed, name)["ingest-batch.timer"] == ("inactive", "disabled")
        assert "#17 * * * *" in bed.h(name).exec(["crontab", "-l"]).stdout

    second = bed.run("pause.yml")
    assert second.rc == 0, second
    assert all(second.recap[n]["changed"] == 0 for n in INGESTION), second
    assert {n: json.loads(bed.h(n).read_text(STATE_FILE)) for n in INGESTION} == records

    # someone starts a paused unit again by hand: the next pause stops it again
    bed.h("h2").exec(["systemctl", "start", "ingest-stream.service"])
    assert _growing(bed, [("h2", "/srv/ingest/stream.log")]) == []

    # a third pause (in the maintenance play) keeps the record, the compaction
    # (which first checks that nothing writes) fails, and the always section
    # resumes everything the first pause paused
    run = bed.run("maintenance.yml", "-e", "compaction_fail=true")
    assert run.rc != 0, run
    assert "compaction failed (forced by the test)" in run.output, run
    assert "WRITING" not in run.output, run
    assert all(run.recap[n]["failed"] > 0 for n in INGESTION), run
    _assert_all_running(bed)


def test_drain_timeout_fails_clearly_and_resumes(bed):
    bed.h("h1").spawn(["timeout", "300", "/opt/ingest/bin/ingest-cron-job", "120"])
    try:
        _wait(lambda: bed.h("h1").exec(["pgrep", "-f", "ingest-cron-job 120"], check=False).returncode == 0,
              5, "long job")
        run = bed.run("pause.yml", "--limit", "h1", "-e", "pipeline_drain_timeout=2")
        assert run.rc != 0, run
        assert "Drain timed out after 2s on h1, still in flight: process" in run.output, run
        assert "What this run had paused has been resumed" in run.output, run
        # resumed by the role itself, while the long job still runs
        assert bed.h("h1").exec(["pgrep", "-f", "ingest-cron-job 120"], check=False).returncode == 0
        _assert_all_running(bed)
    finally:
        bed.h("h1").exec(["pkill", "-f", "ingest-cron-job"], check=False)


INSPECT = """\
- name: What an earlier run left
  hosts: ingestion
  gather_facts: false
  tasks:
    - name: Inspect the record and the guard's report
      ansible.builtin.include_role:
        name: lakekeeper.hive.pipeline
        tasks_from: inspect

    - name: Show them
      ansible.builtin.debug:
        msg: "FOUND {{ inventory_hostname }} {{ pipeline_found | to_json }}"
"""
GUARD_REPORT = "/var/lib/lakekeeper/pipeline-default.guard.json"


def _no_guard_left(b: Bed) -> None:
    """No guard process on the ingestion hosts within 15 s (its async_wrapper
    looks at the module every 5 s)."""
    _wait(lambda: all(b.h(n).exec(["pgrep", "-f", "lakekeeper_pause_guard"], check=False).returncode == 1
                      for n in INGESTION), 15, "the guards to end", poll=0.5)


def test_guard_resumes_a_pause_no_run_resumed(bed):
    """A pause whose play never resumes (the host's view of a cancelled or
    killed job): the guard each host's pause armed (over SSH, in the
    background) resumes units, timers, crontab lines, the cron file and the
    command hook at the expiry; the HTTP hooks stay in the record with the
    guard's report beside it; inspect shows both, once; the resume entry
    point finishes the job. (A guard whose pause is resumed in time:
    test_maintenance_pauses_before_compaction_and_resumes.)"""
    # -- a pause and no resume: paused until the expiry, then resumed by the guard on each host (the expiry
    # runs from each host's pause: on a busy machine it may pass before ansible-playbook has ended)
    calls = len(_calls(bed))
    run = bed.run("pause.yml", "-e", "pipeline_guard_seconds=15", "-e", "pipeline_guard_poll=0.3")
    assert run.rc == 0, run
    if not any(bed.h(n).read_text(GUARD_REPORT, default="") for n in INGESTION):
        records = {n: json.loads(bed.h(n).read_text(STATE_FILE)) for n in INGESTION}
        for name, record in records.items():
            assert record["guard"]["seconds"] == 15 and record["guard"]["expires"].endswith("Z"), record
        if time.time() < min(r["guard"]["expires_at"] for r in records.values()) - 2:
            assert _quiet(bed, _watched(bed)) == []
    _wait(lambda: all(bed.h(n).read_text(GUARD_REPORT, default="") for n in INGESTION), 60, "the guards")
    reports = {n: json.loads(bed.h(n).read_text(GUARD_REPORT)) for n in INGESTION}
    for name, report in reports.items():
        assert report["guard"]["fired_at"] >= report["guard"]["expires_at"], report
        assert report["guard"]["fired_at"] - report["guard"]["expires_at"] < 10, report
        assert sorted(report["resumed"]["systemd"]) == ["ingest-batch.timer", "ingest-stream.service"], report
        assert len(report["resumed"]["cron"]) == (3 if name == "h1" else 2), report
    assert reports["h2"]["resumed"]["hooks"] == ["generic-flag"], reports["h2"]
    # the HTTP hooks (credentials never on disk; one run from the scheduler host) wait for a run
    assert [h["name"] for h in reports["h1"]["left"]["hooks"]] == ["oozie-ingest-h1"], reports["h1"]
    assert [h["name"] for h in reports["h2"]["left"]["hooks"]] == ["airflow-events_h2"], reports["h2"]
    for name in INGESTION:
        left = json.loads(bed.h(name).read_text(STATE_FILE))
        assert left["systemd"] == [] and left["cron"] == [] and left["guard"]["fired"], left
        assert _unit_states(bed, name) == {
            "ingest-stream.service": ("active", "enabled"), "ingest-batch.timer": ("active", "enabled"),
            "ingest-legacy.service": ("inactive", "enabled")}, name
        assert bed.h(name).exec(["crontab", "-l"]).stdout == bed.crontab[name], name  # byte for byte
    assert bed.h("h1").read_text("/etc/cron.d/ingest-extra") == bed.cron_file
    assert bed.h("h1").exec(["stat", "-c", "%a", "/etc/cron.d/ingest-extra"]).stdout.strip() == "644"
    assert bed.h("h2").read_text("/var/lib/ingest-generic/paused", default="<none>") == "<none>"
    assert _growing(bed, [f for f in _watched(bed) if f[0] != SCHEDULER]) == []
    assert not [c for c in _calls(bed)[calls:] if "resume" in c or '"is_paused": false' in c]
    _no_guard_left(bed)

    # -- inspect: the record left and the guard's report, shown once
    (bed.work / "inspect.yml").write_text(INSPECT)
    run = bed.run("inspect.yml")
    assert run.rc == 0, run
    # the debug line holds the JSON as a JSON string
    found = {m[0]: json.loads(json.loads('"%s"' % m[1])) for m in re.findall(r'"FOUND (h\d) (\{.*\})"', run.output)}
    assert sorted(found) == list(INGESTION), run
    for name in INGESTION:
        assert found[name]["guard_report"]["resumed"] == reports[name]["resumed"], found[name]
        assert found[name]["record"]["hooks"] == reports[name]["left"]["hooks"], found[name]
        assert found[name]["expired"] is True or found[name]["expired"] == "True", found[name]
        assert bed.h(name).read_text(GUARD_REPORT, default="<none>") == "<none>", name
    assert AIRFLOW_PASSWORD not in json.dumps(found)

    # -- the resume entry point resumes what the guard could not
    run = bed.run("resume.yml")
    assert run.rc == 0, run
    _assert_all_running(bed)
