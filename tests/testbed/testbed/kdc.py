"""A real MIT Kerberos KDC on loopback for tests.

Uses the Debian packages ``krb5-kdc krb5-admin-server krb5-user`` (the
bootstrap installs them with ``LAKEKEEPER_APT=1``). Everything lives in one
temporary directory: a realm database, ``kdc.conf``, ``krb5.conf``, keytabs and
the KDC's log. Nothing under ``/etc`` is read or written: clients select this
realm with ``KRB5_CONFIG`` (see :meth:`KDC.env`), the KDC tools with
``KRB5_KDC_PROFILE``. Setup and start take well under a second.

    from testbed.kdc import running_kdc

    with running_kdc() as kdc:
        principal, keytab = kdc.add_principal("lakekeeper")
        kdc.kinit(principal, keytab, ccache="FILE:/tmp/cc", lifetime="5s")

As a pytest fixture (session scoped; skipped when the packages are missing)::

    from testbed.kdc import kdc  # noqa: F401  (in a conftest.py)

    def test_x(kdc):
        principal, keytab = kdc.add_principal("alice")

Command line (by hand, or from a molecule prepare/cleanup playbook)::

    python -m testbed.kdc                 # temporary realm in the foreground, Ctrl-C stops it
    python -m testbed.kdc start DIR       # realm in DIR (kept), krb5kdc in the background, JSON out
    python -m testbed.kdc stop DIR [--remove]

Short tickets: ``kinit -l 5s`` works (``max_life`` in ``kdc.conf`` is only an
upper bound, default ``1d``), so an expired ticket takes a few seconds.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Iterator

DEFAULT_REALM = "LAKEKEEPER.TEST"

_SBIN = ("/usr/sbin", "/usr/local/sbin", "/sbin")
_TOOLS = ("krb5kdc", "kdb5_util", "kadmin.local", "kinit", "klist", "kdestroy")


def _which(name: str) -> str | None:
    path = os.environ.get("PATH", "") + os.pathsep + os.pathsep.join(_SBIN)
    return shutil.which(name, path=path)


def missing_tools() -> list[str]:
    """The MIT Kerberos programs that are not installed (empty when all are)."""
    return [t for t in _TOOLS if _which(t) is None]


def free_port(host: str = "127.0.0.1") -> int:
    """A port that is free for both TCP and UDP on ``host`` (the KDC uses both)."""
    for _unused in range(50):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp:
            tcp.bind((host, 0))
            port = tcp.getsockname()[1]
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
                try:
                    udp.bind((host, port))
                except OSError:
                    continue
        return port
    raise RuntimeError("no free TCP+UDP port found")


def write_krb5_conf(path: Path | str, realm: str, port: int, workdir: Path | str,
                    host: str = "127.0.0.1") -> Path:
    """Write a client ``krb5.conf`` for ``realm`` served at ``host:port``.

    Also useful to simulate a KDC that is down: point it at a port where
    nothing listens.
    """
    path = Path(path)
    workdir = Path(workdir)
    path.write_text(
        f"""[libdefaults]
    default_realm = {realm}
    dns_lookup_kdc = false
    dns_lookup_realm = false
    dns_canonicalize_hostname = false
    rdns = false
    ignore_acceptor_hostname = true
    default_ccache_name = FILE:{workdir}/ccache_default
    max_retries = 1
    kdc_timeout = 2s

[realms]
    {realm} = {{
        kdc = {host}:{port}
        admin_server = {host}:{port}
    }}

[logging]
    default = FILE:{workdir}/krb5lib.log
