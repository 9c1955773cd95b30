"""Merge mode's applied-batch record: after the swaps (or by recovery, from
the run's journal) the partitions merged are added to the batch's record in
the table's journal directory (``<journal dir>/merged/<identity>.json``),
so that a batch is never merged twice into a partition. Split from
rewrite/merge.py (the batch's I/O): recovery finishes a merge run through
this record, and the protocol sits below the rewrite.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from .faults import fault_point
from .journal import read_record, replace_record
from ..policy.merge_rules import record_name, with_applied

log = logging.getLogger(__name__)

MERGED_DIR = "merged"


def record_dir(journal_dir: str) -> str:
    """Where the applied-batch records of a table's merges go."""
    return f"{journal_dir.rstrip('/')}/{MERGED_DIR}"


def load_record(fs: Any, folder: str, identity: str) -> dict[str, Any] | None:
    if not fs.exists(folder):
        return None
    text = read_record(fs, folder, record_name(identity))
    return json.loads(text) if text else None


def record_applied(fs: Any, merge_doc: dict[str, Any], specs: list[str], run_id: str, table: str | None = None) -> None:
    """Add ``specs`` to the batch's applied record (``merge_doc``: the
    ``merge`` entry of the run's journal). Idempotent."""
    if not specs:
        return
    fault_point("merge_recording", "before", table)
    uri = merge_doc["record"]
    folder, _sep, name = uri.rpartition("/")
    fs.mkdirs(folder)
    doc = with_applied(load_record(fs, folder, merge_doc["identity"]), merge_doc, specs, run_id)
    replace_record(fs, uri, json.dumps(doc, indent=1, sort_keys=True))
    log.info("batch %s: recorded as merged into %s", merge_doc["identity"], ", ".join(sorted(specs)))
