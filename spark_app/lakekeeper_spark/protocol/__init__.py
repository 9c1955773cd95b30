"""What makes a run crash-safe and exclusive: every step journaled before
it happens, renames that are checked, one run per table, and recovery that
finishes or undoes whatever a crash left. Above the catalog (recovery
repoints the backup table through the ``Context``), below the rewrite (the
rewrite's fault points, merge's record).

- ``faults``       the crash tests' fault points (unset in production)
- ``journal``      the per-run, per-unit journal on the table's filesystem
- ``lease``        one run per table: the lease file, its heartbeat, and the check
                   that the run still holds it
- ``fence``        every step that changes a table first passes that check
                   (fenced views of the filesystem and catalog adapters)
- ``swap``         the directory renames (move aside, move in, undo)
- ``merge_record`` merge mode's applied-batch record (split from rewrite/merge:
  recovery finishes a merge run through it)
- ``recovery``     the journal-driven state machines (recover, settle a unit, finish a
  rollback), a backup's units and journal record, Metastore statistics
- ``legacy``       what lakekeeper 0.0.x left: reported, rolled back and cleaned as 0.0.6 did
- ``orphans``      analyze's reconcile gathered and measured, and cleanup's ``orphans`` removal
                   (the lease and journals judge what is live)
"""
