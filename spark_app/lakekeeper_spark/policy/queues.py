"""Which YARN queue a table's compaction runs in (issue 50: Amoro's optimizer
groups), and Amoro's ``self-optimizing.quota``, which is not read. Pure.

A table's ``lakekeeper.queue`` property names its YARN queue. Amoro's
``self-optimizing.group`` names the table's optimizer group, mapped to a
queue through the run's ``queues`` mapping (``{group: queue}``: config key
``queues``, ``--queues group=queue,...``, module option ``queues``); a group
the mapping does not name is a queue of the same name. The table's own
``lakekeeper.queue`` wins over its group. A table with neither runs in the
run's own application (``spark_submit.queue``, else the cluster's default
queue). The engine only reports the queue (analyze's and compact's
``queue``); one application runs in one queue, so the maintenance role
groups the tables to compact by it and starts one application per queue
(plugins/filter/lakekeeper_queues.py).

Amoro's ``self-optimizing.quota`` (the share of its optimizer group's
threads a table may occupy over time) has no counterpart inside one
application: the YARN queue is the optimizer group, and its capacity
(capacity-scheduler ``capacity``, ``maximum-capacity``, user limits) is the
quota of every table compacted in it. A table that sets it is told so in
``policy_not_read`` (analyze, compact), never silently.
"""

from __future__ import annotations

import re
from typing import Any

from ..report.errors import Refused, UsageError

QUEUE = "lakekeeper.queue"
GROUP = "self-optimizing.group"
QUOTA = "self-optimizing.quota"
# a YARN queue (a leaf name or a dotted path such as root.etl.nightly), an Amoro group name
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,199}$")

NOT_READ = {
    QUOTA: ("not read: one application runs in one YARN queue, whose capacity (capacity-scheduler capacity, "
            "maximum-capacity, user limits) is the share of the cluster its tables get; set the table's queue "
            "(lakekeeper.queue, or self-optimizing.group with the run's queues) to give it its own share"),
}


def valid_name(value: Any, what: str) -> str:
    text = str(value if value is not None else "").strip()
    if not _NAME.match(text):
        raise UsageError(f"{what}: {value!r} is not a queue or group name (letters, digits, _ . -)")
    return text


def parse_queues(value: Any) -> dict[str, str]:
    """The run's ``queues``: a mapping, or ``group=queue,group2=queue2``."""
    if value is None or value == "" or value == {}:
        return {}
    if isinstance(value, str):
        pairs = []
        for item in value.split(","):
            if not item.strip():
                continue
            if "=" not in item:
                raise UsageError(f"queues: {item.strip()!r} is not group=queue")
            group, queue = item.split("=", 1)
            pairs.append((group, queue))
    elif isinstance(value, dict):
        pairs = list(value.items())
    else:
        raise UsageError(f"queues must be a mapping of optimizer group -> YARN queue, got {value!r}")
    out: dict[str, str] = {}
    for group, queue in pairs:
        name = valid_name(group, "queues group")
        if name in out:
            raise UsageError(f"queues: group {name} is given twice")
        out[name] = valid_name(queue, f"queues[{name}]")
    return out


def _prop(properties: dict[str, Any], key: str) -> tuple[str, str] | None:
    for k, v in properties.items():
        if str(k).strip().lower() == key:
            return str(k), str(v)
    return None


def table_queue(properties: dict[str, Any], queues: dict[str, str] | None = None) -> dict[str, str] | None:
    """``{"queue": q, "from": property[, "group": g]}`` for a table whose
    properties name a queue or an optimizer group, else None. A value that
    is not a name refuses the table (``invalid_policy``)."""
    for key in (QUEUE, GROUP):
        found = _prop(properties, key)
        if found is None:
            continue
        name, value = found
        try:
            text = valid_name(value, f"table property {name}")
        except UsageError as exc:
            raise Refused("invalid_policy", str(exc)) from exc
        if key == QUEUE:
            return {"queue": text, "from": QUEUE}
        return {"queue": (queues or {}).get(text, text), "from": GROUP, "group": text}
    return None


def not_read(properties: dict[str, Any]) -> dict[str, str]:
    """Properties of other tools a table sets that lakekeeper reads on
    purpose not (``NOT_READ``): property -> why (``policy_not_read``)."""
    out = {}
    for key, why in NOT_READ.items():
        if _prop(properties, key) is not None:
            out[key] = why
    return out


def queue_facts(properties: dict[str, Any], queues: dict[str, str] | None = None) -> dict[str, Any]:
    """What analyze and compact report of a table: ``queue`` (with
    ``queue_from`` and, from an optimizer group, ``optimizer_group``) and
    ``policy_not_read``; empty for a table that sets none of them."""
    out: dict[str, Any] = {}
    found = table_queue(properties, queues)
    if found is not None:
        out["queue"] = found["queue"]
        out["queue_from"] = found["from"]
        if "group" in found:
            out["optimizer_group"] = found["group"]
    ignored = not_read(properties)
    if ignored:
        out["policy_not_read"] = ignored
    return out
