"""What the filesystem's answers say: the text of a ``FileStatus[]``
(``parse_status_dump``) and plain URIs (``plain_uri``: qualified without a
gateway call when they are unambiguous); checksum files of the local
filesystem. Pure: no JVM."""

from __future__ import annotations

import re
from typing import Any

_STATUS = re.compile(
    r"\w+\{path=(?P<path>.*?); isDirectory=(?P<dir>true|false)"
    r"(?:; length=(?P<len>\d+)(?:; replication=(?P<repl>\d+))?)?.*?; modification_time=(?P<mtime>\d+)"
    r"(?:; access_time=\d+; owner=(?P<owner>[^;{}]*); group=(?P<group>[^;{}]*);)?"
)


def parse_status_dump(text: str, details: bool = False) -> list[tuple[Any, ...]] | None:
    """Parse ``ArrayUtils.toString(FileStatus[])`` (``{A{...},B{...}}``; the
    ``[A{...}, B{...}]`` form of ``Arrays.toString`` is accepted too).

    Returns (path, is_dir, length, mtime) tuples, or None when the text does not
    parse cleanly (the caller then falls back to per-field calls). With
    ``details`` each tuple also has (replication, owner, group) (None where
    the text does not say).
    """
    text = text.strip()
    if text in ("[]", "{}"):
        return []
    if not ((text.startswith("[") and text.endswith("}]")) or (text.startswith("{") and text.endswith("}}"))):
        return None
    out: list[tuple[Any, ...]] = []
    for m in _STATUS.finditer(text):
        entry: tuple[Any, ...] = (m.group("path"), m.group("dir") == "true", int(m.group("len") or 0),
                                  int(m.group("mtime")))
        if details:
            entry += (int(m.group("repl")) if m.group("repl") else None, m.group("owner"), m.group("group"))
        out.append(entry)
    # Every entry must have been recognised (one "{path=" per status).
    if len(out) != text.count("{path="):
        return None
    return out


_ATTRS = re.compile(
    r"\w+\{path=(?P<path>.*?); isDirectory=(?P<dir>true|false);.*?; owner=(?P<owner>[^;{}]*); "
    r"group=(?P<group>[^;{}]*); permission=(?P<perm>[-rwxtT]{9})[;}]"
)
_BITS = (0o400, 0o200, 0o100, 0o040, 0o020, 0o010, 0o004, 0o002, 0o001)


def parse_attributes(text: str) -> list[tuple[str, bool, int, str, str]] | None:
    """(path, is_dir, mode, owner, group) of each status in the text of a
    ``FileStatus`` or of ``ArrayUtils.toString(FileStatus[])`` (Hadoop 2.7
    to 3.5 write ``...; owner=u; group=g; permission=rwxr-x--t; ...``), the
    mode as ``FsPermission.toShort`` gives it (the sticky bit included); None
    when any status does not parse (the caller asks field by field)."""
    text = text.strip()
    if text in ("[]", "{}"):
        return []
    out = []
    for m in _ATTRS.finditer(text):
        sym, mode = m.group("perm"), 0
        for bit, char in zip(_BITS, sym):
            if char in "rwxt":
                mode |= bit
        if sym[-1] in "tT":
            mode |= 0o1000
        out.append((m.group("path"), m.group("dir") == "true", mode, m.group("owner"), m.group("group")))
    if not out or len(out) != text.count("{path="):
        return None
    return out


_PLAIN = re.compile(r"^(?P<scheme>[a-z][a-z0-9+.-]*):(?://(?P<auth>[A-Za-z0-9.:_-]*))?(?P<path>(?:/[A-Za-z0-9_=+,.~@-]+)+)$")


def is_checksum_name(name: str) -> bool:
    """A checksum file of Hadoop's local filesystem (``.<name>.crc``), which
    it leaves out of every listing it gives."""
    return name.startswith(".") and name.endswith(".crc")


def plain_uri(uri: str) -> tuple[str, str] | None:
    """(filesystem key, the URI as Hadoop qualifies it) for a fully qualified
    URI made only of unremarkable characters and segments, else None."""
    m = _PLAIN.match(uri)
    if not m or any(seg in (".", "..") for seg in m.group("path").split("/")):
        return None
    scheme, auth, path = m.group("scheme"), m.group("auth") or "", m.group("path")
    if scheme == "file":
        if auth:
            return None
        return "file://", "file:" + path
    if not auth:
        return None
    return f"{scheme}://{auth}", f"{scheme}://{auth}{path}"
