# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The engine's progress records (JSON lines of its --progress-file) as lines
for a person (private): used by the filter lakekeeper_progress and by the
action lakekeeper_wait."""

from __future__ import annotations

import json


class ProgressError(ValueError):
    """Bad input to progress_lines."""


def _duration(seconds):
    seconds = int(round(float(seconds or 0)))
    if seconds < 60:
        return "%d s" % seconds
    if seconds < 3600:
        return "%d min %02d s" % (seconds // 60, seconds % 60)
    return "%d h %02d min" % (seconds // 3600, seconds % 3600 // 60)


def _of(record):
    return "%s of %s done" % (record.get("done", 0), record.get("of") if record.get("of") is not None else "?")


def progress_line(record):
    """One record as one line, or None for a record of an unknown kind."""
    event, command = record.get("event"), record.get("command") or "run"
    stamp = "[%s, +%s]" % (str(record.get("time", ""))[11:19], _duration(record.get("elapsed")))
    if event == "start":
        text = "%s started (run %s)" % (command, record.get("run_id"))
    elif event == "tables":
        names = record.get("tables") or []
        shown = ", ".join(names[:20]) + (", ..." if len(names) > 20 else "")
        text = "%s: %d table(s): %s" % (command, len(names), shown)
    elif event == "started":
        text = "%s: started (%s)" % (record.get("table"), _of(record))
    elif event == "table":
        took = _duration(record.get("seconds"))
        text = "%s: %s in %s (%s): %s" % (record.get("table"), record.get("status"), took, _of(record),
                                          record.get("reason") or "")
    elif event == "working":
        text = "working on %s (%s)" % (", ".join("%s for %s" % (t.get("table"), _duration(t.get("seconds")))
                                                 for t in record.get("tables") or []), _of(record))
    elif event == "end":
        text = "%s finished: %s" % (command, record.get("msg") or ("failed" if record.get("failed") else "done"))
    else:
        return None
    return "%s %s" % (stamp, text.rstrip(": "))


def lakekeeper_progress(text, seen=0):
    """``{'lines': [...], 'seen': n}``: the complete records of ``text`` after
    the first ``seen`` ones, and how many complete records there are now (a
    last line still being written is left for the next poll)."""
    if text is None:
        text = ""
    if not isinstance(text, str):
        raise ProgressError("lakekeeper_progress expects the progress file's text, got %s" % type(text).__name__)
    try:
        seen = int(seen)
    except (TypeError, ValueError):
        raise ProgressError("lakekeeper_progress: seen must be a number, got %r" % (seen,)) from None
    complete = text.split("\n")[:-1]  # the part after the last newline is incomplete (or empty)
    lines = []
    for raw in complete[seen:]:
        try:
            record = json.loads(raw)
        except ValueError:
            lines.append("(unreadable progress record: %s)" % raw[:200])
            continue
        line = progress_line(record) if isinstance(record, dict) else None
        if line:
            lines.append(line)
    return {"lines": lines, "seen": len(complete)}
