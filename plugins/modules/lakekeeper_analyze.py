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
module: lakekeeper_analyze
short_description: Report which Hive external tables need compaction
version_added: 0.1.0
description:
  - Runs the lakekeeper engine command C(analyze) on the selected Hive EXTERNAL tables - file counts and sizes per
    partition, and whether each table needs compaction (RV(tables[].needs_compaction)).
  - Also a file-size histogram of each table and partition, now and as the plan projects it, the space pre-flight,
    and every existing backup with its size and the verdict a C(lakekeeper_cleanup) with the same O(older_than),
    O(keep_last) and O(grace_period) would give.
  - Also the Metastore reconciled with the filesystem (RV(tables[].reconcile) - partition directories no partition
    points at, partitions whose directory is gone, data files in a partitioned table's root, Lakekeeper's own stale
    directories) and where the small files come from (RV(tables[].sources) - the writers by file name and owner,
    with the cadence of their writes), from the listings it makes anyway.
  - Also each table's run history (RV(tables[].history)) - the records its compactions, rollbacks and cleanups
    left on the table's filesystem, which outlive their backups.
  - Writes nothing; always reports RV(changed=false).
author:
  - Lakekeeper for Ansible contributors (!UNKNOWN)
extends_documentation_fragment:
  - lakekeeper.hive.lakekeeper
  - lakekeeper.hive.lakekeeper.compaction
  - lakekeeper.hive.lakekeeper.spark
  - lakekeeper.hive.lakekeeper.attributes
attributes:
  check_mode:
    support: full
    details:
      - Runs the engine with C(--dry-run); the result is the same.
  diff_mode:
    support: none
    details:
      - Nothing changes.
  idempotent:
    support: full
    details:
      - Never changes anything.
