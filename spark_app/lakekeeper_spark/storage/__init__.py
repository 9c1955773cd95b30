"""The filesystem: the one adapter over the Hadoop FileSystem API and what
it checks. Below the policy: nothing here decides from settings.

- ``fs``          ``HadoopFS``: its core calls (paths, renames, deletes, copies, small files)
- ``listing``     ``Listings``, a base of ``HadoopFS``: directories listed many at a time
- ``attributes``  ``Attributes``, a base of ``HadoopFS``: permissions, space, HDFS attributes
- ``status``      the text of the filesystem's statuses parsed, plain URIs (pure)
- ``append_log``  the append log the journal writes its unit records to
- ``threads``     the shared threads of the NameNode calls (``threaded``)
- ``layout``      where the hidden directories and the journal go, run ids, backup
  table names, the properties lakekeeper marks its own tables with (pure)
- ``readers``     which file names Hive reads and which Spark reads, the one rule of
  each, and the refusal of a file Hive reads and Spark skips (pure)
- ``formats``     file formats and codecs (footers, headers); here, not in rewrite,
  because the catalog names a table's format with it
- ``timestamps``  Parquet timestamp types from a schema's text, and INT96 values
  below a microsecond read from a file's raw pages
- ``hdfs_checks`` the HDFS pre-flight (ownership, ACLs, quotas, policies, open files)
- ``space``       the space pre-flight
- ``group_commit`` one call for the same write from threads running at once; here,
  not in protocol, because the catalog's partition writer and the journal share it
- ``legacy``      the names lakekeeper 0.0.x gave its backups and directories (pure)
"""
