#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: lakekeeper_rollback
short_description: Restore Hive external tables to their state before compaction
version_added: 0.1.0
description:
  - Runs the lakekeeper engine command C(rollback) (O(mode=rollback)) - the most recent backup of each selected table
    is used to put its original files back, then the backup table is dropped.
  - With O(run_id), the backup of that run is restored instead (undo run O(run_id), for example from an earlier job's
    RV(run_id)); a table is refused (C(code=newer_run)) when a later run changed one of the same partitions, and
    refused (C(code=not_found)) when it has no backup of that run (not a failure unless O(fail_on_refused)).
  - With O(where), only the partitions the filter selects are restored, from the most recent backup that holds one
    of them (or from the backup of O(run_id)); the backup keeps its other partitions for a later rollback or cleanup.
  - With O(mode=recover), runs the engine command C(recover), which repairs what a crashed compaction left behind.
author:
  - Lakekeeper for Ansible contributors (!UNKNOWN)
extends_documentation_fragment:
  - lakekeeper.hive.lakekeeper
  - lakekeeper.hive.lakekeeper.spark
  - lakekeeper.hive.lakekeeper.attributes
attributes:
  check_mode:
    support: full
    details:
      - Runs the engine with C(--dry-run) and reports whether a table would be restored, with RV(cmd).
  diff_mode:
    support: partial
    details:
      - File counts per partition when the engine reports them.
  idempotent:
    support: full
    details:
      - A table without a backup is left alone and reported unchanged.
