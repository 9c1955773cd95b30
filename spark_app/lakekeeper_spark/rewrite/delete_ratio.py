"""The delete-ratio trigger of dedupe tables (``dedupe_trigger_ratio``):
a unit the size rule skips is still rewritten (and deduplicated) when the
share of its rows that the dedupe would remove (superseded versions and
delete markers) reaches the trigger.

Measured only when the trigger is set, only for the units not already
selected (``planner.delete_ratio_candidates``), by one column-pruned read
of their key, ordering and marker columns (``rewrite.dedupe_counts_by_unit``);
the decision itself is ``planner.delete_ratio_rule`` (pure).
"""

from __future__ import annotations

import logging

from .columns import RewriteColumns, resolve_columns
from ..catalog.context import Context
from ..report.errors import Refused, java_message
from ..report.model import TableInfo, TablePlan
from ..policy.planner import delete_ratio_candidates, delete_ratio_rule
from .rewrite import dedupe_counts_by_unit

log = logging.getLogger(__name__)


def apply_delete_ratio(ctx: Context, info: TableInfo, p: TablePlan, columns: RewriteColumns | None = None) -> None:
    """Measure the candidates' delete ratios (``Unit.delete_ratio``) and
    select those at or above the trigger. ``columns``: the table's resolved
    dedupe columns (resolved here when not given; a table they do not fit
    is not measured, the reason says why). A failing measurement leaves
    the units as the size rule left them (skipped), the reason says why."""
    settings = ctx.settings
    trigger = settings.dedupe_trigger_ratio
    if trigger is None or not settings.dedupe:
        return
    candidates = delete_ratio_candidates(p.units)
    if not candidates:
        return
    why = None
    try:
        columns = columns if columns is not None else resolve_columns(settings, info)
        counts = dedupe_counts_by_unit(ctx.spark, info, candidates, columns)
    except Refused as exc:
        why = exc.message
    except Exception as exc:  # noqa: BLE001 - a trigger that cannot measure selects nothing
        why = java_message(exc)
        log.warning("%s: delete ratio not measured: %s", info.full_name, why)
    if why is not None:
        for u in candidates:
            u.decision.reason = f"{u.decision.reason}; delete_ratio not measured: {why}"
        return
    for u in candidates:
        c = counts[u.spec]
        u.delete_ratio = round(c.ratio, 6)
        u.decision = delete_ratio_rule(u.decision, c, trigger, u.stats.bytes, settings.target_file_bytes)
    chosen = [u for u in candidates if u.decision.action == "compact"]
    log.info("%s: delete ratio measured for %d unit(s), %d at or above the trigger %g", info.full_name,
             len(candidates), len(chosen), trigger)
