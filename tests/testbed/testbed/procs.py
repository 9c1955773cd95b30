"""Process plumbing for the test bed: free ports, spawning a service in its
own process group with its output in a log file, waiting with timeouts, and
stopping whole process groups (with a check that a PID was not reused)."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterable


class TestbedError(RuntimeError):
    """A service failed to start or to stop; the message names its log file."""

    __test__ = False  # not a pytest test class


def free_port(host: str = "127.0.0.1") -> int:
    """A port that was free a moment ago (bind port 0, read it, close)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def free_ports(n: int, host: str = "127.0.0.1") -> list[int]:
    """n distinct free ports (all sockets held open until every port is chosen)."""
    socks = []
    try:
        for _i in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((host, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


# ---------------------------------------------------------------- /proc reading

def _stat(pid: int) -> list[str] | None:
    """Fields of /proc/PID/stat after the command name (index 0 = state)."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return raw[raw.rindex(")") + 2:].split()


def start_ticks(pid: int) -> int | None:
    """Start time of a process in clock ticks since boot (identifies it across PID reuse)."""
    f = _stat(pid)
    return int(f[19]) if f else None


def is_alive(pid: int, ticks: int | None = None) -> bool:
    """True if PID runs (not a zombie) and, when ticks is given, is the same process."""
    f = _stat(pid)
    if not f or _dead(f):
        return False
    return ticks is None or int(f[19]) == ticks


def _dead(f: list[str]) -> bool:
    # A zombie leader whose other threads still run (a JVM in System.exit) is not dead yet.
    return f[0] in ("Z", "X") and int(f[17]) <= 1


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes whose process group is pgid."""
    out = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        f = _stat(int(entry.name))
        if f and not _dead(f) and int(f[2]) == pgid:
            out.append(int(entry.name))
    return out


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    try:
        for fd in os.scandir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(fd.path)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    except (FileNotFoundError, PermissionError):
        pass
    return inodes


def listening_ports(pid: int) -> set[int]:
    """TCP ports a process is listening on (from /proc/net/tcp{,6}), without connecting."""
    inodes = _socket_inodes(pid)
    ports = set()
    if not inodes:
        return ports
    for table in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        except (FileNotFoundError, PermissionError):
            continue
        for line in lines:
            parts = line.split()
            if len(parts) > 9 and parts[3] == "0A" and parts[9] in inodes:  # 0A = LISTEN
                ports.add(int(parts[1].rsplit(":", 1)[1], 16))
    return ports


# ---------------------------------------------------------------- services

@dataclass
class Proc:
    """One started service: the leader of its own process group."""
    name: str
    pid: int
    ticks: int | None
    log: str
    argv: list[str] = field(default_factory=list)
    ports: dict[str, int] = field(default_factory=dict)

    @property
    def pgid(self) -> int:
        return self.pid

    def alive(self) -> bool:
        return is_alive(self.pid, self.ticks)

    def members(self) -> list[int]:
        """Live processes in this service's group (e.g. a worker's executors)."""
        return group_members(self.pgid)

    def to_json(self) -> dict:
        d = asdict(self)
        d["pgid"] = self.pgid
        return d

    @classmethod
    def from_json(cls, d: dict) -> "Proc":
        return cls(name=d["name"], pid=d["pid"], ticks=d.get("ticks"), log=d["log"],
                   argv=d.get("argv", []), ports=d.get("ports", {}))


def spawn(name: str, argv: list[str], log: Path, env: dict[str, str], cwd: Path) -> Proc:
    """Start argv in a new session (its own process group), output appended to log."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab", buffering=0) as out:
        out.write(f"### testbed: starting {name}: {' '.join(argv)}\n".encode())
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                             env=env, cwd=str(cwd), start_new_session=True, close_fds=True)
    # Keep a reference so the Popen object does not warn; we reap it in stop_all.
    _POPENS[p.pid] = p
    return Proc(name=name, pid=p.pid, ticks=start_ticks(p.pid), log=str(log), argv=argv)


_POPENS: dict[int, subprocess.Popen] = {}


def _reap(pid: int) -> None:
    p = _POPENS.get(pid)
    if p is not None and p.poll() is not None:
        _POPENS.pop(pid, None)


def _wait_gone(pid: int, timeout: float) -> None:
    p = _POPENS.get(pid)
    if p is not None:
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and Path(f"/proc/{pid}").exists() and group_members(pid):
        time.sleep(0.1)


def log_tail(path: str | Path, lines: int = 40) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 16384))
            text = f.read().decode("utf-8", "replace")
    except FileNotFoundError:
        return f"(no log file {path})"
    # long lines (command lines, classpaths) are cut so errors stay readable
    return "\n".join(ln if len(ln) <= 300 else ln[:300] + " [...]" for ln in text.splitlines()[-lines:])


def log_contains(path: str | Path, needle: str) -> bool:
    try:
        with open(path, "rb") as f:
            return needle.encode() in f.read()
    except FileNotFoundError:
        return False


def wait_all(checks: dict[str, tuple[Proc, Callable[[], bool]]], timeout: float,
             poll: float = 0.2) -> dict[str, float]:
    """Wait until every check passes; fail fast when a process dies.

    checks maps a label to (process, ready predicate). Returns seconds-until-ready per label.
    """
    t0 = time.monotonic()
    pending = dict(checks)
    ready_at: dict[str, float] = {}
    while pending:
        for label, (proc, ready) in list(pending.items()):
            _reap(proc.pid)
            if ready():
                ready_at[label] = round(time.monotonic() - t0, 1)
                del pending[label]
            elif not proc.alive():
                _wait_gone(proc.pid, 5.0)  # let it finish writing its last words
                raise TestbedError(
                    f"{label}: process {proc.pid} exited before it was ready; log: {proc.log}\n"
                    f"--- last lines of {proc.log} ---\n{log_tail(proc.log)}")
        if not pending:
            break
        if time.monotonic() - t0 > timeout:
            msgs = [f"{label}: not ready after {timeout:.0f} s; log: {proc.log}\n"
                    f"--- last lines of {proc.log} ---\n{log_tail(proc.log, 15)}"
                    for label, (proc, _ready) in pending.items()]
            raise TestbedError("\n".join(msgs))
        time.sleep(poll)
    return ready_at


def _children_map() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            f = _stat(int(entry.name))
            if f and not _dead(f):
                kids.setdefault(int(f[1]), []).append(int(entry.name))
    return kids


def process_tree(procs: Iterable[Proc]) -> dict[int, int | None]:
    """pid -> start ticks of every live process in the services' groups and of all
    their descendants (PySpark daemons move to their own group; we want them too)."""
    kids = _children_map()
    seen: dict[int, int | None] = {}
    stack = [pid for p in procs for pid in group_members(p.pgid)]
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue
        seen[pid] = start_ticks(pid)
        stack.extend(kids.get(pid, []))
    return seen


def _signal_all(groups: list[Proc], tree: dict[int, int | None], sig: int) -> None:
    for p in groups:
        try:
            os.killpg(p.pgid, sig)
        except ProcessLookupError:
            pass
    for pid, ticks in tree.items():
        if is_alive(pid, ticks):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass


def _left(groups: list[Proc], tree: dict[int, int | None]) -> list[int]:
    for p in groups:
        _reap(p.pid)
    left = [pid for p in groups for pid in group_members(p.pgid)]
    left += [pid for pid, ticks in tree.items() if pid not in left and is_alive(pid, ticks)]
    return left


def stop_all(procs: Iterable[Proc], timeout: float = 15.0) -> list[str]:
    """SIGTERM every service's process group and descendants, wait, SIGKILL the rest.

    Returns messages about anything unusual (empty when all went down on SIGTERM).
    """
    procs = list(procs)
    notes = []
    groups = []
    for p in procs:
        # Only signal a group if its leader is still our process, or the leader
        # is gone and members (orphans) remain in the group.
        if p.alive() or not is_alive(p.pid):
            if group_members(p.pgid):
                groups.append(p)
        else:
            notes.append(f"{p.name}: PID {p.pid} now belongs to another process; not signalled")
    tree = process_tree(groups)
    _signal_all(groups, tree, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    left = _left(groups, tree)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = _left(groups, tree)
    if left:
        notes.append(f"still running {timeout:.0f} s after SIGTERM, sending SIGKILL: {sorted(left)}")
        _signal_all(groups, tree, signal.SIGKILL)
        deadline = time.monotonic() + 5
        while left and time.monotonic() < deadline:
            time.sleep(0.1)
            left = _left(groups, tree)
        if left:
            notes.append(f"survived SIGKILL: {sorted(left)}")
    for p in procs:
        pop = _POPENS.pop(p.pid, None)
        if pop is not None:
            try:
                pop.wait(timeout=1)
            except subprocess.TimeoutExpired:
                pass
    return notes
