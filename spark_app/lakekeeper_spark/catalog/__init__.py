"""The Hive Metastore: the one adapter over it, and the run's ``Context``
that carries it (with the filesystem, the settings and the thread pools) to
everything above.

- ``catalog``          ``Catalog``: reads and writes through Spark's session catalog
- ``statistics``       ``Statistics``, a base of ``Catalog``: table and partition statistics
- ``partition_writer`` ``PartitionWriter``: one table's partitions, writes group-committed
- ``partition_names``  partition names and texts parsed (pure)
- ``backup``           the backup table (DDL clone, purge disabled); here, not in
  protocol: it is Metastore DDL, and recovery (protocol) uses it
- ``context``          what a run shares (``Context``) and its bounded thread pools;
  here because it holds the catalog adapter, and table loading builds on it
- ``tables``           loading a table, eligibility, its units and plan
- ``legacy``           lakekeeper 0.0.x's backup tables: found, never compacted, read as units
"""
