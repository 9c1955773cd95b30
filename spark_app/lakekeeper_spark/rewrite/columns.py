"""The columns a compaction rewrite works with (``sort_by``, its Z-order
strategy ``zorder(a, b)``, and ``dedupe``), checked against the table's
schema and format before anything is read or written.

Pure: no Spark here.
"""

from __future__ import annotations

import dataclasses
import re

from ..policy.config import Settings, sort_key, zorder_columns
from ..report.errors import Refused
from ..report.model import TableInfo

DEDUPE_FORMATS = ("parquet", "orc")
ZORDER_FORMATS = ("parquet", "orc")  # the formats whose files carry min/max statistics a Z-order makes selective
# Column types a Z-order maps to ranks (rewrite/zorder.py): what approximate percentiles are computed for
ZORDER_TYPES = frozenset(("tinyint", "smallint", "int", "integer", "bigint", "float", "double", "decimal", "date",
                          "timestamp", "timestamp_ntz", "string", "varchar", "char", "boolean"))


@dataclasses.dataclass(frozen=True)
class RewriteColumns:
    """Column names as the table spells them; empty/None when not used."""

    sort_by: tuple[str, ...] = ()  # "col" or "col desc" (config.sort_key)
    keys: tuple[str, ...] = ()
    order_by: str | None = None
    delete_marker: str | None = None
    delete_value: str | None = None  # None: the marker column is a boolean, true means deleted
    zorder: tuple[str, ...] = ()  # sort_by zorder(a, b): the columns whose ranks are interleaved

    @property
    def sorted(self) -> bool:
        """Whether the rows of each written file are ordered (sort_by, linear or Z-order)."""
        return bool(self.sort_by or self.zorder)

    def sort_result(self) -> dict[str, object] | None:
        """The result's and history's ``sort``: {strategy: linear|zorder, columns: [...]}, None without sort_by."""
        if self.zorder:
            return {"strategy": "zorder", "columns": list(self.zorder)}
        if self.sort_by:
            return {"strategy": "linear", "columns": list(self.sort_by)}
        return None

    @property
    def dedupe(self) -> bool:
        return bool(self.keys)

    @property
    def dedupe_columns(self) -> tuple[str, ...]:
        """What the dedupe statistics need to read (keys, order, marker)."""
        extra = [c for c in (self.order_by, self.delete_marker) if c]
        return tuple(self.keys) + tuple(extra)


def resolve_columns(settings: Settings, table: TableInfo) -> RewriteColumns:
    """Map the settings' column names onto the table's data columns.

    Raises ``Refused`` (code ``invalid_columns``, or ``unsupported_format``
    for dedupe on text/Avro) with a message naming the table and the column.
    """
    if not settings.sort_by and not settings.dedupe_keys:
        return RewriteColumns()
    full = table.full_name
    types = {n.lower(): (n, t.lower()) for n, t in table.data_columns}
    partition_cols = {n.lower() for n, _t in table.partition_columns}

    def find(name: str, what: str, orderable: bool = True) -> str:
        key = name.lower()
        if key in partition_cols:
            raise Refused("invalid_columns",
                          f"{full}: {what} column {name} is a partition column; every file of a partition holds "
                          f"a single value of it, so only data columns can be used")
        if key not in types:
            raise Refused("invalid_columns",
                          f"{full}: {what} column {name} is not a column of the table "
                          f"(data columns: {', '.join(n for n, _t in table.data_columns)})")
        real, typ = types[key]
        if orderable and typ.startswith(("map<", "map(")):
            raise Refused("invalid_columns", f"{full}: {what} column {name} is a {typ}, which cannot be compared")
        return real

    zcols = zorder_columns(settings.sort_by)
    if zcols is not None:
        if table.format not in ZORDER_FORMATS:
            raise Refused("unsupported_format",
                          f"{full}: sort_by zorder(...) is supported for parquet and orc tables, not {table.format}: "
                          f"only their files carry the per-file min/max statistics a Z-order makes selective")
        zorder = tuple(find(c, "sort_by zorder") for c in zcols)
        for name in zorder:
            typ = types[name.lower()][1]
            if re.split(r"[(<\s]", typ, maxsplit=1)[0] not in ZORDER_TYPES:  # decimal(12,2) -> decimal
                raise Refused("invalid_columns",
                              f"{full}: sort_by zorder column {name} is a {typ}; a Z-order maps numbers, strings, "
                              f"dates, timestamps and booleans to ranks")
        if not settings.dedupe_keys:
            return RewriteColumns(zorder=zorder)
        raise Refused("invalid_columns", f"{full}: sort_by zorder(...) cannot be combined with dedupe, whose files "
                                         f"come from its own shuffle by key")
    sort_by = tuple(find(c, "sort_by") + (" desc" if desc else "") for c, desc in map(sort_key, settings.sort_by))
    if not settings.dedupe_keys:
        return RewriteColumns(sort_by=sort_by)
    if table.format not in DEDUPE_FORMATS:
        raise Refused("unsupported_format",
                      f"{full}: dedupe is supported for parquet and orc tables, not {table.format}")
    keys = tuple(find(c, "dedupe key") for c in settings.dedupe_keys)
    order_by = find(settings.dedupe_order_by or "", "dedupe order_by")
    marker = None
    if settings.dedupe_delete_marker:
        marker = find(settings.dedupe_delete_marker, "dedupe delete_marker")
        typ = types[marker.lower()][1]
        if settings.dedupe_delete_value is None and typ != "boolean":
            raise Refused("invalid_columns",
                          f"{full}: dedupe delete_marker column {marker} is a {typ}, not a boolean; give the value "
                          f"that marks a delete (delete_marker_value)")
    return RewriteColumns(sort_by=sort_by, keys=keys, order_by=order_by, delete_marker=marker,
                          delete_value=settings.dedupe_delete_value if marker else None)
