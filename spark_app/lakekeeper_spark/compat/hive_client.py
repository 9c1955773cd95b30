"""Spark's Hive client: partitions read and written without SQL (two
Metastore calls where ``ALTER TABLE ... PARTITION`` makes five), under the
client lock every unit of a run shares. Same calls on Spark 3.3 to 4.x."""

from __future__ import annotations

from typing import Any

from .collections import ScalaCollections


class HiveClient:
    def __init__(self, spark: Any, conv: ScalaCollections):
        self._spark = spark
        self.conv = conv

    def _client(self) -> Any:
        shared = self._spark._jsparkSession.sharedState()  # pylint: disable=protected-access
        return shared.externalCatalog().unwrapped().client()

    def get_table(self, db: str, table: str) -> Any:
        return self._client().getTable(db, table)

    def get_partition(self, db: str, table: str, spec: dict[str, str]) -> Any:
        """A partition's ``CatalogTablePartition`` (column names lower-cased, as the Metastore keeps them)."""
        return self._client().getPartition(db, table, self.conv.to_map({k.lower(): v for k, v in spec.items()}))

    def alter_partition(self, db: str, table: str, raw: Any, storage: Any = None, params: Any = None) -> None:
        """Write back a partition read by ``get_partition`` with a new storage
        descriptor and/or parameters (one Metastore call)."""
        new = raw.copy(raw.spec(), raw.storage() if storage is None else storage,
                       raw.parameters() if params is None else params, raw.createTime(), raw.lastAccessTime(),
                       raw.stats())
        self._client().alterPartitions(db, table, self.conv.to_seq([new]))