""")
    return path


class KDC:
    """One realm with its KDC. Create with :func:`running_kdc` or call
    :meth:`create` then :meth:`start` / :meth:`stop` yourself."""

    def __init__(self, workdir: Path | str, realm: str = DEFAULT_REALM,
                 max_life: str = "1d", max_renewable_life: str = "0",
                 host: str = "127.0.0.1"):
        self.workdir = Path(workdir)
        self.realm = realm
        self.max_life = max_life
        self.max_renewable_life = max_renewable_life
        self.host = host
        self.port: int = 0
        self.kdc_conf = self.workdir / "kdc.conf"
        self.krb5_conf = self.workdir / "krb5.conf"
        self.log = self.workdir / "kdc.log"
        self.keytab_dir = self.workdir / "keytabs"
        self._proc: subprocess.Popen | None = None

    # -- environment -------------------------------------------------------
    @property
    def env(self) -> dict[str, str]:
        """Variables a client needs (merge into ``os.environ``)."""
        return {"KRB5_CONFIG": str(self.krb5_conf),
                "KRB5_KDC_PROFILE": str(self.kdc_conf)}

    def _run_env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = dict(os.environ)
        env.update(self.env)
        env["LC_ALL"] = "C"
        env["PATH"] = env.get("PATH", "") + os.pathsep + os.pathsep.join(_SBIN)
        env.update(extra or {})
        return env

    def _run(self, argv: list[str], **kw) -> subprocess.CompletedProcess:
        extra = kw.pop("env", None)
        return subprocess.run(argv, env=self._run_env(extra), check=True,
                              capture_output=True, text=True, timeout=30, **kw)

    # -- realm ---------------------------------------------------------------
    def create(self) -> "KDC":
        """Write the configuration and create the realm database."""
        missing = missing_tools()
        if missing:
            raise RuntimeError(
                "MIT Kerberos tools missing: " + ", ".join(missing)
                + " (apt-get install krb5-kdc krb5-admin-server krb5-user)")
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.keytab_dir.mkdir(exist_ok=True)
        self.port = free_port(self.host)
        w = self.workdir
        self.kdc_conf.write_text(
            f"""[kdcdefaults]
    kdc_listen = {self.host}:{self.port}
    kdc_tcp_listen = {self.host}:{self.port}

[realms]
    {self.realm} = {{
        database_name = {w}/principal
        key_stash_file = {w}/stash
        acl_file = {w}/kadm5.acl
        max_life = {self.max_life}
        max_renewable_life = {self.max_renewable_life}
        supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
        default_principal_flags = +preauth
    }}

[logging]
    kdc = FILE:{self.log}
    admin_server = FILE:{w}/kadmin.log
