"""Spark's Hive client: partitions read and written without SQL (a read with
the table fetched once is one Metastore call, and one ``alterPartitions``
writes many partitions, where ``ALTER TABLE ... PARTITION`` makes five calls
for one), under the client lock every unit of a run shares. Same calls on
Spark 3.3 to 4.x."""

from __future__ import annotations

from typing import Any

from .collections import ScalaCollections
from .jvm import java_class


class HiveClient:
    def __init__(self, spark: Any, conv: ScalaCollections):
        self._spark = spark
        self.conv = conv

    def _client(self) -> Any:
        shared = self._spark._jsparkSession.sharedState()  # pylint: disable=protected-access
        return shared.externalCatalog().unwrapped().client()

    def settle_authorization(self) -> None:
        """Hive's session authorization (authenticator, authorizer) set up now.
        Hive does it on first need, and for a V2 authorizer (Hive 2.3's
        default, SQL standard; Ranger's too) it then changes the session's
        ``hive.metastore.filter.hook``, finds the shared client's
        configuration no longer matching, and closes that client. The first
        need is the first partition listing (``Hive.getPartitions`` asks for
        the user's groups after taking the client): that listing then writes
        to the closed connection and is retried a second later, with a
        ``MetaStoreClient lost connection`` warning and its stack trace, in
        every run on a partitioned table against a Metastore service. Called
        once, on the thread that made the run's first Metastore call, before
        any other thread uses the client: the close then cuts no call, and
        the next call opens the client with the settled configuration."""
        self._client().state().getAuthenticator()

    def get_table(self, db: str, table: str) -> Any:
        return self._client().getTable(db, table)

    def alter_table(self, db: str, table: str, new_table: Any) -> None:
        """Write back a table read by ``get_table`` (a changed copy of it): one
        Metastore call; its Hive statistics parameters go back with it."""
        self._client().alterTable(db, table, new_table)

    def raw_table(self, db: str, table: str) -> Any:
        """The table as the Hive client holds it (``RawHiveTable``): one
        Metastore call, to read many partitions with (``get_partition``)."""
        return self._client().getRawHiveTable(db, table)

    def get_partition(self, db: str, table: str, spec: dict[str, str], raw_table: Any = None) -> Any:
        """A partition's ``CatalogTablePartition`` (column names lower-cased, as the Metastore keeps them).
        Without ``raw_table`` the client looks the table up first (two Metastore calls), with it one."""
        found = self.find_partition(raw_table, spec) if raw_table is not None else None
        if found is not None:
            return found
        return self._client().getPartition(db, table, self._values(spec))  # (again, to raise the client's own error)

    def partitions(self, db: str, table: str) -> Any:
        """Every partition of a table as the client holds it (parameters as written, Spark's statistics
        among them, unlike the session catalog's listing): a Scala ``Seq[CatalogTablePartition]``, one
        listing (the client looks the table up first)."""
        return self._client().getPartitions(db, table, java_class(self._spark._jvm, "scala.Option").empty())  # pylint: disable=protected-access

    def find_partition(self, raw_table: Any, spec: dict[str, str]) -> Any:
        """A partition's ``CatalogTablePartition`` (one Metastore call with ``raw_table``), or None."""
        found = self._client().getPartitionOption(raw_table, self._values(spec))
        return found.get() if found.isDefined() else None

    def _values(self, spec: dict[str, str]) -> Any:
        """A spec as the Hive client takes it: a Scala map, column names lower-cased."""
        return self.conv.to_map({k.lower(): v for k, v in spec.items()})

    @staticmethod
    def changed(raw: Any, storage: Any = None, params: Any = None) -> Any:
        """A partition read by ``get_partition`` with a new storage descriptor and/or parameters."""
        return raw.copy(raw.spec(), raw.storage() if storage is None else storage,
                        raw.parameters() if params is None else params, raw.createTime(), raw.lastAccessTime(),
                        raw.stats())

    def alter_partitions(self, db: str, table: str, parts: list[Any]) -> None:
        """Write back many changed partitions of a table in one call (the client then looks the table up
        once, and the Metastore alters them together)."""
        self._client().alterPartitions(db, table, self.conv.to_seq(parts))

    def alter_partitions_each(self, db: str, table: str, parts: list[Any]) -> list[Exception | None]:
        """``alter_partitions``, and when that call fails, each partition on its
        own: a failing partition gets its own error, the others are written.
        Per partition, None or the exception it failed with."""
        try:
            self.alter_partitions(db, table, parts)
            return [None] * len(parts)
        except Exception as exc:  # noqa: BLE001 - handed back per partition
            if len(parts) == 1:
                return [exc]
        out: list[Exception | None] = []
        for part in parts:
            try:
                self.alter_partitions(db, table, [part])
                out.append(None)
            except Exception as exc:  # noqa: BLE001
                out.append(exc)
        return out
