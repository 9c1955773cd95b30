"""Schema drift: data files whose columns are not the table's.

Hive's column DDL is metadata only: ``ALTER TABLE t CHANGE a b INT``
renames a column and ``REPLACE COLUMNS`` drops or reorders columns without
touching a file. The files keep their old columns, and readers then
disagree: by-name readers (Spark, Hive's Parquet reader) see NULL in ``b``,
positional readers (Impala's default for Parquet and ORC,
``parquet.column.index.access``, ORC positional evolution, Hive's
conversion of a partition's columns to the table's) see the old data of
``a`` there. The compaction reads by name and writes the table's columns, so
it would make the by-name view permanent for everyone: data of a renamed
column becomes NULL, data of a dropped column is gone.

So before anything is written, the columns of each unit's files (Parquet and
ORC footers) are compared with the table's. A unit is compacted only when
every reader sees the same before and after: the file's columns are the
table's first columns, same names (case-insensitive, as Hive lower-cases)
and types (nullability aside). That includes columns added at the end with
``ADD COLUMNS``: old files lack them and every reader, by name or by
position, gives NULL, as the compacted copy holds. A column missing in the
middle, a renamed, reordered or dropped column, an extra file column or a
different type refuses the unit (``schema_drift``), unless the user asks for
the by-name projection (``allow_by_name_projection``).

Files written by Hive 1.x's ORC writer name their columns ``_col0``,
``_col1``...: every reader resolves them by position, so only the positions
and types are compared.

The comparison is pure (``compare_columns``); the footers are read by
``formats.file_columns``, one per write job when a file's name identifies
its job (``writer_key``), else one per file.
"""

from __future__ import annotations

import logging
import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..report.model import Decision, TableInfo, Unit

log = logging.getLogger(__name__)

CODE = "schema_drift"

# Spark's commit protocol names every file of one write job
# part-<task>-<job uuid>[-c<n>][.<codec>].<ext>: one job, one schema.
_SPARK_JOB_FILE = re.compile(r"^part-\d{5,}-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(?:[-_.]|$)")
_HIVE_POSITIONAL = re.compile(r"^_col\d+$")
_CHAR = re.compile(r"\b(?:var)?char\(\d+\)")


def writer_key(name: str) -> str:
    """Files with the same key were written by one job with one schema, so
    one footer tells the columns of all: Spark's part files of one job
    (its UUID); any other file is its own group."""
    m = _SPARK_JOB_FILE.match(name)
    return f"spark-job:{m.group(1)}" if m else f"file:{name}"


def _norm_type(t: str) -> str:
    """Types as readers compare them: case-insensitive, CHAR/VARCHAR read as
    strings, and Parquet BINARY without a string annotation (older writers)
    read as the same bytes as a string."""
    t = _CHAR.sub("string", t.lower().replace(" ", ""))
    return re.sub(r"\bbinary\b", "string", t)


def compare_columns(table: list[tuple[str, str]], file: list[tuple[str, str]]) -> list[str]:
    """What readers by name and readers by position would see differently in
    a file with columns ``file`` read as a table with columns ``table``
    (both ``(name, Spark SQL type)`` in order). Empty when the file's columns
    are the table's first columns (same names ignoring case, same types
    ignoring nullability): then every reader, and the compacted copy, gives
    the same values, NULL for the trailing table columns the file lacks."""
    t = [(n.lower(), _norm_type(ty)) for n, ty in table]
    f = [(n.lower(), _norm_type(ty)) for n, ty in file]
    problems: list[str] = []
    if f and all(_HIVE_POSITIONAL.match(n) for n, _ty in f):
        # Hive 1.x ORC: no names in the file; every reader goes by position.
        for i, (n, ty) in enumerate(f):
            if i >= len(t):
                problems.append(f"file column {n} (position {i + 1}) is not in the table (dropped?)")
            elif ty != t[i][1]:
                problems.append(f"column {t[i][0]} (position {i + 1}): {ty} in the file, {t[i][1]} in the table")
        return problems
    t_pos = {n: i for i, (n, _ty) in enumerate(t)}
    f_pos = {n: i for i, (n, _ty) in enumerate(f)}
    for i, (n, ty) in enumerate(f):
        if i < len(t) and t[i][0] == n:
            if ty != t[i][1]:
                problems.append(f"column {n}: {ty} in the file, {t[i][1]} in the table")
            continue
        if i >= len(t):
            where = f"; it is column {t_pos[n] + 1} of the table" if n in t_pos else ""
            problems.append(f"file column {n} (position {i + 1}) is beyond the table's {len(t)} column(s){where} "
                            f"(dropped?)")
            continue
        tn = t[i][0]
        what = [f"position {i + 1} is {n} in the file, {tn} in the table"]
        if tn not in f_pos:
            what.append(f"the file has no column {tn}")
        if n not in t_pos:
            what.append(f"the table has no column {n}")
        else:
            what.append(f"{n} is column {t_pos[n] + 1} of the table")
        problems.append(f"{what[0]} ({', '.join(what[1:])})")
    return problems