""")
        (w / "kadm5.acl").write_text("")
        write_krb5_conf(self.krb5_conf, self.realm, self.port, w, self.host)
        # -W: do not wait for /dev/random entropy
        self._run(["kdb5_util", "-r", self.realm, "create", "-s", "-W",
                   "-P", "lakekeeper-test-master-key"])
        (w / "testbed-kdc.json").write_text(json.dumps(
            {"realm": self.realm, "port": self.port, "host": self.host}))
        return self

    @classmethod
    def load(cls, workdir: Path | str) -> "KDC":
        """The realm that :meth:`create` made in ``workdir`` earlier (maybe by
        another process)."""
        state = json.loads((Path(workdir) / "testbed-kdc.json").read_text())
        kdc = cls(workdir, realm=state["realm"], host=state["host"])
        kdc.port = state["port"]
        return kdc

    def principal(self, name: str) -> str:
        return name if "@" in name else f"{name}@{self.realm}"

    def add_principal(self, name: str, keytab: Path | str | None = None,
                      mode: int = 0o600) -> tuple[str, Path]:
        """Create ``name`` with a random key and export it to a keytab.

        Returns ``(principal, keytab_path)``. Calling it again for the same
        principal re-randomizes the key (older keytabs become stale)."""
        principal = self.principal(name)
        if keytab is None:
            keytab = self.keytab_dir / (principal.split("@")[0].replace("/", "_") + ".keytab")
        keytab = Path(keytab)
        exists = self.kadmin(f"getprinc {principal}", check=False).returncode == 0
        if not exists:
            self.kadmin(f"addprinc -randkey {principal}")
        if keytab.exists():
            keytab.unlink()
        # ktadd randomizes the key (kvno+1) and writes it to the keytab
        self.kadmin(f"ktadd -k {keytab} {principal}")
        keytab.chmod(mode)
        return principal, keytab

    def kadmin(self, query: str, check: bool = True) -> subprocess.CompletedProcess:
        argv = ["kadmin.local", "-r", self.realm, "-q", query]
        res = subprocess.run(argv, env=self._run_env(), capture_output=True, text=True,
                             timeout=30, check=False)
        # kadmin.local -q exits 0 even when the query fails; look at stderr
        failed = res.returncode != 0 or "error" in res.stderr.lower() \
            or "does not exist" in res.stderr
        if failed:
            res = subprocess.CompletedProcess(argv, res.returncode or 1, res.stdout, res.stderr)
            if check:
                raise RuntimeError(f"kadmin.local -q {query!r} failed: {res.stderr.strip()}")
        return res

    # -- the KDC process ---------------------------------------------------
    def start(self, timeout: float = 10.0) -> "KDC":
        if self._proc is not None and self._proc.poll() is None:
            return self
        krb5kdc = _which("krb5kdc")
        logf = open(self.workdir / "krb5kdc.stdout", "ab")
        self._proc = subprocess.Popen(
            [krb5kdc, "-n", "-r", self.realm, "-P", str(self.workdir / "krb5kdc.pid")],
            env=self._run_env(), stdout=logf, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True)
        logf.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"krb5kdc exited with {self._proc.returncode}: "
                                   + self._tail())
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.settimeout(0.2)
                if s.connect_ex((self.host, self.port)) == 0:
                    return self
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("krb5kdc did not start listening: " + self._tail())

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)

    @property
    def pidfile(self) -> Path:
        return self.workdir / "krb5kdc.pid"

    def start_daemon(self, timeout: float = 10.0) -> int:
        """Start krb5kdc in the background, detached from this process (it
        outlives it); returns its pid. Stop it with :meth:`stop_daemon`."""
        if self.pidfile.exists():
            self.stop_daemon()
        krb5kdc = _which("krb5kdc")
        subprocess.run([krb5kdc, "-r", self.realm, "-P", str(self.pidfile)],
                       env=self._run_env(), check=True, timeout=30,
                       stdin=subprocess.DEVNULL, capture_output=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.settimeout(0.2)
                if self.pidfile.exists() and s.connect_ex((self.host, self.port)) == 0:
                    text = self.pidfile.read_text().strip()
                    if text.isdigit():  # krb5kdc creates the file, then writes its pid: read it once written
                        return int(text)
            time.sleep(0.05)
        self.stop_daemon()
        raise RuntimeError("krb5kdc did not start listening: " + self._tail())

    def daemon_pid(self) -> int | None:
        """The pid of the krb5kdc that :meth:`start_daemon` started, if it still runs."""
        try:
            pid = int(self.pidfile.read_text().strip())
            os.kill(pid, 0)
        except (FileNotFoundError, ValueError, ProcessLookupError):
            return None
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().split(")")[-1].split()[0] == "Z":  # zombie
                    return None
        except OSError:
            pass
        return pid

    def stop_daemon(self) -> None:
        """Stop the krb5kdc that :meth:`start_daemon` started (by its pidfile)."""
        try:
            pid = int(self.pidfile.read_text().strip())
        except (FileNotFoundError, ValueError):
            return
        try:
            os.kill(pid, signal.SIGTERM)
            for _unused in range(100):
                os.kill(pid, 0)
                time.sleep(0.05)
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.pidfile.unlink(missing_ok=True)

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def _tail(self) -> str:
        parts = []
        for f in (self.workdir / "krb5kdc.stdout", self.log):
            if f.exists():
                parts.append(f.read_text(errors="replace")[-2000:])
        return "\n".join(parts)

    # -- client helpers --------------------------------------------------------
    def kinit(self, principal: str, keytab: Path | str, ccache: str,
              lifetime: str | None = None) -> subprocess.CompletedProcess:
        argv = ["kinit", "-kt", str(keytab)]
        if lifetime:
            argv += ["-l", lifetime]
        argv.append(self.principal(principal))
        return self._run(argv, env={"KRB5CCNAME": ccache})

    def klist(self, ccache: str) -> subprocess.CompletedProcess:
        """``klist`` on ``ccache`` (does not raise; look at ``returncode``)."""
        return subprocess.run(["klist", "-c", ccache], env=self._run_env(),
                              capture_output=True, text=True, timeout=30, check=False)

    def dead_krb5_conf(self, path: Path | str | None = None) -> Path:
        """A ``krb5.conf`` for this realm that points at a port nobody listens on."""
        path = Path(path) if path else self.workdir / "krb5-dead.conf"
        return write_krb5_conf(path, self.realm, free_port(self.host), self.workdir, self.host)

    def __enter__(self) -> "KDC":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


@contextlib.contextmanager
def running_kdc(realm: str = DEFAULT_REALM, workdir: Path | str | None = None,
                max_life: str = "1d", max_renewable_life: str = "0") -> Iterator[KDC]:
    """Create a realm in a temporary (or given) directory, start its KDC,
    yield the :class:`KDC`, stop it and remove the temporary directory."""
    tmp = None
    if workdir is None:
        tmp = tempfile.mkdtemp(prefix="lakekeeper-kdc-")
        workdir = tmp
    kdc = KDC(workdir, realm=realm, max_life=max_life, max_renewable_life=max_renewable_life)
    try:
        kdc.create().start()
        yield kdc
    finally:
        kdc.stop()
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


try:  # the pytest fixture, only when pytest is importable
    import pytest

    @pytest.fixture(scope="session")
    def kdc() -> Iterator[KDC]:
        """A session-wide realm ``LAKEKEEPER.TEST`` with a running KDC on loopback."""
        missing = missing_tools()
        if missing:
            pytest.skip("MIT Kerberos not installed (missing " + ", ".join(missing)
                        + "); apt-get install krb5-kdc krb5-admin-server krb5-user")
        with running_kdc() as k:
            yield k
except ImportError:  # pragma: no cover
    pass


def main(argv: list[str] | None = None) -> int:  # pragma: no cover - manual/molecule use
    import argparse

    parser = argparse.ArgumentParser(prog="python -m testbed.kdc", description=__doc__.split("\n", maxsplit=1)[0])
    sub = parser.add_subparsers(dest="cmd")
    sub.add_parser("run", help="foreground: start a temporary realm, Ctrl-C stops it (default)")
    start = sub.add_parser("start", help="create DIR's realm if missing, add principals, start krb5kdc "
                                         "in the background unless it runs, print a JSON description "
                                         '("started": false when it was running)')
    start.add_argument("dir")
    start.add_argument("--realm", default=DEFAULT_REALM)
    start.add_argument("--principal", action="append", default=None,
                       help="principal to create with a keytab in DIR/keytabs (repeatable; "
                            "default lakekeeper)")
    stop = sub.add_parser("stop", help="stop DIR's krb5kdc")
    stop.add_argument("dir")
    stop.add_argument("--remove", action="store_true", help="also delete DIR")
    args = parser.parse_args(argv)

    if args.cmd == "start":
        workdir = Path(args.dir)
        if (workdir / "testbed-kdc.json").exists():
            k = KDC.load(workdir)
        else:
            k = KDC(workdir, realm=args.realm).create()
        keytabs = {}
        for name in args.principal or ["lakekeeper"]:
            keytab = k.keytab_dir / (name.split("@")[0].replace("/", "_") + ".keytab")
            if keytab.exists():
                keytabs[k.principal(name)] = str(keytab)
            else:
                principal, path = k.add_principal(name, keytab)
                keytabs[principal] = str(path)
        pid = k.daemon_pid()
        started = pid is None
        if started:
            pid = k.start_daemon()
        print(json.dumps({"realm": k.realm, "port": k.port, "pid": pid, "started": started,
                          "env": k.env, "krb5_conf": str(k.krb5_conf), "keytabs": keytabs}))
        return 0
    if args.cmd == "stop":
        workdir = Path(args.dir)
        if (workdir / "testbed-kdc.json").exists():
            KDC.load(workdir).stop_daemon()
        if args.remove:
            shutil.rmtree(workdir, ignore_errors=True)
        return 0

    with running_kdc() as k:
        principal, keytab = k.add_principal("lakekeeper")
        for key, val in k.env.items():
            print(f"export {key}={val}")
        print(f"# principal {principal}, keytab {keytab}, KDC {k.host}:{k.port}")
        print("# Ctrl-C stops the KDC", flush=True)
        try:
            while k.running:
                time.sleep(1)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
