"""Lakekeeper's Spark engine: safe small-file compaction of Hive external tables.

The engine is grouped by concern into packages that are layers, lowest
first; a package imports only packages below it in this list, and no two
import each other (``tests/engine/test_import_graph.py`` checks that, with
the rules between modules: no cycle, no private name across modules):

- ``report/``   errors, the plain data model, results, history, progress, byte counts
- ``compat/``   the seams over Spark, Scala and the Hive client versions
- ``storage/``  the one filesystem adapter (``HadoopFS``) and what it checks: layout
  and names of hidden paths, file formats and codecs, HDFS checks, space
- ``policy/``   settings and what decides from them alone: config, per-table policy,
  planner, budget, retention, merge rules, partition filter, replication, names
- ``catalog/``  the one Metastore adapter (``Catalog``), the backup table, the run's
  ``Context`` and loading a table
- ``protocol/`` what makes a run crash-safe and exclusive: fault points, journal,
  lease, swap, recovery, merge mode's applied-batch record
- ``rewrite/``  writing, reading back and verifying the compacted copy: rewrite,
  content checksums, verify, columns, schema drift, unit formats, merge, delete ratio
- ``commands/`` analyze, compact, rollback, cleanup, recover: each command's own flow

and at the top, the entry point in this package itself: ``cli`` (``main``),
``args`` (the command line), ``flags`` (the command/flag contract, a copy
generated from the modules' table) and ``session`` (the SparkSession). This
``__init__`` holds the version only and imports nothing.

Where the code placed a file against the first sketch of this layout (each
package's docstring says more):

- ``formats`` is in storage, not rewrite: the catalog names a table's format
  with it, and the catalog sits below the rewrite.
- ``planner`` is in policy, not rewrite: it decides from the settings alone,
  and loading a table (catalog) plans it.
- ``group_commit`` is in storage, not protocol: the Metastore writer (catalog)
  and the journal (protocol) both batch with it.
- ``backup`` and ``context`` are in catalog: the backup table is Metastore
  DDL, and the ``Context`` carries the catalog adapter to everything above.
- ``delete_ratio`` and ``merge`` are in rewrite: both run Spark jobs through
  the ``Context``; merge's applied-batch record, which recovery writes too,
  is ``protocol/merge_record``.
- ``sizes`` (byte counts as text, size histograms) is in report: the space
  pre-flight (storage) and the planner (policy) both print bytes.

The steps of a run and the file of each: README.md, "What it does, step by step".
"""

__version__ = "0.1.0"
