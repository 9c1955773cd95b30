#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

# More than 500 lines: DOCUMENTATION, EXAMPLES and RETURN, which ansible-doc reads from the
# module file itself (RETURN has no doc fragments); the code is the few lines of main().

DOCUMENTATION = r"""
---
module: lakekeeper_compact
short_description: Compact the small files of Hive external tables
version_added: 0.1.0
description:
  - Runs the lakekeeper engine command C(compact) on the selected Hive EXTERNAL tables - per partition, when the
    average file size is below O(block_size_mb) / O(compaction_ratio_threshold), the files are rewritten into fewer,
    larger files and swapped in by directory renames, keeping the table location in the Metastore.
  - A zero-copy backup table pointing at the original files is kept for M(lakekeeper.hive.lakekeeper_rollback) until
    M(lakekeeper.hive.lakekeeper_cleanup) drops it. MANAGED tables are not touched.
author:
  - Lakekeeper for Ansible contributors (!UNKNOWN)
options:
  refresh_command:
    description:
      - A command run on the target after the compaction, once for each table that changed, for example an Impala
        C(REFRESH) so that Impala's catalog sees the new files -
        V([impala-shell, -k, -q, "REFRESH {database}.{table}"]).
      - An argument list, run without a shell; in each argument C({database}), C({table}), C({name}) (C(DB.TABLE))
        and C({partitions}) (the compacted partition specs, comma-separated, empty for a non-partitioned table) are
        replaced. It runs with O(environment) (e.g. C(KRB5CCNAME)).
      - A failure is reported for its table in RV(refresh) and as a warning; it never undoes the compaction and does
        not fail the task. Not run in check mode.
    type: list
    elements: str
  analyze_first:
    description:
      - One Spark application for analysis and compaction - the driver first analyzes the selected tables exactly as
        M(lakekeeper.hive.lakekeeper_analyze) would (the same selection and options, O(analyze_first.history)), writes
        that module's engine document to O(analyze_first.analysis_file), then waits for O(analyze_first.go_file) and
        compacts only the tables it names. It saves the second driver's start (a JVM, the Hive client, a session, on
        a cluster its executors) that a separate analysis costs.
      - Meant to run in the background (C(async), C(poll=0)) - M(lakekeeper.hive.lakekeeper_wait) with
        O(lakekeeper.hive.lakekeeper_wait#module:analysis_file) returns the analysis as
        M(lakekeeper.hive.lakekeeper_analyze) would; whoever decides then writes the go file, atomically (write
        then rename, as M(ansible.builtin.copy) does) - a JSON object with C(tables) (a list of some of the analyzed
        tables; an empty list is none) or C(stop) (the reason).
      - No go file within O(analyze_first.timeout) seconds ends the run with nothing compacted; RV(handoff) says why.
      - The role C(lakekeeper.hive.maintenance) uses it for a compaction in the background.
      - In cluster deploy mode the driver, in a YARN container, has no file of the target - it writes
        C(<run_id>.analysis.json) and waits for C(<run_id>.go.json) beside its result in O(spark_submit.result_dir)
        on the cluster's filesystem, and the module relays both with its Hadoop client while the application runs
        (the analysis to O(analyze_first.analysis_file) once it is there, looked for every 2 to 10 seconds, one
        client command a look; O(analyze_first.go_file) to the driver once it is there), then removes them with the
        result. RV(handoff_relay) says what went over.
      - Not in check mode.
    type: dict
    version_added: 0.1.0
    suboptions:
      analysis_file:
        description: The local file the analysis is written to, on the target (by the driver in client mode, by the
          module in cluster mode).
        type: path
        required: true
      go_file:
        description: The local file the driver waits for, on the target (in cluster mode the module copies it to the
          driver's).
        type: path
        required: true
      timeout:
        description: Seconds to wait for the go file before ending with nothing compacted.
        type: float
        default: 3600
      history:
        description:
          - The analysis's O(lakekeeper.hive.lakekeeper_analyze#module:history) - the newest history records of each
            table (the engine's default 20 when not set; V(0) none).
        type: int
  min_piece_mb:
    description:
      - When a partition is compacted into fewer files than the task slots it can use (one file on an executor with
        several cores), each file is written as pieces by parallel tasks, and the pieces are then joined without
        decoding - ORC stripes or Parquet row groups copied behind one footer (C(--min-piece-mb)).
      - A piece is never smaller than this many MB; the pieces become the joined file's stripes or row groups.
        V(0) turns pieces off (one task writes each file).
      - Sorted (O(sort_by)) and deduplicated (O(dedupe)) files are always written whole.
      - When not set, the config file's value or the engine's default (8) applies.
    type: float
  quiet_period:
    description:
      - Skip a partition (or a non-partitioned table) whose newest file is younger than this duration, for example
        V(30s), V(10m) or V(1h); a bare number is days (C(--quiet-period)). It keeps the compaction away from
        partitions that writers may still be filling.
      - When not set, the config file's value applies, else no partition is skipped on that account.
    type: str
  deadline:
    description:
      - The end of the maintenance window (C(--deadline)) - a duration from the module's start (V(90m), V(2h),
        made an absolute UTC time before the launch, so that time in a queue counts), a time of day (V(05:30),
        UTC, the next one) or an ISO 8601 time (V(2026-11-26T05:30:00Z)).
      - The tables and, within a table, the partitions with the most small files removed per byte rewritten go
        first; each partition's time is estimated from what the partitions finished so far in the run took, and
        none is started that would not end before the deadline (the first of the run starts unless the deadline
        has passed, nothing being known yet; with O(parallelism) above 1, the first of each table running at once
        too). A partition started always finishes - the deadline never leaves one half-done.
      - What is left is reported - the partition V(skipped) with C(code) V(deadline), the table's
        RV(tables[].deferred), a table with nothing done V(skipped) with C(code) V(deadline) - and is compacted by
        the next run.
      - When not set, the config file's value applies, else the run has no deadline.
    type: str
  order:
    description:
      - Which tables, and within a table which partitions, start first (C(--order)), with or without a O(deadline)
        - as Iceberg's C(rewrite-job-order).
      - V(default) - the tables as named (O(tables)) or as the Metastore lists them (O(database)), the partitions in
        the Metastore's order; with a O(deadline), the most small files removed per byte rewritten first.
      - V(bytes-asc), V(bytes-desc) - the smallest, the largest first; V(files-asc), V(files-desc) - the fewest, the
        most files first (a table by one content summary of its location, a partition by its listing). An order set
        here wins over the deadline's; the deadline still starts nothing that would not end before it.
      - With O(parallelism) above 1 this is the order they start in; they may end in another.
      - A table's property C(lakekeeper.order) sets the order of its own partitions (the order of the tables is the
        run's).
      - The order used is in RV(tables[].order), the partitions to compact in the order they start in
        RV(tables[].start_order), and in each table's history record.
      - When not set, the config file's value applies, else V(default).
    type: str
    choices: [default, bytes-asc, bytes-desc, files-asc, files-desc]
  verify:
    description:
      - What the staged copy of each partition is checked for before it is swapped in (C(--verify)).
      - V(content) reads the copy back as the table's readers decode it (the native reader for Parquet and ORC,
        the table's own SerDe and properties for text and Avro) and compares an order-independent checksum of every
        row (all columns, NULL apart from empty) with the checksum of the rows written, taken in the pass that
        wrote them; any difference leaves the partition untouched with code C(content_mismatch). It costs one
        read of the compacted copy.
      - V(rows) checks row counts, schema and codec from the files' metadata only.
      - V(sample) verifies a seeded random share of each table's partitions (O(verify_sample), at least one) by
        content and the others by rows - a weaker check, for runs that cannot afford a read-back of every
        partition; a changed value in a partition outside the sample is not seen. RV(tables[].verify_sample) says
        which were sampled; each partition's C(verified) says how it was checked.
      - A table's property C(lakekeeper.verify) (and C(lakekeeper.verify_sample)) sets it for that table.
      - When not set, the config file's value or the engine's default (V(content)) applies.
    type: str
    choices: [content, rows, sample]
  verify_sample:
    description:
      - With O(verify=sample), the share of each table's partitions to compact that is verified by content
        (C(--verify-sample)), greater than 0 and at most 1; rounded up, at least one partition a table. The choice
        is random, seeded by the run id and the table's name (RV(tables[].verify_sample)).
      - When not set, the config file's value or the engine's default (V(0.1)) applies.
    type: float
  retries:
    description:
      - How many times a partition that failed for a reason that passes is tried again (C(--retries)) - the Hive
        Metastore or a NameNode unreachable or failing over, lost executors or fetch failures, IO timeouts. Each
        retry starts from the state the journal's recovery left - the failed attempt's staged copy removed, the
        original in place - and waits O(retry_backoff) seconds, twice as long before each next one.
      - Never tried again - a verification or content mismatch, a refusal, a lost lease, schema drift, a
        permission or quota error, or a failure after the swap began (recovery finishes or reports it).
      - Each partition tried again reports C(retries) and C(retry_causes) (V(metastore), V(namenode),
        V(executor_lost), V(io_timeout)), its table their sum, and RV(retries) the run's.
      - A table's property C(lakekeeper.retries), or Amoro's C(self-optimizing.execute.num-retries), sets it for
        that table.
      - When not set, the config file's value or the engine's default (V(2)) applies; V(0) turns retries off.
    type: int
  retry_backoff:
    description:
      - Seconds before the first retry of a partition (O(retries)), doubled before each next one, at most 300
        (C(--retry-backoff)).
      - When not set, the config file's value or the engine's default (V(10)) applies.
    type: float
  tiering:
    description:
      - Tiering while compacting - a partition whose newest file is older than O(tiering.older_than) has its
        compacted copy written under an HDFS storage policy (O(tiering.storage_policy), e.g. V(COLD)) and/or an
        erasure coding policy (O(tiering.erasure_coding_policy), e.g. V(RS-6-3-1024k)) - set on the staging
        directory before its files are written, checked on every new file after, kept by the swap (a rename).
        Its age is its newest file's modification time, not a date partition column.
      - Each such partition reports C(tiering) - the policies applied, C(age_days), C(space_before),
        C(space_after) and C(space_saved) (C(getSpaceConsumed) of the directory before and after); its table
        C(tiered) and C(tier_space_saved).
      - A policy the NameNode does not know or has not enabled refuses the table before anything is written,
        with code V(tier_policy_unknown). Where a policy cannot be given (not HDFS, a NameNode without erasure
        coding, erasure coding of a text or Avro table) the partition is compacted without it and
        C(tiering.not_applied) says why.
      - A table's properties C(lakekeeper.tier.older_than), C(lakekeeper.tier.storage_policy) and
        C(lakekeeper.tier.erasure_coding_policy) set it for that table. A rollback restores the original
        directory, with its own policies.
    type: dict
    suboptions:
      older_than:
        description:
          - A duration - V(30d), V(12h); a bare number is days (C(--tier-older-than)). Required with a policy.
        type: str
      storage_policy:
        description:
          - An HDFS storage policy - V(COLD), V(WARM), V(ALL_SSD)... (C(--tier-storage-policy)). The DataNodes
            need the storage it names (V(COLD) - ARCHIVE) or the write fails.
        type: str
      erasure_coding_policy:
        description:
          - An erasure coding policy enabled on the NameNode (C(--tier-ec-policy)); Parquet and ORC tables.
        type: str
  allow_by_name_projection:
    description:
      - Compact Parquet and ORC partitions whose files' columns are not the table's (C(--allow-by-name-projection)) -
        a column renamed, dropped or reordered by metadata-only DDL (C(ALTER TABLE ... CHANGE), C(REPLACE COLUMNS)),
        an extra file column, another type. Readers by name (Spark, Hive) and by position (Impala's default,
        C(parquet.column.index.access), ORC positional evolution) see such files differently, and the compacted
        copy keeps only what a by-name reader sees (the data of a renamed or dropped column is lost for positional
        readers and for a later DDL that would have brought it back).
      - By default (V(false)) such a partition is not compacted - C(status) V(skipped) with C(code)
        V(schema_drift) and the columns in C(reason); the table is V(refused) when no other partition was compacted.
        Columns added at the end (C(ADD COLUMNS)), names differing only in case and nullability are not drift.
      - V(false) passes nothing, so the config file's C(allow_by_name_projection) applies.
    type: bool
    default: false
  allow_owner_change:
    description:
      - On HDFS, compact partitions whose directory or files belong to another owner or group than this run can give
        its compacted copy (C(--allow-owner-change)). The copy is a new directory written by the run's user; only the
        HDFS superuser can give it another owner (and only a member of a group that group), which the engine tries for
        real before anything is written (on a probe file next to its journal).
      - By default (V(false)) such a partition is not compacted - C(status) V(refused), C(code) V(ownership), the
        owners in C(reason), nothing written - so that the ingestion user does not lose write access to its own
        directory. With V(true) it is compacted, its files then belong to the run's user, and the partition's
        C(warnings) name the owner change.
      - V(false) passes nothing, so the config file's C(allow_owner_change) applies.
    type: bool
    default: false
  allow_replicated:
    description:
      - Compact tables that carry Hive replication properties (C(repl.*), for example the C(repl.last.id) that
        C(REPL LOAD) leaves on a table it keeps) like any other (C(--allow-replicated)).
      - By default (V(false)) such a table is a replica - its files are the source's and the next incremental load
        writes over them, so a compaction would diverge from the source - and it is not compacted - C(status)
        V(refused), C(code) V(replicated), nothing written. Compact the source; the replica follows.
      - V(false) passes nothing, so the config file's C(allow_replicated) applies.
    type: bool
    default: false
  sort_by:
    description:
      - Data columns to sort the rows of each written file by (C(--sort-by)), e.g. to make min/max statistics of
        Parquet and ORC files selective. Each write task sorts its own rows; there is no global sort across files.
      - Each item is a column name, ascending, or followed by V(DESC) for largest first (V(ASC) is accepted),
        for example V([customer_id, event_time DESC]).
      - Applies only to the partitions that are compacted; a partition that the size rule skips is not re-sorted,
        so a second run reports RV(changed=false).
      - Partition columns are refused (every file of a partition holds one value of them), as are columns the table
        does not have.
      - V(zorder(a, b)) (one item, or the string; one to four columns) orders the rows along a Z-order curve over the
        columns instead (Iceberg's C(zorder), Delta's C(ZORDER BY)), so that min/max statistics skip files for a
        filter on any of them, not only the first. Parquet and ORC only (other tables are refused, C(code)
        V(unsupported_format)); it costs a percentile pass over the columns, a sampling read and a shuffle of each
        compacted partition. The table's result then has C(sort) with C(strategy=zorder) and the C(columns).
    type: list
    elements: str
  merge_from:
    description:
      - Merge an incoming batch into the table (engine C(--merge-from)) - Hive external tables have no C(MERGE). The
        batch is a directory URI, or the V(db.table) name of a non-partitioned table whose directory is read; it holds
        flat data files in the table's format with every column of the table, partition columns included as ordinary
        columns (same names and types).
      - Requires O(dedupe) - O(dedupe.keys) identify a record, O(dedupe.order_by) picks the latest version and
        O(dedupe.delete_marker) marks deletes. Parquet and ORC tables only (other formats are refused with code
        C(unsupported_format)); cannot be combined with O(where).
      - Each batch row goes to the partition its partition column values name. Only the partitions the batch touches
        are rewritten, whatever the size rule says, each as the latest version of every key of its original rows and
        its batch rows, deleted keys dropped; the other partitions are not touched.
      - Refused as a whole, nothing written - rows for a partition the table does not have (code
        C(merge_new_partition); a merge never creates partitions, add them first), a NULL partition value
        (C(merge_partition_value)), a key the batch puts into one partition while the batch has it in another or the
        table already holds it in another partition (C(merge_key_moved); found by a read of the key columns of every
        partition), a batch whose columns are not the table's (C(merge_batch_schema)), a batch that is not a flat
        directory of data files (C(merge_batch_layout)).
      - Every merged partition goes through staging, verification, swap and backup, so
        M(lakekeeper.hive.lakekeeper_rollback) with the run's id restores the original files. Verification also
        compares the staged rows with an independently computed expected merge (row checksums).
      - The batch is recorded as applied in the table's journal directory (C(.lakekeeper/merged/<identity>.json),
        identity from its path and its files' names, sizes and modification times), per partition - a second run with
        the same batch changes nothing (status V(not_needed), code C(batch_already_applied)); after an interrupted run
        only the partitions not merged yet receive it. A rollback does not clear the record - delete that file to
        merge the batch again. The batch directory is left where it is.
    type: str
  dedupe:
    description:
      - Merge while compacting - keep only the latest version of each key, per partition, and drop keys whose latest
        version is a delete marker (C(--dedupe-keys) and friends). Parquet and ORC tables only.
      - Keys are deduplicated B(within each partition directory), never across partitions. This fits tables that keep
        every version of a key in the same partition (e.g. partitioned by the key's creation date); versions of a key
        spread over several partitions are not merged.
      - It applies to the partitions that the size rule selects, like any compaction, and, with
        O(dedupe.trigger_ratio), to those where enough rows are superseded versions or delete markers.
      - A key with two different rows on its latest O(dedupe.order_by) value is ambiguous - that partition fails with
        code C(dedupe_tie) and is left as it was; identical rows count as one version.
      - NULL keys never match, as in SQL - a row with a NULL in any key column is a key of its own, kept as it is
        (never deduplicated against another row, not even an identical one, and never matched by a O(merge_from)
        batch row); a batch row with a NULL key is inserted, a delete marker with a NULL key deletes nothing (and,
        like every delete marker, is not kept).
      - Verification checks that the staged copy holds exactly one row per surviving key (a row count from the file
        footers and a distinct count of the key columns). The backup and rollback keep every original row, duplicates
        and delete markers included.
    type: dict
    suboptions:
      keys:
        description: Columns that identify a record.
        type: list
        elements: str
        required: true
      order_by:
        description:
          - The column whose largest value is the latest version of a key (a timestamp or a sequence number).
          - NULL counts as the oldest version.
        type: str
        required: true
      delete_marker:
        description:
          - A column telling that a version is a delete. Without O(dedupe.delete_marker_value) it must be a
            boolean column (true means deleted).
        type: str
      delete_marker_value:
        description:
          - The value of O(dedupe.delete_marker) that marks a delete, compared as a string (e.g. V(D)).
          - A YAML boolean is passed as V(true) or V(false), as Spark prints a boolean column.
          - Requires O(dedupe.delete_marker).
        type: raw
      trigger_ratio:
        description:
          - The delete-ratio trigger (engine C(--dedupe-trigger-ratio), table property
            C(lakekeeper.dedupe.trigger_ratio)) - a partition that no size rule selects (e.g. one already compacted
            that then received a small batch of updates) is still rewritten, and deduplicated, when this share of its
            rows would be removed by the dedupe (superseded versions, and every row of a key whose latest version is
            a delete marker).
          - A number greater than 0 and at most 1, for example V(0.05) for 5%.
          - Measured only when set, only for the partitions not already selected, by one read of their key,
            O(dedupe.order_by) and O(dedupe.delete_marker) columns. Such a partition reports C(rule)
            V(delete_ratio), and every partition measured reports the share in C(delete_ratio).
        type: float
extends_documentation_fragment:
  - lakekeeper.hive.lakekeeper
  - lakekeeper.hive.lakekeeper.compaction
  - lakekeeper.hive.lakekeeper.spark
  - lakekeeper.hive.lakekeeper.attributes
attributes:
  check_mode:
    support: full
    details:
      - Runs the engine with C(--dry-run) (it plans and writes nothing) and reports whether a table would be
        compacted, with RV(cmd).
      - With O(merge_from) it reports which partitions would be merged, with the rows, inserted, updated and deleted
        keys the batch holds for each (C(merge) of each partition).
  diff_mode:
    support: full
    details:
      - File counts per table and partition before and after (planned counts in check mode).
  idempotent:
    support: full
    details:
      - A compacted table is no longer below the threshold, so a second run reports RV(changed=false).
      - With O(merge_from) a batch is recorded once merged, so a second run with the same batch reports
        RV(changed=false) (code C(batch_already_applied)).
notes:
  - After a compaction the engine refreshes C(numFiles), C(totalSize) and C(numRows) of each compacted partition (or
    of the table) in the Metastore (C(statistics) of each entry of RV(tables[].partitions)).
seealso:
  - module: lakekeeper.hive.lakekeeper_analyze
  - module: lakekeeper.hive.lakekeeper_rollback
  - module: lakekeeper.hive.lakekeeper_cleanup
"""

