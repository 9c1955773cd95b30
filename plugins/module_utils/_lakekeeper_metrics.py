# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private helpers of the lakekeeper.hive modules (not a public API):
Prometheus metrics of a run, in the text format node_exporter's textfile
collector reads (``--collector.textfile.directory``).

One file per command, ``lakekeeper_<command>.prom``, replaced atomically
(written beside, then renamed: the collector never reads half a file).
Gauges of the last run (tables per status, files and bytes before and
after, duration, lease waits, whether it succeeded, when it ran) and, per
table, when it last succeeded - carried over from the previous file for the
tables this run did not see, so a nightly job over several table lists keeps
every table's age.
"""

from __future__ import annotations

import os
import re
import tempfile

# The statuses a table ends a run in that count as success for its
# last-success time (nothing left to do on it is success too).
SUCCESS = ("compacted", "rolled_back", "recovered", "cleaned", "not_needed", "ok", "pinned", "unpinned")
# Statuses shown with a 0 when absent, so that a dashboard's query never
# meets a missing series.
MAIN_STATUSES = ("compacted", "rolled_back", "cleaned", "not_needed", "skipped", "refused", "locked", "failed")

_LAST = "lakekeeper_table_last_success_timestamp_seconds"
_LINE = re.compile(r"^" + _LAST + r"\{(?P<labels>.*)\}\s+(?P<value>\S+)\s*$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def _escape(value):
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _unescape(value):
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), value)


def _labels(**labels):
    return "{" + ",".join('%s="%s"' % (k, _escape(v)) for k, v in sorted(labels.items())) + "}"


def _num(value):
    try:
        return float(value or 0)
    except (TypeError, ValueError):
        return 0.0


def _fmt(value):
    value = float(value)
    return "%d" % value if value == int(value) else repr(value)


def _partition_sum(table, key):
    return sum(_num(p.get(key)) for p in table.get("partitions") or [] if isinstance(p, dict))


def previous_last_success(text):
    """``{(command, table): timestamp}`` from an earlier file's text."""
    out = {}
    for line in (text or "").splitlines():
        m = _LINE.match(line.strip())
        if not m:
            continue
        labels = dict((k, _unescape(v)) for k, v in _LABEL.findall(m.group("labels")))
        try:
            out[(labels.get("command", ""), labels.get("table", ""))] = float(m.group("value"))
        except ValueError:
            continue
    return out


def metrics_text(command, doc, rc, seconds, now, previous=""):
    """The file's text for one run: ``doc`` is the engine's document (None
    when it gave none), ``rc`` its exit code, ``seconds`` the run's duration,
    ``now`` the end time (epoch seconds), ``previous`` the earlier file's text."""
    tables = [t for t in ((doc or {}).get("tables") or []) if isinstance(t, dict)]
    counts = {}
    for t in tables:
        status = t.get("status") or "unknown"
        counts[status] = counts.get(status, 0) + 1
    failed = doc is None or bool(doc.get("failed")) or rc not in (0, None)
    lease_waits = len([t for t in tables if t.get("status") == "locked" or t.get("lease_holder")])
    taken_over = len([t for t in tables if t.get("lease_taken_over")])
    last = previous_last_success(previous)
    for t in tables:
        if t.get("status") in SUCCESS and t.get("table"):
            last[(command, t["table"])] = now

    c = _labels(command=command)
    out = []

    def gauge(name, help_text, samples):
        out.append("# HELP %s %s" % (name, help_text))
        out.append("# TYPE %s gauge" % name)
        for labels, value in samples:
            out.append("%s%s %s" % (name, labels, _fmt(value)))

    gauge("lakekeeper_run_timestamp_seconds", "When the last run of this command ended (Unix time).", [(c, now)])
    gauge("lakekeeper_run_duration_seconds", "How long the last run of this command took.", [(c, seconds)])
    gauge("lakekeeper_run_success", "1 when the last run of this command succeeded (refused tables do not fail it).",
          [(c, 0 if failed else 1)])
    gauge("lakekeeper_tables", "Tables of the last run, by the status they ended in.",
          [(_labels(command=command, status=s), counts.get(s, 0))
           for s in sorted(set(MAIN_STATUSES) | set(counts))])
    for key, help_text in (("files_before", "Data files of the tables worked on, before the run."),
                           ("files_after", "Data files of the tables worked on, after the run."),
                           ("bytes_before", "Bytes of the tables worked on, before the run."),
                           ("bytes_after", "Bytes of the tables worked on, after the run.")):
        gauge("lakekeeper_" + key, help_text, [(c, sum(_partition_sum(t, key) for t in tables))])
    gauge("lakekeeper_lease_waits", "Tables the last run left alone because another run held their lease.",
          [(c, lease_waits)])
    gauge("lakekeeper_leases_taken_over", "Tables whose stale lease (a dead run's) the last run took over.",
          [(c, taken_over)])
    gauge(_LAST, "When each table last ended a run of this command in success (Unix time).",
          [(_labels(command=cmd, table=table), ts) for (cmd, table), ts in sorted(last.items())])
    return "\n".join(out) + "\n"


def write_metrics(directory, command, doc, rc, seconds, now):
    """Write ``<directory>/lakekeeper_<command>.prom`` atomically; returns its path."""
    path = os.path.join(directory, "lakekeeper_%s.prom" % command)
    try:
        with open(path) as handle:
            previous = handle.read()
    except (IOError, OSError):
        previous = ""
    text = metrics_text(command, doc, rc, seconds, now, previous)
    fd, tmp = tempfile.mkstemp(prefix=".lakekeeper_%s." % command, suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)
        os.rename(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path
