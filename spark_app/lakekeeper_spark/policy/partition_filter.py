"""``where``: a partition filter, parsed by a small strict parser and
evaluated in Python on each partition's spec. Nothing of it reaches SQL.

Grammar (keywords case-insensitive)::

    expr       := and_expr (OR and_expr)*
    and_expr   := not_expr (AND not_expr)*
    not_expr   := NOT not_expr | '(' expr ')' | predicate
    predicate  := column op literal
                | column [NOT] IN '(' literal (',' literal)* ')'
                | column [NOT] BETWEEN literal AND literal
    op         := = | != | <> | < | <= | > | >=
    literal    := 'string' | "string" | number       (a quote inside is doubled: 'it''s')
    column     := a partition column name (letters, digits, underscore)

Partition values are strings in the Metastore. A comparison is numeric when
both the partition value and the literal are decimal numbers (``hour >= 9``
matches ``hour=10``), else it compares the strings (``dt >= '2024-09-01'``).
The Hive default partition (``__HIVE_DEFAULT_PARTITION__``) is NULL: a
comparison with it is unknown, ``NOT`` of unknown stays unknown (SQL's
three-valued logic), and only partitions for which the filter is true are
selected.

Pure: no Spark here.
"""

from __future__ import annotations

import dataclasses
import re
from decimal import Decimal, InvalidOperation
from typing import Union

from ..report.errors import UsageError

HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
MAX_LENGTH = 4096
MAX_DEPTH = 32
MAX_IN_ITEMS = 1000

_KEYWORDS = {"and", "or", "not", "in", "between"}
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OPS = ("<=", ">=", "!=", "<>", "=", "<", ">")


@dataclasses.dataclass(frozen=True)
class Token:
    kind: str  # ident, keyword, string, number, op, lparen, rparen, comma, end
    text: str
    pos: int


@dataclasses.dataclass(frozen=True)
class Literal:
    text: str
    is_number: bool  # written as a number (unquoted)


@dataclasses.dataclass(frozen=True)
class Compare:
    column: str
    op: str
    value: Literal


@dataclasses.dataclass(frozen=True)
class InList:
    column: str
    values: tuple[Literal, ...]
    negated: bool


@dataclasses.dataclass(frozen=True)
class Between:
    column: str
    low: Literal
    high: Literal
    negated: bool


@dataclasses.dataclass(frozen=True)
class Not:
    operand: "Node"


@dataclasses.dataclass(frozen=True)
class BoolOp:
    op: str  # and / or
    operands: tuple["Node", ...]


Node = Union[Compare, InList, Between, Not, BoolOp]


def _error(text: str, pos: int, what: str) -> UsageError:
    shown = text if len(text) <= 120 else text[:117] + "..."
    return UsageError(f"invalid where {shown!r}: {what} at position {pos + 1}")