options:
  mode:
    description:
      - V(rollback) runs the engine command C(rollback), V(recover) the engine command C(recover).
    type: str
    choices: [rollback, recover]
    default: rollback
  run_id:
    description:
      - Restore the backup of this run (its run id, or its backup table name) instead of the most recent one
        (C(--run-id)). Only with O(mode=rollback).
    type: str
  where:
    description:
      - Restore only the partitions this filter selects (C(--where)), for example V(dt = '2024-09-01') or
        V(dt BETWEEN '2024-09-01' AND '2024-09-03') - comparisons, V(IN) lists, V(BETWEEN), V(AND), V(OR) and V(NOT)
        on partition columns only, the syntax of O(lakekeeper.hive.lakekeeper_compact#module:where) (never SQL).
      - The backup keeps the other partitions (their original files and journal) and is dropped once the last of
        them is restored; a table with no backup holding a selected partition is V(skipped), a filter that does
        not fit the table (a data column, a non-partitioned table) is V(refused) with C(code=invalid_where).
      - Only with O(mode=rollback).
    type: str
  break_lease:
    description:
      - With O(mode=recover), take over the table's lease even when it is not stale yet (C(--break-lease)), for a
        holder known to be dead (for example its host is lost) before O(lease_timeout) has passed.
      - Never use it while the holder may still run - two runs on one table can corrupt it.
    type: bool
seealso:
  - module: lakekeeper.hive.lakekeeper_analyze
  - module: lakekeeper.hive.lakekeeper_compact
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
- name: Restore a table to its state before the last compaction
  lakekeeper.hive.lakekeeper_rollback:
    table: mydb.events
    config_file: /etc/lakekeeper/lakekeeper.yaml

- name: Undo one earlier compaction run (its run_id from that job's result), if no later run changed the same partitions
  lakekeeper.hive.lakekeeper_rollback:
    tables: [mydb.events, mydb.clicks]
    run_id: 20261122T013000-3f9a1c
    config_file: /etc/lakekeeper/lakekeeper.yaml

- name: Undo the compaction of one day only (the backup keeps the other partitions)
  lakekeeper.hive.lakekeeper_rollback:
    table: mydb.events
    where: "dt = '2024-09-01'"
    config_file: /etc/lakekeeper/lakekeeper.yaml

- name: Recover tables after a crashed compaction (engine command "recover")
  lakekeeper.hive.lakekeeper_rollback:
    database: mydb
    mode: recover
    config_file: /etc/lakekeeper/lakekeeper.yaml
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
  sample: "rollback: 2 rolled_back"
tables:
  description:
    - The engine's per-table facts, as in its JSON result (docs/engine-contract.md of the collection).
    - Empty when the engine could not start.
  returned: always
  type: list
  elements: dict
  sample:
    - table: db.events
      status: rolled_back
      reason: restored 1 unit(s) from db.__bkp_events_20261122_013000_3f9a1c
      changed: true
      would_change: true
      backup_table: db.__bkp_events_20261122_013000_3f9a1c
      run_id: 20261123T020000-7b2e4d
      recovered: []
      partitions:
        - spec: year=2024/month=01
          location: hdfs://nn/warehouse/db/events/year=2024/month=01
          files_before: 2
          files_after: 500
          bytes_before: 1003520
          bytes_after: 1048576
          rows_before: 20000
          rows_after: 20000
          status: rolled_back
          reason: restore hdfs://nn/warehouse/db/events/.year=2024/month=01.lk_old_20261122T013000-3f9a1c
          statistics: {numFiles: "500", totalSize: "1048576", numRows: "20000"}
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
    code:
      description:
        - The reason code of a table that failed, was refused or was skipped for a reason (the engine contract
          lists them all), for example V(live_changed), V(newer_run), V(not_found), V(backup_incomplete).
        - V(partition_dropped) (status V(skipped), nothing changed) when every partition of the backup was dropped
          after the compaction; the backup keeps their original files until a cleanup removes them.
      type: str
      returned: when the table failed, was refused, or was skipped with a code
    notes:
      description:
        - Facts a person should know, for example which partitions dropped since the compaction were not restored
          and that the backup keeps their original files until a cleanup.
      type: list
      elements: str
      returned: when there are some
    backup_table:
      description: The backup table kept for a rollback.
      type: str
      returned: when there is one
    where:
      description: The partition filter (O(where)); only the partitions it selected are in RV(tables[].partitions).
      type: str
      returned: when O(where) is set and the table has a backup
    partitions:
      description:
        - Per-partition file counts, sizes and statuses; a non-partitioned table has one entry with C(spec) V("").
        - C(status) V(rolled_back) for a restored partition.
        - A partition dropped after the compaction (C(ALTER TABLE ... DROP PARTITION), its directory kept or deleted)
          is not restored and not re-created - C(status) V(skipped), C(code) V(partition_dropped), C(reason) says
          where its compacted and original files are, C(original) the directory of its original files, which the
          backup keeps (the restored partitions leave it) until a cleanup removes them.
        - C(carried_over) lists what was written into the live directory after the compaction and kept in the restored
          one - files, and subdirectories with a trailing C(/) (e.g. C(HIVE_UNION_SUBDIR_1/) of a Hive on Tez
          C(UNION ALL)); C(reason) counts both.
      type: list
      elements: dict
      returned: when the engine inspected the table
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
cmd:
  description:
    - The command that ran (or, in check mode, ran with C(--dry-run)), shell-quoted on one line for reading;
      the module runs it as an argument list, never through a shell.
    - Secret-looking C(--conf) values are replaced with V(********).
  returned: always
  type: str
  sample: >-
    /usr/bin/python3 /root/.cache/lakekeeper/app-3f9a1c2b4d5e/run_lakekeeper.py rollback --table db.events
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
  sample: rollback
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
  sample: /var/lib/node_exporter/textfile/lakekeeper_rollback.prom
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
      db.events: {files: 1, partitions: {"": 1}}
    after:
      db.events: {files: 60, partitions: {"": 60}}
"""


from ansible_collections.lakekeeper.hive.plugins.module_utils._lakekeeper_argspec import lakekeeper_argspec
from ansible_collections.lakekeeper.hive.plugins.module_utils._lakekeeper_module import Engine, run_module


def main():
    argspec = lakekeeper_argspec()
    # the engine command: rollback or recover
    argspec.update_argspec(mode=dict(type="str", choices=["rollback", "recover"], default="rollback"),
                           run_id=dict(type="str"), where=dict(type="str"), break_lease=dict(type="bool"))
    run_module(argspec.create_ansible_module(), Engine("lakekeeper_rollback", command_option="mode"))


if __name__ == "__main__":
    main()
