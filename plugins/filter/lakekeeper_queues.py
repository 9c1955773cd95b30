# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Filter queue_groups: the tables to compact grouped by the YARN queue their
table properties name (the analysis's ``queue``: ``lakekeeper.queue``, or
Amoro's ``self-optimizing.group`` through the run's ``queues``), one Spark
application per queue. Documentation in queue_groups.yml."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["queue_groups"]


def queue_groups(analysis_tables, todo, run_queue=""):
    """``[{queue, tables, own}]``: first the run's own application (its
    ``spark_submit`` queue, ``run_queue``; ``own: true``) with the tables
    that name no queue or that one, then one group per other queue in the
    order its first table comes in ``todo``. Tables keep ``todo``'s order;
    the first group is there even when it has none."""
    run_queue = str(run_queue or "")
    queue_of = {}
    for a in analysis_tables or []:
        if isinstance(a, Mapping) and a.get("table") and a.get("queue"):
            queue_of[str(a["table"])] = str(a["queue"])
    own = {"queue": run_queue, "tables": [], "own": True}
    others = {}
    for table in todo or []:
        queue = queue_of.get(str(table), "")
        if not queue or queue == run_queue:
            own["tables"].append(table)
        else:
            others.setdefault(queue, {"queue": queue, "tables": [], "own": False})["tables"].append(table)
    return [own] + list(others.values())


class FilterModule(object):
    def filters(self):
        return {"queue_groups": queue_groups}