def tokenize(text: str) -> list[Token]:
    out: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t\r\n":
            i += 1
            continue
        if c in "'\"":
            j, buf = i + 1, []
            while True:
                if j >= n:
                    raise _error(text, i, "unterminated string")
                if text[j] == c:
                    if j + 1 < n and text[j + 1] == c:  # doubled quote
                        buf.append(c)
                        j += 2
                        continue
                    break
                if ord(text[j]) < 0x20:
                    raise _error(text, j, "control character in a string")
                buf.append(text[j])
                j += 1
            out.append(Token("string", "".join(buf), i))
            i = j + 1
            continue
        m = _NUMBER.match(text, i)
        if m and (c != "-" or not out or out[-1].kind in ("op", "lparen", "comma", "keyword")):
            end = m.end()
            if end < n and (text[end].isalnum() or text[end] in "_."):
                raise _error(text, i, "malformed number")
            out.append(Token("number", m.group(0), i))
            i = end
            continue
        m = _IDENT.match(text, i)
        if m:
            word = m.group(0)
            out.append(Token("keyword" if word.lower() in _KEYWORDS else "ident", word, i))
            i = m.end()
            continue
        op = next((o for o in _OPS if text.startswith(o, i)), None)
        if op:
            out.append(Token("op", op, i))
            i += len(op)
            continue
        kinds = {"(": "lparen", ")": "rparen", ",": "comma"}
        if c in kinds:
            out.append(Token(kinds[c], c, i))
            i += 1
            continue
        raise _error(text, i, f"unexpected character {c!r}")
    out.append(Token("end", "", n))
    return out


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.tokens = tokenize(text)
        self.i = 0
        self.depth = 0

    def peek(self) -> Token:
        return self.tokens[self.i]

    def take(self) -> Token:
        tok = self.tokens[self.i]
        self.i += 1
        return tok

    def keyword(self, word: str) -> bool:
        tok = self.peek()
        if tok.kind == "keyword" and tok.text.lower() == word:
            self.i += 1
            return True
        return False

    def expect(self, kind: str, what: str) -> Token:
        tok = self.peek()
        if tok.kind != kind:
            raise _error(self.text, tok.pos, f"expected {what}, found {_describe(tok)}")
        return self.take()

    def parse(self) -> Node:
        node = self.expr()
        tok = self.peek()
        if tok.kind != "end":
            raise _error(self.text, tok.pos, f"unexpected {_describe(tok)}")
        return node

    def expr(self) -> Node:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _error(self.text, self.peek().pos, f"nested deeper than {MAX_DEPTH} levels")
        parts = [self.and_expr()]
        while self.keyword("or"):
            parts.append(self.and_expr())
        self.depth -= 1
        return parts[0] if len(parts) == 1 else BoolOp("or", tuple(parts))

    def and_expr(self) -> Node:
        parts = [self.not_expr()]
        while self.keyword("and"):
            parts.append(self.not_expr())
        return parts[0] if len(parts) == 1 else BoolOp("and", tuple(parts))

    def not_expr(self) -> Node:
        if self.keyword("not"):
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise _error(self.text, self.peek().pos, f"nested deeper than {MAX_DEPTH} levels")
            node = Not(self.not_expr())
            self.depth -= 1
            return node
        if self.peek().kind == "lparen":
            self.take()
            node = self.expr()
            self.expect("rparen", "')'")
            return node
        return self.predicate()

    def literal(self) -> Literal:
        tok = self.peek()
        if tok.kind == "string":
            self.take()
            return Literal(tok.text, False)
        if tok.kind == "number":
            self.take()
            return Literal(tok.text, True)
        raise _error(self.text, tok.pos, f"expected a string or number literal, found {_describe(tok)}")

    def predicate(self) -> Node:
        tok = self.peek()
        if tok.kind != "ident":
            raise _error(self.text, tok.pos, f"expected a partition column name, found {_describe(tok)}")
        column = self.take().text.lower()
        negated = self.keyword("not")
        if self.keyword("in"):
            self.expect("lparen", "'(' after IN")
            values = [self.literal()]
            while self.peek().kind == "comma":
                self.take()
                values.append(self.literal())
                if len(values) > MAX_IN_ITEMS:
                    raise _error(self.text, self.peek().pos, f"more than {MAX_IN_ITEMS} values in an IN list")
            self.expect("rparen", "')' closing the IN list")
            return InList(column, tuple(values), negated)
        if self.keyword("between"):
            low = self.literal()
            if not self.keyword("and"):
                raise _error(self.text, self.peek().pos, "expected AND in BETWEEN")
            return Between(column, low, self.literal(), negated)
        if negated:
            raise _error(self.text, self.peek().pos, "expected IN or BETWEEN after NOT")
        op = self.expect("op", "a comparison operator (= != <> < <= > >=), IN or BETWEEN").text
        return Compare(column, "!=" if op == "<>" else op, self.literal())


def _describe(tok: Token) -> str:
    if tok.kind == "end":
        return "the end of the filter"
    if tok.kind == "string":
        return "a string"
    return repr(tok.text)


def parse_where(text: str) -> Node:
    """Parse a filter, or raise ``UsageError`` saying what and where."""
    if not isinstance(text, str) or not text.strip():
        raise UsageError("invalid where: the filter is empty")
    if len(text) > MAX_LENGTH:
        raise UsageError(f"invalid where: longer than {MAX_LENGTH} characters")
    return _Parser(text).parse()


