"""Identifier validation and quoting. Nothing here touches Spark.

Every database and table name that reaches SQL goes through ``quote_ident``
after ``validate_ident``: names are checked against the Hive identifier
alphabet and always back-quoted, so ``db.t; DROP TABLE x`` is rejected
before any statement is built.
"""

from __future__ import annotations

import re

from ..report.errors import UsageError

# Hive metastore identifiers: letters, digits and underscore (the metastore
# lower-cases them). Max length 128 (PART_NAME/TBL_NAME limits).
_IDENT = re.compile(r"^[A-Za-z0-9_]{1,128}$")


def validate_ident(name: str, what: str = "identifier") -> str:
    if not isinstance(name, str) or not _IDENT.match(name):
        raise UsageError(
            f"invalid {what} {name!r}: only letters, digits and underscore are allowed (max 128)"
        )
    return name.lower()


def quote_ident(name: str) -> str:
    validate_ident(name)
    return f"`{name}`"


def quote_column(name: str) -> str:
    """A column name from the Metastore or a file schema, back-quoted for
    Spark SQL and ``F.col``: a backtick inside the name is doubled (Spark's
    escape inside back-quotes), so no name can close the quotes early.
    Names with control characters are refused."""
    if not isinstance(name, str) or not name or any(ord(c) < 0x20 for c in name):
        raise UsageError(f"refusing column name {name!r} in SQL")
    return "`" + name.replace("`", "``") + "`"


def parse_table_name(full: str) -> tuple[str, str]:
    """``db.table`` -> (db, table), validated and lower-cased."""
    if not isinstance(full, str) or full.count(".") != 1:
        raise UsageError(f"invalid table name {full!r}: expected <database>.<table>")
    db, table = full.split(".")
    return validate_ident(db, "database name"), validate_ident(table, "table name")


def qualified(db: str, table: str) -> str:
    """Back-quoted ``db.table`` for SQL."""
    return f"{quote_ident(db)}.{quote_ident(table)}"


def parse_table_list(value: str) -> list[str]:
    items = [v.strip() for v in value.split(",") if v.strip()]
    if not items:
        raise UsageError("--tables needs at least one <database>.<table>")
    out = []
    for item in items:
        db, t = parse_table_name(item)
        name = f"{db}.{t}"
        if name not in out:
            out.append(name)
    return out


_SAFE_PATH = re.compile(r"^[^'\\\x00-\x1f`]+$")


def sql_path_literal(path: str) -> str:
    """A filesystem URI as a single-quoted SQL literal. Paths with quotes,
    backslashes or control characters are refused rather than escaped."""
    if not _SAFE_PATH.match(path):
        raise UsageError(f"refusing to put path {path!r} into SQL: it contains quote or control characters")
    return f"'{path}'"


def sql_string_literal(value: str) -> str:
    """A string literal for SQL properties: quote and backslash escaped,
    control characters as ``\\uXXXX`` escapes (Spark's parser reads them back
    as the character: Hive's default text delimiters are ``\\001``, ``\\002``,
    ``\\003`` and a line break). Nothing but a closed literal comes out."""
    out = value.replace("\\", "\\\\").replace("'", "\\'")
    return "'" + "".join(f"\\u{ord(c):04x}" if ord(c) < 0x20 or ord(c) == 0x7F else c for c in out) + "'"
