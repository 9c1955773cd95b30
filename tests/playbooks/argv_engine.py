# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The engine's command line as the modules give it, recorded: the
``spark_submit.script_path`` of tests/playbooks/test_playbooks_unset.py,
which checks what the playbooks' variables become on the way to the
modules (argument validation, the role's logic, the argv), not the engine's
work (every other playbook test runs the real engine). It answers with the
engine's output contract (docs/engine-contract.md, "Result" and the
progress records) for two tables, DB.events and DB.clicks (or those of
--tables), and reads or writes no table.

    python argv_engine.py analyze|compact|... --database DB ... --result-file R [--progress-file P]

``ARGV_ENGINE_ARGV``: a file each run appends its arguments to, one JSON
list a line. ``ARGV_ENGINE_SECONDS`` (default 600): how long ``compact``
takes over DB.clicks. ``ARGV_ENGINE_LOG``: a file each run appends
``<command> <pid> started|finished`` to. ``compact --analysis-file A
--go-file G`` (lakekeeper_compact's analyze_first) writes the analysis
``analyze`` would answer to A, then waits for G (``--go-timeout``) and
compacts the tables it names.
"""

from __future__ import annotations

import datetime
import json
import os
import sys
import time


def _arg(argv, flag, default=None):
    return argv[argv.index(flag) + 1] if flag in argv else default


def _log(text):
    path = os.environ.get("ARGV_ENGINE_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write("%s %d %s\n" % (text, os.getpid(), time.time()))


class Progress:
    def __init__(self, path, command, run_id):
        self.path, self.command, self.run_id, self.started = path, command, run_id, time.monotonic()

    def write(self, event, **fields):
        if not self.path:
            return
        record = {"time": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                  "elapsed": round(time.monotonic() - self.started, 1), "event": event,
                  "command": self.command, "run_id": self.run_id, **fields}
        with open(self.path, "a", encoding="utf-8") as out:
            out.write(json.dumps(record) + "\n")


def _analyzed(names):
    return [{"table": t, "status": "analyzed", "needs_compaction": True, "changed": False,
             "would_change": False, "files": 10, "bytes": 10240, "files_after_estimate": 1,
             "files_saved_estimate": 9, "space": {"ok": True, "problems": []}, "partitions": []}
            for t in names]


def _wait_for_go(path, timeout):
    end = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > end:
            return {"outcome": "timeout", "tables": [], "reason": "no go file"}
        time.sleep(0.1)
    with open(path, encoding="utf-8") as handle:
        go = json.load(handle)
    if "stop" in go:
        return {"outcome": "stop", "tables": [], "reason": go["stop"]}
    return {"outcome": "go", "tables": go["tables"]}


def main(argv):
    command = argv[0]
    database = _arg(argv, "--database", "db")
    run_id = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%S") + "-%06x" % (os.getpid() & 0xFFFFFF)
    names = (_arg(argv, "--tables", "").split(",") if "--tables" in argv
             else ["%s.events" % database, "%s.clicks" % database])
    _log("%s started" % command)
    if os.environ.get("ARGV_ENGINE_ARGV"):
        with open(os.environ["ARGV_ENGINE_ARGV"], "a", encoding="utf-8") as out:
            out.write(json.dumps(argv) + "\n")
    handoff = None
    if command == "compact" and "--analysis-file" in argv:
        analysis = {"command": "analyze", "run_id": run_id, "dry_run": False, "changed": False, "failed": False,
                    "msg": "analyze: %d table(s)" % len(names), "tables": _analyzed(names)}
        path = _arg(argv, "--analysis-file")
        with open(path + ".tmp", "w", encoding="utf-8") as out:
            out.write(json.dumps(analysis, indent=1))
        os.replace(path + ".tmp", path)
        handoff = _wait_for_go(_arg(argv, "--go-file"), float(_arg(argv, "--go-timeout", "3600")))
        names = handoff.get("tables") or []
    if command == "analyze":
        tables = _analyzed(names)
    elif command == "compact":
        progress = Progress(_arg(argv, "--progress-file"), command, run_id)
        progress.write("start")
        progress.write("tables", tables=names, of=len(names))
        tables = []
        slow = float(os.environ.get("ARGV_ENGINE_SECONDS", 600))
        for done, name in enumerate(names):
            seconds = slow if done == 1 else 0.2
            progress.write("started", table=name, done=done, of=len(names))
            time.sleep(seconds)
            table = {"table": name, "status": "compacted", "reason": "compacted 1 of 1 unit(s)", "changed": True,
                     "would_change": True, "run_id": run_id, "backup_table": None,
                     "partitions": [{"spec": "", "files_before": 10, "files_after": 1, "bytes_before": 10240,
                                     "bytes_after": 10000, "status": "compacted"}]}
            tables.append(table)
            progress.write("table", table=name, status="compacted", reason=table["reason"], seconds=seconds,
                           done=done + 1, of=len(names))
    else:
        tables = []
    doc = {"command": command, "run_id": run_id, "dry_run": "--dry-run" in argv,
           "changed": any(t.get("changed") for t in tables), "failed": False,
           "msg": "%s: %d table(s)" % (command, len(tables)), "tables": tables}
    if handoff is not None:
        doc["handoff"] = handoff
    if command == "compact":
        progress.write("end", failed=False, changed=doc["changed"], counts={"compacted": len(tables)}, msg=doc["msg"])
    text = json.dumps(doc, indent=1)
    result_file = _arg(argv, "--result-file")
    if result_file:
        with open(result_file, "w", encoding="utf-8") as out:
            out.write(text)
    sys.stdout.write(text + "\n")
    _log("%s finished" % command)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
