"""Space pre-flight: will the compacted copy fit?

While a unit is compacted, its original and its compacted copy both exist
(the reference's "2x the data"). The copy is written next to the original,
so it is charged to the original's parent and every ancestor: each one with
a space quota must have room for the copy's bytes times the replication, plus
one block per writer that HDFS reserves while a file is open; each one with a
namespace quota must have room for the new files and directories; and the
filesystem must have that much space left.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from .fs import HadoopFS
from ..report.model import Unit
from .layout import split_path
from ..report.sizes import human_bytes


@dataclasses.dataclass
class DirNeed:
    path: str
    space: int = 0
    names: int = 0


def ancestors(uri: str) -> list[str]:
    """``hdfs://nn/a/b/c`` -> [``hdfs://nn/a/b``, ``hdfs://nn/a``, ``hdfs://nn/``]."""
    out = []
    cur = uri.rstrip("/")
    while True:
        try:
            parent = split_path(cur)[0]
        except ValueError:
            break
        if parent.endswith(":") or parent.endswith("//") or parent.count("/") < 3 and "://" in parent:
            out.append(parent.rstrip("/") + "/")
            break
        out.append(parent)
        cur = parent
    return out


def needs(units: list[Unit], replication: int, block_size: int, writers: int = 2) -> dict[str, DirNeed]:
    """Pure: what each ancestor directory must be able to take."""
    out: dict[str, DirNeed] = {}
    for u in units:
        space = u.stats.bytes * replication + min(writers, max(1, u.decision.target_files)) * block_size * replication
        names = u.decision.target_files + 6  # files, staging dir, writer temp dirs, journal records
        for d in ancestors(u.location):
            n = out.setdefault(d, DirNeed(d))
            n.space += space
            n.names += names
    return out


def _space_quota_line(path: str, q: dict[str, int]) -> str:
    return f"{path}: space quota {human_bytes(q['space_quota'])}, {human_bytes(q['space_consumed'])} used"


def _namespace_quota_line(path: str, q: dict[str, int]) -> str:
    return f"{path}: namespace quota {q['quota']}, {q['namespace_used']} used"


def space_check(fs: HadoopFS, units: list[Unit]) -> dict[str, Any]:
    if not units:
        return {"ok": True, "problems": [], "warnings": [], "dirs": [], "needed_bytes": 0}
    first = units[0].location
    repl, block = fs.replication(first), fs.block_size(first)
    problems: list[str] = []
    warnings: list[str] = []
    dirs = []
    # Only HDFS has quotas; on other filesystems a content summary of every
    # ancestor would walk whole disks for nothing.
    per_dir = needs(units, repl, block) if fs.scheme(first) == "hdfs" else {}
    for path, need in sorted(per_dir.items()):
        q = fs.quota_usage(path)
        entry = {"path": path, "needed_bytes": need.space, "needed_names": need.names, **q}
        dirs.append(entry)
        if q.get("unknown"):
            warnings.append(f"{path}: quota not checked, this user may not read it: {q['unknown']} (NameNodes before "
                            f"Hadoop 2.8 tell a quota only with a content summary of the whole directory; a write "
                            f"over a quota there still fails cleanly)")
            continue
        if q["space_quota"] >= 0 and q["space_consumed"] + need.space > q["space_quota"]:
            problems.append(f"{_space_quota_line(path, q)}, the compacted copy needs {human_bytes(need.space)} more "
                            f"(data x replication {repl} + open blocks)")
        if q["quota"] >= 0 and q["namespace_used"] + need.names > q["quota"]:
            problems.append(f"{_namespace_quota_line(path, q)}, the compacted copy needs {need.names} more names")
    total = sum(u.stats.bytes for u in units) * repl
    status = fs.fs_status(first)
    if status["remaining"] >= 0 and status["capacity"] > 0 and total > status["remaining"]:
        problems.append(
            f"filesystem has {human_bytes(status['remaining'])} left, the compacted copy needs {human_bytes(total)}"
        )
    return {"ok": not problems, "problems": problems, "warnings": warnings,
            "dirs": [d for d in dirs if d["quota"] >= 0 or d["space_quota"] >= 0 or d.get("unknown")],
            "needed_bytes": total, "replication": repl, "block_size": block, "remaining_bytes": status["remaining"]}


def quota_refusal(fs: HadoopFS, uri: str, exc_text: str) -> str | None:
    """When writing ``uri`` (a lease or journal file) failed on a quota:
    which ancestor's quota it is, in the pre-flight's words (``<dir>: space
    quota 316 KB, 1.2 MB used, ...``); None when ``exc_text`` is not a
    quota error. HDFS charges an open file a whole block per replica, so a
    directory close to its space quota cannot take even a small file."""
    if "QuotaExceededException" not in exc_text:
        return None
    try:
        repl, block = fs.replication(uri), fs.block_size(uri)
        for path in ancestors(uri):
            if not fs.exists(path):
                continue
            q = fs.quota_usage(path)
            if "DSQuota" in exc_text and q["space_quota"] >= 0 and q["space_consumed"] + block * repl > q["space_quota"]:
                return (f"{_space_quota_line(path, q)}, a file open in it needs a block of {human_bytes(block)} "
                        f"x replication {repl}")
            if "NSQuota" in exc_text and q["quota"] >= 0 and q["namespace_used"] + 2 > q["quota"]:
                return _namespace_quota_line(path, q)
    except Exception:  # noqa: BLE001 - the exception's own text says enough
        pass
    return " ".join(exc_text.split())[:400]