options:
  older_than:
    description:
      - Retention verdicts of RV(tables[].backups) as a cleanup with C(--older-than) would give them.
    type: str
  keep_last:
    description:
      - Retention verdicts of RV(tables[].backups) as a cleanup with C(--keep-last) would give them.
    type: int
  grace_period:
    description:
      - Retention verdicts of RV(tables[].backups) as a cleanup with C(--grace-period) would give them.
    type: str
  allow_replicated:
    description:
      - Analyze tables that carry Hive replication properties (C(repl.*)) like any other (C(--allow-replicated)),
        as O(lakekeeper.hive.lakekeeper_compact#module:allow_replicated) would compact them. By default such a
        table is reported V(refused) with C(code) V(replicated).
    type: bool
    default: false
  dedupe:
    description:
      - The dedupe of the compaction this analysis stands for (O(lakekeeper.hive.lakekeeper_compact#module:dedupe),
        the same suboptions). With O(dedupe.trigger_ratio), each partition that the size rule leaves alone is
        measured (one column-pruned Spark job per table), its C(delete_ratio) reported, and those at or above the
        trigger count in RV(tables[].needs_compaction), as O(lakekeeper.hive.lakekeeper_compact#module:dedupe)
        would select them. Without it, O(dedupe) changes nothing in the analysis.
    type: dict
    suboptions:
      keys:
        description: Columns that identify a record.
        type: list
        elements: str
        required: true
      order_by:
        description: The column whose largest value is the latest version of a key.
        type: str
        required: true
      delete_marker:
        description: A column telling that a version is a delete.
        type: str
      delete_marker_value:
        description: The value of O(dedupe.delete_marker) that marks a delete, compared as a string.
        type: raw
      trigger_ratio:
        description:
          - The share of a partition's rows that the dedupe would remove (superseded versions and deleted keys) at
            which the partition needs compaction although the size rule skips it; greater than 0, at most 1.
        type: float
  history:
    description:
      - How many of each table's run history records RV(tables[].history) returns, newest first (the engine's
        C(--history)). V(0) returns none.
      - Not set - the engine's default, 20.
    type: int
seealso:
  - module: lakekeeper.hive.lakekeeper_compact
  - module: lakekeeper.hive.lakekeeper_rollback
  - module: lakekeeper.hive.lakekeeper_cleanup
"""

EXAMPLES = r"""
---
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
- name: Which tables of a database need compaction
  lakekeeper.hive.lakekeeper_analyze:
    database: mydb
  register: analysis

- name: Tables that would be compacted
  ansible.builtin.debug:
    msg: "{{ analysis.tables | selectattr('needs_compaction') | map(attribute='table') | list }}"

- name: Analyze on a Kerberized YARN cluster with a lakekeeper YAML file
  lakekeeper.hive.lakekeeper_analyze:
    tables:
      - mydb.events
      - mydb.users
    config_file: /etc/lakekeeper/lakekeeper.yaml
    block_size_mb: 256
    compaction_ratio_threshold: 5
    environment:
      KRB5CCNAME: /tmp/krb5cc_lakekeeper

- name: What smart compaction would do to the September partitions of two regions
  lakekeeper.hive.lakekeeper_analyze:
    table: mydb.events
    mode: smart
    where: "dt >= '2024-09-01' AND region IN ('eu', 'us')"
  register: september

- name: The rule that chose or declined each partition
  ansible.builtin.debug:
    msg: "{{ september.tables[0].partitions | items2dict(key_name='spec', value_name='rule') }}"
"""

RETURN = r"""
---
changed:
  description: Always false, C(analyze) writes nothing.
  returned: always
  type: bool
msg:
  description: One line for a person, the engine's summary (prefixed with C((dry run)) in check mode) or why it failed.
  returned: always
  type: str
  sample: "analyze: 2 analyzed"
tables:
  description:
    - The engine's per-table facts, as in its JSON result (docs/engine-contract.md of the collection).
    - Empty when the engine could not start.
  returned: always
  type: list
  elements: dict
  sample:
    - table: db.events
      status: analyzed
      reason: 1 of 2 unit(s) need compaction
      changed: false
      would_change: false
      needs_compaction: true
      run_id: 20261122T013000-3f9a1c
      location: hdfs://nn/warehouse/db/events
      format: parquet
      partitioned: true
      files: 41
      bytes: 1048576
      files_after_estimate: 2
      files_saved_estimate: 39
      small_files: 40
      histogram:
        buckets: [{label: "< 64 KB", max_bytes: 65536}, {label: ">= 1 GB", max_bytes: null}]
        before: [40, 0, 0, 0, 0, 1, 0, 0]
        after: [1, 0, 0, 0, 0, 1, 0, 0]
      partitions:
        - spec: dt=2024-01-01
          decision: compact
          files_before: 40
          bytes_before: 524288
          target_files: 1
          histogram_before: [40, 0, 0, 0, 0, 0, 0, 0]
          histogram_after: [1, 0, 0, 0, 0, 0, 0, 0]
          status: analyzed
      backups:
        - backup_table: db.__bkp_events_20261121_013000_3f9a1c
          run_id: 20261121T013000-3f9a1c
          created_at: 1795225800
          age_seconds: 86400
          pinned: false
          verdict: delete
          reason: not pinned, outside the grace period of 0s
          rule: all
          units: 2
          bytes: 524288
          files: 40
          missing: 0
          directories: [hdfs://nn/warehouse/db/events/.dt=2024-01-01.lk_old_20261121T013000-3f9a1c]
      backups_pending_cleanup: 1
      backup_bytes_pending_cleanup: 524288
      space: {ok: true, problems: [], needed_bytes: 524288, replication: 3, block_size: 134217728}
      pending_recovery: []
      leftovers: []
      lease: null
      history:
        - version: 1
          run_id: 20261121T013000-3f9a1c
          command: compact
          table: db.events
          outcome: compacted
          code: null
          reason: compacted 1 of 2 unit(s)
          changed: true
          started_at: "2026-11-21T01:30:00.412Z"
          ended_at: "2026-11-21T01:31:12.907Z"
          seconds: 72.495
          user: etl
          host: edge1.example.com
          spark_app_id: application_1732240000000_0041
          spark_master: yarn
          backup_table: db.__bkp_events_20261121_013000_3f9a1c
          totals: {units: 1, units_changed: 1, files_before: 40, files_after: 1, bytes_before: 524288,
                   bytes_after: 498000, rows_before: 120000, rows_after: 120000}
          verification: {units: 1, content: 1, rows: 0, rows_before: 120000, rows_after: 120000}
          units:
            - {spec: dt=2024-01-01, status: compacted, files_before: 40, files_after: 1, verified: content}
      seconds: 2.5
  contains:
    table:
      description: The table, C(DB.TABLE) (the database name for a database that does not exist).
      type: str
      returned: always
    status:
      description: >-
        C(analyzed); C(refused) for a table Lakekeeper must leave alone (MANAGED, transactional, replicated, a backup
        table, ..., with C(code); not a failure unless O(fail_on_refused)), named or in a O(database) run alike;
        C(failed). The statuses - docs/statuses.md of the collection.
      type: str
      returned: always
    reason:
      description: How many units need compaction, or why the table was refused or failed.
      type: str
      returned: always
    code:
      description: Reason code of a refused or failed table (C(not_found), C(managed_table), C(view), ...).
      type: str
      returned: when the table was refused or failed
    changed:
      description: Always false.
      type: bool
      returned: always
    would_change:
      description: Always false.
      type: bool
      returned: always
    run_id:
      description: The engine's run identifier.
      type: str
      returned: always
    backup_table:
      description: Always null for C(analyze) (see RV(tables[].backups)).
      type: str
      returned: always
    seconds:
      description: Time spent on the table.
      type: float
      returned: always
    mode:
      description: The compaction mode the engine applied (O(mode)).
      type: str
      returned: when the engine inspected the table
      sample: smart
    where:
      description: The partition filter (O(where)); partitions it does not select are not in RV(tables[].partitions).
      type: str
      returned: when O(where) is set
    policy:
      description:
        - The table's own policy - its C(lakekeeper.*) table properties, which override the run's settings for this
          table (for example C(lakekeeper.target_file_size_mb), C(lakekeeper.sort_by), C(lakekeeper.exclude),
          C(lakekeeper.retention.keep_last)); the analysis applies them. An unknown or invalid one makes the table
          V(refused) with C(code=invalid_policy).
      type: dict
      returned: when the table has such properties
      sample: {lakekeeper.target_file_size_mb: "256", lakekeeper.exclude: "false"}
    excluded:
      description: Whether the table property C(lakekeeper.exclude) keeps compact away from the table (then
        RV(tables[].needs_compaction) is false).
      type: bool
      returned: when the table has a policy
    queue:
      description:
        - The YARN queue the table's properties name - C(lakekeeper.queue), or Apache Amoro's C(self-optimizing.group)
          mapped through O(queues). The role C(lakekeeper.hive.maintenance) compacts the tables of each queue in an
          application of their own (filter C(lakekeeper.hive.queue_groups)).
      type: str
      returned: when the table names a queue or an optimizer group
      sample: root.etl.nightly
    queue_from:
      description: The property RV(tables[].queue) was read from - V(lakekeeper.queue) or V(self-optimizing.group).
      type: str
      returned: when the table names a queue or an optimizer group
      sample: lakekeeper.queue
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
    needs_compaction:
      description: Whether a partition (or the table) would be compacted.
      type: bool
      returned: when analyzed
    location:
      description: The table's location in the Metastore (qualified).
      type: str
      returned: when analyzed
    format:
      description: C(parquet), C(orc), C(avro) or C(text).
      type: str
      returned: when analyzed
    partitioned:
      description: Whether the table is partitioned.
      type: bool
      returned: when analyzed
    files:
      description: Data files now (hidden files excluded).
      type: int
      returned: when analyzed
    bytes:
      description: Bytes of those files.
      type: int
      returned: when analyzed
    files_after_estimate:
      description: Files after a compaction as planned.
      type: int
      returned: when analyzed
    files_saved_estimate:
      description: RV(tables[].files) minus RV(tables[].files_after_estimate).
      type: int
      returned: when analyzed
    small_files:
      description: Files of the partitions that would be compacted.
      type: int
      returned: when analyzed
    histogram:
      description:
        - File-size histogram of the whole table, now (C(before)) and as the plan projects it (C(after), target
          file count of each compacted unit, even sizes). C(buckets) lists the fixed buckets (C(label), upper bound
          C(max_bytes), null for the last); C(before) and C(after) are file counts per bucket.
      type: dict
      returned: when analyzed
    partitions:
      description:
        - One entry per partition (a non-partitioned table has one with C(spec) V("")) - C(spec), C(location),
          C(files_before), C(files_after), C(bytes_before), C(bytes_after) (on disk; the same before and after in
          C(analyze)), C(rows_before) and C(rows_after) (null), C(target_files), C(avg_file_bytes),
          C(median_file_bytes), C(decision) (C(compact) or C(skip)), C(status) (C(analyzed)), C(reason),
          C(histogram_before) and C(histogram_after) (file counts per bucket of RV(tables[].histogram)).
        - C(rule) is the rule that chose or declined the partition (V(ratio), V(minor), V(major), or V(smart)
          when neither minor nor major applies, or V(split) when only O(max_file_size_mb) selects it); C(reason)
          says why.
        - In minor mode, or when O(max_file_size_mb) splits files, C(files_rewritten) files would be rewritten (the
          fragments, and the files split), C(files_split) of them above O(max_file_size_mb), and C(files_copied)
          copied unchanged.
      type: list
      elements: dict
      returned: always (empty when not analyzed)
    partitions_not_listed:
      description:
        - Present when O(max_partitions_listed) cut RV(tables[].partitions) - how many partitions were left out
          (C(partitions)), how many of them were to compact (C(to_compact)), and their C(files) and C(bytes)
          (nothing was done to them, so the same before and after).
      type: dict
      returned: when the table had more partitions than O(max_partitions_listed)
      sample: {"partitions": 90000, "to_compact": 1200, "files": 180000, "bytes": 1089000000}
    backups:
      description:
        - Every backup of the table, oldest first - C(backup_table), C(run_id), C(created_at) (epoch seconds),
          C(age_seconds), C(pinned), C(verdict) (C(keep) or C(delete), what a cleanup with the same O(older_than),
          O(keep_last) and O(grace_period) would do), C(reason) and C(rule) (the policy that decided, as in
          RV(tables[].history)), C(units), C(bytes) and C(files) of its
          original directories, C(missing) (units whose original directory is gone) and C(directories); C(error)
          instead of the sizes when the backup does not look like a Lakekeeper backup.
      type: list
      elements: dict
      returned: when analyzed
    backups_pending_cleanup:
      description: Backups whose verdict is C(delete).
      type: int
      returned: when analyzed
    backup_bytes_pending_cleanup:
      description: Bytes a cleanup with the same options would free.
      type: int
      returned: when analyzed
    space:
      description:
        - The space pre-flight of a compaction - C(ok), C(problems) (one line each), C(dirs) (per directory with a
          quota, HDFS only - C(path), C(needed_bytes), C(needed_names), C(quota), C(namespace_used),
          C(space_quota), C(space_consumed)), C(needed_bytes); when something needs compaction also
          C(replication), C(block_size) and C(remaining_bytes) (filesystem free space).
      type: dict
      returned: when analyzed
    pending_recovery:
      description: Run ids of interrupted runs found in the table's journal; the next compact, rollback or cleanup
        recovers them first.
      type: list
      elements: str
      returned: when analyzed
    leftovers:
      description: Hidden Lakekeeper directories next to the data that no journal accounts for (C(path), C(kind),
        C(run_id), C(reason)); never touched.
      type: list
      elements: dict
      returned: when analyzed
    history:
      description:
        - The table's run history, newest first, at most O(history) records (none with O(history=0)) - what each
          compaction, rollback and cleanup of the table left on its filesystem (C(<journal dir>/history), one JSON
          file per run, kept when the run's journal and backup are gone; a run that did nothing, a check-mode run
          and a run that found the table locked leave none).
        - Each record - C(run_id), C(command) (V(compact), V(rollback) or V(cleanup)), C(table), C(outcome)
          (V(compacted), V(rolled_back), V(cleaned), V(pinned), V(unpinned), V(failed), V(refused), or V(recovered)
          for a run whose recovery of an earlier run was all it did), C(code) and C(reason), C(changed); who and
          where - C(user), C(host), C(spark_app_id), C(spark_master), C(spark_version), C(lakekeeper_version); when -
          C(started_at), C(ended_at) (UTC), C(started), C(ended) (epoch seconds), C(seconds).
        - C(units) lists the units it changed, failed on or refused (C(spec), C(status), C(code), files, bytes and
          rows before and after, C(verified), C(content_checksum), dedupe counts, and C(files_rewritten),
          C(files_split), C(files_copied) where some files were kept or split; at most 20, C(units_not_listed)
          counts the others); C(totals) adds them all up (C(units), C(units_changed) and
          C(files_before), C(files_after), C(bytes_before), C(bytes_after), C(rows_before), C(rows_after) of the
          units it changed, null when unknown; C(files_split) when files were split).
        - A compaction also has C(backup_table), C(mode), C(where) and C(verification) (C(units), C(content) and
          C(rows) - how many were checked each way - C(rows_before), C(rows_after)); a rollback C(backup_table) and
          C(backup_run_id) (the run it undid); a cleanup C(backups_dropped) (C(backup_table), C(run_id), C(bytes),
          C(units), C(age_seconds), C(rule) and C(reason) - why it went), C(backups_kept) (C(rule) V(pinned),
          V(grace), V(keep_last), V(older_than) or V(stranded), and C(reason)) and C(freed_bytes); C(recovered)
          the recovery actions it took first.
      type: list
      elements: dict
      returned: when analyzed
    history_summary:
      description:
        - A summary of RV(tables[].history) - C(runs), C(outcomes) (runs per outcome), C(first_at) and C(last_at),
          C(files_removed) (by its compactions), C(files_restored) (by its rollbacks), C(bytes_freed) and
          C(backups_dropped) (by its cleanups), and C(last) (per command the C(run_id), C(outcome) and C(ended_at) of
          its newest run).
      type: dict
      returned: when analyzed
      sample: {runs: 2, outcomes: {compacted: 1, cleaned: 1}, first_at: "2026-11-21T01:31:12.907Z",
               last_at: "2026-11-28T01:30:40.118Z", files_removed: 39, files_restored: 0, bytes_freed: 524288,
               backups_dropped: 1, last: {compact: {run_id: 20261121T013000-3f9a1c, outcome: compacted,
               ended_at: "2026-11-21T01:31:12.907Z"}}}
    history_unreadable:
      description: Names of history records that could not be read (torn by a crash); skipped.
      type: list
      elements: str
      returned: when there are such records
    history_error:
      description: Why the table's history could not be read (the analysis stands without it).
      type: str
      returned: when reading it failed
    lease:
      description:
        - The run holding the table's lease right now (a compact, rollback, cleanup or recover working on it) -
          C(run_id), C(table), C(command), C(host), C(pid), C(started), C(heartbeat) (epoch seconds) and
          C(description); V(null) when no run holds it. Analyze takes no lease.
      type: dict
      returned: when analyzed
    reconcile:
      description:
        - The Metastore reconciled with the filesystem, from the listings analyze makes anyway (docs/reconcile.md).
          Nothing of it is touched; only the findings with C(removable=true) may be removed, by
          M(lakekeeper.hive.lakekeeper_cleanup) with O(lakekeeper.hive.lakekeeper_cleanup#module:orphans=true).
        - C(unregistered_dirs) - visible directories under a partitioned table's root that no Metastore partition
          points at (written or copied in without C(ADD PARTITION) or C(MSCK REPAIR TABLE); readers do not see their
          files) - C(path), C(looks_like_partition) (named C(<column>=<value>) for its level), C(files), C(bytes),
          C(reason). Not judged when O(where) chose the partitions (then C(partial) says so).
        - C(missing_dirs) - partitions whose directory is gone - C(spec), C(location), C(reason).
        - C(root_files) - data files directly in a partitioned table's root, outside every partition directory (no
          reader reads them) - C(files), C(bytes), C(names) (the first 10).
        - C(stale) - Lakekeeper's own hidden directories, journals and lease that no live run holds - C(path),
          C(kind) (V(staging), V(original), V(trash), V(journal) or V(lease)), C(run_id), C(live) (the directory it
          sits beside), C(state) (V(orphaned) - in no journal of the table -, V(interrupted) - its run's journal is
          unfinished, recovery settles it -, V(finished_run) - a finished run's, no backup table points at it - or
          V(stale_lease)), C(removable), C(files), C(bytes), C(reason) and C(remedy). Only a staging copy whose
          live directory is there and whose run is in no unfinished journal is V(removable) - never an original or
          a rollback's trash, which may hold the only copy of someone's rows.
        - C(summary) - C(findings), C(consistent) (no finding), the count of each kind, C(legacy_leftovers)
          (lakekeeper 0.0.x's directories, listed in the table's own C(legacy_leftovers)), C(bytes), C(removable) and
          C(removable_bytes).
      type: dict
      returned: when analyzed
      sample:
        unregistered_dirs:
          - {path: "hdfs://nn/warehouse/db.db/events/dt=2026-11-03", looks_like_partition: true, files: 12,
             bytes: 73400, reason: "no Metastore partition of the table points at it ..."}
        missing_dirs: [{spec: dt=2026-10-01, location: "hdfs://nn/warehouse/db.db/events/dt=2026-10-01"}]
        root_files: {files: 1, bytes: 5120, names: [000000_0]}
        stale:
          - {path: "hdfs://nn/warehouse/db.db/events/.dt=2026-11-01.lk_staging_20261101T013000-3f9a1c",
             kind: staging, run_id: 20261101T013000-3f9a1c, state: orphaned, removable: true, files: 2,
             bytes: 1048576, remedy: cleanup with orphans removes it}
        summary: {findings: 4, consistent: false, unregistered_dirs: 1, missing_dirs: 1, root_files: 1, stale: 1,
                  legacy_leftovers: 0, bytes: 1127096, removable: 1, removable_bytes: 1048576}
    sources:
      description:
        - Where the table's small files (smaller than the ratio rule's bar, block size / ratio threshold, in
          C(small_file_bytes)) come from, from the names, owners, sizes and modification times analyze listed
          (no file is read; docs/reconcile.md).
        - C(writers) - one entry per writer and owner, most small files first - C(writer) (V(spark) -
          C(part-<n>-<job uuid>[.c000]) -, V(hive) - C(000000_0), C(000000_0_copy_1) -, V(mapreduce) - C(part-m-00000)
          (Sqoop), C(part-r-00000) -, V(flume) - C(FlumeData.<n>) -, V(impala) - C(<hex>_<hex>_data.0.parq) - or
          V(other) - e.g. C(hdfs dfs -put) copies), C(who) (in words), C(owner) (the files' owner; HDFS and local
          filesystems), C(files), C(bytes), C(small_files), C(small_bytes), C(jobs) (distinct Spark jobs or Impala
          queries), C(examples) (newest names), C(where) (its partitions, the first 5) and C(where_count), and
          C(cadence) of its small files - C(batches) (writes - a job, or files less than a minute apart),
          C(files_per_batch), C(interval_seconds) (median between writes, from 3 writes on), C(regular), C(first),
          C(last) and C(text), for example C(12 files every 5 minutes since 2026-11-01 by etl).
        - C(small_files) and C(mtime_histogram) (C(bin_seconds) and C(bins) - C(start), C(count) - of the small
          files' modification times, at most 24 bins).
      type: dict
      returned: when analyzed
      sample:
        small_file_bytes: 13421772
        small_files: 144
        writers:
          - {writer: spark, who: "Spark (part-<n>-<job uuid>)", owner: etl, files: 144, bytes: 7340032, small_files: 144,
             small_bytes: 7340032, jobs: 12, examples: [part-00011-8d1a6f3e-2b4c-4e5f-9a0b-1c2d3e4f5a6b-c000.snappy.parquet],
             where: [dt=2026-11-01], where_count: 1,
             cadence: {batches: 12, files_per_batch: 12, interval_seconds: 300.0, regular: true,
                       first: "2026-11-01T00:00:02Z", last: "2026-11-01T00:55:04Z",
                       text: 12 files every 5 minutes since 2026-11-01 by etl}}
        mtime_histogram: {bin_seconds: 300, bins: [{start: "2026-11-01T00:00:00Z", count: 12}]}
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
cmd:
  description:
    - The command that ran (or, in check mode, ran with C(--dry-run)), shell-quoted on one line for reading;
      the module runs it as an argument list, never through a shell.
    - Secret-looking C(--conf) values are replaced with V(********).
  returned: always
  type: str
  sample: >-
    /usr/bin/python3 /root/.cache/lakekeeper/app-3f9a1c2b4d5e/run_lakekeeper.py analyze --table db.events
    --state-dir /root/.lakekeeper/state --master 'local[*]' --result-file /tmp/ansible-moduletmp-1/lakekeeper-result.json
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
  sample: analyze
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
  sample: /var/lib/node_exporter/textfile/lakekeeper_analyze.prom
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
"""


from ansible_collections.lakekeeper.hive.plugins.module_utils._lakekeeper_argspec import (
    compaction_options,
    dedupe_option,
    lakekeeper_argspec,
    retention_options,
)
from ansible_collections.lakekeeper.hive.plugins.module_utils._lakekeeper_module import Engine, run_module


def main():
    argspec = lakekeeper_argspec()
    argspec.update_argspec(history=dict(type="int"))
    argspec.update_argspec(**retention_options())
    argspec.update_argspec(**compaction_options())
    argspec.update_argspec(allow_replicated=dict(type="bool", default=False), dedupe=dedupe_option())
    run_module(argspec.create_ansible_module(), Engine("lakekeeper_analyze", command="analyze", writes=False))


if __name__ == "__main__":
    main()
