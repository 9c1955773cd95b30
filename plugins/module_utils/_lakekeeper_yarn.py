# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private helpers of the lakekeeper.hive modules (not a public API): an
engine run under supervision, and the YARN application it becomes.

The engine runs as a child in its own session (spark-submit, or the
embedded python), its stdout and stderr read while it runs: spark-submit's
log (stderr) names the YARN application (``Submitted application
application_...``) as soon as it is submitted, in client and cluster mode.
The application must not outlive the task:

* the module's own stop - SIGTERM, SIGINT or SIGHUP (ansible-playbook
  passes SIGTERM and SIGINT to its workers' process groups: an AWX job
  cancelled, ansible-playbook killed), or the controller gone (the module's
  stdout, a pipe to the connection, has no reader any more) - is caught:
  the YARN application is killed (``yarn application -kill``), then the
  engine's process group gets SIGTERM, SIGKILL after a grace period; the
  module then fails with what it did (``cancelled``);
* SIGKILL cannot be caught (async_wrapper kills the module's process group
  with it when an ``async`` task times out): a watchdog, a small process in a
  session of its own started before the engine, holds the read end of a
  pipe whose write end only the module holds. The module tells it the
  engine's process group and the application id through the pipe, and
  ``exited`` once the engine has ended; if the pipe closes before that
  (the module died, however), the watchdog stops the application the same
  way and exits.

The engine's journal leaves a table recoverable after such a stop; the next
run's lease takes over and recovers it.

The Hadoop client commands the runs need besides spark-submit (read and
remove a cluster-mode result, kill an application) come as argv lists
(``hdfs dfs``/``yarn application``, or the same classes through Spark's own
``spark-class``, which needs no Hadoop installation beside Spark) and run
with the run's credentials: its environment (``KRB5CCNAME``, ...), a ticket
of its own from ``spark_submit.keytab`` (kinit into a private cache, made
right before each use: a long run outlives a ticket), and
``HADOOP_PROXY_USER`` for ``spark_submit.proxy_user``.

