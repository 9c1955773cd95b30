"""The one adapter over the Hive Metastore, through Spark's session catalog.

Reads come from the catalog's own metadata objects (exact serde properties,
partition locations); writes are SQL statements whose identifiers are
validated and back-quoted and whose literals are escaped (see ``names``).

``Catalog`` is one class in two modules: its reads and writes here, its
statistics calls in statistics.py (``Statistics``); beside it the partition
reads and writes of one table (``PartitionWriter``, partition_writer.py)
and the parsing of partition names (partition_names.py).
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

from ..compat import collections as scala_collections
from ..compat.catalog_internals import CatalogInternals
from ..compat.hive_client import HiveClient
from ..report.errors import LakekeeperError
from ..report.model import PartitionInfo, Storage, TableInfo, spec_string
from ..policy.names import qualified, quote_ident, sql_path_literal, sql_string_literal, validate_ident
from .partition_names import parse_partition_name, parse_partition_text
from .partition_writer import PartitionWriter
from .statistics import Statistics

log = logging.getLogger(__name__)

# Statistics and bookkeeping properties that must not be copied onto a clone.
_NOT_CLONED = {
    "transient_lastDdlTime",
    "EXTERNAL",
    "numFiles",
    "numRows",
    "totalSize",
    "rawDataSize",
    "numFilesErasureCoded",
    "COLUMN_STATS_ACCURATE",
    "external.table.purge",
    "last_modified_by",
    "last_modified_time",
}


_PART_SEP = "\u0000\u0001lk\u0001\u0000"
# From this many partitions of one table on, their storage descriptors come from one listing of the
# table's partitions instead of one Metastore call each (``Catalog.partition_storages``).
BULK_STORAGE = 8
# A ``where`` that selects fewer than 1/BY_NAME_RATIO of a table's partitions reads them one Metastore
# call each (found by their names); more, and one listing of every partition is cheaper. On the test
# bed a listing costs about 0.26 ms per partition (100,000 in 26 s) and a call about 5-10 ms.
BY_NAME_RATIO = 32


def _spark_type(field: dict[str, Any]) -> str:
    from pyspark.sql.types import _parse_datatype_json_value

    return _parse_datatype_json_value(field["type"]).simpleString()


# Spark 3.4+ casts the values of a partition spec in ``ALTER TABLE ...
# PARTITION`` to the column's type (``hour='09'`` becomes ``9``: another
# partition) unless this is set. The Metastore keeps raw strings, and two
# partitions whose values cast to one (``hour=9`` and ``hour=09``, left by
# ``MSCK REPAIR TABLE`` over directories an external tool wrote) are both
# real; partition DDL here names each by its own raw value (Spark 3.3
# never casts; the key is ignored there).
_RAW_PARTITION_VALUES = "spark.sql.legacy.skipTypeValidationOnAlterPartition"


class Catalog(Statistics):
    """Spark and Hive internals are reached through ``compat`` only."""

    def __init__(self, spark: Any):
        self.spark = spark
        self._raw_values: Any = None  # the child session of partition DDL (``sql``), made when first needed
        conv = scala_collections.for_spark(spark)
        self._conv = conv
        self._internals = CatalogInternals(spark, conv)
        self._hive = HiveClient(spark, conv)
        self._writers: dict[tuple[str, str], PartitionWriter] = {}
        self._writers_lock = threading.Lock()
        self._counts: dict[tuple[str, str], int] = {}  # partitions per table, as last listed

    def settle_authorization(self) -> None:
        """The Hive client's session authorization set up before the run's
        concurrent work (``HiveClient.settle_authorization``)."""
        self._hive.settle_authorization()

    # ------------------------------------------------------------ helpers
    def _session_catalog(self) -> Any:
        return self._internals.session_catalog()

    def _ident(self, db: str, table: str) -> Any:
        return self._internals.ident(db, table)

    def _map(self, scala_map: Any) -> dict[str, str]:
        return self._conv.to_dict(scala_map)

    _opt = staticmethod(CatalogInternals.opt)

    def sql(self, statement: str, raw_partition_values: bool = False) -> Any:
        """Run a statement; ``raw_partition_values``: its partition specs name
        partitions by their raw Metastore values (``_RAW_PARTITION_VALUES``)."""
        log.debug("SQL: %s", statement)
        if not raw_partition_values:
            return self.spark.sql(statement)
        if self._raw_values is None:  # a child session: the shared catalog, its own SQL conf
            child = self.spark.newSession()
            child.conf.set(_RAW_PARTITION_VALUES, "true")
            self._raw_values = child
        return self._raw_values.sql(statement)

    # ------------------------------------------------------------ reads
    def database_exists(self, db: str) -> bool:
        return bool(self._session_catalog().databaseExists(validate_ident(db)))

    def list_tables(self, db: str) -> list[str]:
        rows = self.sql(f"SHOW TABLES IN {quote_ident(db)}").collect()
        return sorted(r["tableName"] for r in rows if not r["isTemporary"])

    def table_exists(self, db: str, table: str) -> bool:
        return bool(self._session_catalog().tableExists(self._ident(db, table)))

    def get_table(self, db: str, table: str) -> TableInfo:
        from ..storage.formats import detect_format

        cat = self._session_catalog()
        if not cat.databaseExists(db):
            raise LakekeeperError("not_found", f"database {db} does not exist")
        ident = self._ident(db, table)
        if not cat.tableExists(ident):
            raise LakekeeperError("not_found", f"table {db}.{table} does not exist")
        ct = cat.getTableMetadata(ident)
        storage = ct.storage()
        loc = self._opt(storage.locationUri())
        schema = json.loads(ct.schema().json())
        part_names = [str(x) for x in self._conv.to_list(ct.partitionColumnNames())]
        fields = {f["name"]: f for f in schema["fields"]}
        bucket = self._opt(ct.bucketSpec())
        info = TableInfo(
            db=db,
            name=table,
            table_type=str(ct.tableType().name()),
            location=self._internals.location_string(loc) if loc is not None else None,
            provider=self._opt(ct.provider()),
            serde=self._opt(storage.serde()),
            input_format=self._opt(storage.inputFormat()),
            output_format=self._opt(storage.outputFormat()),
            serde_properties=self._map(storage.properties()),
            properties=self._map(ct.properties()),
            data_columns=[(f["name"], _spark_type(f)) for f in schema["fields"] if f["name"] not in part_names],
            partition_columns=[(n, _spark_type(fields[n])) for n in part_names],
            num_buckets=int(bucket.numBuckets()) if bucket is not None else 0,
            data_schema_json=json.dumps(
                {"type": "struct", "fields": [f for f in schema["fields"] if f["name"] not in part_names]}
            ),
        )
        info.format = detect_format(info)
        return info

    def list_partitions(self, info: TableInfo) -> list[PartitionInfo]:
        """Every partition's spec and location (a path string, decoded). One
        Metastore call and one gateway round trip for all of them: the JVM
        renders the partition list as text (``Seq.mkString``), parsed here;
        a partition whose values make that text ambiguous, or whose location
        has a ``%`` (Hive escapes ``:``, ``/``, ``%``... in directory names),
        is read field by field instead."""
        return sorted(self._listing(info)[1], key=lambda p: p.spec_str)

    def partition_specs(self, info: TableInfo) -> list[dict[str, str]]:
        """Every partition's spec, from the Metastore's partition names: one
        call, no storage descriptors (100,000 names in 0.6 s on the test bed,
        where the partitions themselves take 26 s)."""
        names = self._internals.partition_names(info.db, info.name)
        cols = [c for c, _type in info.partition_columns]
        text = str(names.mkString("\n")) if int(names.size()) else ""
        specs = []
        for name in text.split("\n") if text else []:
            spec = parse_partition_name(name, cols)
            if spec is None:
                raise LakekeeperError("catalog", f"{info.full_name}: partition name {name!r} does not name the "
                                                 f"partition columns {', '.join(cols)}")
            specs.append(spec)
        self._counts[(info.db, info.name)] = len(specs)
        return specs

    def partitions_named(self, info: TableInfo, specs: list[dict[str, str]], total: int) -> list[PartitionInfo]:
        """The partitions ``specs`` (some of the table's ``total``), sorted as
        ``list_partitions``: one Metastore call each while they are fewer
        than ``total / BY_NAME_RATIO``, else from the listing of every
        partition. A partition dropped meanwhile is left out."""
        if len(specs) * BY_NAME_RATIO >= total:
            wanted = {spec_string(s) for s in specs}
            return [p for p in self.list_partitions(info) if p.spec_str in wanted]
        cols = [c for c, _type in info.partition_columns]
        raw_table = self._hive.raw_table(info.db, info.name) if specs else None
        out = []
        for spec in specs:
            found = self._hive.find_partition(raw_table, spec)
            if found is None:
                log.warning("%s: partition %s is gone from the Metastore since its name was listed; left out",
                            info.full_name, spec_string(spec))
                continue
            parsed = self._partition_fields(found, cols)
            out.append(PartitionInfo(spec=parsed[0], location=parsed[1]))
        return sorted(out, key=lambda p: p.spec_str)

    def _listing(self, info: TableInfo) -> tuple[Any, list[PartitionInfo]]:
        """The Metastore's partition list (a Scala ``Seq`` of
        ``CatalogTablePartition``) and each one's spec and location, in its order."""
        seq = self._internals.partitions(info.db, info.name)
        return seq, self._parse_listing(info, seq)

    def _parse_listing(self, info: TableInfo, seq: Any, table: str | None = None) -> list[PartitionInfo]:
        """Each partition's spec and location of a Scala ``Seq`` of
        ``CatalogTablePartition`` of ``info`` (or of ``table``, with the same
        partition columns: its backup), in its order: one gateway round trip
        for all of them (``Seq.mkString``)."""
        cols = [c for c, _type in info.partition_columns]
        chunks = str(seq.mkString(_PART_SEP)).split(_PART_SEP) if int(seq.size()) else []
        self._counts[(info.db, table or info.name)] = len(chunks)
        parts: Any = None
        out = []
        for i, chunk in enumerate(chunks):
            parsed = parse_partition_text(chunk, cols)
            # The text's location is the URI's (encoded: Spark 3.3) or its path (decoded: later lines): with a
            # '%' it cannot be told which, so that partition's location comes from the JVM, decoded.
            if parsed is None or "%" in parsed[1]:  # slow path for this one: ~6 gateway calls
                if parts is None:
                    parts = self._conv.java_list(seq.toIndexedSeq())
                parsed = self._partition_fields(parts.get(i), cols)
            out.append(PartitionInfo(spec=parsed[0], location=parsed[1]))
        return out

    def _partition_fields(self, p: Any, cols: list[str]) -> tuple[dict[str, str], str]:
        spec = self._map(p.spec())
        loc = self._opt(p.storage().locationUri())
        return {c: spec[c] for c in cols}, self._internals.location_string(loc) if loc is not None else ""

    def partition_storage(self, db: str, table: str, spec: dict[str, str]) -> Storage:
        """A partition's own storage descriptor (SerDe, formats, SerDe
        properties) and parameters: one Metastore call."""
        return self._storage(self._raw_partition(db, table, spec))

    def partition_storages(self, info: TableInfo, specs: list[dict[str, str]]) -> list[Storage]:
        """``partition_storage`` of many partitions of a table, in order.
        From ``BULK_STORAGE`` partitions on, in one Metastore call: the
        table's partition list, each wanted partition's descriptor read from
        it (about ten gateway calls each, no Metastore call); fewer, one call
        each. A partition gone from the list meanwhile is read alone (and
        fails as it would alone). Not when they are fewer than 1/``BY_NAME_RATIO``
        of the table's partitions as last listed (a ``where`` that picked a few of
        many): then one call each."""
        total = self._counts.get((info.db, info.name))
        if len(specs) < BULK_STORAGE or (total is not None and len(specs) * BY_NAME_RATIO < total):
            return [self.partition_storage(info.db, info.name, s) for s in specs]
        seq, listed = self._listing(info)
        at = {p.spec_str: i for i, p in enumerate(listed)}
        parts = self._conv.java_list(seq.toIndexedSeq())
        found = [at.get(spec_string(s)) for s in specs]
        return [self._storage(parts.get(i)) if i is not None else self.partition_storage(info.db, info.name, s)
                for s, i in zip(specs, found)]

    def _storage(self, raw: Any) -> Storage:
        storage = raw.storage()
        return Storage(
            serde=self._opt(storage.serde()),
            input_format=self._opt(storage.inputFormat()),
            output_format=self._opt(storage.outputFormat()),
            serde_properties=self._map(storage.properties()),
            parameters=self._map(raw.parameters()),
        )

    def copy_partition_storage(self, db: str, source: str, target: str, spec: dict[str, str],
                               location: str) -> None:
        """Give partition ``spec`` of ``target`` (a scratch clone of
        ``source``) the storage descriptor and parameters of the same
        partition of ``source``, at ``location``."""
        sql_path_literal(location)
        src = self._raw_partition(db, source, spec)
        dst = self._raw_partition(db, target, spec)
        storage = self._internals.storage_with_location(src.storage(), location)
        self.writer(db, target).alter(dst, storage=storage, params=src.parameters(), refresh=True)

    def partition_clause(self, spec: dict[str, str]) -> str:
        return "PARTITION (" + ", ".join(f"{quote_ident(k)}={sql_string_literal(v)}" for k, v in spec.items()) + ")"

    # ------------------------------------------------------------ writes
    def create_clone(self, src: TableInfo, db: str, name: str, location: str, extra_props: dict[str, str]) -> None:
        """DDL clone of ``src`` (same columns, partitioning, serde, formats),
        EXTERNAL at ``location``, with purge disabled so that dropping it can
        never delete data."""
        props = {k: v for k, v in src.properties.items() if k not in _NOT_CLONED and not k.startswith("spark.sql.")}
        props.update(extra_props)
        props["external.table.purge"] = "false"
        prop_sql = ", ".join(f"{sql_string_literal(k)}={sql_string_literal(v)}" for k, v in sorted(props.items()))
        self.sql(
            f"CREATE TABLE {qualified(db, name)} LIKE {qualified(src.db, src.name)} "
            f"LOCATION {sql_path_literal(location)} TBLPROPERTIES ({prop_sql})"
        )
        self._forget(db, name)

    def prefetch_partitions(self, info: TableInfo, db: str, table: str) -> None:
        """Read every partition of ``db.table`` (``info``'s backup: the same
        partition columns, only this run changes it) with one listing, kept
        in the JVM for the writes that follow: ``set_location`` then reads
        each partition from it, once, instead of one Metastore call."""
        db, table = validate_ident(db), validate_ident(table)
        seq = self._hive.partitions(db, table)
        at = {p.spec_str: i for i, p in enumerate(self._parse_listing(info, seq, table))}
        self.writer(db, table).remember(self._conv.java_list(seq.toIndexedSeq()), at)

    def add_partitions(self, db: str, table: str, parts: list[tuple[dict[str, str], str]]) -> None:
        """Partitions with exactly these raw values (``hour=09`` stays ``09``)."""
        for i in range(0, len(parts), 100):
            chunk = parts[i : i + 100]
            clauses = " ".join(
                f"{self.partition_clause(spec)} LOCATION {sql_path_literal(loc)}" for spec, loc in chunk
            )
            self.sql(f"ALTER TABLE {qualified(db, table)} ADD IF NOT EXISTS {clauses}", raw_partition_values=True)
        self._internals.refresh_table(db, table)  # this session's cached relation, as the statement does its own

    def drop_partition(self, db: str, table: str, spec: dict[str, str]) -> None:
        """The partition with exactly these raw values (never a sibling whose values cast to the same)."""
        self.sql(f"ALTER TABLE {qualified(db, table)} DROP IF EXISTS {self.partition_clause(spec)}",
                 raw_partition_values=True)
        self._internals.refresh_table(db, table)

    def set_location(self, db: str, table: str, location: str, spec: dict[str, str] | None = None) -> None:
        """Point a table, or one of its partitions, at ``location``. A
        partition goes through the Hive client as ``set_locations`` writes
        many (read the partition, alter it; the SQL statement makes five
        Metastore calls, under the same client lock every unit of the run
        shares); then Spark's cached relation of the table is invalidated as
        the statement would."""
        if not spec:
            literal = sql_path_literal(location)  # the same paths as the statement accepts
            if not self._alter_table(db, table, location=location):
                self.sql(f"ALTER TABLE {qualified(db, table)} SET LOCATION {literal}")
            return
        (error,) = self.set_locations(db, table, [(spec, location)])
        if error is not None:
            raise error

    def set_locations(self, db: str, table: str, items: list[tuple[dict[str, str], str]]) -> list[Exception | None]:
        """Point many partitions of a table at new locations (``(spec,
        location)`` items) together: each partition read (from the listing
        ``prefetch_partitions`` kept, else one call each), all written in one
        ``alterPartitions`` (each alone if that call fails), then Spark's
        cached relation of the table invalidated once. Per item None, or
        the error it failed with (the others are written)."""
        writer = self.writer(db, table)
        outcomes: list[Exception | None] = [None] * len(items)
        changed, at = [], []
        for i, (spec, location) in enumerate(items):
            try:
                sql_path_literal(location)  # the same paths as the statement accepts
                raw = writer.read(spec)
                changed.append(self._hive.changed(raw, storage=self._internals.storage_with_location(raw.storage(),
                                                                                                     location)))
                at.append(i)
            except Exception as exc:  # noqa: BLE001 - this item's own error
                outcomes[i] = exc
        if changed:
            for i, outcome in zip(at, writer.alter_now(changed)):
                outcomes[i] = outcome
        return outcomes

    # The property Spark's catalog marks its data source tables with.
    _DATASOURCE_PROVIDER = "spark.sql.sources.provider"

    def _alter_table(self, db: str, table: str, location: str | None = None,
                     props: dict[str, str | None] | None = None, raw: Any = None) -> bool:
        """Change a Hive table's location and/or properties (a property set to
        None is removed) through the Hive client: the table read and written
        back, two Metastore calls, where ``ALTER TABLE ... SET LOCATION`` made
        13 (counted by the test; 0.7 s of a run on the embedded Metastore); then
        Spark's cached relation of the table is invalidated as the statement
        would. False, with nothing changed, for a table Spark keeps as a data
        source (its catalog also keeps the location among the storage
        properties) or a Spark whose ``CatalogTable`` is not laid out as
        expected: the caller then runs the statement. ``raw``: the table as
        the caller just read it through the Hive client (else read here)."""
        db, table = validate_ident(db), validate_ident(table)
        raw = raw if raw is not None else self._hive.get_table(db, table)
        if raw.properties().contains(self._DATASOURCE_PROVIDER):
            return False
        storage = self._internals.storage_with_location(raw.storage(), location) if location is not None else None
        params = self._conv.updated(raw.properties(), props) if props else None
        new = self._internals.table_with(raw, storage=storage, properties=params)
        if new is None:
            return False
        self._hive.alter_table(db, table, new)
        self._internals.refresh_table(db, table)
        return True

    def writer(self, db: str, table: str) -> "PartitionWriter":
        """The partition reads and writes of one table (``PartitionWriter``),
        one per table for the run's threads to share."""
        key = (validate_ident(db), validate_ident(table))
        with self._writers_lock:
            if key not in self._writers:
                self._writers[key] = PartitionWriter(self._hive, self._internals, *key)
            return self._writers[key]

    def _forget(self, db: str, table: str) -> None:
        """The table was dropped or its definition may have changed: its
        partitions are read with a fresh descriptor from now on."""
        with self._writers_lock:
            self._writers.pop((db.lower(), table.lower()), None)

    def set_properties(self, db: str, table: str, props: dict[str, str]) -> None:
        prop_sql = ", ".join(f"{sql_string_literal(k)}={sql_string_literal(v)}" for k, v in sorted(props.items()))
        self.sql(f"ALTER TABLE {qualified(db, table)} SET TBLPROPERTIES ({prop_sql})")

    def _raw_partitions(self, info: TableInfo, specs: list[dict[str, str]]) -> list[Any]:
        """The partitions ``specs`` of a table as the Hive client holds them
        (``HiveClient.get_partition``: parameters as written), in order. From
        ``BULK_STORAGE`` partitions on, and unless they are fewer than
        1/``BY_NAME_RATIO`` of the table's as last listed (or, not listed yet,
        as its partition names count them), from one listing of the table's
        partitions; else one call each. A partition missing from
        the listing is read alone; one that cannot be read has the exception
        in its place."""
        db, table = validate_ident(info.db), validate_ident(info.name)
        out: list[Any] = [None] * len(specs)
        alone = list(range(len(specs)))
        total = self._counts.get((info.db, info.name))
        if len(specs) >= BULK_STORAGE and total is None:  # e.g. a rollback: the names first (one call, no descriptors)
            total = len(self.partition_specs(info))
        if len(specs) >= BULK_STORAGE and len(specs) * BY_NAME_RATIO >= total:
            seq = self._hive.partitions(db, table)
            at = {p.spec_str: i for i, p in enumerate(self._parse_listing(info, seq))}
            parts = self._conv.java_list(seq.toIndexedSeq())
            alone = []
            for n, spec in enumerate(specs):
                i = at.get(spec_string(spec))
                if i is None:
                    alone.append(n)
                else:
                    out[n] = parts.get(i)
        writer = self.writer(db, table)
        for n in alone:
            try:
                out[n] = writer.read(specs[n])
            except Exception as exc:  # noqa: BLE001 - that partition's own error
                out[n] = exc
        return out

    def drop_table(self, db: str, table: str) -> None:
        """Drop a table we created. Refuses unless purge is disabled, so the
        data under it survives whatever the Metastore's defaults are."""
        if not self.table_exists(db, table):
            return
        info = self.get_table(db, table)
        if info.table_type != "EXTERNAL" or info.properties.get("external.table.purge", "").lower() != "false":
            raise LakekeeperError(
                "unsafe_drop", f"refusing to drop {db}.{table}: not an external table with external.table.purge=false"
            )
        self.sql(f"DROP TABLE {qualified(db, table)}")
        self._forget(db, table)

    def refresh(self, db: str, table: str) -> None:
        self.sql(f"REFRESH TABLE {qualified(db, table)}")
        self._forget(db, table)
