# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private helpers of the lakekeeper.hive modules (not a public API): the result.

Pure functions that read the engine's JSON document (docs/engine-contract.md)
from its result file or stdout and turn it into the module's result: changed,
failed, the failure message, the diff, the tables a refresh command runs for.
The argv side is _lakekeeper_argv.
"""

from __future__ import annotations

import json
import re

from ansible_collections.lakekeeper.hive.plugins.module_utils._lakekeeper_yarn import application_id_in

# Table statuses that make a run fail (exit code 1): failed, and refused with fail_on_refused
# (docs/statuses.md: refused tables are reported, they do not fail the run by default).
FAILED_STATUSES = ("failed",)
# Table statuses a failure message names, with their reasons.
NAMED_IN_FAILURE = ("failed", "refused")


def parse_result(stdout=None, result_file_text=None):
    """The engine's JSON document, from the result file or else stdout.

    Returns None when neither holds a JSON object.
    """
    for text in (result_file_text, stdout):
        doc = _find_json_object(text)
        if doc is not None:
            return doc
    return None


def _find_json_object(text):
    if not text or not text.strip():
        return None
    text = text.strip()
    try:
        doc = json.loads(text)
        if isinstance(doc, dict):
            return doc
    except ValueError:
        pass
    # Stray lines around the document: take the last object that parses and
    # starts at the beginning of a line.
    decoder = json.JSONDecoder()
    found = None
    starts = [0] if text.startswith("{") else []
    starts += [m.start() + 1 for m in re.finditer(r"\n\{", text)]
    for start in starts:
        try:
            doc, _end = decoder.raw_decode(text, start)
        except ValueError:
            continue
        if isinstance(doc, dict) and ("tables" in doc or "command" in doc):
            found = doc
    return found


def find_application_id(*texts):
    """The YARN application id spark-submit's log names (its ``Submitted
    application ...`` lines: _lakekeeper_yarn.application_id_in; the last,
    when a retried start submitted a second one), or None. An id elsewhere in
    the texts (a container's path) is not it."""
    found = None
    for text in texts:
        found = application_id_in(text) or found
    return found


def tail_lines(text, count=40):
    lines = (text or "").splitlines()
    return lines[-count:]


def table_name(table):
    return str(table.get("table") or table.get("name") or "?")


def would_change(doc):
    """Whether a (dry) run reports that something would change."""
    tables = doc.get("tables") or []
    if any(t.get("would_change") for t in tables if isinstance(t, dict)):
        return True
    if doc.get("would_change"):
        return True
    # An engine that omits would_change: a planned table would change.
    return any(t.get("status") == "planned" for t in tables if isinstance(t, dict) and "would_change" not in t)


def did_change(doc):
    tables = doc.get("tables") or []
    return bool(doc.get("changed")) or any(t.get("changed") for t in tables if isinstance(t, dict))


def is_failed(doc, rc, fail_on_refused=False):
    if rc not in (0, None):
        return True
    if doc.get("failed"):
        return True
    failing = FAILED_STATUSES + (("refused",) if fail_on_refused else ())
    return any(t.get("status") in failing for t in (doc.get("tables") or []) if isinstance(t, dict))


# Partition statuses of units nothing was done to: the only entries left out
# of a long ``partitions`` list (limit_partitions).
UNCHANGED_PARTITION_STATUSES = ("analyzed", "not_needed", "skipped")


def _listing_rank(part):
    """Which entries of a long list are listed first: a unit refused with a
    code, then the units to compact (most files saved first), then the rest."""
    if part.get("code"):
        return (0, 0)
    if part.get("decision") == "compact":
        saved = (_count(part, "files_before") or 0) - (_count(part, "target_files") or 0)
        return (1, -saved)
    return (2, 0)


def limit_partitions(tables, limit):
    """The tables with at most ``limit`` entries in each ``partitions`` list
    (0 or None: every entry). Only units nothing was done to are left out:
    one that changed, failed, was refused or was planned is always listed.
    A table whose list was cut gets ``partitions_not_listed``: how many were
    left out, how many of them were to compact, and their files and bytes
    (the same before and after: nothing was done to them), so that totals
    over the list stay right."""
    if not limit or limit < 0:
        return tables
    out = []
    for table in tables:
        parts = _partitions(table)
        if len(parts) <= limit:
            out.append(table)
            continue
        fixed = [i for i, p in enumerate(parts) if p.get("status") not in UNCHANGED_PARTITION_STATUSES]
        optional = sorted((i for i, p in enumerate(parts) if p.get("status") in UNCHANGED_PARTITION_STATUSES),
                          key=lambda i: (_listing_rank(parts[i]), i))
        keep = set(fixed) | set(optional[:max(0, limit - len(fixed))])
        left = [p for i, p in enumerate(parts) if i not in keep]
        out.append(dict(table, partitions=[p for i, p in enumerate(parts) if i in keep], partitions_not_listed=dict(
            partitions=len(left), to_compact=sum(1 for p in left if p.get("decision") == "compact"),
            files=sum(_count(p, "files_before") or 0 for p in left),
            bytes=sum(_count(p, "bytes_before") or 0 for p in left))))
    return out


def _partitions(table):
    parts = table.get("partitions") or []
    return [p for p in parts if isinstance(p, dict)]


def _count(part, key):
    value = part.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


def _backup_names(entries):
    return [str(e.get("backup_table")) for e in entries or [] if isinstance(e, dict) and e.get("backup_table")]


def build_diff(doc, dry_run=False):
    """Before/after file counts per table (and per partition).

    In a dry run a planned partition's ``after`` is its ``target_files`` (the
    engine's ``files_after`` then still counts what is on disk).

    A cleanup's table (``backups_removed``/``kept``) shows its backup tables
    instead: all of them before, the ones kept after (in a dry run, those the
    cleanup would keep).
    """
    before = {}
    after = {}
    for table in doc.get("tables") or []:
        if not isinstance(table, dict):
            continue
        name = table_name(table)
        if isinstance(table.get("backups_removed"), list):
            kept = _backup_names(table.get("kept"))
            removed = _backup_names(table["backups_removed"])
            if removed or kept:
                before[name] = {"backups": sorted(removed + kept)}
                after[name] = {"backups": sorted(kept)}
            continue
        b_parts = {}
        a_parts = {}
        for part in _partitions(table):
            spec = str(part.get("spec") or "")
            fb = _count(part, "files_before")
            fa = _count(part, "files_after")
            if dry_run and part.get("status") == "planned" and _count(part, "target_files") is not None:
                # A dry run reports what is on disk (nothing changed); the diff shows the plan.
                fa = _count(part, "target_files")
            if fa is None:
                fa = fb
            if fb is None:
                fb = fa
            if fb is None:
                continue
            b_parts[spec] = fb
            a_parts[spec] = fa
        if not b_parts:
            continue
        before[name] = {"files": sum(b_parts.values()), "partitions": b_parts}
        after[name] = {"files": sum(a_parts.values()), "partitions": a_parts}
    return {"before": before, "after": after}


# The catalog facts of the engine's document that a module returns (what the driver really loaded).
CATALOG_KEYS = ("kind", "uris", "url", "source", "hive_site", "state_dir", "reason")


def module_fields(doc, writes=True, dry_run=False, max_partitions_listed=None):
    """What a lakekeeper module returns of the engine's document: ``tables``
    (long partition lists cut to ``max_partitions_listed``), ``run_id``,
    ``catalog`` (the driver's), ``runtime``, ``handoff`` (compact with
    analyze_first: what the go was) and ``changed``. The modules
    (_lakekeeper_module.parse) and lakekeeper_wait's ``analysis_file`` (the
    analysis a compaction with analyze_first wrote, returned as
    lakekeeper_analyze returns it) both take it from here."""
    tables = [t for t in (doc.get("tables") or []) if isinstance(t, dict)]
    out = dict(tables=limit_partitions(tables, max_partitions_listed), run_id=doc.get("run_id"))
    if isinstance(doc.get("retries"), int):  # compact: partitions tried again after a failure that passes
        out["retries"] = doc["retries"]
    if isinstance(doc.get("catalog"), dict):
        out["catalog"] = dict((k, v) for k, v in doc["catalog"].items()
                              if k in CATALOG_KEYS and k not in ("reason", "state_dir"))
    for key in ("runtime", "handoff"):
        if isinstance(doc.get(key), dict):
            out[key] = doc[key]
    out["changed"] = False if not writes else (would_change(doc) if dry_run else did_change(doc))
    return out


def table_warnings(doc):
    """One warning per table left alone (``locked``) or refused, as the
    modules give them (_lakekeeper_module.warn_locked; lakekeeper_wait's
    analysis_file too)."""
    out = []
    for table in doc.get("tables") or []:
        if isinstance(table, dict) and table.get("status") == "locked":
            out.append("%s was left alone: %s" % (table.get("table"), table.get("reason") or "locked"))
        elif isinstance(table, dict) and table.get("status") == "refused":
            out.append("%s was refused (%s): %s" % (table.get("table"), table.get("code") or "refused",
                                                    table.get("reason") or ""))
    return out


def failure_message(command, doc, rc):
    """One line: what failed, why, and what was left in place."""
    head = "lakekeeper %s failed (rc=%s)" % (command, rc)
    if doc is None:
        return head + ": the engine printed no JSON result"
    details = []
    for table in doc.get("tables") or []:
        if not isinstance(table, dict) or table.get("status") not in NAMED_IN_FAILURE:
            continue
        item = "%s: %s" % (table_name(table), table.get("status"))
        if table.get("reason"):
            item += ": %s" % table["reason"]
        kept = []
        if table.get("backup_table"):
            kept.append("backup table %s" % table["backup_table"])
        for key in ("left_in_place", "leftovers", "kept"):
            value = table.get(key)
            if isinstance(value, (list, tuple)):
                kept += [str(v) for v in value]
            elif value:
                kept.append(str(value))
        if kept:
            item += " (left in place: %s)" % ", ".join(kept)
        details.append(item)
    msg = head
    if doc.get("msg"):
        msg += ": %s" % doc["msg"]
    if details:
        msg += " -- " + "; ".join(details)
    return " ".join(msg.split())


def refresh_targets(doc):
    """The tables a post-compaction command runs for: those the run changed,
    with the partitions it compacted."""
    out = []
    for table in doc.get("tables") or []:
        if not isinstance(table, dict) or not table.get("changed") or table.get("status") != "compacted":
            continue
        specs = [p.get("spec") for p in _partitions(table) if p.get("status") == "compacted" and p.get("spec")]
        out.append((table_name(table), specs))
    return out
