"""``verify: sample`` (issue 49): which units of a table get the full
content verification (read back, row checksums) when the others get the
metadata checks of ``verify: rows``. Pure.

A seeded random subset: ``ceil(fraction x units)`` of the table's units to
compact, at least one, chosen by ``random.Random(seed)`` over the units'
specs in sorted order, so that the same seed and units give the same
choice (the seed is the run id and the table's name: another run chooses
others). The trade-off is honest and documented (docs/engine-contract.md,
"Content verification"): a unit outside the sample is checked for its row
count, schema and codec only, so a changed value in it is not seen.
"""

from __future__ import annotations

import math
import random

DEFAULT_FRACTION = 0.1


def sample_seed(run_id: str, table: str) -> str:
    return f"{run_id}/{table}"


def choose_sample(specs: list[str], fraction: float, seed: str) -> list[str]:
    """The specs to verify by content, sorted: ``ceil(fraction x n)``, at
    least one (none of none), chosen by ``seed``."""
    units = sorted(set(specs))
    if not units:
        return []
    k = min(len(units), max(1, math.ceil(fraction * len(units) - 1e-9)))
    return sorted(random.Random(seed).sample(units, k))
