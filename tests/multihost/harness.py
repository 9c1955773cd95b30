"""Several real hosts on one machine, for tests that need SSH and real services.

Each host is a set of Linux namespaces created here and nowhere else:

* its own network namespace with an ``eth0`` veth into a bridge that lives in a
  separate *controller* namespace; all 198.51.100.0/24 (TEST-NET-2) addresses
  exist only inside these namespaces (controller 198.51.100.1, hosts .11, .12 ...);
* its own PID, mount, UTS and cgroup namespaces: PID 1 is a real ``systemd``
  (when the machine allows it, see ``systemd=``) or ``sshd`` itself;
* private copy-on-write views (overlayfs) of ``/etc``, ``/var``, ``/srv``,
  ``/opt`` and ``/root``, a private ``/run`` and ``/tmp``: unit files, crontabs,
  state files and logs written "on a host" stay on that host;
* its own ``sshd`` on port 22 of its address, host keys generated for the
  session, root login with a generated client key only.

The controller side (``ansible-playbook``, ``ssh``) runs in the controller
namespace: ``MultiHost.controller_cmd()`` prefixes a command accordingly.

Teardown kills ``ip netns pids`` of every namespace, deletes the namespaces
(the bridge goes with the controller namespace) and removes the cgroups.

Needs root, iproute2, util-linux (unshare, nsenter), openssh-server; systemd
mode also needs a writable cgroup2 hierarchy. Run ``python -m multihost`` from
``tests/`` for a manual session.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Sequence

SUBNET = "198.51.100"
CONTROLLER_ADDRESS = f"{SUBNET}.1"
FIRST_HOST_OCTET = 11
NS_PREFIX = "lkmh"
# Copy-on-write per host (lower layer: the machine's directory).
OVERLAY_DIRS = ("/etc", "/var", "/srv", "/opt", "/root")
# Minimal unit universe of the per-host systemd: nothing from the machine's
# /usr/lib/systemd/system is loaded (no tmpfiles, udev, journald ...), only
# these empty targets, the per-host sshd, and what tests put in /etc/systemd/system.
_TARGETS = (
    "basic", "sysinit", "sockets", "timers", "paths", "local-fs", "remote-fs",
    "network", "network-online", "nss-user-lookup", "time-set", "time-sync",
    "multi-user", "shutdown", "umount", "final",
)


class MultiHostError(RuntimeError):
    """The hosts could not be created."""


def _run(argv: Sequence[str], check: bool = True, **kw) -> subprocess.CompletedProcess:
    kw.setdefault("stdout", subprocess.PIPE)
    kw.setdefault("stderr", subprocess.PIPE)
    kw.setdefault("text", True)
    proc = subprocess.run(list(argv), check=False, **kw)
    if check and proc.returncode != 0:
        raise MultiHostError(f"{' '.join(argv)} -> rc={proc.returncode}: {proc.stderr.strip()}")
    return proc


def _cgroup2_root() -> Path | None:
    """Where a cgroup2 hierarchy is mounted (pure v2 or the hybrid 'unified')."""
    for cand in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
        if _fstype(cand) == "cgroup2" and os.access(cand, os.W_OK):
            return Path(cand)
    return None


def _fstype(path: str) -> str | None:
    best = None
    with open("/proc/self/mountinfo", encoding="utf-8") as fh:
        for line in fh:
            left, right = line.split(" - ", 1)
            mnt = left.split()[4]
            if mnt == path:
                best = right.split()[0]
    return best


def check_prerequisites() -> list[str]:
    """Reasons why hosts cannot be created here (empty list: all good)."""
    missing = []
    if os.geteuid() != 0:
        missing.append("must run as root")
    for tool in ("ip", "unshare", "nsenter", "ssh", "ssh-keygen", "/usr/sbin/sshd"):
        if shutil.which(tool) is None:
            missing.append(f"{tool} not found")
    if not missing:
        probe = f"{NS_PREFIX}-probe-{os.getpid()}"
        if _run(["ip", "netns", "add", probe], check=False).returncode != 0:
            missing.append("cannot create network namespaces")
        else:
            _run(["ip", "netns", "del", probe], check=False)
    return missing


@dataclass
class Host:
    """One host. ``exec``/``read_text`` act inside it without SSH (test setup
    and inspection); ``MultiHost.ssh`` goes through the real sshd."""

    name: str
    address: str
    netns: str
    workdir: Path
    cgroup: Path | None
    init: subprocess.Popen | None = field(default=None, repr=False)
    init_pid: int | None = None  # PID 1 of the host, as seen from the machine

    def _nsenter(self) -> list[str]:
        if self.init_pid is None:
            raise MultiHostError(f"{self.name} is not running")
        return ["nsenter", "-t", str(self.init_pid), "-m", "-u", "-n", "-p", "-C", "--"]

    def exec(self, argv: Sequence[str] | str, check: bool = True, timeout: float = 60,
             **kw) -> subprocess.CompletedProcess:
        """Run argv (or a /bin/sh -c string) inside the host's namespaces."""
        if isinstance(argv, str):
            argv = ["/bin/sh", "-c", argv]
        return _run(self._nsenter() + list(argv), check=check, timeout=timeout, **kw)

    def spawn(self, argv: Sequence[str] | str) -> None:
        """Start a detached process inside the host (a stand-in for a job that
        something else, e.g. cron, started). It is reaped by the host's PID 1."""
        if isinstance(argv, str):
            argv = ["/bin/sh", "-c", argv]
        # setsid -f: the process leaves nsenter's session and is re-parented
        # to the host's PID 1 once nsenter exits.
        _run(self._nsenter() + ["setsid", "-f"] + list(argv),
             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def read_text(self, path: str, default: str | None = None) -> str:
        proc = self.exec(["cat", "--", path], check=False)
        if proc.returncode != 0:
            if default is not None:
                return default
            raise FileNotFoundError(f"{self.name}:{path}: {proc.stderr.strip()}")
        return proc.stdout

    def write_text(self, path: str, text: str, mode: str = "0644") -> None:
        self.exec(["/bin/sh", "-c", 'mkdir -p "$(dirname "$1")" && cat > "$1" && chmod "$2" "$1"',
                   "sh", path, mode], input=text)

    def size(self, path: str) -> int:
        proc = self.exec(["stat", "-c", "%s", "--", path], check=False)
        return int(proc.stdout) if proc.returncode == 0 else -1

    def pids(self) -> list[int]:
        out = _run(["ip", "netns", "pids", self.netns], check=False).stdout
        return [int(p) for p in out.split()]


class MultiHost:
    """N hosts plus a controller namespace. Use as a context manager or call
    ``start()``/``close()``.

    >>> with MultiHost(3, workdir) as mh:
    ...     mh.ansible_playbook(["site.yml"], inventory=mh.write_inventory({"web": ["h1"]}))
    """

    def __init__(self, count: int, workdir: Path | str, systemd: bool | None = None,
                 name_prefix: str = "h", boot_timeout: float = 20.0):
        if not 1 <= count <= 50:
            raise ValueError("1..50 hosts")
        self.count = count
        self.workdir = Path(workdir).resolve()
        # lkmh-<pid>-<random>: the pid lets reap_stale() find dead sessions
        self.session = f"{NS_PREFIX}-{os.getpid()}-{os.urandom(2).hex()}"
        self.ctl_ns = f"{self.session}-ctl"
        self.boot_timeout = boot_timeout
        self._cg_root = _cgroup2_root()
        if systemd is None:  # auto: systemd when the machine allows it
            systemd = self._cg_root is not None and Path("/lib/systemd/systemd").exists()
        elif systemd and self._cg_root is None:
            raise MultiHostError("systemd=True needs a writable cgroup2 hierarchy")
        self.systemd = bool(systemd)
        self.cg_session = self._cg_root / "lakekeeper-multihost" / self.session if self.systemd else None
        self.hosts: list[Host] = [
            Host(name=f"{name_prefix}{i + 1}", address=f"{SUBNET}.{FIRST_HOST_OCTET + i}",
                 netns=f"{self.session}-{name_prefix}{i + 1}", workdir=self.workdir / f"{name_prefix}{i + 1}",
                 cgroup=(self.cg_session / f"{name_prefix}{i + 1}") if self.cg_session else None)
            for i in range(count)
        ]
        self.private_key = self.workdir / "id_ed25519"
        self.known_hosts = self.workdir / "known_hosts"
        self.control_path_dir = self.workdir / "cp"
        self.started_in: float | None = None
        self._closed = False

    # ------------------------------------------------------------------ API
    def __enter__(self) -> "MultiHost":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __getitem__(self, name: str) -> Host:
        for h in self.hosts:
            if h.name == name:
                return h
        raise KeyError(name)

    def controller_cmd(self, argv: Sequence[str]) -> list[str]:
        """argv wrapped to run in the controller namespace (reaches the hosts)."""
        return ["ip", "netns", "exec", self.ctl_ns] + list(argv)

    def ssh_argv(self, host: Host | str) -> list[str]:
        h = self[host] if isinstance(host, str) else host
        return ["ssh", "-F", "/dev/null", "-i", str(self.private_key), "-o", "BatchMode=yes",
                "-o", f"UserKnownHostsFile={self.known_hosts}", "-o", "StrictHostKeyChecking=yes",
                "-o", "ConnectTimeout=3", f"root@{h.address}"]

    def ssh(self, host: Host | str, command: str, check: bool = True, timeout: float = 30
            ) -> subprocess.CompletedProcess:
        """Run a shell command on a host through its real sshd."""
        return _run(self.controller_cmd(self.ssh_argv(host) + ["--", command]),
                    check=check, timeout=timeout, stdin=subprocess.DEVNULL)

    def inventory_vars(self) -> dict:
        return {
            "ansible_user": "root",
            "ansible_ssh_private_key_file": str(self.private_key),
            "ansible_ssh_common_args": (
                f"-F /dev/null -o UserKnownHostsFile={self.known_hosts} -o StrictHostKeyChecking=yes"),
            # a session-private ControlPath: never reuse another session's
            # master connection to the same address
            "ansible_control_path_dir": str(self.control_path_dir),
            "ansible_python_interpreter": "/usr/bin/python3",
        }

    def write_inventory(self, groups: Mapping[str, Iterable[str]] | None = None,
                        host_vars: Mapping[str, Mapping] | None = None,
                        group_vars: Mapping[str, Mapping] | None = None,
                        path: Path | str | None = None) -> Path:
        """Write a YAML (JSON is YAML) inventory of all hosts; returns its path."""
        host_vars = host_vars or {}
        group_vars = group_vars or {}
        inv: dict = {"all": {
            "vars": self.inventory_vars() | dict(group_vars.get("all", {})),
            "hosts": {h.name: {"ansible_host": h.address} | dict(host_vars.get(h.name, {}))
                      for h in self.hosts},
            "children": {},
        }}
        for group, members in (groups or {}).items():
            inv["all"]["children"][group] = {
                "hosts": {m: {} for m in members},
                **({"vars": dict(group_vars[group])} if group in group_vars else {}),
            }
        path = Path(path) if path else self.workdir / "inventory.yml"
        path.write_text(json.dumps(inv, indent=2) + "\n", encoding="utf-8")
        return path

    @property
    def inventory(self) -> Path:
        return self.workdir / "inventory.yml"

    def ansible_playbook(self, args: Sequence[str], env: Mapping[str, str] | None = None,
                         timeout: float = 300, ansible_bin: str | None = None,
                         cwd: Path | str | None = None) -> subprocess.CompletedProcess:
        """ansible-playbook run from the controller namespace; output captured
        (stderr merged into stdout)."""
        exe = ansible_bin or str(Path(sys.executable).with_name("ansible-playbook"))
        full_env = dict(os.environ)
        full_env.update({"ANSIBLE_PIPELINING": "True", "ANSIBLE_NOCOLOR": "1",
                         "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_RETRY_FILES_ENABLED": "False",
                         "ANSIBLE_LOCAL_TEMP": str(self.workdir / "ansible-local")})
        full_env.update(env or {})
        return subprocess.run(self.controller_cmd([exe, *args]), env=full_env, cwd=cwd,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=timeout, check=False)

    def cpu_seconds(self) -> dict[str, float]:
        """CPU time used so far inside each host (its cgroup; systemd mode only)."""
        out = {}
        for h in self.hosts:
            try:
                stat = (h.cgroup / "cpu.stat").read_text() if h.cgroup else ""
            except OSError:
                stat = ""
            usage = [line.split()[1] for line in stat.splitlines() if line.startswith("usage_usec ")]
            if usage:
                out[h.name] = int(usage[0]) / 1e6
        return out

    # ------------------------------------------------------------ lifecycle
    def start(self) -> "MultiHost":
        t0 = time.monotonic()
        reap_stale()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.control_path_dir.mkdir(exist_ok=True)
        (self.workdir / "session.json").write_text(json.dumps(
            {"session": self.session, "pid": os.getpid(), "controller_ns": self.ctl_ns,
             "hosts": {h.name: {"netns": h.netns, "address": h.address} for h in self.hosts}},
            indent=2), encoding="utf-8")
        try:
            self._keys()
            self._network()
            for h in self.hosts:
                self._prepare_host(h)
                self._boot(h)
            self._wait_ready()
        except BaseException:
            self.close()
            raise
        self.started_in = time.monotonic() - t0
        return self

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        namespaces = [h.netns for h in self.hosts] + [self.ctl_ns]
        _teardown(namespaces, self.cg_session)
        for h in self.hosts:
            if h.init is not None:
                try:
                    h.init.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass
            h.init_pid = None

    # ------------------------------------------------------------ internals
    def _keys(self) -> None:
        for old in (self.private_key, self.private_key.with_suffix(".pub")):
            old.unlink(missing_ok=True)
        _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"{self.session}-client",
              "-f", str(self.private_key)])
        lines = []
        for h in self.hosts:
            sshdir = h.workdir / "upper" / "etc" / "ssh" / "lakekeeper"
            sshdir.mkdir(parents=True, exist_ok=True)
            key = sshdir / "ssh_host_ed25519_key"
            key.unlink(missing_ok=True)
            key.with_suffix(".pub").unlink(missing_ok=True)
            _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", h.name, "-f", str(key)])
            keytype, blob = key.with_suffix(".pub").read_text().split()[:2]
            lines.append(f"{h.address} {keytype} {blob}")
            shutil.copy(self.private_key.with_suffix(".pub"), sshdir / "authorized_keys")
            (sshdir / "authorized_keys").chmod(0o600)
            (sshdir / "sshd_config").write_text(_SSHD_CONFIG.format(address=h.address), encoding="utf-8")
        self.known_hosts.write_text("\n".join(lines) + "\n", encoding="utf-8")

    def _network(self) -> None:
        batches: dict[str | None, list[str]] = {None: [f"netns add {self.ctl_ns}"]}
        batches[None] += [f"netns add {h.netns}" for h in self.hosts]
        ctl = batches[self.ctl_ns] = [
            "link set lo up", "link add br0 type bridge",
            f"addr add {CONTROLLER_ADDRESS}/24 dev br0", "link set br0 up"]
        for i, h in enumerate(self.hosts):
            ctl += [f"link add v{i} type veth peer name eth0 netns {h.netns}",
                    f"link set v{i} master br0 up"]
            batches[h.netns] = ["link set lo up", f"addr add {h.address}/24 dev eth0",
                                "link set eth0 up", f"route add default via {CONTROLLER_ADDRESS}"]
        for ns, cmds in batches.items():
            _run(["ip", *(["-n", ns] if ns else []), "-batch", "-"], input="\n".join(cmds) + "\n")

    def _prepare_host(self, h: Host) -> None:
        upper, work = h.workdir / "upper", h.workdir / "work"
        for d in OVERLAY_DIRS:
            (upper / d.lstrip("/")).mkdir(parents=True, exist_ok=True)
            (work / d.lstrip("/")).mkdir(parents=True, exist_ok=True)
        # the host starts with no enabled units of its own: an opaque (empty)
        # /etc/systemd/system instead of the machine's
        unitdir = upper / "etc" / "systemd" / "system"
        unitdir.mkdir(parents=True, exist_ok=True)
        os.setxattr(unitdir, "trusted.overlay.opaque", b"y")
        (upper / "etc" / "hostname").write_text(h.name + "\n", encoding="utf-8")
        hosts_lines = ["127.0.0.1 localhost", f"{CONTROLLER_ADDRESS} controller"]
        hosts_lines += [f"{o.address} {o.name}" for o in self.hosts]
        (upper / "etc" / "hosts").write_text("\n".join(hosts_lines) + "\n", encoding="utf-8")
        # a fresh machine-id per host
        (upper / "etc" / "machine-id").write_text(os.urandom(16).hex() + "\n", encoding="utf-8")
        units = h.workdir / "units"
        units.mkdir(exist_ok=True)
        for t in _TARGETS:
            (units / f"{t}.target").write_text(f"[Unit]\nDescription={t} (multihost)\n", encoding="utf-8")
        (units / "default.target").write_text(
            "[Unit]\nDescription=multihost host\nWants=multi-user.target timers.target "
            "lakekeeper-sshd.service\n", encoding="utf-8")
        (units / "lakekeeper-sshd.service").write_text(_SSHD_UNIT, encoding="utf-8")
        (h.workdir / "empty").mkdir(exist_ok=True)
        (h.workdir / "console.log").touch()
        script = _INIT_SCRIPT.format(
            workdir=h.workdir,
            overlays=" ".join(OVERLAY_DIRS),
            final=(_EXEC_SYSTEMD if self.systemd else _EXEC_SSHD))
        (h.workdir / "init.sh").write_text(script, encoding="utf-8")
        if h.cgroup is not None:
            h.cgroup.mkdir(parents=True, exist_ok=True)

    def _boot(self, h: Host) -> None:
        join_cg = f'echo $$ > "{h.cgroup}/cgroup.procs" && ' if h.cgroup else ""
        inner = (f'{join_cg}exec ip netns exec {h.netns} unshare --pid --fork --kill-child '
                 f'--mount --uts {"--cgroup " if h.cgroup else ""}--propagation private '
                 f'-- /bin/sh {h.workdir}/init.sh')
        log = open(h.workdir / "boot.log", "wb")
        h.init = subprocess.Popen(["/bin/sh", "-c", inner], stdin=subprocess.DEVNULL,
                                  stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()

    def _find_init_pid(self, h: Host) -> int | None:
        """PID 1 of the host: the child of the unshare process."""
        if h.init is None:
            return None
        try:
            children = Path(f"/proc/{h.init.pid}/task/{h.init.pid}/children").read_text().split()
        except OSError:
            return None
        return int(children[0]) if children else None

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.boot_timeout
        pending = list(self.hosts)
        while pending:
            for h in list(pending):
                if h.init.poll() is not None:
                    raise MultiHostError(f"{h.name} died while booting: "
                                         f"{(h.workdir / 'boot.log').read_text(errors='replace')[-2000:]}")
                if h.init_pid is None:
                    h.init_pid = self._find_init_pid(h)
                    if h.init_pid is None:
                        continue
                # sshd listening on the host's address? (probe from the controller ns)
                probe = _run(self.controller_cmd(
                    [sys.executable, "-c", _PROBE, h.address]), check=False)
                if probe.returncode == 0:
                    pending.remove(h)
            if not pending:
                break
            if time.monotonic() > deadline:
                raise MultiHostError("hosts not ready in time: " + ", ".join(
                    f"{h.name} (boot.log: {(h.workdir / 'boot.log').read_text(errors='replace')[-500:]!r}"
                    f" console: {(h.workdir / 'console.log').read_text(errors='replace')[-500:]!r})"
                    for h in pending))
            time.sleep(0.05)
        # one real SSH login per host (key, known_hosts, sshd config all good)
        procs = {h.name: subprocess.Popen(self.controller_cmd(self.ssh_argv(h) + ["--", "hostname"]),
                                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True) for h in self.hosts}
        for name, p in procs.items():
            out, err = p.communicate(timeout=15)
            if p.returncode != 0 or out.strip() != name:
                raise MultiHostError(f"ssh to {name} failed (rc={p.returncode}): {out!r} {err.strip()}")


_PROBE = """
import socket, sys
s = socket.socket(); s.settimeout(0.5)
try:
    s.connect((sys.argv[1], 22)); banner = s.recv(64)
except OSError:
    sys.exit(1)
sys.exit(0 if banner.startswith(b"SSH-") else 1)
"""

_SSHD_CONFIG = """\
# sshd of one multihost test host (generated)
ListenAddress {address}:22
HostKey /etc/ssh/lakekeeper/ssh_host_ed25519_key
AuthorizedKeysFile /etc/ssh/lakekeeper/authorized_keys
PidFile /run/sshd.pid
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
UseDNS no
PrintMotd no
MaxStartups 100:30:200
MaxSessions 100
LogLevel ERROR
AcceptEnv LANG LC_*
SetEnv PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
Subsystem sftp /usr/lib/openssh/sftp-server
"""

_SSHD_UNIT = """\
[Unit]
Description=OpenSSH server of this multihost host
[Service]
ExecStartPre=/bin/mkdir -p /run/sshd
ExecStart=/usr/sbin/sshd -D -e -f /etc/ssh/lakekeeper/sshd_config
Restart=on-failure
RestartSec=0.2
"""

# Runs as PID 1 of the new PID namespace, in new mount/UTS(/cgroup) namespaces,
# inside the host's network namespace.
_INIT_SCRIPT = """\
#!/bin/sh
set -eu
W={workdir}
mount --make-rprivate /
mount -t proc proc /proc
for d in {overlays}; do
  mount -t overlay overlay -o "lowerdir=$d,upperdir=$W/upper$d,workdir=$W/work$d" "$d"
done
mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs /run
mkdir -p /run/sshd /run/lock
hostname "$(cat /etc/hostname)"
{final}
"""

_EXEC_SYSTEMD = """\
mount -o remount,ro /sys
mount -t cgroup2 cgroup2 /sys/fs/cgroup
mount --bind "$W/units" /usr/lib/systemd/system
mount --bind "$W/empty" /usr/lib/systemd/system-generators
mount --bind "$W/console.log" /dev/console
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /tmp
export container=lakekeeper-multihost
exec /lib/systemd/systemd --system --log-target=console --log-level=notice \\
  --default-standard-output=null --default-standard-error=null
"""

_EXEC_SSHD = """\
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /tmp
exec /usr/sbin/sshd -D -e -f /etc/ssh/lakekeeper/sshd_config
"""


def _teardown(namespaces: Sequence[str], cg_session: Path | None) -> None:
    existing = set(_run(["ip", "netns", "list"], check=False).stdout.split())
    namespaces = [ns for ns in namespaces if ns in existing]
    for ns in namespaces:
        for pid in _run(["ip", "netns", "pids", ns], check=False).stdout.split():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + 5
    for ns in namespaces:
        while _run(["ip", "netns", "pids", ns], check=False).stdout.split() and time.monotonic() < deadline:
            time.sleep(0.02)
        _run(["ip", "netns", "del", ns], check=False)
    if cg_session is not None and cg_session.exists():
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            for d in sorted((p for p in cg_session.rglob("*") if p.is_dir()),
                            key=lambda p: len(p.parts), reverse=True) + [cg_session]:
                try:
                    d.rmdir()
                except OSError:
                    pass
            if not cg_session.exists():
                break
            time.sleep(0.05)
        try:
            cg_session.parent.rmdir()  # only when no other session is using it
        except OSError:
            pass


def _process_alive(pid: int) -> bool:
    """A live process (not merely a thread id, which /proc also resolves)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return f"\nTgid:\t{pid}\n" in status and "\nState:\tZ" not in status


def reap_stale() -> None:
    """Remove namespaces/cgroups of sessions whose creating process is gone
    (a test run that was killed). Never touches live sessions."""
    out = _run(["ip", "netns", "list"], check=False).stdout
    stale: dict[str, list[str]] = {}
    for line in out.splitlines():
        name = line.split()[0] if line.split() else ""
        parts = name.split("-")
        if len(parts) != 4 or parts[0] != NS_PREFIX or not parts[1].isdigit():
            continue
        pid = int(parts[1])
        if pid == os.getpid() or _process_alive(pid):
            continue
        stale.setdefault("-".join(parts[:3]), []).append(name)
    root = _cgroup2_root()
    for session, names in stale.items():
        cg = root / "lakekeeper-multihost" / session if root else None
        _teardown(names, cg)


def main(argv: Sequence[str] | None = None) -> int:
    """Manual use: python -m multihost [N] [WORKDIR] — start, print, wait for Ctrl-C."""
    import argparse
    import tempfile

    ap = argparse.ArgumentParser(prog="python -m multihost", description=main.__doc__)
    ap.add_argument("count", nargs="?", type=int, default=3)
    ap.add_argument("workdir", nargs="?")
    ap.add_argument("--no-systemd", action="store_true")
    args = ap.parse_args(argv)
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="multihost-"))

    def _stop(signum, frame):
        raise KeyboardInterrupt

    # also when started in the background (where SIGINT is ignored)
    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    with MultiHost(args.count, workdir, systemd=False if args.no_systemd else None) as mh:
        print(f"{mh.count} hosts up in {mh.started_in:.2f}s (systemd: {mh.systemd})")
        print(f"inventory: {mh.write_inventory()}")
        for h in mh.hosts:
            print(f"  {h.name} {h.address} netns={h.netns} pid1={h.init_pid}")
        print(f"controller: ip netns exec {mh.ctl_ns} <cmd>; "
              f"ssh: {' '.join(mh.controller_cmd(mh.ssh_argv(mh.hosts[0])))}")
        try:
            signal.pause()
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
