"""Partition names and texts as the Metastore and Spark give them: a
partition's path name (``a=1/b=x%2Fy``) and the text of Spark's
``CatalogTablePartition`` parsed into its spec and location. Pure."""

from __future__ import annotations


def unescape_path_name(text: str) -> str:
    """A Hive-escaped directory name decoded (``%3A`` is ``:``), as Hive's
    and Spark's ``unescapePathName`` do it: a ``%`` not followed by two hex
    digits stays."""
    if "%" not in text:
        return text
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == "%" and i + 2 < n:
            digits = text[i + 1 : i + 3]
            try:  # Java's parseInt: a sign is taken, spaces are not
                code = int(digits, 16) if digits.strip() == digits else -1
            except ValueError:
                code = -1
            if code >= 0:
                out.append(chr(code))
                i += 3
                continue
        out.append(c)
        i += 1
    return "".join(out)


def parse_partition_name(name: str, cols: list[str]) -> dict[str, str] | None:
    """A partition's spec from its Metastore name (``k=v/k2=v2``, escaped),
    keyed and ordered as ``cols``; None if it does not name exactly them."""
    found: dict[str, str] = {}
    for piece in name.split("/"):
        key, eq, value = piece.partition("=")
        if not eq:
            return None
        found[unescape_path_name(key).lower()] = unescape_path_name(value)
    if len(found) != len(cols) or any(c.lower() not in found for c in cols):
        return None
    return {c: found[c.lower()] for c in cols}


def parse_partition_text(text: str, cols: list[str]) -> tuple[dict[str, str], str] | None:
    """Spec and location from ``CatalogTablePartition.toString``::

        CatalogPartition(
        \tPartition Values: [a=1, b=x]
        \tLocation: hdfs://nn/t/a=1/b=x
        ...

    None when the text is not exactly that shape or a value could be read
    two ways (it contains ``, <column>=``): the caller then asks the JVM
    for the fields."""
    head = "CatalogPartition(\n\tPartition Values: ["
    if not text.startswith(head) or not cols:
        return None
    end = text.find("]\n\t", len(head))
    if end < 0:
        return None
    values = text[len(head):end]
    rest = text[end + 3:]
    if not rest.startswith("Location: ") or text.count("]\n\tLocation: ") != 1:
        return None
    location = rest[len("Location: "):].split("\n", 1)[0]
    if not location:
        return None
    # Boundaries: the start and every ", <column>=" (columns in any order).
    starts = []
    for c in cols:
        if values.startswith(c + "="):
            starts.append((0, c))
        pos = values.find(", " + c + "=")
        while pos >= 0:
            starts.append((pos + 2, c))
            pos = values.find(", " + c + "=", pos + 1)
    starts.sort()
    if len(starts) != len(cols) or sorted(c for _p, c in starts) != sorted(cols) or starts[0][0] != 0:
        return None
    spec = {}
    for k, (pos, c) in enumerate(starts):
        stop = starts[k + 1][0] - 2 if k + 1 < len(starts) else len(values)
        spec[c] = values[pos + len(c) + 1:stop]
    return {c: spec[c] for c in cols}, location
