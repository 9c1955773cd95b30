"""recover: finish or undo whatever interrupted runs left on a table (the
state machines are ``recovery``'s; every compact, rollback and cleanup of a
table runs the same recovery first). With ``--dry-run``, only the runs it
would act on."""

from __future__ import annotations

from typing import Any

from ..catalog.context import Context
from ..protocol.recovery import orphaned_data, pending_runs, recover_table
from ..report.results import table_result
from ..catalog.tables import load_table


def recover_command(ctx: Context, full_name: str) -> dict[str, Any]:
    info = load_table(ctx, full_name)
    if ctx.settings.dry_run:
        pending = pending_runs(ctx, info)
        return table_result(full_name, "planned" if pending else "skipped",
                            f"{len(pending)} interrupted run(s) to recover" if pending else "nothing to recover",
                            would_change=bool(pending), run_id=ctx.run_id, pending_runs=pending)
    actions = recover_table(ctx, info)
    if not actions:
        orphans = orphaned_data(ctx, info)
        if orphans:  # data moved by a run with no journal left: never "nothing to recover"
            first = orphans[0]
            return table_result(full_name, "failed",
                                f"{len(orphans)} live director{'y is' if len(orphans) == 1 else 'ies are'} missing "
                                f"while a directory of ours that no journal accounts for holds data: "
                                f"{first['location']} (data at {first['path']}, run {first['run_id']}); nothing was "
                                f"moved: no journal says which copy is the table's",
                                code="orphaned_data", run_id=ctx.run_id, actions=[], orphans=orphans)
        return table_result(full_name, "skipped", "nothing to recover", run_id=ctx.run_id, actions=[])
    units = [a for a in actions if a.get("spec") is not None]
    return table_result(full_name, "recovered",
                        f"{len(units)} unit(s) and {len(actions) - len(units)} run record(s) brought to a "
                        f"consistent state", changed=True, run_id=ctx.run_id, actions=actions)
