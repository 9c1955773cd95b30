# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""analyze_first in cluster mode: the relay of the analysis and the go
between the edge node and the driver's files on the cluster
(_lakekeeper_handoff). Here the Hadoop client is a stand-in ``hdfs`` that
does what FsShell's ``dfs -cat``, ``-put -f`` and ``-rm`` do on a local
directory (its messages and exit codes); the real client relays a YARN
cluster-mode driver's files in tests/testbed/test_yarn_playbooks.py."""

from __future__ import annotations

import json
import os
import stat
import threading
import time

from ansible_collections.lakekeeper.hive.plugins.module_utils import _lakekeeper_handoff as handoff
from ansible_collections.lakekeeper.hive.plugins.module_utils import _lakekeeper_yarn as yarn

# FsShell's behaviour on a local tree: -cat of a missing file says so on stderr with exit code 1; -put -f writes
# <dst>._COPYING_ and renames it; a file named *denied* cannot be read (exit code 1, another message)
FAKE_HDFS = r"""#!/bin/sh
echo "$@" >> "$HDFS_CALLS"
[ "$1" = dfs ] || exit 2
case "$2" in
  -cat)
    case "$3" in *denied*) echo "cat: Permission denied: user=etl, access=READ, inode=\"$3\"" >&2; exit 1;; esac
    [ -f "$3" ] || { echo "cat: \`$3': No such file or directory" >&2; exit 1; }
    exec cat "$3";;
  -put) cp "$4" "$5._COPYING_" && mv "$5._COPYING_" "$5";;
  -rm) shift 4; rm -f "$@";;
  *) exit 2;;
esac
"""


def relay_in(tmp_path, remote_analysis="analysis.json"):
    hdfs = tmp_path / "hdfs"
    hdfs.write_text(FAKE_HDFS)
    hdfs.chmod(0o755)
    cluster, edge, cache = tmp_path / "cluster", tmp_path / "edge", tmp_path / "module"
    for d in (cluster, edge, cache):
        d.mkdir()
    env = dict(os.environ, HDFS_CALLS=str(tmp_path / "calls"))
    helpers = yarn.Helpers(env, fs_tool=("hdfs", str(hdfs)))
    relay = handoff.HandoffRelay(helpers, str(cache), str(edge / "analysis.json"), str(edge / "go.json"),
                                 str(cluster / remote_analysis), str(cluster / "go.json"),
                                 first_look=0.05, max_look=0.2, go_look=0.02)
    return relay, cluster, edge, tmp_path / "calls"


def wait_for(predicate, timeout=20.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_the_analysis_comes_to_the_edge_node_and_the_go_goes_to_the_driver(tmp_path):
    relay, cluster, edge, calls = relay_in(tmp_path)
    relay.start()
    wait_for(lambda: relay.looks >= 2)  # nothing there yet: no error, it looks again
    assert not (edge / "analysis.json").exists() and relay.errors == []
    analysis = {"command": "analyze", "tables": [{"table": "db.a", "needs_compaction": True}]}
    (cluster / "analysis.json").write_text(json.dumps(analysis) + "\n")  # the driver wrote it
    wait_for((edge / "analysis.json").exists)
    assert json.loads((edge / "analysis.json").read_text()) == analysis
    assert stat.S_IMODE(os.stat(str(edge / "analysis.json")).st_mode) == 0o600
    looks = relay.looks
    time.sleep(0.3)
    assert relay.looks == looks and relay.is_alive()  # once it came, the cluster is not asked again
    (edge / "go.json").write_text('{"tables": ["db.a"]}')  # the play's go
    relay.join(10)
    assert not relay.is_alive()  # it ends with the go
    assert (cluster / "go.json").read_text() == '{"tables": ["db.a"]}'
    assert sorted(os.listdir(str(cluster))) == ["analysis.json", "go.json"]
    report = relay.report()
    assert report == dict(analysis_file=str(cluster / "analysis.json"), go_file=str(cluster / "go.json"),
                          looks=looks, analysis_relayed=True, go_relayed=True, errors=[])
    assert calls.read_text().splitlines()[-1] == "dfs -put -f %s %s" % (edge / "go.json", cluster / "go.json")
    assert sorted(os.listdir(str(edge))) == ["analysis.json", "go.json"]  # no temporary file left


def test_a_stop_before_any_analysis_goes_over_and_a_read_error_is_reported(tmp_path):
    relay, cluster, edge, _calls = relay_in(tmp_path, remote_analysis="denied.json")
    relay.start()
    wait_for(lambda: relay.errors)
    assert "reading the driver's analysis" in relay.errors[0] and "Permission denied" in relay.errors[0]
    (edge / "go.json").write_text('{"stop": "the pre-flight failed"}')  # the play's always:
    relay.join(10)
    assert not relay.is_alive()
    assert json.loads((cluster / "go.json").read_text()) == {"stop": "the pre-flight failed"}
    report = relay.report()
    assert report["go_relayed"] and not report["analysis_relayed"] and len(report["errors"]) <= 5


def test_stop_ends_the_relay_when_the_application_ended_first(tmp_path):
    relay, cluster, _edge, _calls = relay_in(tmp_path)
    relay.start()
    wait_for(lambda: relay.looks >= 1)
    done = threading.Event()
    threading.Thread(target=lambda: (relay.stop(10), done.set())).start()
    assert done.wait(10) and not relay.is_alive()
    assert relay.report()["go_relayed"] is False and not os.listdir(str(cluster))
    assert yarn.rm_argv(("hdfs", "/usr/bin/hdfs"), "r.json", "a.json", "g.json") == [
        "/usr/bin/hdfs", "dfs", "-rm", "-f", "-skipTrash", "r.json", "a.json", "g.json"]
    assert handoff.put_argv(("spark-class", "/opt/spark/bin/spark-class"), "/tmp/go.json", "hdfs://nn/r.go.json") == [
        "/opt/spark/bin/spark-class", "org.apache.hadoop.fs.FsShell", "-put", "-f", "/tmp/go.json",
        "hdfs://nn/r.go.json"]