EXAMPLES = r"""
---
- name: Start one application that analyzes, then compacts what the play decides (in the background)
  lakekeeper.hive.lakekeeper_compact:
    database: sales
    analyze_first:
      analysis_file: /tmp/lk-run/analysis.json
      go_file: /tmp/lk-run/go.json
      timeout: 3600
  async: 28800
  poll: 0
  register: compaction

- name: Wait for its analysis
  lakekeeper.hive.lakekeeper_wait:
    jid: "{{ compaction.ansible_job_id }}"
    results_file: "{{ compaction.results_file }}"
    analysis_file: /tmp/lk-run/analysis.json
  register: analysis

- name: Say which tables to compact (the driver compacts them and ends)
  ansible.builtin.copy:
    dest: /tmp/lk-run/go.json
    content: "{{ {'tables': analysis.tables | selectattr('needs_compaction') | map(attribute='table') | list}
                 | to_json }}"
    mode: "0600"

# These tasks run on a cluster's edge node. The cluster connection is set once
# for the play (or comes from config_file's spark_submit section):
#   module_defaults:
#     group/lakekeeper.hive.lakekeeper:
#       spark_submit:
#         enabled: true
#         master: yarn
#         principal: svc_lakekeeper@EXAMPLE.COM
#         keytab: /etc/security/keytabs/svc_lakekeeper.keytab
#       hadoop_conf_dir: /etc/hadoop/conf
#       environment:
#         SPARK_CONF_DIR: /etc/spark/conf   # with the cluster's hive-site.xml
# Without a Metastore configuration the modules stop before starting; the
# embedded local catalog is only used when asked for (state_dir).
- name: Compact one table through spark-submit on YARN (the reference configuration)
  lakekeeper.hive.lakekeeper_compact:
    table: mydb.events
    spark_submit:
      enabled: true
      master: yarn
      deploy_mode: client
      principal: myuser@MY.REALM.COM
      keytab: /etc/security/keytabs/myuser.keytab
      queue: data-engineering
      archives: /opt/lakekeeper_env.tar.gz#lakekeeper_env
      python_env: ./lakekeeper_env/bin/python   # the executors' Python, unpacked from the archive
      executor_memory: 4g
      num_executors: 10
      executor_cores: 2
      driver_memory: 2g
      extra_conf:
        spark.yarn.kerberos.relogin.period: 1h
      extra_files:
        - /etc/hive/conf/hive-site.xml
    # the driver's Python: in client mode the driver runs on this edge node, where ./lakekeeper_env does not
    # exist; an interpreter of the edge node with the packed environment's major.minor and PyYAML
    python: /usr/bin/python3.11
    hadoop_conf_dir: /etc/hadoop/conf
  register: compaction

- name: The same in cluster mode - the driver in a YARN container, with the packed environment
  lakekeeper.hive.lakekeeper_compact:
    table: mydb.events
    config_file: /etc/lakekeeper/lakekeeper.yaml   # shipped to the driver with --files
    spark_submit:
      enabled: true
      master: yarn
      deploy_mode: cluster
      principal: myuser@MY.REALM.COM
      keytab: /etc/security/keytabs/myuser.keytab
      queue: data-engineering
      archives: hdfs:///apps/lakekeeper/lakekeeper_env.tar.gz#lakekeeper_env
      python_env: ./lakekeeper_env/bin/python   # the driver's and the executors'
      driver_memory: 4g
      result_dir: .lakekeeper/results           # on HDFS, in the user's home: the result, read back and removed
    hadoop_conf_dir: /etc/hadoop/conf
  register: compaction

- name: What would be compacted, without writing anything (check mode runs the engine with --dry-run)
  lakekeeper.hive.lakekeeper_compact:
    database: mydb
    config_file: /etc/lakekeeper/lakekeeper.yaml
  check_mode: true
  diff: true

- name: Keep the latest version of each customer per partition, drop deleted ones, files sorted by country
  lakekeeper.hive.lakekeeper_compact:
    table: crm.customers
    sort_by: [country]
    dedupe:
      keys: [customer_id]
      order_by: updated_at
      delete_marker: op
      delete_marker_value: D

- name: Dedupe as above, and also rewrite compacted partitions once 5% of their rows are updates or deletes
  lakekeeper.hive.lakekeeper_compact:
    table: crm.customers
    dedupe:
      keys: [customer_id]
      order_by: updated_at
      delete_marker: op
      delete_marker_value: D
      trigger_ratio: 0.05

- name: Merge today's batch of customer changes into the partitions it touches (applied once, even if re-run)
  lakekeeper.hive.lakekeeper_compact:
    table: crm.customers
    merge_from: hdfs://nameservice1/landing/crm/customers/batch-2024-09-30
    dedupe:
      keys: [customer_id]
      order_by: updated_at
      delete_marker: op
      delete_marker_value: D

- name: Compact, then have Impala reload each compacted table's file list
  lakekeeper.hive.lakekeeper_compact:
    database: mydb
    refresh_command: [impala-shell, -k, -q, "REFRESH {database}.{table}"]
    environment:
      KRB5CCNAME: /tmp/krb5cc_lakekeeper
  register: compaction

- name: Compact several tables with a local embedded Spark (test bed)
  lakekeeper.hive.lakekeeper_compact:
    tables: [testdb.events, testdb.clicks]
    state_dir: /var/lib/lakekeeper/state
    spark_submit:
      master: local[2]
    environment:
      SPARK_LOCAL_IP: 127.0.0.1

- name: Merge only the fragment files of recent partitions, leaving the large files as they are
  lakekeeper.hive.lakekeeper_compact:
    table: mydb.events
    mode: minor
    min_input_files: 20
    target_file_size_mb: 256
    where: "dt BETWEEN '2024-09-01' AND '2024-09-30'"
"""

