"""Lakekeeper's Spark engine: safe small-file compaction of Hive external tables.

Layout, from the bottom up (each step of the swap has its own module; a
module imports only modules above it in this list: the import graph has no
cycle, ``tests/engine/test_import_graph.py`` checks that):

- ``errors``    error types and the text of (Java) exceptions
- ``model``     plain data: listings, table facts, units, plans
- ``names``     identifier validation and quoting (pure)
- ``partition_filter`` the ``where`` partition filter (pure)
- ``config``    settings, YAML config file, durations (pure)
- ``columns``   the sort/dedupe columns checked against the table
- ``layout``    where the hidden directories and the journal go, run ids, backup table names (pure)
- ``planner``   what to compact and how: thresholds, target counts (pure)
- ``retention`` which backups a cleanup deletes (pure)
- ``sizes``     file-size histograms (pure)
- ``faults``    the crash tests' fault hooks (unset in production)
- ``session``   the SparkSession (cluster's, or the embedded default)
- ``fs``        the one adapter over the Hadoop FileSystem API
- ``formats``   file formats and codecs (footers, headers)
- ``catalog``   the one adapter over the Hive Metastore (through Spark)
- ``journal``   the per-run, per-unit journal on the table's filesystem
- ``rewrite``   writing the compacted copy into the hidden staging directory
- ``verify``    row counts and schema of the staged copy
- ``swap``      the directory renames (move aside, move in, undo)
- ``space``     the space pre-flight
- ``backup``    the backup table (DDL clone, purge disabled)
- ``context``   what a run shares (``Context``) and its bounded thread pools
- ``tables``    loading a table, eligibility, its units and plan
- ``delete_ratio`` dedupe's trigger_ratio: units the size rule skips, measured and selected
- ``recovery``  the journal-driven state machines (recover, settle a unit, finish a
  rollback), a backup's units and journal record, Metastore statistics
- ``results``   the JSON result of a table and of its units
- ``commands``  analyze, compact, rollback, cleanup, recover: each command's own flow
- ``cli``       command line and the JSON result
"""

__version__ = "0.1.0"
