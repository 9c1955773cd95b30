"""lakekeeper 0.0.x's configuration keys and command-line flags, as the
engine reads them today (docs/upgrading-from-0.0.x.md): each is taken with
a deprecation note naming what replaces it, or refused with that name when
its meaning differs. Pure: no Spark here.

The 0.0.x names, from the 0.0.6 wheel: ``config.py`` ``LakekeeperConfig``
(block_size_mb, compaction_ratio_threshold, backup_prefix, dry_run,
log_level, config_file, database, table, tables, spark_submit, sort_columns,
analyze_after_compaction) and ``cli.py`` (``-c/--config-file`` before or
after the command; ``-d/--database``, ``-t/--table``, ``--tables``,
``--block-size``, ``--ratio-threshold``, ``--log-level``, ``--dry-run``,
``--older-than``; compact's ``--sort-columns`` and
``--analyze-stats/--no-analyze-stats``).
"""

from __future__ import annotations

from typing import Any

from ..report.errors import UsageError

# 0.0.x keys that today's engine reads under the same name: block_size_mb,
# compaction_ratio_threshold, backup_prefix, dry_run, log_level, spark_submit
# (run_lakekeeper.py's launcher, launcher.py). The others:
LEGACY_KEYS = ("sort_columns", "analyze_after_compaction", "config_file", "database", "table", "tables")
STATISTICS_NOTE = ("the table's (or partition's) statistics (numFiles, totalSize, numRows) are always written "
                   "after a compaction now")


def legacy_notes_and_values(data: dict[str, Any], path: str) -> tuple[list[str], dict[str, Any]]:
    """(deprecation notes, {"selection": (flag, value) or None, "sort_columns":
    {table: [columns]}}) of the 0.0.x keys of a config file."""
    notes: list[str] = []
    out: dict[str, Any] = {"selection": None, "sort_columns": {}}
    if "analyze_after_compaction" in data:
        notes.append(f"config file {path}: analyze_after_compaction (lakekeeper 0.0.x) is ignored: {STATISTICS_NOTE}")
    if "config_file" in data:
        notes.append(f"config file {path}: config_file (lakekeeper 0.0.x) is ignored: give --config-file")
    for key, flag in (("table", "--table"), ("tables", "--tables"), ("database", "--database")):
        value = data.get(key)
        if value in (None, "", []):
            continue
        if isinstance(value, (list, tuple)):
            value = ",".join(str(v) for v in value)
        if out["selection"] is None:  # 0.0.6's order: table, then tables, then database
            out["selection"] = (key, str(value))
            notes.append(f"config file {path}: {key} (lakekeeper 0.0.x) is deprecated: give {flag} on the "
                         f"command line (it wins over the file)")
    sort_columns = data.get("sort_columns")
    if sort_columns not in (None, {}):
        if not isinstance(sort_columns, dict) or not all(isinstance(v, (list, tuple, str))
                                                         for v in sort_columns.values()):
            raise UsageError(f"config file {path}: sort_columns (lakekeeper 0.0.x) must map <db>.<table> to a list "
                             f"of columns; today: sort_by (one table) or the table property lakekeeper.sort_by")
        out["sort_columns"] = {str(k).lower(): (v.split(",") if isinstance(v, str) else list(v))
                               for k, v in sort_columns.items()}
    return notes, out


def sort_by_of_legacy(sort_columns: dict[str, list[str]], command: str, tables: list[str],
                      database: str | None, path: str) -> tuple[list[str] | None, str | None]:
    """0.0.x's per-table ``sort_columns`` for this run: (the sort_by it means,
    the note), or refused when it would sort tables differently in one run
    (today's sort_by is one order for the run)."""
    if not sort_columns:
        return None, None
    if command != "compact":
        return None, f"config file {path}: sort_columns (lakekeeper 0.0.x) is ignored by {command}"
    if len(tables) == 1:
        cols = sort_columns.get(tables[0].lower())
        note = (f"config file {path}: sort_columns (lakekeeper 0.0.x) is deprecated: for one table it is "
                f"sort_by{f' ({tables[0]}: {cols})' if cols else ' (no entry for ' + tables[0] + ')'}; "
                f"per table, set the table property lakekeeper.sort_by")
        return cols, note
    named = [t for t in sort_columns if (t in {x.lower() for x in tables}) or
             (database is not None and t.split(".")[0] == database.lower())]
    if named:
        raise UsageError(f"config file {path}: sort_columns (lakekeeper 0.0.x) sorts {', '.join(sorted(named))} "
                         f"each its own way, but today's sort_by is one order for every table of a run: compact "
                         f"such a table with --table (its sort_columns entry is then its sort_by), or set the "
                         f"table property lakekeeper.sort_by on it and drop sort_columns")
    return None, f"config file {path}: sort_columns (lakekeeper 0.0.x) names no table of this run; ignored"