RETURN = r"""
---
changed:
  description: Whether a table changed (in check mode, whether one would change).
  returned: always
  type: bool
msg:
  description: One line for a person, the engine's summary (prefixed with C((dry run)) in check mode) or why it failed.
  returned: always
  type: str
  sample: "compact: 1 compacted, 1 not_needed"
retries:
  description:
    - How many times partitions were tried again after a failure that passes (O(retries)), over all tables; each
      table's own in RV(tables[].retries).
  returned: when the engine ran
  type: int
  sample: 1
tables:
  description:
    - The engine's per-table facts, as in its JSON result (docs/engine-contract.md of the collection).
    - Empty when the engine could not start.
  returned: always
  type: list
  elements: dict
  sample:
    - table: db.events
      status: compacted
      reason: 2 of 3 partitions compacted
      changed: true
      would_change: true
      backup_table: db.__bkp_events_20261122_013000
      run_id: 20261122T013000-3f9a1c
      location: hdfs://nn/warehouse/db/events
      format: parquet
      partitions:
        - spec: year=2024/month=01
          files_before: 500
          files_after: 2
          status: compacted
  contains:
    table:
      description: The table, C(DB.TABLE).
      type: str
      returned: always
    status:
      description:
        - What became of the table, in the words of docs/statuses.md of the collection (the same in every module, the
          maintenance role's summary and set_stats, the HTML report and the history records).
        - V(compacted), V(rolled_back), V(cleaned), V(recovered), V(pinned), V(unpinned) - done; V(planned) - a dry
          run would do it; V(analyzed).
        - V(not_needed) - nothing to do (no partition needs compaction, a merge batch already merged); before this
          release such a table was V(skipped).
        - V(skipped) - left for now for a reason that passes, in C(code) (V(deadline), V(quiet_period),
          V(open_files), V(nested_layout)); rollback, cleanup and recover also say it of a table they have nothing
          to do for.
        - V(locked) - another run holds the table's lease, named in C(reason) and C(lease_holder); nothing was done.
        - V(refused) - Lakekeeper must leave the table alone (MANAGED, transactional, excluded, replicated, a backup
          table, ... - C(code) and C(reason) say which); nothing was done.
        - V(failed) - the run tried and could not finish.
        - Only V(failed) fails the task (and V(refused) with O(fail_on_refused)); the module warns of V(locked) and
          V(refused) tables.
      type: str
      returned: always
    code:
      description:
        - The reason code of a table that failed or was refused (the engine contract lists them all), for example
          V(unsupported_format), V(backup_table), V(content_mismatch); a text table whose properties a rewrite
          cannot honour is refused with V(header_footer_lines) (C(skip.header.line.count) or
          C(skip.footer.line.count) set) or V(serde_property) (C(line.delim) other than a newline,
          C(timestamp.formats) with timestamp columns).
        - V(schema_drift) when every partition to compact has files whose columns are not the table's (renamed,
          dropped or reordered columns, another type; nothing was written, see O(allow_by_name_projection)).
        - V(mixed_files) when every partition to compact has files that disagree on what a rewrite must keep
          (Parquet files in both the legacy and the standard layout or with timestamps in different physical types,
          Avro files with different writer schemas; nothing was written).
        - V(unsupported_values) when every partition to compact has files holding timestamps Spark cannot carry
          (Parquet INT96, ORC or text timestamps with digits below a microsecond, Parquet INT64 nanoseconds or
          timestamps without isAdjustedToUTC, Parquet INT96 timestamps in files parquet-mr did not write, which Hive
          would see shifted by its time zone once rewritten; nothing was written).
        - V(unreadable_file) when every partition to compact holds a file Hive reads and Spark skips (a closed
          C(x._COPYING_) that a killed C(hdfs dfs -put) left; nothing was written), or when a O(merge_from) batch, or
          the table it merges into, holds one (nothing was merged).
        - V(locked) when another run holds the table's lease (nothing was done; not a failure).
        - V(excluded) when the table property C(lakekeeper.exclude) is true (or, without it, Amoro's
          C(self-optimizing.enabled) is false), V(invalid_policy) when a C(lakekeeper.*) table property is unknown or
          does not validate, or an Amoro property read as one (see RV(tables[].policy_from)) does not; nothing was
          done.
        - On HDFS, when no partition was compacted and one was refused before anything was written -
          V(encryption_zone) (its directory is the root of an encryption zone), V(erasure_coding) (its directory's
          erasure coding policy is not its parent's), V(snapshottable) (snapshots are allowed on its directory),
          V(ownership) (its directory or files belong to an owner this run cannot keep, see O(allow_owner_change)).
          A partition with a file still open for write is V(skipped) with C(code) V(open_files) (compacted once it
          is closed); one opened or appended to during the run fails with V(concurrent_write), its original kept.
      type: str
      returned: when the table failed, was refused or was locked
    policy:
      description:
        - The table's own policy - its C(lakekeeper.*) table properties, which override the run's settings for this
          table (for example C(lakekeeper.target_file_size_mb), C(lakekeeper.sort_by), C(lakekeeper.mode),
          C(lakekeeper.retention.keep_last)); the engine contract lists them.
      type: dict
      returned: when the table has such properties
      sample: {lakekeeper.target_file_size_mb: "256", lakekeeper.sort_by: customer_id}
    policy_from:
      description:
        - The keys of RV(tables[].policy) read from Apache Amoro's C(self-optimizing.*) table properties (the
          C(lakekeeper.*) key -> the Amoro property), for example C(self-optimizing.target-size) as
          C(lakekeeper.target_file_size_mb); a table's own C(lakekeeper.*) property wins over Amoro's. The engine
          contract lists the properties read.
      type: dict
      returned: when the table has such properties
      sample: {lakekeeper.target_file_size_mb: self-optimizing.target-size}
    reason:
      description: Why the engine did what it did (or failed).
      type: str
      returned: when the engine gives one
    changed:
      description: Whether this table changed.
      type: bool
      returned: always
    would_change:
      description: Whether this table would change (the check mode's answer); always false for C(analyze).
      type: bool
      returned: always
    needs_compaction:
      description: Whether the table has partitions below the compaction threshold.
      type: bool
      returned: by C(analyze) and dry runs, when the engine reports it
    backup_table:
      description: The backup table kept for a rollback.
      type: str
      returned: when there is one
    mode:
      description: The compaction mode the engine applied (O(mode)).
      type: str
      returned: when the engine inspected the table
      sample: smart
    order:
      description:
        - The order this table's partitions started in (O(order), or the table's C(lakekeeper.order)); the tables of
          the run started in the run's O(order).
      type: str
      returned: when the engine inspected the table
      sample: files-desc
    sort:
      description:
        - With O(sort_by), how the rows of each written file are ordered - C(strategy) (V(linear) for a column list,
          V(zorder) for V(zorder(a, b))) and C(columns); the table's history record keeps it.
      type: dict
      returned: when O(sort_by) or the table property C(lakekeeper.sort_by) is set
      sample: {strategy: zorder, columns: [customer_id, event_date]}
    verify:
      description: V(sample) when the table's partitions were verified by a sample (O(verify)).
      type: str
      returned: with O(verify=sample) (or the table's C(lakekeeper.verify)), when partitions were to be compacted
      sample: sample
    verify_sample:
      description:
        - With O(verify=sample) - C(fraction) (O(verify_sample)), C(seed) (the run id and the table), C(units) (the
          partitions to compact) and C(sampled) (the C(spec) of those verified by content; the others by rows).
      type: dict
      returned: with O(verify=sample), when partitions were to be compacted
      sample: {fraction: 0.1, seed: 20261129T010000-3f9a1c/db.events, units: 12, sampled: [dt=2024-09-07, dt=2024-09-11]}
    queue:
      description:
        - The YARN queue the table's properties name - C(lakekeeper.queue), or Apache Amoro's C(self-optimizing.group)
          mapped through O(queues) - in which the role C(lakekeeper.hive.maintenance) compacts it (one application
          per queue). This module runs in the queue of its O(spark_submit) alone; the engine only reports it.
      type: str
      returned: when the table names a queue or an optimizer group
      sample: root.etl.nightly
    queue_from:
      description: The property RV(tables[].queue) was read from - V(lakekeeper.queue) or V(self-optimizing.group).
      type: str
      returned: when the table names a queue or an optimizer group
      sample: self-optimizing.group
    optimizer_group:
      description: The Amoro optimizer group the table's C(self-optimizing.group) names.
      type: str
      returned: when RV(tables[].queue_from) is V(self-optimizing.group)
      sample: nightly
    policy_not_read:
      description:
        - Properties of other tools the table sets that lakekeeper does not read, each with why - Amoro's
          C(self-optimizing.quota) (the YARN queue's capacity is the share; see RV(tables[].queue)).
      type: dict
      returned: when the table sets one
      sample: {self-optimizing.quota: "not read: one application runs in one YARN queue, ..."}
    start_order:
      description: The partitions to compact (their C(spec)), in the order they start (or, in check mode, would).
      type: list
      elements: str
      returned: when more than one partition is to be compacted
      sample: [dt=2024-09-02, dt=2024-09-01]
    merge:
      description:
        - With O(merge_from), the batch - C(source) (its directory), C(identity), C(record) (the file that records
          the partitions it was merged into), C(batch_rows), C(already_applied) (partitions merged by an earlier run)
          and C(partitions) (per partition to merge now, as C(merge) of each entry of RV(tables[].partitions)).
      type: dict
      returned: when O(merge_from) is set and the batch could be read
    where:
      description: The partition filter (O(where)); partitions it does not select are not in RV(tables[].partitions).
      type: str
      returned: when O(where) is set
    deferred:
      description:
        - With O(deadline), how many partitions were not started because they would not have ended before it; they
          are in RV(tables[].partitions) with C(status) V(skipped) and C(code) V(deadline), left for the next run.
      type: int
      returned: when a deadline left some
    warnings:
      description:
        - What the space pre-flight could not check, for example the quota of a directory above the table that this
          user may not read (a NameNode before Hadoop 2.8 tells a quota only through a content summary of everything
          below the directory). The run goes on; a write over such a quota still fails cleanly.
      type: list
      elements: str
      returned: when there are some
    partitions:
      description:
        - Per-partition file counts, sizes and statuses; a non-partitioned table has one entry with C(spec) V("").
        - A partition's C(status) - V(compacted), V(planned), V(failed), V(refused), V(not_needed) (no rule selected
          it - C(reason) and C(rule) say why) or V(skipped) (left for now, C(code) says why - V(deadline),
          V(quiet_period), V(open_files), V(nested_layout), V(schema_drift)); docs/statuses.md of the collection.
        - With O(dedupe), a compacted partition also reports C(keys_before) (distinct keys read),
          C(duplicates_dropped) (older versions) and C(deletes_dropped) (keys whose latest version is a delete);
          C(rows_before) = C(rows_after) + C(duplicates_dropped) + C(deletes_dropped).
        - C(rule) is the rule that chose or declined the partition (V(ratio), V(minor), V(major), or V(smart)
          when neither minor nor major applies, or V(delete_ratio) with O(dedupe.trigger_ratio), or V(merge) with
          O(merge_from), or V(split) when only O(max_file_size_mb) selected it); C(reason) says why.
        - With O(merge_from), a partition the batch touches has C(merge) - C(rows) (its batch rows), C(inserted),
          C(updated), C(deleted) and C(absent_deletes) (delete markers of keys it does not hold), the keys as the
          batch states them (the latest O(dedupe.order_by) still decides); C(rows_before) includes the batch rows.
        - With O(dedupe.trigger_ratio), each partition whose share of superseded and deleted rows was measured
          (those no size rule selected) has it in C(delete_ratio), from 0 to 1.
        - In minor mode, or when O(max_file_size_mb) splits files, C(files_rewritten) files are rewritten (the
          fragments, and the files split), C(files_split) of them above O(max_file_size_mb) split into files of about
          the target size, and C(files_moved) kept unchanged, moved by rename from the live directory into the
          staging directory right before the swap (metadata only, checked by presence and length; C(files_copied) is
          0). The backup's original directory lacks the moved files (they stay live; a rollback brings them back into
          the restored original). C(rule) is V(split) when only the split selected the partition. C(rows_before)
          and C(rows_after) count the rows of the rewritten files, C(rows_kept) those of the moved files (from their
          footers); the partition's C(numRows) statistics count both.
        - C(verified) is the check the staged copy passed (V(content) or V(rows), O(verify)); with V(content) a
          compacted entry has C(content_checksum), the checksum of its rows as read back, and a partition whose copy
          does not read back as the original fails with C(code) V(content_mismatch) and both figures in C(reason).
        - A text or Avro partition is read and written with its own storage descriptor (SerDe, formats, SerDe
          properties, kept when the table's changed without CASCADE) and every table property its SerDe reads. A
          partition the rewrite cannot keep as its readers see it has C(status) V(refused), is left untouched, and
          has C(code) V(partition_format) (its own format is not the table's) or V(header_footer_lines) /
          V(serde_property) (as for a table); when nothing else is compacted the table is V(refused) with that code.
        - A compacted entry has C(statistics) - C(numFiles), C(totalSize), C(numRows) as the Metastore holds them
          after the refresh (C(numRows) V(-1) when files written by others were carried along) - or
          C(statistics_error) when they could not be written (the compaction stands).
        - A partition whose files' columns are not the table's (renamed, dropped, reordered columns, another type)
          is V(skipped) with C(code) V(schema_drift) and the columns in C(reason), its files untouched; with
          O(allow_by_name_projection) it is compacted and C(notes) says what drifted. A partition with
          subdirectories (e.g. C(HIVE_UNION_SUBDIR_1) of Hive on Tez) is V(skipped).
        - Each partition is read from its own directory (never through a filter on its values, which a sibling
          such as V(hour=09) next to V(hour=9) may share) and written with the codec, Parquet layout and Avro writer
          schema of its own files. A partition whose Parquet files are in both layouts (legacy and standard) or
          whose Avro files have different writer schemas has C(status) V(refused) and C(code) V(mixed_files),
          naming what differs, its files untouched. Files with different codecs are compacted with the codec of the
          newest file (values are the same whatever the codec), and C(notes) lists the codecs found.
        - A partition whose files hold timestamps Spark cannot carry (nanoseconds, as Hive and Impala write them in
          Parquet INT96, ORC and text) has C(status) V(refused) and C(code) V(unsupported_values), naming the column
          and a value, its files untouched; so has a partition with Parquet INT96 timestamps in a file parquet-mr
          did not write (Impala, pyarrow), whose values Hive reads as written but would convert from UTC in the
          compacted copy. A Parquet partition keeps its timestamp physical type (INT96, TIMESTAMP_MICROS,
          TIMESTAMP_MILLIS).
        - A partition holding a file Hive reads and Spark skips (a closed C(._COPYING_) that a killed
          C(hdfs dfs -put) left) has C(status) V(refused) and C(code) V(unreadable_file), naming the file, its files
          untouched (a copy written through Spark would lack its rows).
        - C(late_files) lists files (and subdirectories, with a trailing C(/)) written during the swap and moved
          into the live directory.
        - On HDFS, a partition refused before anything was written has C(code) V(encryption_zone),
          V(erasure_coding), V(snapshottable) or V(ownership); one with a file still open for write (a Flume
          C(.tmp), a C(._COPYING_), hidden ones too) is V(skipped) with C(code) V(open_files), naming up to three.
          A compacted entry has C(carried), what its copy was given besides owner, group, mode, ACL and quotas -
          C(storage_policy) (the directory's own), C(xattrs) (their names), C(replication) (the factor the
          rewritten files shared).
      type: list
      elements: dict
      returned: when the engine inspected the table
    retries:
      description:
        - How many times this table's partitions were tried again (O(retries)); each such partition has
          C(retries) and C(retry_causes), the cause of each failure it was tried again after.
      type: int
      returned: when a partition was tried again
    retry_causes:
      description: The causes of the table's retries and how many of each (V(metastore), V(namenode), V(executor_lost), V(io_timeout)).
      type: dict
      returned: when a partition was tried again
      sample: {"namenode": 1}
    tiered:
      description:
        - How many of this table's partitions were compacted under a tier's policy (O(tiering)); each has
          C(tiering) - C(storage_policy), C(erasure_coding_policy), C(older_than_days), C(age_days),
          C(space_before), C(space_after), C(space_saved) (bytes consumed, replicas and parity included), or
          C(not_applied) saying why a policy was not given.
      type: int
      returned: when a partition was tiered
      sample: 3
    tier_space_saved:
      description: The space consumed before minus after, over the table's tiered partitions, in bytes.
      type: int
      returned: when a partition was tiered
      sample: 1048576
    max_file_size_mb:
      description: The split bound this table ran with (O(max_file_size_mb), or the table's C(lakekeeper.max_file_size_mb)).
      type: float
      returned: when a split bound was set
    files_split:
      description:
        - How many files above RV(tables[].max_file_size_mb) this run split into files of about the target size,
          over the table's compacted partitions (each one's own in its C(files_split)).
      type: int
      returned: when a file was split
    partitions_not_listed:
      description:
        - Present when O(max_partitions_listed) cut RV(tables[].partitions) - how many partitions were left out
          (C(partitions)), how many of them were to compact (C(to_compact)), and their C(files) and C(bytes)
          (nothing was done to them, so the same before and after).
      type: dict
      returned: when the table had more partitions than O(max_partitions_listed)
      sample: {"partitions": 90000, "to_compact": 1200, "files": 180000, "bytes": 1089000000}
    history_record:
      description:
        - The record this run left in the table's run history (the URI of one JSON file in C(<journal dir>/history)
          on the table's filesystem, which no cleanup removes) - written once the outcome is known, for a run that
          changed the table, failed or was refused (never in check mode). M(lakekeeper.hive.lakekeeper_analyze)
          returns these records as C(tables[].history).
      type: str
      returned: when the run left a record
    history_error:
      description: Why the run's history record could not be written (best effort; the run's outcome stands).
      type: str
      returned: when writing the record failed
runtime:
  description:
    - The versions the engine ran with, as in its JSON result - C(spark), C(scala), C(hadoop), C(hive_client)
      (the Metastore client Spark ships), C(parquet), C(python) and C(python_prefix) (the environment that ran
      the driver, for example the unpacked packed environment).
  returned: when the engine ran and reported them
  type: dict
  sample:
    spark: 3.5.8
    scala: 2.12.18
    hadoop: 3.3.4
    hive_client: 2.3.9
    parquet: 1.13.1
    python: 3.9.18
    python_prefix: /data/yarn/nm/usercache/etl/appcache/application_1700000000000_0042/container_01/lakekeeper_env
catalog:
  description:
    - Which Hive catalog the run used, decided on the target before the engine started and completed by the engine
      with what its driver really loaded.
    - C(kind) is V(metastore) (a C(hive.metastore.uris) service), V(database) (a Metastore database reached
      directly, C(url) without its parameters) or V(embedded) (a private Derby catalog in C(state_dir)).
    - C(source) is where the setting was found (V(spark_submit.extra_conf), V(spark_submit.extra_args), a
      C(spark-defaults.conf) or a C(hive-site.xml)); C(hive_site) the C(hive-site.xml) on the driver's class path;
      C(reason) why this catalog. On a cluster, for example, V(metastore) with
      C(uris=thrift://metastore1.example.com:9083) and C(source=/etc/spark/conf/hive-site.xml).
    - With O(spark_submit.enabled) and no O(state_dir), a run that finds no Metastore configuration fails before
      starting, and so does a run without spark-submit on a host that has a Hive configuration (unless
      O(state_dir) asks for the embedded catalog).
  returned: when the engine was started
  type: dict
  sample:
    kind: embedded
    uris: null
    url: jdbc:derby:;databaseName=/var/lib/lakekeeper/metastore_db
    source: spark.hadoop.javax.jdo.option.ConnectionURL
    hive_site: null
    state_dir: /var/lib/lakekeeper
    reason: state_dir was given
run_id:
  description: The engine's run identifier.
  returned: when the engine printed its result
  type: str
  sample: 20261122T013000-3f9a1c
refresh:
  description:
    - One entry per table the O(refresh_command) ran for - C(table), C(cmd) (shell-quoted, for reading), C(rc) (null
      when the command could not be started), C(failed), C(stdout_lines), C(stderr_lines) (last lines).
  returned: when O(refresh_command) is set and not in check mode
  type: list
  elements: dict
  sample:
    - table: mydb.events
      cmd: impala-shell -k -q 'REFRESH mydb.events'
      rc: 0
      failed: false
      stdout_lines: []
      stderr_lines: []
cmd:
  description:
    - The command that ran (or, in check mode, ran with C(--dry-run)), shell-quoted on one line for reading;
      the module runs it as an argument list, never through a shell.
    - Secret-looking C(--conf) values are replaced with V(********).
  returned: always
  type: str
  sample: >-
    /usr/bin/python3 /root/.cache/lakekeeper/app-3f9a1c2b4d5e/run_lakekeeper.py compact --table db.events
    --state-dir /root/.lakekeeper/state --master 'local[*]' --result-file /tmp/ansible-moduletmp-1/lakekeeper-result.json
handoff:
  description:
    - With O(analyze_first) - what the go was - C(outcome) (V(go), V(stop) - a stop or no table, V(timeout) - no go
      file in time, V(invalid) - a go file the driver could not use, which fails the task), C(tables) (those
      compacted), C(reason) (when nothing was), C(waited_seconds) and C(go_at) (UTC epoch seconds, when the driver
      read the go file or gave up).
  returned: with O(analyze_first), once the engine has analyzed
  type: dict
  version_added: 0.1.0
  sample:
    outcome: go
    tables: [sales.orders]
    analysis_file: /tmp/lk-run/analysis.json
    go_file: /tmp/lk-run/go.json
    waited_seconds: 12.4
    go_at: 1764438000.5
handoff_relay:
  description:
    - Cluster mode with O(analyze_first) - the driver's files on the cluster's filesystem (C(analysis_file),
      C(go_file)), how often the module looked for the analysis (C(looks)), whether each went over
      (C(analysis_relayed), C(go_relayed)) and the last Hadoop client errors (C(errors); a file not there yet is
      none).
  returned: in cluster mode with O(analyze_first)
  type: dict
  version_added: 0.1.0
  sample:
    analysis_file: .lakekeeper/results/20261122T013000-3f9a1c.analysis.json
    go_file: .lakekeeper/results/20261122T013000-3f9a1c.go.json
    looks: 6
    analysis_relayed: true
    go_relayed: true
    errors: []
rc:
  description:
    - Exit code of the engine (0 success, also with refused tables; 1 a table failed, or was refused with
      O(fail_on_refused); 2 bad command line or config; 3 the engine could not start).
    - In cluster mode the driver's, as the application's diagnostics tell it (C(User application exited with status
      N)), else spark-submit's; of a cancelled run, what the engine's process ended with (negative - the signal).
  returned: always
  type: int
  sample: 0
command:
  description: The engine command that ran.
  returned: always
  type: str
  sample: compact
dry_run:
  description: Whether the engine ran with C(--dry-run) (check mode).
  returned: always
  type: bool
  sample: false
script:
  description: Path, on the target, of the C(run_lakekeeper.py) that ran.
  returned: always
  type: str
  sample: /root/.cache/lakekeeper/app-3f9a1c2b4d5e/run_lakekeeper.py
app_transferred:
  description: Whether the action plugin transferred the bundled application to the target in this task.
  returned: always
  type: bool
  sample: false
application_id:
  description:
    - The YARN application of the run, as spark-submit's log names it (C(Submitted application ...)), in client and
      cluster mode.
    - Also returned when the task fails or is cancelled, once spark-submit named it (C(yarn logs -applicationId)
      shows the driver's log of a cluster-mode run).
  returned: when spark-submit named one
  type: str
  sample: application_1732240000000_0042
metrics_file:
  description: The Prometheus textfile this run wrote into O(metrics_dir) (C(lakekeeper_<command>.prom)).
  returned: when O(metrics_dir) is set, not in check mode
  type: str
  sample: /var/lib/node_exporter/textfile/lakekeeper_compact.prom
result_uri:
  description:
    - Cluster mode - where, on the cluster's filesystem, the driver wrote the run's JSON result
      (O(spark_submit.result_dir)); the module read it once the application had ended, and removed it.
  returned: in cluster mode
  type: str
  sample: .lakekeeper/results/20261122T013000-3f9a1c.json
result_fetch:
  description:
    - Cluster mode - why the result could not be read - C(cmd) (the Hadoop client command), C(rc) and the last
      C(stderr_lines) (the driver may have died before writing it, see RV(application_id)).
  returned: when reading a cluster-mode result failed
  type: dict
cancelled:
  description:
    - The task was stopped while the engine ran - C(reason) (V(received SIGTERM), V(received SIGINT),
      V(received SIGHUP), or the controller gone - the module's output has no reader any more) and C(actions), what
      the module did, in order - C(kill_application) (C(application_id), C(cmd), C(rc), C(stderr_lines)) and
      C(stop_engine) (C(pgid), C(signal) - V(SIGTERM), V(SIGKILL) when it did not end within 10 seconds, null when
      it had already ended), then in cluster deploy mode C(remove_files) (C(files), C(cmd), C(rc), C(stderr_lines)) -
      the run's result and hand-over files on the cluster's filesystem, which nothing reads after a stop.
    - The tables are left as the engine's journal records them; the next run of any command finishes or undoes
      what this one left.
  returned: when the task was stopped while the engine ran
  type: dict
  sample:
    reason: received SIGTERM
    actions:
      - action: kill_application
        application_id: application_1732240000000_0042
        rc: 0
        cmd: >-
          /opt/spark/bin/spark-class org.apache.hadoop.yarn.client.cli.ApplicationCLI application -kill
          application_1732240000000_0042
        stderr_lines: []
      - action: stop_engine
        pgid: 41234
        signal: SIGTERM
stdout_lines:
  description: The last lines of the engine's stdout.
  returned: on failure
  type: list
  elements: str
stderr_lines:
  description: The last lines of the engine's stderr (its logs).
  returned: on failure
  type: list
  elements: str
diff:
  description: File counts per table before and after (in check mode, what the engine planned).
  returned: in diff mode
  type: dict
  sample:
    before:
      db.events: {files: 60, partitions: {"": 60}}
    after:
      db.events: {files: 1, partitions: {"": 1}}
"""


