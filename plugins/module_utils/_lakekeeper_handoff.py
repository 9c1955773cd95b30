# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private helper of lakekeeper_compact (not a public API): the relay of
``analyze_first``'s two files in cluster deploy mode.

In cluster mode the driver runs in a YARN container and has no file of the
edge node: it writes its analysis to ``<result_dir>/<run_id>.analysis.json``
on the cluster's filesystem and waits for ``<run_id>.go.json`` there
(_lakekeeper_argv.handoff_uris). The play reads and writes the edge node's
files it gave as ``analyze_first.analysis_file`` and ``go_file``, as in client
mode. While spark-submit waits for the application, a thread of the module
copies the one way and the other:

* the driver's analysis, once it is there (``-cat``: the engine writes it
  under a temporary name and renames it, so a read is whole or nothing), to
  the local analysis file (a temporary file renamed onto it, mode 0600);
* the play's go file, once it is there, to the cluster (``-put -f``, which
  copies to ``<name>._COPYING_`` and renames it: the driver reads the whole
  file or none). A stop the play writes before any analysis (its ``always:``
  after a failure) goes over the same way, and the driver ends. The relay
  ends with the go.

Each look at the cluster is one Hadoop client command (a JVM start, about a
second of CPU): every 2 s at first, each wait half as long again, at most
every 10 s; the local go file is looked at every half second. Both files on
the cluster are removed when the run ends (relay.remote_files with the
result's removal, one command).
"""

from __future__ import annotations

import os
import threading
import time

from ansible_collections.lakekeeper.hive.plugins.module_utils._lakekeeper_yarn import (
    cat_argv,
    fs_argv,
    join_cmd,
    run_argv,
    tail,
)

FIRST_LOOK = 2.0
MAX_LOOK = 10.0
GO_LOOK = 0.5
# what FsShell's -cat says of a file that is not there (yet)
_MISSING = ("No such file or directory", "FileNotFoundException", "does not exist")


def put_argv(tool, local, uri):
    """Copy the local file to ``uri``, replacing it (FsShell writes ``uri._COPYING_`` and renames it)."""
    return fs_argv(tool, "-put", "-f", local, uri)


def write_local(path, text):
    """``text`` to the local ``path`` by a rename (a reader sees all of it or nothing), mode 0600."""
    tmp = "%s.tmp-%d" % (path, os.getpid())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.replace(tmp, path)


class HandoffRelay(threading.Thread):
    """Relays the analysis from ``remote_analysis`` to ``local_analysis`` and
    the go from ``local_go`` to ``remote_go`` (see the module docstring) until
    both went over or ``stop()``. ``helpers`` (_lakekeeper_yarn.Helpers) give
    the Hadoop client and its credentials; ``cache_dir`` holds the relay's
    own ticket. The look intervals and ``clock`` are for tests."""

    def __init__(self, helpers, cache_dir, local_analysis, local_go, remote_analysis, remote_go,
                 first_look=FIRST_LOOK, max_look=MAX_LOOK, go_look=GO_LOOK, clock=time.time):
        threading.Thread.__init__(self, name="lakekeeper-handoff-relay")
        self.daemon = True
        self.helpers = helpers
        self.cache_dir = cache_dir
        self.local_analysis, self.local_go = local_analysis, local_go
        self.remote_analysis, self.remote_go = remote_analysis, remote_go
        self.first_look, self.max_look, self.go_look = first_look, max_look, go_look
        self.clock = clock
        self.analysis_at = None
        self.go_at = None
        self.looks = 0
        self.errors = []
        self._stopped = threading.Event()

    @property
    def remote_files(self):
        return [self.remote_analysis, self.remote_go]

    def stop(self, timeout=None):
        """Stop relaying (the application has ended) and wait for the thread."""
        self._stopped.set()
        if self.is_alive():
            self.join(timeout)

    def _error(self, what, argv, rc, err):
        self.errors = (self.errors + ["%s: %s: rc %s: %s" % (what, join_cmd(argv), rc, " ".join(tail(err, 2)))])[-5:]

    def _fetch_analysis(self, env):
        argv = cat_argv(self.helpers.fs_tool, self.remote_analysis)
        self.looks += 1
        rc, out, err = run_argv(argv, env)
        if rc == 0 and out.strip():
            try:
                write_local(self.local_analysis, out)
            except (IOError, OSError) as exc:
                self._error("writing the analysis to %s" % self.local_analysis, argv, rc, str(exc))
                return
            self.analysis_at = self.clock()
        elif rc == 0 or not any(m in (err or "") for m in _MISSING):
            self._error("reading the driver's analysis", argv, rc, err or "(empty)")

    def _send_go(self, env):
        if not os.path.isfile(self.local_go):
            return
        argv = put_argv(self.helpers.fs_tool, self.local_go, self.remote_go)
        rc, _out, err = run_argv(argv, env)
        if rc == 0:
            self.go_at = self.clock()
        else:
            self._error("sending the go to the driver", argv, rc, err)

    def run(self):
        cache = os.path.join(self.cache_dir, "relay")  # a ticket of its own: a stop kinits into the module's
        if not os.path.isdir(cache):
            os.mkdir(cache, 0o700)
        env, error = self.helpers.environ(cache)
        if error:
            self.errors.append(error)
        look = self.first_look
        next_look = self.clock() + look
        while not self._stopped.is_set():
            self._send_go(env)
            if self.go_at is not None:  # the play has decided: it needs no analysis any more
                return
            if self.analysis_at is None and self.clock() >= next_look:
                self._fetch_analysis(env)
                look = min(look * 1.5, self.max_look)
                next_look = self.clock() + look
            self._stopped.wait(self.go_look)

    def report(self):
        """What the relay did, for the module's result."""
        return dict(analysis_file=self.remote_analysis, go_file=self.remote_go, looks=self.looks,
                    analysis_relayed=self.analysis_at is not None, go_relayed=self.go_at is not None,
                    errors=list(self.errors))
