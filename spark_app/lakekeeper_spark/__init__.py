"""Lakekeeper's Spark engine: safe small-file compaction of Hive external tables.

Layout (each step of the swap has its own module):

- ``names``     identifier validation and quoting (pure)
- ``config``    settings, YAML config file, durations (pure)
- ``planner``   what to compact and how: thresholds, target counts, paths (pure)
- ``journal``   the per-run, per-unit journal on the table's filesystem
- ``fs``        the one adapter over the Hadoop FileSystem API
- ``catalog``   the one adapter over the Hive Metastore (through Spark)
- ``formats``   file formats and codecs (footers, headers)
- ``rewrite``   writing the compacted copy into the hidden staging directory
- ``verify``    row counts and schema of the staged copy
- ``swap``      the directory renames (move aside, move in, undo)
- ``backup``    the backup table (DDL clone, purge disabled)
- ``commands``  analyze, compact, rollback, cleanup, recover
- ``cli``       command line and the JSON result
"""

__version__ = "0.1.0"