def columns(node: Node) -> set[str]:
    if isinstance(node, (Compare, InList, Between)):
        return {node.column}
    if isinstance(node, Not):
        return columns(node.operand)
    out: set[str] = set()
    for child in node.operands:
        out |= columns(child)
    return out


def check_columns(node: Node, partition_columns: list[str], all_columns: list[str], table: str) -> None:
    """Every column of the filter must be a partition column of ``table``.
    Raises ``UsageError`` naming the offending columns."""
    parts = [c.lower() for c in partition_columns]
    if not parts:
        raise UsageError(f"where filters partitions, and {table} is not partitioned")
    data = {c.lower() for c in all_columns}
    used = sorted(columns(node))
    not_part = [c for c in used if c not in parts and c in data]
    unknown = [c for c in used if c not in parts and c not in data]
    problems = []
    if not_part:
        problems.append(f"{', '.join(not_part)} {'is not a partition column' if len(not_part) == 1 else 'are not partition columns'}")
    if unknown:
        problems.append(f"unknown column{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}")
    if problems:
        raise UsageError(f"where on {table}: {'; '.join(problems)} (partition columns: {', '.join(parts)})")


def _number(text: str) -> Decimal | None:
    if not _NUMBER.fullmatch(text):
        return None
    try:
        return Decimal(text)
    except InvalidOperation:  # pragma: no cover - the pattern only lets numbers through
        return None


def _compare(value: str | None, op: str, lit: Literal) -> bool | None:
    if value is None:
        return None
    left_n, right_n = _number(value), _number(lit.text)
    left: Decimal | str
    right: Decimal | str
    if left_n is not None and right_n is not None:
        left, right = left_n, right_n
    else:
        left, right = value, lit.text
    if op == "=":
        return left == right
    if op == "!=":
        return left != right
    if op == "<":
        return left < right  # type: ignore[operator]
    if op == "<=":
        return left <= right  # type: ignore[operator]
    if op == ">":
        return left > right  # type: ignore[operator]
    return left >= right  # type: ignore[operator]


def _not(v: bool | None) -> bool | None:
    return None if v is None else not v


def evaluate(node: Node, spec: dict[str, str]) -> bool | None:
    """True, False or None (unknown: a NULL partition value), as SQL does."""
    lowered = {k.lower(): v for k, v in spec.items()}

    def value_of(column: str) -> str | None:
        v = lowered[column]
        return None if v == HIVE_DEFAULT_PARTITION else v

    def ev(n: Node) -> bool | None:
        if isinstance(n, Compare):
            return _compare(value_of(n.column), n.op, n.value)
        if isinstance(n, InList):
            v = value_of(n.column)
            results = [_compare(v, "=", lit) for lit in n.values]
            hit: bool | None = True if any(r is True for r in results) else (None if None in results else False)
            return _not(hit) if n.negated else hit
        if isinstance(n, Between):
            v = value_of(n.column)
            lo, hi = _compare(v, ">=", n.low), _compare(v, "<=", n.high)
            inside = None if lo is None or hi is None else (lo and hi)
            return _not(inside) if n.negated else inside
        if isinstance(n, Not):
            return _not(ev(n.operand))
        results = [ev(c) for c in n.operands]
        if n.op == "and":
            if any(r is False for r in results):
                return False
            return None if None in results else True
        if any(r is True for r in results):
            return True
        return None if None in results else False

    return ev(node)


def matches(node: Node, spec: dict[str, str]) -> bool:
    """Whether a partition is selected (the filter is true for it)."""
    return evaluate(node, spec) is True


def select_partitions(where: str | None, table: str, partition_columns: list[str], all_columns: list[str],
                      specs: list[dict[str, str]]) -> list[bool]:
    """Which of ``specs`` the filter selects (all of them without a filter).
    Raises ``UsageError`` for a filter that does not fit the table."""
    if where is None or not str(where).strip():
        return [True] * len(specs)
    node = parse_where(where)
    check_columns(node, partition_columns, all_columns, table)
    return [matches(node, spec) for spec in specs]