from ansible_collections.lakekeeper.hive.plugins.module_utils._lakekeeper_argspec import (
    compaction_options,
    dedupe_option,
    lakekeeper_argspec,
    tiering_option,
)
from ansible_collections.lakekeeper.hive.plugins.module_utils._lakekeeper_module import Engine, run_module


def main():
    argspec = lakekeeper_argspec()
    argspec.update_argspec(**compaction_options())
    argspec.update_argspec(
        sort_by=dict(type="list", elements="str"),
        min_piece_mb=dict(type="float"),
        quiet_period=dict(type="str"),
        deadline=dict(type="str"),
        order=dict(type="str", choices=["default", "bytes-asc", "bytes-desc", "files-asc", "files-desc"]),
        verify=dict(type="str", choices=["content", "rows", "sample"]),
        verify_sample=dict(type="float"),
        retries=dict(type="int"),
        retry_backoff=dict(type="float"),
        tiering=tiering_option(),
        allow_by_name_projection=dict(type="bool", default=False),
        allow_owner_change=dict(type="bool", default=False),
        allow_replicated=dict(type="bool", default=False),
        dedupe=dedupe_option(),
        merge_from=dict(type="str"),
        refresh_command=dict(type="list", elements="str"),
        analyze_first=dict(type="dict", options=dict(
            analysis_file=dict(type="path", required=True),
            go_file=dict(type="path", required=True),
            timeout=dict(type="float", default=3600),
            history=dict(type="int"),
        )),
    )
    run_module(argspec.create_ansible_module(), Engine("lakekeeper_compact", command="compact"))


if __name__ == "__main__":
    main()
