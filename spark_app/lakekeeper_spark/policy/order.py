"""The order of work without a deadline (``order`` of compact, Iceberg's
``rewrite-job-order``): which tables, and within a table which units
(partitions), go first.

* ``default`` - tables as named (``--tables``) or as the catalog lists them
  (``--database``), units in the plan's order (the partitions' order in
  the Metastore); with a deadline, by benefit (budget.py: small files
  removed per MB rewritten), as before;
* ``bytes-asc`` / ``bytes-desc`` - the smallest / largest first (a table by
  one content summary of its location, a unit by its listing);
* ``files-asc`` / ``files-desc`` - the fewest / most files first.

An order given wins over the deadline's benefit order (the deadline still
starts nothing that would not end before it). Ties keep the default order.
With ``parallelism`` above 1 the order is the order units and tables
*start* in; they may finish in another. Pure: no Spark here.
"""

from __future__ import annotations

from typing import Callable, Sequence, TypeVar

from ..report.errors import UsageError

T = TypeVar("T")

DEFAULT = "default"
ORDERS = (DEFAULT, "bytes-asc", "bytes-desc", "files-asc", "files-desc")


def parse_order(value: object) -> str:
    """A valid order, lower-cased."""
    text = str(value if value is not None else DEFAULT).strip().lower()
    if text not in ORDERS:
        raise UsageError(f"invalid order {value!r}: {', '.join(ORDERS)}")
    return text


def ordered(items: Sequence[T], order: str, files_of: Callable[[T], int | None],
            bytes_of: Callable[[T], int | None]) -> list[T]:
    """``items`` in ``order``; ``default``: as given. An item whose figure
    is unknown (None: it could not be looked at) goes after the others, in
    its place among them."""
    order = parse_order(order)
    if order == DEFAULT:
        return list(items)
    measure, direction = order.split("-")
    figure = files_of if measure == "files" else bytes_of
    sign = -1 if direction == "desc" else 1

    def key(pair: tuple[int, T]) -> tuple[int, float, int]:
        i, item = pair
        value = figure(item)
        return (1, 0.0, i) if value is None else (0, sign * float(value), i)

    return [item for _i, item in sorted(enumerate(items), key=key)]
