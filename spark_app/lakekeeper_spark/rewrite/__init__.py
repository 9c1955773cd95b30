"""The compacted copy: written into the hidden staging directory, read back
and verified, before the protocol swaps it in.

- ``rewrite``       writing the copy (splits, pieces joined, sort, dedupe)
- ``batch``         a batch of units written by one scan and one job into a hidden batch
  root, read back by one grouped job, renamed into each unit's staging
- ``unit_formats``  each unit's own codec, Parquet layout and timestamp type, Avro schema
- ``values``        values a unit's files hold that Spark cannot carry (nanosecond
  timestamps): refused before anything is written
- ``columns``       the sort/dedupe columns checked against the table
- ``zorder``        sort_by zorder(a, b): percentile buckets, interleaved bits, range-partitioned
- ``schema_drift``  files whose columns drift from the table's
- ``content``       content verification: the rows' checksum read back
- ``verify``        row counts, schema and codec of the staged copy
- ``merge``         merge mode's batch: located, routed, read beside each unit
- ``tiering``       tiering while compacting: the staging of an old unit given the tier's storage and
  erasure coding policies before the write, each new file checked after, the space consumed
- ``delete_ratio``  dedupe's trigger_ratio: units the size rule skips, measured
  and selected (Spark jobs through the ``Context``, hence here, not in policy)
"""
