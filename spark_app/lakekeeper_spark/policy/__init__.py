"""Settings and everything that decides from them alone (pure, no I/O but
reading the config file): above storage (hidden names), below the catalog.

- ``names``            identifier validation and quoting
- ``partition_filter`` the ``where`` partition filter
- ``config``           settings, the YAML config file, durations
- ``table_policy``     a table's ``lakekeeper.*`` properties (and Amoro's ``self-optimizing.*``
  read as them) over the run's settings
- ``planner``          what to compact and how: thresholds, target counts; here, not
  in rewrite, because it decides from the settings alone and loading a table
  (catalog) plans it
- ``budget``           the maintenance window (deadline, most useful work first)
- ``order``            which tables and units start first (``order``: bytes/files asc/desc)
- ``batching``         which units of a table are written together in one scan and one job (a batch)
  and why the others go alone
- ``verify_sample``    ``verify: sample``: which units of a table are verified by content (a seeded share)
- ``queues``           which YARN queue a table's properties name (``lakekeeper.queue``, Amoro's optimizer
  group through the run's ``queues``); Amoro's quota, not read, and why
- ``retries``          which failures of a unit compact tries again (transient: Metastore,
  NameNode, lost executors, IO timeouts; never a mismatch) and the backoff
- ``tiering``          which units to compact are old enough (their newest file) to be written under
  a colder storage policy or an erasure coding policy, and why one is not applied
- ``retention``        which backups a cleanup deletes
- ``reconcile``        the Metastore against the filesystem: analyze's findings, and the only
  ones cleanup's ``orphans`` may remove
- ``provenance``       which writers left the small files (names, owners) and their cadence
- ``merge_rules``      merge mode's rules (routing, moved keys, the applied record)
- ``replication``      Hive replication: the refusal and distcp's filters
- ``upgrade``          lakekeeper 0.0.x's config keys and flags: deprecated or refused by name
"""
