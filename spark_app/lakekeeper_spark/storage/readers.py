"""Which files of a table directory each reader reads, by name: the one
rule for Hive and the one for Spark (pure).

Hive reads through Hadoop's input formats, whose listing leaves out a name
that starts with ``_`` or ``.`` (``FileInputFormat``'s hidden-file filter,
Hive's ``FileUtils.HIDDEN_FILES_PATH_FILTER``): ``_SUCCESS``, ``.x.crc``, a
writer's ``.x.tmp``. Every other file is data to Hive, whatever its name.

Spark's file sources (Parquet, ORC: ``InMemoryFileIndex``) list through
``HadoopFSUtils.shouldFilterOutPathName``, the same rule from Spark 3.3 to
4.3 (4.x spells its ``.``/``_`` part as the default of the
``ignoredPathSegmentRegex`` option, ``^[._]``, after the exceptions below):

- a name starting with ``_metadata`` or ``_common_metadata`` is listed
  (Parquet summary files; not read as data, and Hive hides them anyway);
- a name ending with ``._COPYING_`` is skipped (what ``hdfs dfs -put`` and
  ``-cp`` name a file while they copy it, renamed when the copy ends: a killed
  copy leaves it behind, closed and complete or cut short);
- a name starting with ``_`` that holds ``=`` is listed (a partition
  directory's spelling);
- else a name starting with ``.`` or ``_`` is skipped.

The filter applies to a file named explicitly too (Spark lists each path it
is given and filters what the listing returns), so reading such a file by
name reads nothing. The one name Hive reads and Spark skips is therefore
``x._COPYING_``; the reverse (``_x=1``, ``_metadata``) Spark may list but
Hive never reads. A copy written through Spark would lose the rows of a file
Hive reads and Spark skips, and its verification, reading through Spark too,
would agree: a unit holding one is refused (``UNREADABLE_FILE``, the
planner), and so is a merge batch that lists one (rewrite/merge.py).
"""

from __future__ import annotations

UNREADABLE_FILE = "unreadable_file"

COPYING_SUFFIX = "._COPYING_"
_SPARK_LISTED_PREFIXES = ("_metadata", "_common_metadata")


def hive_skips(name: str) -> bool:
    """Whether Hive (Hadoop's input formats) leaves this file or directory
    name out of a directory it reads: a leading ``_`` or ``.``."""
    return name.startswith(("_", "."))


def spark_skips(name: str) -> bool:
    """Whether Spark's file sources leave a file of this name out, read as
    its directory or named explicitly (``HadoopFSUtils.shouldFilterOutPathName``;
    see the module)."""
    if name.startswith(_SPARK_LISTED_PREFIXES):
        return False
    if name.endswith(COPYING_SUFFIX):
        return True
    if name.startswith("_") and "=" in name:
        return False
    return name.startswith(("_", "."))


def why_spark_skips(name: str) -> str | None:
    """Why Spark skips a file Hive reads (None when both read it, or
    neither does)."""
    if hive_skips(name) or not spark_skips(name):
        return None
    if name.endswith(COPYING_SUFFIX):
        return (f"its name ends with {COPYING_SUFFIX}, as hdfs dfs -put/-cp name a file while copying it: Hive "
                f"reads it, Spark skips it even when it is named")
    return "Hive reads it, Spark skips it by its name"  # no such name under the rules above; kept for a new rule


def unreadable_files(names: list[str]) -> list[str]:
    """The names (sorted) of files Hive reads and Spark skips."""
    return sorted(n for n in names if why_spark_skips(n) is not None)


def unreadable_reason(where: str, names: list[str], what: str) -> str:
    """The reason of a refusal for ``names`` (from ``unreadable_files``) in
    ``where``; ``what``: what was not done."""
    shown = "; ".join(f"{n}: {why_spark_skips(n)}" for n in names[:3])
    more = f" and {len(names) - 3} more" if len(names) > 3 else ""
    return (f"{where} holds {len(names)} file(s) that Hive reads and Spark cannot ({shown}{more}): a copy written "
            f"and verified through Spark would lose their rows; {what}. Rename such a file (if complete) or remove "
            f"it, then run again")