def describe(problems: list[str], example: str) -> str:
    """The reason of a refused unit: what differs, with a file that shows it."""
    return (f"its files' columns differ from the table's ({'; '.join(problems[:4])}"
            f"{'; ...' if len(problems) > 4 else ''}; e.g. {example}): readers by name (Spark, Hive) and by "
            f"position (Impala, parquet.column.index.access, ORC positional evolution) see different data, and "
            f"the compacted copy would keep only what a by-name reader sees (data of a renamed or dropped column "
            f"lost); nothing was written. Set allow_by_name_projection to compact by name anyway")


def _table_columns(info: TableInfo) -> list[tuple[str, str]]:
    return list(info.data_columns)


def unit_drift(info: TableInfo, unit: Unit, read_columns: Any, cache: dict[str, list[str]],
               threads: int = 8) -> tuple[list[str], str] | None:
    """(problems, example file) for the files ``unit`` would rewrite, or None
    when they all read the same for every reader. ``read_columns(uri)`` gives
    a file's ``(name, type)`` columns from its footer (``formats.file_columns``);
    one file per write job is read (``writer_key``), on up to ``threads``
    threads when there are many; ``cache`` holds the verdict per distinct file schema."""
    groups: dict[str, str] = {}
    for f in unit.rewrite_files:
        groups.setdefault(writer_key(f.name), f.name)
    names = sorted(groups.values())
    base = unit.location.rstrip("/")

    def read(name: str) -> tuple[str, list[tuple[str, str]]]:
        return name, read_columns(f"{base}/{name}")

    # Threads (each its own gateway connection) only where they pay: HDFS
    # latency per footer, many footers.
    workers = max(1, min(threads, len(names) // 8))
    if workers == 1:
        found = [read(n) for n in names]
    else:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="lakekeeper-footer") as pool:
            found = list(pool.map(read, names))
    table = _table_columns(info)
    for name, cols in found:
        key = repr(cols)
        if key not in cache:
            cache[key] = compare_columns(table, cols)
        if cache[key]:
            return cache[key], f"{name}: " + ", ".join(f"{n} {ty}" for n, ty in cols)
    return None


def check_units(info: TableInfo, units: list[Unit], read_columns: Any,
                allow_by_name: bool = False) -> dict[str, list[str]]:
    """Refuse (skip with code ``schema_drift``) each Parquet/ORC unit to
    compact whose files drift from the table's columns, before anything is
    written. With ``allow_by_name`` the units stay planned; returns, per
    unit spec, the drift found (notes for the result)."""
    notes: dict[str, list[str]] = {}
    if info.format not in ("parquet", "orc"):
        return notes
    cache: dict[str, list[str]] = {}
    for u in units:
        if u.decision.action != "compact":
            continue
        found = unit_drift(info, u, read_columns, cache)
        if found is None:
            continue
        problems, example = found
        if allow_by_name:
            notes[u.spec] = [f"schema drift compacted by name (allow_by_name_projection): {'; '.join(problems)}; "
                             f"e.g. {example}"]
            continue
        log.warning("%s %s: schema drift: %s", info.full_name, u.spec or "(table)", "; ".join(problems))
        u.decision = Decision("skip", describe(problems, example), u.stats.files, u.decision.rule, code=CODE)
    return notes