This file imports nothing from the collection, so tests can load it by path.
Why one file of more than 500 lines: the supervised run, the watchdog and the
stop they share are one protocol (the pipe's lines, who stops what, in which
order), read together.
"""

from __future__ import annotations

import collections
import json
import os
import re
import select
import shlex
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time

# The lines of spark-submit's log (stderr) that name the run's YARN application: Hadoop's YarnClientImpl
# "Submitted application <id>", Spark's Client "Submitting application <id> to ResourceManager" and
# "Application report for <id> (state: ...)" (Spark 3.3 to 4.x, plain or JSON-structured log lines).
_APP_ID_LINE = re.compile(r"(?:Submitted application|Submitting application|Application report for)\s+"
                          r"(application_\d+_\d+)")
_SUBMITTED = re.compile(r"(?:Submitted application|Submitting application)\s+(application_\d+_\d+)")
# A cluster-mode driver's exit code, in the application's diagnostics that spark-submit logs at its end
# ("Application diagnostics message: User application exited with status 1").
_USER_EXIT = re.compile(r"User application exited with status (-?\d+)")

FS_SHELL_CLASS = "org.apache.hadoop.fs.FsShell"
APPLICATION_CLI_CLASS = "org.apache.hadoop.yarn.client.cli.ApplicationCLI"
# Signals the module catches while the engine runs.
CANCEL_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
# Seconds the engine's process group has between SIGTERM and SIGKILL.
GRACE = 10.0
# Seconds a Hadoop client command may take (a JVM start, a few RPCs).
HELPER_TIMEOUT = 180.0
# Lines of the engine's stderr kept (its tail is returned; the log of a long run is large).
STDERR_LINES = 2000


def application_id_in(text):
    """The YARN application id a spark-submit log line (or text) names, or
    None; in a text naming more than one, the last submitted: a driver whose
    context failed to start and was started once more (the engine's
    session.py) has submitted a second application, the one that runs."""
    submitted = _SUBMITTED.findall(text or "")
    if submitted:
        return submitted[-1]
    match = _APP_ID_LINE.search(text or "")
    return match.group(1) if match else None


def driver_exit_status(text):
    """A cluster-mode driver's exit code from spark-submit's log (the last
    ``User application exited with status N``), or None (0 is never logged
    that way: a driver that exited 0 leaves the application SUCCEEDED)."""
    found = _USER_EXIT.findall(text or "")
    return int(found[-1]) if found else None


def join_cmd(argv):
    """One shell-quoted line (for humans; nothing here runs a shell)."""
    return " ".join(shlex.quote(str(a)) for a in argv)


def tail(text, count):
    return (text or "").splitlines()[-count:]


# --------------------------------------------------------------------------
# Hadoop client commands
# --------------------------------------------------------------------------

def fs_argv(tool, *args):
    """A Hadoop FsShell command: ``tool`` is ``("hdfs", path)`` (``hdfs dfs ...``)
    or ``("spark-class", path)`` (the same class through Spark's launcher)."""
    kind, path = tool
    if kind == "hdfs":
        return [path, "dfs"] + list(args)
    if kind == "spark-class":
        return [path, FS_SHELL_CLASS] + list(args)
    raise ValueError("no FsShell in %r" % (tool,))


def cat_argv(tool, uri):
    return fs_argv(tool, "-cat", uri)


def rm_argv(tool, uri, *more):
    """Remove files now (not into the trash: they are ours, and small; -f: one not there is no error)."""
    return fs_argv(tool, "-rm", "-f", "-skipTrash", uri, *more)


def application_argv(tool, *args):
    """A YARN ApplicationCLI command: ``tool`` is ``("yarn", path)``
    (``yarn application ...``) or ``("spark-class", path)``."""
    kind, path = tool
    if kind == "yarn":
        return [path, "application"] + list(args)
    if kind == "spark-class":
        return [path, APPLICATION_CLI_CLASS, "application"] + list(args)
    raise ValueError("no ApplicationCLI in %r" % (tool,))


def kill_argv(tool, application_id):
    return application_argv(tool, "-kill", application_id)


def kinit_argv(kinit, keytab, principal, cache):
    """A ticket for ``principal`` from ``keytab`` into the credential cache ``cache`` (a file)."""
    return [kinit, "-k", "-t", keytab, "-c", "FILE:%s" % cache, principal]


class Helpers:
    """The Hadoop client commands of a run, with its credentials.

    ``fs_tool`` and ``yarn_tool`` are ``(kind, path)`` pairs (fs_argv,
    application_argv) or None; ``env`` is the complete environment of the
    engine run. With ``kinit``, ``keytab`` and ``principal`` each use first
    gets a ticket into a private cache (``environ``); ``proxy_user`` is
    passed as ``HADOOP_PROXY_USER``, so the commands act as the user the
    application runs as."""

    def __init__(self, env, fs_tool=None, yarn_tool=None, kinit=None, keytab=None, principal=None,
                 proxy_user=None):
        self.env = dict(env)
        self.fs_tool = fs_tool
        self.yarn_tool = yarn_tool
        self.kinit = kinit
        self.keytab = keytab
        self.principal = principal
        if proxy_user:
            self.env["HADOOP_PROXY_USER"] = str(proxy_user)

    @property
    def uses_keytab(self):
        return bool(self.keytab and self.principal)

    def environ(self, cache_dir):
        """``(env, error)``: the environment of a command now; with a keytab,
        after a fresh ticket in ``cache_dir`` (``error``: why there is none)."""
        if not self.uses_keytab:
            return self.env, None
        if not self.kinit:
            return self.env, "no kinit to get a ticket from spark_submit.keytab"
        cache = os.path.join(cache_dir, "krb5cc_lakekeeper")
        argv = kinit_argv(self.kinit, self.keytab, self.principal, cache)
        try:
            done = subprocess.run(argv, env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, timeout=60, check=False)
        except (OSError, subprocess.SubprocessError) as exc:
            return self.env, "%s: %s" % (join_cmd(argv), exc)
        if done.returncode != 0:
            return self.env, "%s: rc %s: %s" % (join_cmd(argv), done.returncode,
                                                " ".join(tail(done.stderr.decode("utf-8", "replace"), 3)))
        return dict(self.env, KRB5CCNAME="FILE:%s" % cache), None


def run_argv(argv, env, timeout=HELPER_TIMEOUT):
    """``(rc, stdout, stderr)`` of an argv list (no shell); rc None when it could not run or timed out."""
    try:
        done = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        return None, "", "timed out after %ss: %s" % (timeout, (exc.stderr or b"").decode("utf-8", "replace"))
    except OSError as exc:
        return None, "", str(exc)
    return done.returncode, done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace")


# --------------------------------------------------------------------------
# stopping an application
# --------------------------------------------------------------------------

def _group_alive(pgid):
    """Whether a process of the group still runs: zombies (dead, not yet
    reaped by whoever inherited them) do not count; /proc tells them apart."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        names = os.listdir("/proc")
    except OSError:
        return True
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] != "Z":  # state, ppid, pgrp
            return True
    return False


def terminate_group(pgid, grace=GRACE, proc=None):
    """SIGTERM to a process group, SIGKILL to what is left of it after
    ``grace`` seconds. ``proc`` (the group leader, when it is our child) is
    reaped meanwhile. Returns the last signal sent, or None when the group
    was already gone."""
    if proc is not None:
        proc.poll()
    if not _group_alive(pgid):
        return None
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return None
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if proc is not None:
            proc.poll()
        if not _group_alive(pgid):
            return "SIGTERM"
        time.sleep(0.1)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        return "SIGTERM"
    if proc is not None:
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
    return "SIGKILL"


def stop_application(pgid, application_id, helpers, cache_dir, grace=GRACE, proc=None, files=()):
    """Stop a run: kill its YARN application (when its id is known and a
    YARN client is), then its engine's process group (``pgid``), then
    remove the run's ``files`` on the cluster's filesystem (a cluster-mode
    run's result and hand-over files: no one reads them after a stop, and
    the analysis names every table's paths and sizes). The application
    first: a client-mode driver stopped first would end it as if it had
    succeeded. Returns what was done, one dict per action."""
    actions = []
    if application_id and helpers is not None and helpers.yarn_tool:
        argv = kill_argv(helpers.yarn_tool, application_id)
        env, error = helpers.environ(cache_dir)
        rc, _out, err = run_argv(argv, env)
        actions.append(dict(action="kill_application", application_id=application_id, cmd=join_cmd(argv), rc=rc,
                            stderr_lines=tail(err, 5) + ([error] if error else [])))
    if pgid:
        actions.append(dict(action="stop_engine", pgid=pgid, signal=terminate_group(pgid, grace, proc)))
    if files and helpers is not None and helpers.fs_tool:
        argv = rm_argv(helpers.fs_tool, *files)
        env, error = helpers.environ(cache_dir)
        rc, _out, err = run_argv(argv, env)
        actions.append(dict(action="remove_files", files=list(files), cmd=join_cmd(argv), rc=rc,
                            stderr_lines=tail(err, 5) + ([error] if error else [])))
    return actions


# --------------------------------------------------------------------------
# the watchdog
# --------------------------------------------------------------------------

def _log(path, text):
    if not path:
        return
    try:
        with open(path, "a") as handle:
            handle.write("%s %s\n" % (time.strftime("%Y-%m-%dT%H:%M:%S"), text))
    except OSError:
        pass


def watch(read_fd, helpers, grace=GRACE, log_path=None):
    """The watchdog's loop: read ``pgid N``, ``files [JSON list]``, ``app ID``
    and ``exited`` lines until the pipe closes; if it closes before
    ``exited``, stop the application (stop_application). Returns the actions
    taken (None when there was nothing to do)."""
    pgid = application_id = None
    files = []
    pending = b""
    while True:
        try:
            chunk = os.read(read_fd, 4096)
        except OSError:
            chunk = b""
        if not chunk:
            break
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            word, _sep, value = line.decode("utf-8", "replace").partition(" ")
            if word == "pgid":
                pgid = int(value)
            elif word == "files":
                files = json.loads(value)
            elif word == "app":
                application_id = value.strip()
                _log(log_path, "watching application %s (process group %s)" % (application_id, pgid))
            elif word == "exited":
                _log(log_path, "the engine ended; nothing to stop")
                return None
    _log(log_path, "the module is gone while the engine runs (process group %s, application %s): stopping it"
         % (pgid, application_id))
    cache_dir = tempfile.mkdtemp(prefix="lakekeeper-watchdog-")
    try:
        actions = stop_application(pgid, application_id, helpers, cache_dir, grace, files=files)
    finally:
        shutil.rmtree(cache_dir, ignore_errors=True)
    _log(log_path, "done: %r" % (actions,))
    return actions


def start_watchdog(helpers, grace=GRACE, log_path=None):
    """Start the watchdog (watch) in a session of its own (so that a kill of
    the module's process group does not reach it), detached from the
    module's stdio (the connection waits for the end of the module's
    output). Returns the write end of its pipe: the module's alone."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child, which never returns (exercised by the unit tests)
        try:
            os.setsid()
            if os.fork():
                os._exit(0)
            for signum in CANCEL_SIGNALS:
                signal.signal(signum, signal.SIG_DFL)
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            keep = sorted((read_fd,))
            os.closerange(3, keep[0])
            os.closerange(keep[0] + 1, max(keep[0] + 1, _max_fd()))
            watch(read_fd, helpers, grace, log_path)
        finally:
            os._exit(0)
    os.close(read_fd)
    os.waitpid(pid, 0)
    return write_fd


def _max_fd():
    try:
        return min(os.sysconf("SC_OPEN_MAX"), 65536)
    except (ValueError, OSError):
        return 4096


def _send(fd, text):
    if fd is None:
        return
    try:
        os.write(fd, (text + "\n").encode("utf-8"))
    except OSError:
        pass


# --------------------------------------------------------------------------
# the supervised run
# --------------------------------------------------------------------------

class _Controller:
    """Whether whoever reads the module's output (the connection to the
    controller) is gone: the module's stdout, when it is a pipe or a socket,
    reports an error or a hang-up once no reader is left."""

    def __init__(self, fd=1):
        self._poll = None
        try:
            mode = os.fstat(fd).st_mode
        except OSError:
            return
        if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
            self._poll = select.poll()
            self._poll.register(fd, 0)  # no events asked for: errors and hang-ups are always reported

    def gone(self):
        if self._poll is None:
            return False
        return any(events & (select.POLLERR | select.POLLHUP) for _fd, events in self._poll.poll(0))


class Outcome:
    """What a supervised run gives: the exit code, stdout, the tail of stderr,
    the application id, and ``cancelled`` (None, or why and what was done)."""

    def __init__(self, rc, stdout, stderr, application_id, cancelled):
        self.rc = rc
        self.stdout = stdout
        self.stderr = stderr
        self.application_id = application_id
        self.cancelled = cancelled


class Supervised:
    """One engine run under supervision (see the module's docstring).

    ``argv`` runs (no shell) with ``env`` (complete) in ``cwd``, in a new
    session. ``helpers`` (Helpers, or None) stop its application;
    ``cache_dir`` is a private directory for their ticket; ``watchdog``
    starts the watchdog; ``controller_fd`` is the module's output;
    ``remote_files`` are the run's files on the cluster's filesystem, removed
    if the run is stopped (``stop_application``)."""

    def __init__(self, argv, env, cwd=None, helpers=None, cache_dir=None, watchdog=True, grace=GRACE,
                 poll=0.5, controller_fd=1, watchdog_log=None, remote_files=()):
        self.argv = list(argv)
        self.env = env
        self.cwd = cwd
        self.helpers = helpers
        self.cache_dir = cache_dir
        self.watchdog = watchdog
        self.grace = grace
        self.poll = poll
        self.controller_fd = controller_fd
        self.watchdog_log = watchdog_log
        self.remote_files = list(remote_files)
        self.application_id = None
        self._pipe = None
        self._lock = threading.Lock()
        self._signals = []
        self._stderr = collections.deque(maxlen=STDERR_LINES)
        self._stdout = []

    def _on_signal(self, signum, _frame):
        self._signals.append(signum)

    def _read_stdout(self, stream):
        for chunk in iter(lambda: stream.read(65536), b""):
            self._stdout.append(chunk)

    def _read_stderr(self, stream):
        for raw in iter(stream.readline, b""):
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            self._stderr.append(line)
            found = application_id_in(line)
            # the first id named; then only a second submission (a retried start) replaces it
            if found and found != self.application_id and (self.application_id is None or _SUBMITTED.search(line)):
                with self._lock:
                    self.application_id = found
                    _send(self._pipe, "app %s" % found)

    def _install(self):
        if threading.current_thread() is not threading.main_thread():
            return {}
        return dict((signum, signal.signal(signum, self._on_signal)) for signum in CANCEL_SIGNALS)

    def run(self):
        """Run the engine to its end (or until it is stopped); an Outcome."""
        self._pipe = start_watchdog(self.helpers, self.grace, self.watchdog_log) if self.watchdog else None
        previous = {}
        try:
            proc = subprocess.Popen(self.argv, env=self.env, cwd=self.cwd, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
            _send(self._pipe, "pgid %d" % proc.pid)
            if self.remote_files:
                _send(self._pipe, "files %s" % json.dumps(self.remote_files))
            readers = [threading.Thread(target=self._read_stdout, args=(proc.stdout,), daemon=True),
                       threading.Thread(target=self._read_stderr, args=(proc.stderr,), daemon=True)]
            for reader in readers:
                reader.start()
            previous = self._install()
            cancelled = self._wait(proc)
            for reader in readers:
                reader.join(timeout=60)
            proc.stdout.close()
            proc.stderr.close()
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            with self._lock:  # a reader still running must not write to a closed (or reused) descriptor
                _send(self._pipe, "exited")
                if self._pipe is not None:
                    os.close(self._pipe)
                    self._pipe = None
        return Outcome(proc.returncode, b"".join(self._stdout).decode("utf-8", "replace"),
                       "\n".join(self._stderr), self.application_id, cancelled)

    def _wait(self, proc):
        controller = _Controller(self.controller_fd)
        cancelled = None
        while True:
            try:
                proc.wait(timeout=self.poll)
                return cancelled
            except subprocess.TimeoutExpired:
                pass
            if cancelled is not None:
                continue
            reason = None
            if self._signals:
                reason = "received %s" % signal.Signals(self._signals[0]).name
            elif controller.gone():
                reason = "the controller is gone (the module's output has no reader)"
            if reason:
                with self._lock:
                    application_id = self.application_id
                actions = stop_application(proc.pid, application_id, self.helpers, self.cache_dir, self.grace,
                                           proc=proc, files=self.remote_files)
                cancelled = dict(reason=reason, actions=actions)
