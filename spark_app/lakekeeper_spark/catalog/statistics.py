"""The Metastore statistics of tables and partitions (``Catalog``'s
statistics calls): Hive's basic statistics and Spark's own, read and
written together."""

from __future__ import annotations

from typing import Any

from ..policy.names import validate_ident
from ..report.model import TableInfo


class Statistics:
    """The statistics calls of ``Catalog`` (catalog.py), which this is a base of."""

    # Hive's basic statistics (numFiles, totalSize, numRows: what Hive, Impala
    # and Hive replication read) and Spark's own (spark.sql.statistics.*,
    # which Spark prefers when present) are kept together. numRows -1 means
    # unknown, as Hive writes it.
    STAT_KEYS = ("numFiles", "totalSize", "numRows")
    _SPARK_SIZE = "spark.sql.statistics.totalSize"
    _SPARK_ROWS = "spark.sql.statistics.numRows"

    def _raw_partition(self, db: str, table: str, spec: dict[str, str]) -> Any:
        return self.writer(db, table).read(spec)

    def statistics(self, db: str, table: str, spec: dict[str, str] | None = None) -> dict[str, str]:
        """The statistics parameters of a table or partition as the Metastore
        holds them (Hive's and Spark's)."""
        if not spec:
            return self._table_statistics(self._hive.get_table(validate_ident(db), validate_ident(table)))
        return self._statistics_of(self._map(self._raw_partition(db, table, spec).parameters()))

    def _table_statistics(self, raw: Any) -> dict[str, str]:
        """``statistics`` of a table read by the Hive client (Hive's keep to its ``ignoredProperties``)."""
        params = self._map(raw.ignoredProperties())
        params.update(self._map(raw.properties()))
        return self._statistics_of(params)

    def _statistics_of(self, params: dict[str, str]) -> dict[str, str]:
        keys = set(self.STAT_KEYS) | {self._SPARK_SIZE, self._SPARK_ROWS}
        return {k: v for k, v in params.items() if k in keys}

    def _stat_values(self, current: dict[str, str], files: int, size: int, rows: int | None) -> dict[str, str]:
        values = {"numFiles": str(int(files)), "totalSize": str(int(size)),
                  "numRows": str(int(rows)) if rows is not None and rows >= 0 else "-1"}
        if self._SPARK_SIZE in current:  # Spark's statistics win over Hive's in Spark: never leave them stale
            values[self._SPARK_SIZE] = values["totalSize"]
            values[self._SPARK_ROWS] = values["numRows"] if rows is not None and rows >= 0 else None
        return values

    def set_statistics(self, db: str, table: str, spec: dict[str, str] | None, files: int, size: int,
                       rows: int | None) -> dict[str, str]:
        """Write numFiles/totalSize/numRows of a partition (``spec``) or of a
        non-partitioned table; returns what the Metastore holds afterwards.

        Partitions go through the Hive client's alterPartitions (Spark's SQL
        has no ``ALTER TABLE ... PARTITION ... SET TBLPROPERTIES``); a Hive
        table through the Hive client too (``_alter_table``: Hive's keys and,
        when it has them, Spark's own figures, as for a partition). A data
        source table through ``ALTER TABLE ... SET TBLPROPERTIES`` for Hive's
        keys, and its Spark statistics (which Spark refuses to take as
        properties) dropped through the external catalog."""
        if spec:
            writer = self.writer(db, table)
            raw = writer.read(spec)
            current = self._map(raw.parameters())
            writer.alter(raw, params=self._conv.updated(raw.parameters(), self._stat_values(current, files, size, rows)))
            return self.statistics(db, table, spec)
        raw = self._hive.get_table(validate_ident(db), validate_ident(table))
        values = self._stat_values(self._table_statistics(raw), files, size, rows)
        if self._alter_table(db, table, props=values, raw=raw):  # Spark's figures written too, as a partition's are
            return self.statistics(db, table)
        self.set_properties(db, table, {k: values[k] for k in self.STAT_KEYS})
        if any(k.startswith("spark.sql.") for k in values):
            # Spark's statistics hold BigInts py4j cannot build: drop them, so
            # Spark reads the fresh Hive figures instead of stale ones.
            self._internals.drop_spark_statistics(validate_ident(db), validate_ident(table))
        return self.statistics(db, table)

    # Partitions written by one alterPartitions call of ``set_statistics_many``.
    STATISTICS_CHUNK = 500

    def set_statistics_many(self, info: TableInfo,
                            items: list[tuple[dict[str, str], int, int, int | None]]) -> list[Any]:
        """``set_statistics`` of many partitions of one table, each item
        ``(spec, files, size, rows)``: the partitions read together
        (``_raw_partitions``), written ``STATISTICS_CHUNK`` at a time with
        one ``alterPartitions`` each (a chunk that fails is written one
        partition at a time, so each gets its own error), and read back
        together. For the same statistics as item by item, about three
        Metastore calls a table instead of five a partition. Returns, per
        item, what the Metastore holds afterwards, or the exception it failed
        with."""
        db, table = validate_ident(info.db), validate_ident(info.name)
        raws = self._raw_partitions(info, [spec for spec, *_figures in items])
        out: list[Any] = list(raws)  # a partition that could not be read keeps its error
        changed = []
        for n, ((_spec, files, size, rows), raw) in enumerate(zip(items, raws)):
            if isinstance(raw, Exception):
                continue
            params = self._conv.updated(raw.parameters(), self._stat_values(self._map(raw.parameters()), files, size, rows))
            changed.append((n, self._hive.changed(raw, params=params)))
        for start in range(0, len(changed), self.STATISTICS_CHUNK):
            chunk = changed[start:start + self.STATISTICS_CHUNK]
            for (n, _p), error in zip(chunk, self._hive.alter_partitions_each(db, table, [p for _n, p in chunk])):
                if error is not None:
                    out[n] = error
        written = [n for n, _p in changed if not isinstance(out[n], Exception)]
        for n, raw in zip(written, self._raw_partitions(info, [items[n][0] for n in written])):
            out[n] = raw if isinstance(raw, Exception) else self._statistics_of(self._map(raw.parameters()))
        return out
