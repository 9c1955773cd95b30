#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: lakekeeper_cleanup
short_description: Drop the backups that compaction kept for rollback
version_added: 0.1.0
description:
  - Runs the lakekeeper engine command C(cleanup) - for each backup table of the selected tables that the retention
    policies let go, deletes the original files it points to and drops it; RV(tables[].backups_removed) and
    RV(tables[].kept) list every backup with the reason.
  - Retention, like the Hudi cleaner - every policy is a reason to keep a backup, a backup is deleted only when no
    reason holds; in order - O(pin)ned backups are never deleted; a backup younger than O(grace_period) is never
    deleted, whatever the other policies say; a backup that is one of the O(keep_last) newest backups of any of its
    partitions (pinned ones count; like Hudi's KEEP_LATEST_FILE_VERSIONS) is kept, whole; a backup younger than
    O(older_than) is kept.
  - The backups of a table dropped since its compactions are cleaned too (found by a O(database) run through their
    C(lakekeeper.backup_of) property, or by naming the table) under the same policies except O(keep_last) - there is
    no table to roll back into; RV(tables[].table_dropped) says so.
  - A retention policy is required - O(older_than) or O(keep_last) (or either in O(config_file)), unless only
    O(orphans) is asked for; without one the module fails before anything runs, deleting nothing. O(older_than=all) deletes every backup that is neither
    pinned nor within the grace period.
  - With O(pin) or O(unpin), only pins or unpins the backup of that run and deletes nothing.
  - Irreversible - a cleaned table can no longer be rolled back.
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
      - Runs the engine with C(--dry-run) and reports whether a backup would be dropped, with RV(cmd).
  diff_mode:
    support: full
    details:
      - The backup tables of each table before and after the cleanup (in check mode, after the cleanup it would do).
  idempotent:
    support: full
    details:
      - Once the backups are gone a second run reports RV(changed=false).
options:
  older_than:
    description:
      - Keep the backups younger than this duration, for example V(30m), V(12h) or V(7d) (C(--older-than)).
      - V(all) keeps none on that account - every backup that is neither pinned nor within O(grace_period) is deleted
        (unless O(keep_last) keeps it).
      - This or O(keep_last) is required (here or in O(config_file)), except with O(pin) or O(unpin).
    type: str
  keep_last:
    description:
      - Keep the N newest backups of each partition (C(--keep-last)), its rollback points - a run that compacted
        only some partitions does not make an older backup of the others go. At least V(1) (V(0) is refused; leave it
        unset to keep none on that account).
    type: int
  grace_period:
    description:
      - Never delete a backup younger than this (C(--grace-period), for example V(1h)), so that long-running readers of
        the original files are not broken. The engine's default is no grace period.
      - An O(older_than) shorter than this is refused (V(all) excepted).
    type: str
  pin:
    description:
      - Pin the backup of this run (its run id, or its backup table name) - cleanup never deletes it (C(--pin)).
      - Nothing is deleted in that run.
    type: str
  unpin:
    description:
      - Unpin the backup of this run (C(--unpin)); mutually exclusive with O(pin).
    type: str
  orphans:
    description:
      - Also remove the staging copies (C(.<dir>.lk_staging_<run>)) that killed runs left next to the table's
        directories (C(--orphans)) - the only findings of
        M(lakekeeper.hive.lakekeeper_analyze)'s C(tables[].reconcile) that are provably Lakekeeper's and orphaned,
        listed there with C(removable=true) - a hidden name of Lakekeeper's whose run no journal of the table
        leaves unfinished and no live lease holds, and whose live directory is there (a staging copy is never the
        only copy of a row - the swap renames it, so one still under that name was never swapped in). Everything else
        analyze finds - partition directories the Metastore does not know, data files in a partitioned table's root,
        originals (C(lk_old)) and rollback trash (C(lk_trash)) no journal accounts for, journals whose backup table
        is gone - is someone's data or needs a person, and is only reported (RV(tables[].orphans_kept)).
      - Runs under the table's lease after its recovery, like the rest of the cleanup; in check mode lists what it
        would remove.
      - With O(orphans) and no retention policy the backups are left alone (only the orphans are removed).
    type: bool
    default: false
seealso:
  - module: lakekeeper.hive.lakekeeper_analyze
  - module: lakekeeper.hive.lakekeeper_compact
  - module: lakekeeper.hive.lakekeeper_rollback
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
- name: Drop every backup (and its original files) of a table, except pinned ones
  lakekeeper.hive.lakekeeper_cleanup:
    table: mydb.events
    older_than: all
    config_file: /etc/lakekeeper/lakekeeper.yaml

- name: Drop the backups older than 7 days in a database
  lakekeeper.hive.lakekeeper_cleanup:
    database: mydb
    older_than: 7d
    config_file: /etc/lakekeeper/lakekeeper.yaml

- name: Keep the 2 newest backups per table, and none younger than an hour is ever deleted
  lakekeeper.hive.lakekeeper_cleanup:
    database: mydb
    keep_last: 2
    grace_period: 1h

- name: Remove the staging copies killed runs left (analyze lists them in reconcile, removable), backups kept
  lakekeeper.hive.lakekeeper_cleanup:
    database: mydb
    orphans: true

- name: Pin a backup (like a savepoint) so that no cleanup deletes it
  lakekeeper.hive.lakekeeper_cleanup:
    table: mydb.events
    pin: 20261122T013000-3f9a1c
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
  sample: "cleanup: 1 cleaned, 1 skipped"
tables:
  description:
    - The engine's per-table facts, as in its JSON result (docs/engine-contract.md of the collection).
    - Empty when the engine could not start.
  returned: always
  type: list
  elements: dict
  sample:
    - table: db.events
      status: cleaned
      reason: removed 1 backup(s), freed 1048576 bytes
      changed: true
      would_change: true
      run_id: 20261129T013000-5d8e2f
      backups_removed:
        - backup_table: db.__bkp_events_20261122_013000_3f9a1c
          run_id: 20261122T013000-3f9a1c
          bytes: 1048576
          units: 1
          age_seconds: 604800
          pinned: false
          verdict: delete
          reason: not pinned, outside the grace period of 0s, older than 86400s
          rule: older_than
      kept:
        - backup_table: db.__bkp_events_20261128_013000_9c4e1a
          run_id: 20261128T013000-9c4e1a
          age_seconds: 86400
          pinned: false
          verdict: keep
          reason: younger than older_than (86400s old, older_than 86400s)
          rule: older_than
      freed_bytes: 1048576
      recovered: []
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
    backup_table:
      description: The backup table kept for a rollback.
      type: str
      returned: when there is one
    partitions:
      description: Per-partition file counts, sizes and statuses; a non-partitioned table has one entry with C(spec) V("").
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
    backups_removed:
      description:
        - Each backup removed (in check mode, that would be removed) - C(backup_table), C(run_id), C(bytes), C(units),
          C(age_seconds), C(pinned), C(verdict) (C(delete)), C(reason) (which policies let it go), C(rule) (the
          policies it went under - V(all) for O(older_than=all), V(older_than), V(keep_last), or both joined with
          C(+) such as V(keep_last+older_than)), and
          C(moved_to_live) when files that were not originals were found among them (moved into the live directory,
          never deleted; subdirectories, e.g. C(HIVE_UNION_SUBDIR_1/) of Hive on Tez, with a trailing C(/)), and
          C(dropped_partitions) when some of its partitions were dropped after the compaction (for example left in
          the backup by a rollback that did not restore them).
      type: list
      elements: dict
      returned: when the table was cleaned or planned
    kept:
      description:
        - Each backup kept - C(backup_table), C(run_id), C(age_seconds), C(pinned), C(verdict) (C(keep)) and
          C(reason) (C(pinned), within the grace period, one of the O(keep_last) newest, younger than O(older_than);
          or, for a backup the policies let go, that files the compaction did not write are among the originals of
          a partition whose directory is gone - nothing to move them into, so nothing of it is deleted).
        - C(rule) names the reason - V(pinned), V(grace), V(keep_last), V(older_than) or V(stranded) (the last case).
      type: list
      elements: dict
      returned: when the table was cleaned, planned or skipped
    table_dropped:
      description:
        - The table was dropped after its compactions; its backups (in RV(tables[].backups_removed) and
          RV(tables[].kept), each with C(table_dropped)) are cleaned without O(keep_last), and C(rule) V(table_dropped)
          names a backup deleted because only O(keep_last) could have kept it.
      type: bool
      returned: for the backups of a dropped table
    freed_bytes:
      description: Bytes of the originals deleted (would be, in check mode).
      type: int
      returned: when the table was cleaned, planned or skipped
    orphans_removed:
      description:
        - With O(orphans) - each orphaned staging copy removed (would be, in check mode) - C(path), C(kind)
          (C(staging)), C(run_id) (of the killed run), C(state) (C(orphaned) - in no journal - or C(finished_run)),
          C(files), C(bytes) and C(reason). Their bytes count in RV(tables[].freed_bytes).
      type: list
      elements: dict
      returned: with O(orphans)
    orphans_kept:
      description:
        - With O(orphans) - the hidden directories of Lakekeeper's and the lease that no live run accounts for but
          that are not removed (an original or a rollback's trash without a journal, a journal whose backup table is
          gone, an interrupted run's directories the recovery did not settle, a stale lease) - C(path), C(kind),
          C(run_id), C(state), C(reason) and C(remedy).
      type: list
      elements: dict
      returned: with O(orphans)
    orphan_bytes:
      description: With O(orphans) - the bytes of RV(tables[].orphans_removed).
      type: int
      returned: with O(orphans)
    pinned:
      description: With O(pin) - the backup pinned (C(backup_table), C(run_id), C(pinned)); status C(pinned), or
        C(skipped) when it already was.
      type: list
      elements: dict
      returned: with O(pin) or O(unpin)
    unpinned:
      description: With O(unpin) - the backup unpinned; status C(unpinned), or C(skipped) when it was not pinned.
      type: list
      elements: dict
      returned: with O(pin) or O(unpin)
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
    /usr/bin/python3 /root/.cache/lakekeeper/app-3f9a1c2b4d5e/run_lakekeeper.py cleanup --table db.events
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
  sample: cleanup
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
  sample: /var/lib/node_exporter/textfile/lakekeeper_cleanup.prom
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
  description:
    - The backup tables of each table before and after the cleanup (in check mode, those the cleanup would keep).
  returned: in diff mode
  type: dict
  sample:
    before:
      db.events: {backups: [db.__bkp_events_20261122_013000_3f9a1c, db.__bkp_events_20261128_013000_9c4e1a]}
    after:
      db.events: {backups: [db.__bkp_events_20261128_013000_9c4e1a]}
"""


from ansible_collections.lakekeeper.hive.plugins.module_utils._lakekeeper_argspec import (
    lakekeeper_argspec,
    retention_options,
)
from ansible_collections.lakekeeper.hive.plugins.module_utils._lakekeeper_argv import missing_retention_policy
from ansible_collections.lakekeeper.hive.plugins.module_utils._lakekeeper_module import Engine, run_module


def main():
    argspec = lakekeeper_argspec()
    argspec.update_argspec(**retention_options())
    argspec.update_argspec(
        pin=dict(type="str"),
        unpin=dict(type="str"),
        orphans=dict(type="bool", default=False),
    )
    argspec.update(mutually_exclusive=[("pin", "unpin")])
    module = argspec.create_ansible_module()
    missing = missing_retention_policy(module.params)
    if missing:
        module.fail_json(msg=missing)
    if module.params.get("keep_last") is not None and module.params["keep_last"] < 1:
        module.fail_json(msg="keep_last must be at least 1 (got %d): it keeps the N newest backups of each partition, "
                             "its rollback points; to keep none on that account leave keep_last unset and set "
                             "older_than; nothing was deleted" % module.params["keep_last"])
    run_module(module, Engine("lakekeeper_cleanup", command="cleanup"))


if __name__ == "__main__":
    main()
