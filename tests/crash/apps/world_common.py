"""Layout of the crash-test tables, shared by the setup and verify apps and
the pytest side (pure Python, no Spark)."""
from __future__ import annotations

import json
import os
import sys
import traceback

COLUMNS = ("id", "name", "amount", "ts")
DATA_TYPES = ("BIGINT", "STRING", "DECIMAL(12,2)", "TIMESTAMP")
SELECT = ("id", "concat('name-', id) AS name", "CAST(id * 1.5 AS DECIMAL(12,2)) AS amount",
          "timestamp_seconds(1700000000 + id) AS ts")

# kind -> unit spec -> (first id, end id, files). Ids are distinct within a
# kind, so comparing rows both ways (exceptAll) sees any loss or duplicate.
KINDS = {
    "flat": {"": (0, 600, 12)},
    "part": {"dt=a": (0, 400, 8), "dt=b": (400, 450, 1), "dt=c": (450, 850, 8)},
    "outside": {"y=2024/m=01": (0, 300, 6), "y=2024/m=02": (300, 350, 1), "y=2024/m=03": (350, 650, 6)},
    "quiet": {"dt=old": (0, 400, 8), "dt=new": (400, 800, 8)},
    "merge": {"dt=a": (0, 300, 6), "dt=b": (300, 400, 4), "dt=c": (400, 700, 6)},
    "minor": {"": (0, 600, 12)},  # 12 fragments, and the files minor mode keeps (MINOR_KEPT)
}
PARTITION_COLUMNS = {"flat": [], "part": ["dt"], "outside": ["y", "m"], "quiet": ["dt"], "merge": ["dt"],
                     "minor": []}
# Kind "minor": a table compacted in minor mode (its table properties, MINOR_PROPERTIES): beside its 12
# fragments (about 2 KB each, below the fragment bound of 8 KB) two files of MINOR_KEPT rows (first id,
# end id, files: tens of KB each) that it keeps, moved by rename into the staging (``moving_kept``).
MINOR_KEPT = (600, 4600, 2)
MINOR_PROPERTIES = {"lakekeeper.mode": "minor", "lakekeeper.target_file_size_mb": "0.0625"}


def kept_template_dir(base: str) -> str:
    """The files a table of kind "minor" keeps (copied into it beside the fragments)."""
    return f"{base}/minor/kept"


# the units a compaction rewrites (more than one small file), in plan order
COMPACTED = {
    "flat": [""],
    "part": ["dt=a", "dt=c"],
    "outside": ["y=2024/m=01", "y=2024/m=03"],
    "quiet": ["dt=old", "dt=new"],
    "merge": ["dt=a", "dt=c"],  # the partitions the merge batch touches (MERGE_BATCH)
    "minor": [""],
}
# Merge mode (test_crash_merge.py): the batch merged into each "merge" table, a flat directory of
# (first id, end id, what, partition) rows, partition column dt as an ordinary column. ts orders the
# versions (the originals have 1700000000 + id); a delete is the latest version with name = MERGE_DELETED.
MERGE_BATCH = [
    (0, 20, "update", "dt=a"), (5, 8, "update_again", "dt=a"), (20, 25, "delete", "dt=a"),
    (10000, 10010, "insert", "dt=a"),
    (400, 420, "update", "dt=c"), (420, 423, "delete", "dt=c"), (430, 435, "stale", "dt=c"),
    (20000, 20008, "insert", "dt=c"), (20008, 20010, "delete", "dt=c"),  # deletes of keys the table lacks
]
MERGE_DELETED = "DELETED"
MERGE_SELECT = {  # what -> (name, ts) expressions
    "update": ("concat('upd-', id)", "timestamp_seconds(1800000000 + id)"),
    "update_again": ("concat('upd2-', id)", "timestamp_seconds(1900000000 + id)"),
    "delete": (f"'{MERGE_DELETED}'", "timestamp_seconds(1800000000 + id)"),
    "insert": ("concat('new-', id)", "timestamp_seconds(1800000000 + id)"),
    "stale": ("concat('stale-', id)", "timestamp_seconds(1600000000 + id)"),  # older than the table's: loses
}
MERGE_DEDUPE = ["--dedupe-keys", "id", "--dedupe-order-by", "ts", "--dedupe-delete-marker", "name",
                "--dedupe-delete-value", MERGE_DELETED]
LATE_TEMPLATES = 24  # single-file templates for files written "late" (writers, appends)
LATE_ROWS = 7


def template_dir(base: str, kind: str, spec: str) -> str:
    return f"{base}/{kind}/{spec.replace('/', '_').replace('=', '-') or 'table'}"


def units_of(kind: str, root: str, outside: str | None = None) -> dict:
    """Unit spec -> directory, and the partition columns, of a table of ``kind``."""
    units = {}
    for spec in KINDS[kind]:
        if kind == "outside" and spec == "y=2024/m=03":
            units[spec] = outside
        else:
            units[spec] = f"{root}/{spec}" if spec else root
    return {"units": units, "partition_columns": PARTITION_COLUMNS[kind]}


def partition_values(spec: str) -> dict:
    return dict(kv.split("=", 1) for kv in spec.split("/")) if spec else {}


def run_app(main) -> None:
    """Run an app's ``main``; a failure still ends with a ``RESULT`` line
    (the traceback's tail) for the pytest side, and exit code 1."""
    try:
        main()
    except Exception:  # pylint: disable=broad-exception-caught
        traceback.print_exc()
        print("RESULT " + json.dumps({"error": traceback.format_exc()[-4000:]}), flush=True)
        sys.exit(1)


def local_fs_confs() -> dict:
    """The session properties of a set-up or verify app's ``file://``: chmod
    in the JVM (tests/testbed/testbed/localfs.py); the jar goes on the class
    path of the JVM this process launches next. The CLI processes a world
    kills keep Hadoop's own class."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testbed"))
    from testbed import localfs  # pylint: disable=import-outside-toplevel,import-error

    return localfs.in_this_process()
