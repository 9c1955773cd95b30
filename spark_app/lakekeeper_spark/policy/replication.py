"""Replication: what Hive replication and distcp must know about this tool.

* A replica is not ours to compact: ``REPL LOAD`` leaves ``repl.*``
  properties (``repl.last.id``) on every table it keeps; its files are the
  source's and the next incremental load writes over them. Compaction
  refuses such a table (``replicated``) unless ``allow_replicated``;
  compacting the source is enough, the replica follows.
* distcp must not copy the hidden directories (staging copies, the original
  files kept for rollback, a rollback's trash, the journal and history):
  ``distcp_filters`` are the lines of a ``-filters`` file. distcp's
  ``RegexCopyFilter`` compiles each line with ``java.util.regex.Pattern``
  and leaves out every path whose whole string (scheme and authority
  included) ``matches`` one of them. Pure.
"""

from __future__ import annotations

from ..report.errors import Refused
from ..storage.layout import JOURNAL_DIR_NAME, OLD_TAG, RUN_ID_REGEX, STAGING_TAG, TRASH_TAG
from ..report.model import TableInfo

REPLICATION_PREFIX = "repl."


def check_replication(info: TableInfo, allow: bool) -> None:
    """Refuse a replica (``repl.*`` table properties) unless ``allow``."""
    marks = sorted(k for k in info.properties if k.lower().startswith(REPLICATION_PREFIX))
    if marks and not allow:
        shown = ", ".join(f"{k}={info.properties[k]}" for k in marks[:3])
        raise Refused("replicated", f"{info.full_name} carries replication properties ({shown}): it is a replica "
                                    f"kept by Hive replication; compact its source (the replica follows), or pass "
                                    f"allow_replicated")


def distcp_filters() -> list[str]:
    """The ``distcp -filters`` lines that leave out every hidden directory
    of this tool and everything in it, and nothing else: the staging,
    original and trash directories beside each unit
    (``.<dir>.lk_old_<run id>``) and the journal directory of a table
    (``<table>/.lakekeeper`` or ``<parent>/.<table dir>.lakekeeper``)."""
    tags = "|".join((STAGING_TAG, OLD_TAG, TRASH_TAG))
    journal = JOURNAL_DIR_NAME.replace(".", r"\.")
    return [
        rf".*/\.[^/]+\.({tags})_{RUN_ID_REGEX}(/.*)?",
        rf".*/(\.[^/]+)?{journal}(/.*)?",
    ]


def distcp_filter_file() -> str:
    """The file itself: only the patterns (distcp compiles every line, a
    comment too, and a stray parenthesis would fail the copy)."""
    return "\n".join(distcp_filters()) + "\n"
