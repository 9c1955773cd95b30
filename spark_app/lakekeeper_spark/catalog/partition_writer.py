"""One table's partitions, read and written for the run's threads
(``Catalog.writer``), their writes group-committed."""

from __future__ import annotations

import threading
from typing import Any

from ..compat.catalog_internals import CatalogInternals
from ..compat.hive_client import HiveClient
from ..report.model import spec_string
from ..storage.group_commit import GroupCommit


class PartitionWriter:
    """One table's partitions, read and written for the run's threads.

    Reads use the table as the Hive client holds it, fetched once (one
    Metastore call a partition instead of two). Writes are group-committed
    (``GroupCommit``): the partition changes that units make at the same
    time (backup partitions repointed, statistics) go to the Metastore in
    one ``alterPartitions``, whose own fixed cost is paid once; alone, a
    change is written at once. If the group's call fails, each change is
    written on its own, so each unit gets its own error."""

    def __init__(self, hive: HiveClient, internals: CatalogInternals, db: str, table: str):
        self._hive, self._internals = hive, internals
        self.db, self.table = db, table
        self._raw_table: Any = None
        self._lock = threading.Lock()
        self._commit: GroupCommit[tuple[Any, bool]] = GroupCommit(self._write)
        self._listed: Any = None  # partitions read together (``remember``): a Java list
        self._listed_at: dict[str, int] = {}  # spec string -> index, for the ones not read yet

    def remember(self, listed: Any, at: dict[str, int]) -> None:
        """Partitions read together (a Java list, and each one's index by its
        spec string): ``read`` takes each from there once, instead of a
        Metastore call; a second read of it asks the Metastore again."""
        with self._lock:
            self._listed, self._listed_at = listed, dict(at)

    def forget(self, spec: dict[str, str]) -> None:
        """Drop a remembered partition (dropped and added again since the
        listing): its next ``read`` asks the Metastore."""
        with self._lock:
            self._listed_at.pop(spec_string(spec), None)

    def read(self, spec: dict[str, str]) -> Any:
        with self._lock:
            i = self._listed_at.pop(spec_string(spec), None)
            if i is not None:
                return self._listed.get(i)
            if self._raw_table is None:
                self._raw_table = self._hive.raw_table(self.db, self.table)
            raw_table = self._raw_table
        return self._hive.get_partition(self.db, self.table, spec, raw_table)

    def alter(self, raw: Any, storage: Any = None, params: Any = None, refresh: bool = False) -> None:
        """Write back a partition read by ``read`` with a new storage
        descriptor and/or parameters; ``refresh``: then invalidate Spark's
        cached relation of the table. Returns once it is written."""
        self._commit.submit((self._hive.changed(raw, storage, params), refresh))

    def alter_now(self, changed: list[Any]) -> list[Exception | None]:
        """Write back many changed partitions (``HiveClient.changed``) in one
        call of their own (each alone if it fails), then invalidate Spark's
        cached relation of the table. Per partition None or its error."""
        outcomes = self._hive.alter_partitions_each(self.db, self.table, changed)
        self._internals.refresh_table(self.db, self.table)
        return outcomes

    def _write(self, items: list[tuple[Any, bool]]) -> list[Any]:
        # a failing partition fails its own unit, with its own error
        outcomes: list[Any] = self._hive.alter_partitions_each(self.db, self.table, [p for p, _refresh in items])
        if any(r for _p, r in items):
            self._internals.refresh_table(self.db, self.table)
        return outcomes
