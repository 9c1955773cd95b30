# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Action plugin of lakekeeper.hive.lakekeeper_wait: waits for a module run in
the background (``async``, ``poll: 0``) in one loop, printing the engine's
new progress records at each poll. Documentation in
plugins/modules/lakekeeper_wait.py.

Why not a task file that includes itself once per poll: every include adds
frames to the Python stack of ``ansible-playbook``; at a poll a minute, after
about four hours it failed with "maximum recursion depth exceeded", and the
``always:`` of the enclosing block (resuming the ingestion) never ran. Here
the loop is a ``while`` in one task: any number of polls, constant memory.

When ansible-playbook goes away (killed; cancelled on ansible-core 2.16,
which does not pass SIGTERM on to its workers), the loop notices at its next
check that its worker process has a new parent and ends, instead of polling
on, orphaned, until the job's async limit. Nothing of the play runs after a
cancel (2.19 passes SIGINT/SIGTERM to the workers and ends): resuming the
ingestion is the pause guard's job (module lakekeeper_pause_guard).

Each check is one command through the task's connection (with its become):
``cat`` of the job's results file and ``tail -c +N`` of the progress file,
about 5 ms on a local connection, one round trip on SSH. Paths are quoted
with ``shlex.quote``; nothing of the user's reaches the shell otherwise.
"""

from __future__ import annotations

import json
import os
import shlex
import time

from ansible.errors import AnsibleActionFail
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.lakekeeper.hive.plugins.module_utils._lakekeeper_result import (
    failure_message,
    is_failed,
    module_fields,
    parse_result,
    table_warnings,
)
from ansible_collections.lakekeeper.hive.plugins.plugin_utils._lakekeeper_progress import progress_line

display = Display()

_MARK = "--- lakekeeper_wait: progress from byte %d ---"
_ANALYSIS_MARK = "--- lakekeeper_wait: analysis ---"
_ARGS = frozenset(("jid", "results_file", "progress_file", "poll_seconds", "check_seconds", "timeout",
                   "analysis_file", "max_partitions_listed", "fail_on_refused"))


def analysis_result(text, max_partitions_listed=None, fail_on_refused=False):
    """The analysis a compaction with analyze_first wrote (the analyze
    command's document), as lakekeeper_analyze returns it: the same fields
    (_lakekeeper_result.module_fields) and the same judgement (is_failed,
    failure_message), or None while the file is not there."""
    doc = parse_result(None, text)
    if doc is None:
        return None
    out = module_fields(doc, writes=False, max_partitions_listed=max_partitions_listed)
    out.update(command="analyze", rc=0, dry_run=False)
    warnings = table_warnings(doc)
    if warnings:  # as lakekeeper_analyze warns
        out["warnings"] = warnings
    if is_failed(doc, 0, fail_on_refused):
        out.update(failed=True, msg=failure_message("analyze", doc, 1))
    else:
        out["msg"] = " ".join(str(doc.get("msg") or "analyze: %d table(s)" % len(out["tables"])).split())
    return out


def _float(args, name, default, minimum):
    value = args.get(name, default)
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise AnsibleActionFail("%s must be a number of seconds, got %r" % (name, value)) from None
    if value < minimum:
        raise AnsibleActionFail("%s must be at least %s, got %s" % (name, minimum, value))
    return value


def job_state(text):
    """The async job's result file as ``async_status`` reads it: ``(finished,
    data)``. An empty file is a job still starting; a file that is not JSON a
    job whose result cannot be read (finished, failed)."""
    text = (text or "").strip()
    if not text:
        return False, {"started": 1, "finished": 0}
    try:
        data = json.loads(text)
    except ValueError:
        return True, {"failed": True, "finished": 1,
                      "msg": "the background job's result file is not JSON: %s" % text[:500]}
    if not isinstance(data, dict):
        return True, {"failed": True, "finished": 1, "msg": "the background job's result is not an object"}
    if "started" not in data:  # the module's own result: the job has ended
        data["finished"] = 1
        return True, data
    data.setdefault("finished", 0)
    return bool(data.get("finished")), data


class Progress(object):
    """The bytes of the progress file read so far and the complete records
    among them (a last line without its newline waits for the next check)."""

    def __init__(self):
        self.offset = 0
        self.partial = ""
        self.records = 0
        self.tables = {}  # table -> its "table" record's status and reason (it has finished)
        self.working = []  # tables with a "started" record

    def _note(self, record):
        event = record.get("event")
        if event == "table" and record.get("table"):
            self.tables[record["table"]] = {"table": record["table"], "status": record.get("status"),
                                            "reason": record.get("reason") or ""}
        elif event == "started" and record.get("table") and record["table"] not in self.working:
            self.working.append(record["table"])

    def left(self):
        """Per table, what the progress records say of it: finished (with the
        engine's status) or begun and not finished when the records end."""
        out = list(self.tables.values())
        out += [{"table": t, "status": "in_progress", "reason": ""} for t in self.working
                if t and t not in self.tables]
        return out

    def feed(self, chunk):
        text = self.partial + chunk
        self.offset += len(chunk.encode("utf-8"))
        lines = text.split("\n")
        self.partial = lines.pop()
        out = []
        for raw in lines:
            self.records += 1
            try:
                record = json.loads(raw)
            except ValueError:
                out.append("(unreadable progress record: %s)" % raw[:200])
                continue
            if not isinstance(record, dict):
                continue
            self._note(record)
            line = progress_line(record)
            if line:
                out.append(line)
        return out


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = _ARGS

    def _check(self, results_file, progress_file, offset, analysis_file=None):
        cmd = ""
        if analysis_file:  # first, so that a job ending meanwhile is seen with its analysis
            cmd += "cat -- %s 2>/dev/null; printf '\\n%%s\\n' %s; " % (
                shlex.quote(analysis_file), shlex.quote(_ANALYSIS_MARK))
        cmd += "cat -- %s 2>/dev/null; printf '\\n%%s\\n' %s" % (
            shlex.quote(results_file), shlex.quote(_MARK % offset))
        if progress_file:  # not there yet: the engine has not started
            quoted = shlex.quote(progress_file)
            cmd += "; if [ -f %s ]; then tail -c +%d -- %s; fi" % (quoted, offset + 1, quoted)
        res = self._low_level_execute_command(cmd, sudoable=True)
        out = res.get("stdout", "")
        mark = "\n" + _MARK % offset + "\n"
        if mark not in out:
            raise AnsibleActionFail("could not read the background job's files on the target (rc %s): %s"
                                    % (res.get("rc"), (res.get("stderr") or out)[-2000:]), result=res)
        status, progress = out.split(mark, 1)
        analysis = None
        if analysis_file:
            analysis, status = status.split("\n" + _ANALYSIS_MARK + "\n", 1)
        return status, progress, analysis

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        args = self._task.args
        jid = args.get("jid")
        results_file = args.get("results_file")
        if not jid or not results_file:
            raise AnsibleActionFail("jid and results_file are required: register the task run with async and "
                                    "poll: 0, and pass its ansible_job_id and results_file")
        progress_file = args.get("progress_file") or None
        poll = _float(args, "poll_seconds", 60, 0)
        check = min(_float(args, "check_seconds", 5, 0), poll)
        timeout = _float(args, "timeout", 0, 0)
        host = (task_vars or {}).get("inventory_hostname", "?")
        analysis_file = args.get("analysis_file") or None
        listed = args.get("max_partitions_listed")
        try:
            listed = int(listed) if listed not in (None, "") else None
        except (TypeError, ValueError):
            raise AnsibleActionFail("max_partitions_listed must be a number, got %r" % (listed,)) from None

        if self._task.check_mode:
            result.update(skipped=True, msg="check mode: the background job is not waited for")
            return result

        progress = Progress()
        # the process this loop runs in is a worker of ansible-playbook: when ansible-playbook is gone (killed, or
        # cancelled on ansible-core 2.16, which does not pass SIGTERM on to its workers), the worker is adopted by
        # another process and stops waiting instead of polling on, orphaned, until the job's async limit
        play = os.getppid()
        started = time.monotonic()
        next_print = started + poll
        pending = []
        shown = 0
        checks = 0
        while True:
            checks += 1
            status, chunk, analysis_text = self._check(results_file, progress_file, progress.offset, analysis_file)
            finished, data = job_state(status)
            analysis = analysis_result(analysis_text, listed,
                                       boolean(args.get("fail_on_refused", False), strict=False)) \
                if analysis_file else None
            if analysis is not None:  # the job goes on: it waits for its go file
                result.update(analysis)
                result.update(ansible_job_id=jid, finished=0, analysis_file=analysis_file, checks=checks,
                              waited_seconds=round(time.monotonic() - started, 1))
                return result
            if finished and analysis_file:  # ended without its analysis: it could not start, or was killed
                result.update(data)
                result.update(failed=True, ansible_job_id=jid, finished=1, checks=checks,
                              waited_seconds=round(time.monotonic() - started, 1),
                              msg="the background job %s ended without writing its analysis %s: %s"
                                  % (jid, analysis_file, data.get("msg") or "no message"))
                return result
            pending.extend(progress.feed(chunk))
            now = time.monotonic()
            if finished or now >= next_print:
                for line in pending:
                    display.display("%s | %s" % (host, line))
                shown += len(pending)
                pending = []
                next_print = now + poll
            if finished:
                break
            if os.getppid() != play:
                result.update(failed=True, finished=0, ansible_job_id=jid, checks=checks, progress_lines=shown,
                              progress_tables=progress.left(), waited_seconds=round(now - started, 1),
                              msg="ansible-playbook is gone (cancelled or killed): stopped waiting; the background "
                                  "job %s goes on until its async limit" % jid)
                return result
            if timeout and now - started > timeout:
                result.update(failed=True, finished=0, ansible_job_id=jid, checks=checks,
                              progress_lines=shown, progress_tables=progress.left(),
                              waited_seconds=round(now - started, 1),
                              msg="the background job %s is still running after %s s of waiting; it was not "
                                  "stopped (see its results file %s)" % (jid, timeout, results_file))
                return result
            time.sleep(check)

        result.update(data)
        result.update(ansible_job_id=jid, finished=1, checks=checks, progress_lines=shown,
                      progress_records=progress.records, progress_tables=progress.left(),
                      waited_seconds=round(time.monotonic() - started, 1))
        return result
