"""What Hive sees of a table, read through the test bed's HiveServer2 (its
SerDes and input formats, a fetch task in the server: no Spark anywhere), as
an order-independent checksum that can also say which rows differ.

Each column is asked for as a token that Beeline's tab-separated output
carries exactly (``hive_token``): strings as ``s`` + base64 of their UTF-8
bytes (tabs, newlines, the text ``NULL`` and trailing spaces survive), other
primitives as ``v`` + Hive's own ``CAST(... AS STRING)``, SQL NULL as ``n``;
arrays, maps and structs as the JSON text HiveServer2 renders them in
(``j`` + JSON). CHAR values are right-trimmed (Hive compares CHARs without
their padding). A table's view is the multiset of its rows' token tuples;
its checksum the row count and the sum of the rows' SHA-256 (first 8 bytes)
modulo 2**64.

``normalize`` turns a token into a value Spark's tokens can be compared with
(tests/testbed/apps/hive_reader_tables.py asks Spark for the same tokens):
numbers as numbers, timestamps without trailing zeros, JSON parsed.
"""

from __future__ import annotations

import base64
import collections
import hashlib
import json
from decimal import Decimal, InvalidOperation

COMPLEX = ("array", "map", "struct", "uniontype")


def hive_token(name: str, typ: str) -> str:
    c = f"`{name}`"
    if typ.startswith(COMPLEX):
        return c  # HiveServer2 sends its JSON text; NULL as NULL
    if typ == "string" or typ.startswith(("varchar", "char")):
        v = f"rtrim(CAST({c} AS STRING))" if typ.startswith("char") else f"CAST({c} AS STRING)"
        return f"coalesce(concat('s', base64(CAST({v} AS BINARY))), 'n')"
    if typ == "binary":
        return f"coalesce(concat('b', base64({c})), 'n')"
    return f"coalesce(concat('v', CAST({c} AS STRING)), 'n')"


def view_sql(table: str, columns: list[dict]) -> str:
    return f"SELECT {', '.join(hive_token(c['name'], c['type']) for c in columns)} FROM {table}"


def rows_of(result, columns: list[dict]) -> list[tuple]:
    """Token tuples from a HiveResult of ``view_sql`` (complex columns: ``j`` + JSON or ``n``)."""
    complex_at = {i for i, c in enumerate(columns) if c["type"].startswith(COMPLEX)}
    out = []
    for row in result.rows:
        if len(row) != len(columns):
            raise AssertionError(f"{len(row)} fields for {len(columns)} columns: {row!r}")
        out.append(tuple(("n" if v is None else "j" + v) if i in complex_at else v for i, v in enumerate(row)))
    return out


class View:
    """The multiset of a table's rows as tokens, or the error reading it."""

    def __init__(self, rows: list[tuple] | None = None, error: str | None = None):
        self.rows = collections.Counter(rows or [])
        self.error = error

    @property
    def checksum(self) -> tuple[int, int] | str:
        if self.error is not None:
            return "error: " + first_line(self.error)
        total = 0
        for row, n in self.rows.items():
            h = int.from_bytes(hashlib.sha256("\x1f".join(row).encode()).digest()[:8], "big")
            total = (total + n * h) % 2 ** 64
        return sum(self.rows.values()), total

    def diff(self, other: "View", limit: int = 4) -> str:
        """Rows only in self and only in other (a few of each)."""
        if self.error is not None or other.error is not None:
            return f"{self.checksum} vs {other.checksum}"
        only = list((self.rows - other.rows).elements())
        theirs = list((other.rows - self.rows).elements())
        return (f"{len(only)} rows only here, e.g. {[decode_row(r) for r in only[:limit]]}; "
                f"{len(theirs)} only there, e.g. {[decode_row(r) for r in theirs[:limit]]}")


def first_line(text: str) -> str:
    return text.strip().splitlines()[0][:300] if text.strip() else text


def decode_row(row: tuple) -> tuple:
    return tuple(_decode(t) for t in row)


def _decode(token: str):
    if token == "n":
        return None
    if token[0] in "sb":
        raw = base64.b64decode(token[1:])
        return raw.decode("utf-8", "replace") if token[0] == "s" else raw
    return token[1:]


def normalize(token: str, typ: str):
    """A token as a comparable value (Hive's and Spark's spell some alike values differently)."""
    value = _decode(token)
    if value is None or token[0] in "sb":
        return value
    if token[0] == "j":
        return json.dumps(json.loads(value), sort_keys=True)
    base = typ.split("(")[0]
    if base in ("tinyint", "smallint", "int", "bigint"):
        return int(value)
    if base == "decimal":
        try:
            return Decimal(value).normalize()
        except InvalidOperation:
            return value
    if base in ("float", "double"):
        return float(value)
    if base == "boolean":
        return value.lower()
    if base == "timestamp" and "." in value:
        head, frac = value.split(".", 1)
        frac = frac.rstrip("0")
        return f"{head}.{frac}" if frac else head
    return value


def normalized(view: View, columns: list[dict]) -> collections.Counter:
    out: collections.Counter = collections.Counter()
    for row, n in view.rows.items():
        out[tuple(normalize(t, c["type"]) for t, c in zip(row, columns))] += n
    return out
