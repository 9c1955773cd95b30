"""Spark's session catalog and its case classes, as the catalog adapter
needs them: table metadata, the partition list in one call, a storage
descriptor with another location, dropping Spark's own table statistics.

Checked on Spark 3.3, 3.4, 3.5 and 4.x: ``CatalogStorageFormat`` has 6
fields on 3.x and 7 on 4.x (the location is the first on both), so a copy
passes every field it read; ``CatalogTablePartition`` has 6 on every line;
``CatalogTable`` has 20 to 22, its storage and properties at the same places.
"""

from __future__ import annotations

from typing import Any

from .collections import ScalaCollections
from .jvm import java_class


class CatalogInternals:
    def __init__(self, spark: Any, conv: ScalaCollections):
        self._spark = spark
        self._jvm = spark._jvm  # pylint: disable=protected-access
        self.conv = conv

    def session_catalog(self) -> Any:
        return self._spark._jsparkSession.sessionState().catalog()  # pylint: disable=protected-access

    def ident(self, db: str, table: str) -> Any:
        some_db = java_class(self._jvm, "scala.Some")(db)
        return java_class(self._jvm, "org.apache.spark.sql.catalyst.TableIdentifier").apply(table, some_db)

    @staticmethod
    def opt(option: Any) -> Any:
        """A Scala ``Option``'s value, or None."""
        return option.get() if option.isDefined() else None

    def table_metadata(self, db: str, table: str) -> Any:
        return self.session_catalog().getTableMetadata(self.ident(db, table))

    def partitions(self, db: str, table: str) -> Any:
        """Every partition of a table: a Scala ``Seq[CatalogTablePartition]`` (one Metastore call)."""
        return self.session_catalog().listPartitions(self.ident(db, table), java_class(self._jvm, "scala.Option").empty())

    def partition_names(self, db: str, table: str) -> Any:
        """Every partition's name (``k=v/k2=w``: Hive-escaped, the table's
        column case) as a Scala ``Seq[String]``: one Metastore call, no
        storage descriptors."""
        return self.session_catalog().listPartitionNames(self.ident(db, table), java_class(self._jvm, "scala.Option").empty())

    def location_string(self, uri: Any) -> str:
        """A location ``java.net.URI`` as the path string Hadoop's ``Path`` and
        SQL's ``LOCATION`` take: decoded (``k=a%253A`` in the URI is the
        directory ``k=a%3A`` Hive escaped, ``%20`` a space), as Spark's own
        ``CatalogUtils.URIToString``; ``URI.toString`` keeps it encoded."""
        return str(java_class(self._jvm, "org.apache.spark.sql.catalyst.catalog.CatalogUtils").URIToString(uri))

    def storage_with_location(self, storage: Any, location: str) -> Any:
        """A copy of a ``CatalogStorageFormat`` with another location, every
        other field as it is."""
        uri = java_class(self._jvm, "org.apache.spark.sql.catalyst.catalog.CatalogUtils").stringToURI(location)
        fields = [storage.productElement(i) for i in range(int(storage.productArity()))]
        return storage.copy(java_class(self._jvm, "scala.Some")(uri), *fields[1:])

    # A CatalogTable's storage descriptor and properties, by position: the 3rd
    # and 12th field on Spark 3.3 to 4.x (the fields added since come later).
    _TABLE_STORAGE, _TABLE_PROPERTIES = 2, 11

    def table_with(self, table: Any, storage: Any = None, properties: Any = None) -> Any:
        """A copy of a ``CatalogTable`` with another storage descriptor and/or
        properties, every other field as it is; None when this Spark's
        ``CatalogTable`` does not hold them at the expected positions."""
        fields = [table.productElement(i) for i in range(int(table.productArity()))]
        if len(fields) <= self._TABLE_PROPERTIES or not (
                fields[self._TABLE_STORAGE].equals(table.storage())
                and fields[self._TABLE_PROPERTIES].equals(table.properties())):
            return None
        if storage is not None:
            fields[self._TABLE_STORAGE] = storage
        if properties is not None:
            fields[self._TABLE_PROPERTIES] = properties
        return table.copy(*fields)

    def refresh_table(self, db: str, table: str) -> None:
        """Invalidate Spark's cached relation of a table (as DDL statements do)."""
        self.session_catalog().refreshTable(self.ident(db, table))

    def drop_spark_statistics(self, db: str, table: str) -> None:
        """Remove Spark's own statistics of a table (``spark.sql.statistics.*``)."""
        ext = self._spark._jsparkSession.sharedState().externalCatalog()  # pylint: disable=protected-access
        ext.alterTableStats(db, table, java_class(self._jvm, "scala.Option").empty())
