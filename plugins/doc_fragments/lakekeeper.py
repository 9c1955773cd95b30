# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations


class ModuleDocFragment(object):

    # Table selectors and the engine's options shared by every module.
    DOCUMENTATION = r"""
options:
  table:
    description:
      - One table, as C(DB.TABLE).
      - Exactly one of O(table), O(tables) and O(database) is required.
    type: str
  tables:
    description:
      - Several tables, each as C(DB.TABLE) (passed to the engine as C(--tables DB.T,DB.U)).
      - Exactly one of O(table), O(tables) and O(database) is required.
    type: list
    elements: str
  database:
    description:
      - Every table of this database.
      - Exactly one of O(table), O(tables) and O(database) is required.
    type: str
  config_file:
    description:
      - Path, B(on the target), of a lakekeeper YAML configuration file, accepted as-is.
      - It is passed to the engine as C(--config-file) (the engine reads C(block_size_mb),
        C(compaction_ratio_threshold), C(target_file_size_mb), C(backup_prefix), C(dry_run), C(log_level), ...).
      - Its C(spark_submit:) section is read by the module and merged under O(spark_submit),
        the module's keys winning (C(extra_conf) is merged key by key).
      - Module options passed as engine flags override the file's values.
      - Reading the file needs PyYAML on the target.
    type: path
  block_size_mb:
    description:
      - HDFS block size in MB used by the compaction rule (C(--block-size)).
      - When not set, the config file's value or the engine's default (128) applies.
    type: int
  compaction_ratio_threshold:
    description:
      - A table or partition is compacted when its average file size is below O(block_size_mb) divided by this
        ratio (C(--ratio-threshold)).
      - When not set, the config file's value or the engine's default (10) applies.
    type: float
  target_file_size_mb:
    description:
      - Size in MB of the files written (C(--target-file-size)).
      - When not set, the config file's value or the engine's default (the block size) applies.
    type: int
  backup_prefix:
    description:
      - Prefix of the backup table names (C(--backup-prefix)).
      - When not set, the config file's value or the engine's default (C(__bkp)) applies.
    type: str
  log_level:
    description:
      - Log level of the engine (its logs go to stderr, returned on failure).
      - When not set, the config file's value or the engine's default (C(INFO)) applies.
    type: str
    choices: [DEBUG, INFO, WARNING, ERROR]
  parallelism:
    description:
      - Units (partitions, or whole tables with O(tables) and O(database)) whose Spark jobs run at the same time in
        the engine's Spark application (C(--parallelism)); each of them gets its own FAIR scheduler pool.
      - From 2 on, as many more units (at most 8 more) may be finishing beside them (the checks before the swap, the
        swap, the journal and the Metastore), after their last Spark job; with 1, strictly one unit at a time.
      - When not set, the config file's value applies, else one unit a core of the application, between 4 and 16
        (C(spark.executor.instances), or with dynamic allocation C(spark.dynamicAllocation.maxExecutors), times
        C(spark.executor.cores); else Spark's default parallelism, in local mode its threads).
    type: int
  lease_timeout:
    description:
      - One run per table - a compact, rollback, cleanup or recover holds the table's lease (a small file in the
        table's journal directory, refreshed by a heartbeat) while it works on the table; another run finds the table
        with status C(locked) and changes nothing (C(--lease-timeout)).
      - A lease without heartbeat for this long (V(30m), V(2h)) is stale and the next run takes it over and recovers
        what its run left; a lease whose process on the same host is gone is stale at once.
      - When not set, the config file's value or the engine's default (V(30m)) applies.
    type: str
  fail_on_refused:
    description:
      - A table the engine refuses (leaves alone as it must - MANAGED, transactional, excluded by its owner with the
        table property C(lakekeeper.exclude), a Hive replication replica, a lakekeeper backup table, a view...) is
        reported with C(status) V(refused) and its C(code) and C(reason), with a warning; by default it does not fail
        the task, also when the table was named in O(table) or O(tables).
      - V(true) gives back the strict behaviour - a refused table fails the task as a failed one does
        (C(--fail-on-refused)).
      - What each status means - docs/statuses.md of the collection.
    type: bool
    default: false
  progress_file:
    description:
      - A file on the target (the host that runs the driver) that the engine appends progress records to while it
        runs, one JSON object per line (C(--progress-file)) - C(start), C(tables) (the tables of the run),
        C(table) (a table finished - status, reason, seconds, how many are done), C(working) (every 30 seconds
        while tables are in progress - which, for how long) and C(end) (the counts per status, or why it failed).
      - For long runs started with C(async) and C(poll=0) - read it while the job goes on (the maintenance role
        prints the new records at each poll, see its C(maintenance_async)). Its directory must exist.
      - Refused with O(spark_submit.deploy_mode=cluster) - the driver then runs in a YARN container, whose files the
        target does not see.
    type: path
  metrics_dir:
    description:
      - A directory on the target that node_exporter's textfile collector reads (C(--collector.textfile.directory)) -
        after each run the module replaces C(lakekeeper_<command>.prom) there, atomically, with Prometheus gauges of
        that run - C(lakekeeper_tables) by C(status), C(lakekeeper_files_before), C(lakekeeper_files_after),
        C(lakekeeper_bytes_before), C(lakekeeper_bytes_after), C(lakekeeper_run_duration_seconds),
        C(lakekeeper_run_success), C(lakekeeper_run_timestamp_seconds), C(lakekeeper_lease_waits),
        C(lakekeeper_leases_taken_over) - and C(lakekeeper_table_last_success_timestamp_seconds) per C(table), kept
        from the previous file for the tables the run did not see.
      - Written after every run, also a failed one (with C(lakekeeper_run_success=0)), not in check mode. Written by
        the module on the host it runs on, in client and cluster deploy mode alike. The directory must exist.
    type: path
notes:
  - The engine is the PySpark application bundled in the collection (C(spark_app/run_lakekeeper.py)); the action
    plugin caches it on the target in O(app_cache_dir) (transferred only when its checksum changes), unless
    O(spark_submit.script_path) points at an application already deployed there.
  - By default the engine runs embedded on the target - C(<python> run_lakekeeper.py ... --state-dir <state_dir>
    --master local[*]) - with a local Spark and an embedded Derby Metastore; set O(spark_submit.enabled) to run it
    with C(spark-submit) on a cluster (YARN, Kerberos), its driver on the target (client mode) or in a YARN
    container (O(spark_submit.deploy_mode=cluster)).
  - A stopped task stops its Spark application - on SIGTERM, SIGINT or SIGHUP (an AWX job cancelled,
    C(ansible-playbook) killed) or when the module's output has no reader any more (the controller is gone), the
    module kills the YARN application (C(yarn application -kill), see O(yarn_binary)), then the engine's process
    group (SIGTERM, SIGKILL after 10 seconds), and fails with RV(cancelled). A SIGKILL of the module (an C(async)
    task's timeout kills its process group so) cannot be caught - a watchdog process, started by the module in a
    session of its own, then does the same. The engine's journal leaves every table recoverable, and the next run
    of any command finishes or undoes what the stopped run left.
  - The engine needs Java 17 and pyspark on the target (or on the cluster with spark-submit).
  - Supported Spark on the cluster (the engine meets whatever C(spark-submit) is installed there) - Spark 3.3, 3.4 and
    3.5 (Scala 2.12) and 4.x (Scala 2.13), with the Hive Metastore client Spark ships (2.3.9 on 3.x, 2.3.10 on 4.x);
    the application's Python (the packed environment's or the cluster's) 3.9 or newer. Tested on every CI run -
    pyspark 4.3.0 (the whole suite), 3.5.8 and 3.3.4 on Python 3.9 (the engine suite, the crash matrix for one
    table shape, and C(spark-submit) with the packed environment); 3.4.4 on demand. An older Spark is refused
    before anything is touched. RV(runtime) reports the versions a run used.
  - The module fails when the engine exits with a non-zero code or reports a failed table (or a refused one with
    O(fail_on_refused)), with the reason per table and what was left in place in RV(msg). A refused table is
    otherwise reported (C(status) V(refused), with a warning) and the task succeeds.
"""

    # How the engine is launched: embedded python or spark-submit.
    SPARK = r"""
options:
  spark_submit:
    description:
      - The C(spark_submit) settings of the lakekeeper reference configuration.
      - Merged over the C(spark_submit:) section of O(config_file) (keys set here win).
      - When C(enabled) is false (the default) the engine runs B(embedded) on the target
        as C(<python> <app>/run_lakekeeper.py <command> ... --state-dir <state_dir> --master <master>),
        with a local Spark and an embedded Derby Metastore in O(state_dir).
        Only C(master), C(script_path) and C(extra_conf) apply then.
      - When C(enabled) is true the module runs C(spark-submit) with these flags, in the order of the
        reference configuration, then the script and the engine's arguments.
    type: dict
    suboptions:
      enabled:
        description:
          - Launch the engine through C(spark-submit) instead of the embedded C(python).
          - Defaults to V(false) when neither this option nor the config file sets it.
        type: bool
      master:
        description:
          - Spark master URL (C(--master)).
          - Defaults to V(yarn) when O(spark_submit.enabled) is true, V(local[*]) when not.
        type: str
      deploy_mode:
        description:
          - C(--deploy-mode). Not emitted when not set (spark-submit then uses C(spark.submit.deployMode) of
            O(spark_submit.extra_conf), O(spark_submit.extra_args) or C(spark-defaults.conf), else C(client); the
            module sees the mode as spark-submit decides it).
          - V(client) - the driver runs on the target (the edge node), with O(python); the engine's JSON result comes
            back through a local file.
          - V(cluster) - the driver runs in a YARN container (C(master) must be C(yarn)), with
            O(spark_submit.python_env) (also C(spark.yarn.appMasterEnv.PYSPARK_PYTHON)). The module ships the engine's
            package with C(--py-files) (zipped in its private directory) and O(config_file) with C(--files) (the
            engine reads it by its alias C(lakekeeper-config.yaml)); spark-submit waits for the application
            (C(spark.yarn.submit.waitAppCompletion=true); V(false) is refused, and so is C(--py-files) in
            O(spark_submit.extra_args)). The driver writes the result to RV(result_uri) on the cluster's filesystem
            (O(spark_submit.result_dir)); when the application has ended the module reads it and removes it with the
            edge node's Hadoop client (O(hdfs_binary)), with the run's credentials. RV(rc) is then the driver's exit
            code (from the application's diagnostics). O(progress_file) and O(state_dir), files of the host that
            runs the driver, are refused.
          - The driver's log is the application's - C(yarn logs -applicationId) RV(application_id).
        type: str
        choices: [client, cluster]
      name:
        description:
          - The application's name in the cluster's lists (YARN ResourceManager, Spark history) (C(--name)).
          - Defaults to V(lakekeeper-<command>-<table or database>) (the first table and how many more for
            O(tables)), followed by V(-awx-<job id>) when the play runs in an AWX or Ansible Tower job
            (its C(awx_job_id)/C(tower_job_id) variable, or C(AWX_JOB_ID)/C(JOB_ID) in the controller's
            environment), then V(-<run id>) - the module chooses the run id of the application and the engine takes
            it (C(--new-run-id)), so the name matches RV(run_id) of the result, for example
            V(lakekeeper-compact-sales.events-awx-4242-20250301T020000-3f9a1c).
        type: str
      proxy_user:
        description:
          - Run the application as this user (C(--proxy-user)); the submitting user (its O(spark_submit.principal))
            must be allowed to impersonate it (C(hadoop.proxyuser.*) in the cluster's C(core-site.xml)).
        type: str
      principal:
        description:
          - Kerberos principal (C(--principal)), with O(spark_submit.keytab).
          - With both, Spark logs in from the keytab and renews the application's delegation tokens itself (in
            client and cluster mode) - what a run longer than the tickets' or the tokens' lifetime (often 24 hours,
            7 days at most) needs, and what many clusters require for long jobs. The module's own Hadoop client
            commands (reading a cluster-mode result, killing a stopped application) get a ticket of that principal
            from the keytab too, into a private cache (C(kinit) on the target).
          - Without them, spark-submit obtains the HDFS, YARN and Metastore delegation tokens from the ticket cache
            of the environment (C(KRB5CCNAME), e.g. from role C(lakekeeper.hive.kinit)); they are not renewed, so
            the run must end within their lifetime. The module's commands use the same cache.
        type: str
      keytab:
        description:
          - Path on the target of the Kerberos keytab (C(--keytab)). A path, not a secret; it is shown in RV(cmd).
          - Checked before anything runs; the task fails when it is missing, unreadable, or readable by every user.
        type: path
      queue:
        description: YARN queue (C(--conf spark.yarn.queue=...)).
        type: str
      archives:
        description: C(--archives), for example a packed Python environment C(/opt/lakekeeper_env.tar.gz#lakekeeper_env).
        type: str
      python_env:
        description:
          - Python of the executors inside the archive (C(--conf spark.pyspark.python=...)), for example
            C(./lakekeeper_env/bin/python).
          - That path only exists in the YARN containers. The client-mode driver runs on the target, so set
            O(python) to an interpreter there (the same Python major.minor, with PyYAML); a run whose driver would
            use the archive's relative path fails before starting.
          - In cluster mode it is the driver's Python too, in its container (also passed as
            C(--conf spark.yarn.appMasterEnv.PYSPARK_PYTHON=...)).
        type: str
      executor_memory:
        description: C(--executor-memory), for example C(4g).
        type: str
      num_executors:
        description: C(--num-executors).
        type: int
      executor_cores:
        description: C(--executor-cores).
        type: int
      driver_memory:
        description: C(--driver-memory), for example C(2g).
        type: str
      script_path:
        description:
          - Path on the target of an already deployed C(run_lakekeeper.py).
          - When set (here or in the config file), the bundled application is not used; when set here, it is
            not transferred either.
        type: path
      extra_conf:
        description:
          - Additional Spark properties, each passed as C(--conf key=value) (also in the embedded mode).
          - Keys that look like passwords, secrets, tokens, credentials or access keys are not passed on the command
            line; they go to a properties file only the module's user can read, passed as C(--properties-file).
            That file replaces C(spark-defaults.conf) for spark-submit, so with Spark 4.0 and later it is followed
            by C(--load-spark-defaults), and with Spark 3.x (which lacks that flag) or an unknown version the file
            starts with a copy of the C(spark-defaults.conf) of C(SPARK_CONF_DIR), else C(<SPARK_HOME>/conf). The
            Spark version is read from C(<SPARK_HOME>/jars/spark-core_*.jar) or C(<SPARK_HOME>/RELEASE), else from
            C(spark-submit --version). Their values never appear in the module's output.
        type: dict
      extra_files:
        description:
          - Files distributed with C(--files a,b) to the containers' working directories, for example
            C(hive-site.xml) - in cluster mode the driver's too (its working directory is on its class path).
        type: list
        elements: str
      result_dir:
        description:
          - Cluster mode - the directory, on the cluster's filesystem (a Hadoop URI or path), where the driver
            writes the run's JSON result as C(<run id>.json) (mode 0600) for the module to read and remove
            (RV(result_uri)).
          - A relative path is in the home directory of the user the application runs as (C(/user/<user>) on the
            default filesystem, where Spark's own C(.sparkStaging) is); the module reads it as the same user.
          - Defaults to V(.lakekeeper/results).
        type: str
      extra_args:
        description:
          - Further C(spark-submit) arguments, an argument list (never a shell string), passed as given after the
            other flags and before the application, for example V([--conf, spark.dynamicAllocation.maxExecutors=20,
            --packages, org.example:lib:1.0]).
          - A flag that has its own key here (C(--master), C(--deploy-mode), C(--name), C(--proxy-user),
            C(--principal), C(--keytab), C(--queue), C(--archives), C(--files), C(--properties-file), the
            executor and driver sizes) is refused; secrets belong in O(spark_submit.extra_conf), whose
            secret-looking values are kept off the command line.
        type: list
        elements: str
  spark_submit_path:
    description:
      - Path of the C(spark-submit) binary on the target, when O(spark_submit.enabled) is true.
      - Default is C(<spark_home>/bin/spark-submit) when O(spark_home) is set, else C(spark-submit) found in
        C($SPARK_HOME/bin) or on C(PATH).
    type: path
  spark_home:
    description: Sets C(SPARK_HOME) for the engine run (and where C(spark-submit) is looked for).
    type: path
  hdfs_binary:
    description:
      - The Hadoop CLI (C(hdfs), a name on C(PATH) or a path) that reads and removes a cluster-mode result
        (C(hdfs dfs -cat), C(hdfs dfs -rm -f -skipTrash)).
      - When not set, the same Hadoop FsShell runs through the C(spark-class) beside the C(spark-submit) of the run
        (or in its C(SPARK_HOME)) - the Hadoop client and configuration spark-submit itself uses, no Hadoop
        installation needed - else C(hdfs) from C(PATH).
    type: str
  yarn_binary:
    description:
      - The YARN CLI (C(yarn), a name on C(PATH) or a path) that kills the application of a stopped task
        (C(yarn application -kill <application id>)).
      - When not set, the same ApplicationCLI runs through C(spark-class) (as for O(hdfs_binary)), else C(yarn) from
        C(PATH) (last - on some hosts that name is Node.js' Yarn).
    type: str
  hadoop_conf_dir:
    description: Sets C(HADOOP_CONF_DIR) for the engine run (C(core-site.xml), C(hdfs-site.xml), C(yarn-site.xml)).
    type: path
  environment:
    description:
      - Extra environment variables of the engine run, for example C(KRB5CCNAME) or C(SPARK_LOCAL_IP).
      - They win over O(spark_home) and O(hadoop_conf_dir). Values of secret-looking names are masked in the
        output.
    type: dict
  python:
    description:
      - Embedded mode - the Python interpreter that runs the engine; it must be able to import C(pyspark) and C(yaml).
        The executors' Python (C(PYSPARK_PYTHON)) is set to it unless O(environment) sets one.
      - Default is the module's own interpreter when it can import C(pyspark), else C(python3) from C(PATH).
      - With O(spark_submit.enabled), when set, it is passed as C(--conf spark.pyspark.driver.python=...), the
        Python of the client-mode driver, which runs on the target. Set it with O(spark_submit.python_env), whose
        C(./<alias>/bin/python) exists only in the executors' containers (unset, the driver would use that path).
      - Not used in cluster mode (with a warning) - the driver then runs in a YARN container, with
        O(spark_submit.python_env).
    type: str
  state_dir:
    description:
      - The directory, on the target, of the embedded Derby Metastore (C(metastore_db)) and warehouse; created when
        missing. When used, the engine runs with this directory as its working directory.
      - Default is C(~/.lakekeeper/state) in the embedded mode. With O(spark_submit.enabled) it is passed to the
        engine (C(--state-dir)) only when set; a cluster normally has its own Metastore. Refused in cluster mode.
      - Embedded Derby allows one JVM at a time; do not run two engines on the same O(state_dir) at once.
    type: path
  app_cache_dir:
    description:
      - Directory, on the target, where the action plugin caches the collection's bundled Spark application, as
        C(<app_cache_dir>/app-<sha12>/) where C(<sha12>) is a checksum of its content.
      - The application is transferred only when that directory is missing (first run, or a new version of the
        collection); it is not used when O(spark_submit.script_path) is set.
      - Must be absolute or start with C(~).
    type: path
    default: ~/.cache/lakekeeper
  max_partitions_listed:
    description:
      - At most this many entries of each table's RV(tables[].partitions) are returned; V(0) returns every one.
      - Only partitions nothing was done to are left out (C(analyzed), C(not_needed), C(skipped)); those compacted,
        rolled back, planned, failed or refused are always listed, and then refused units, then the partitions to
        compact with the most files to save. A table whose list was cut says so in RV(tables[].partitions_not_listed).
      - An analyze of a table of 100,000 partitions otherwise returns about 50 MB, which ansible-playbook keeps in
        memory and AWX stores with the job's events.
      - The diff and the O(lakekeeper.hive.lakekeeper_compact#module:refresh_command) of a compaction see every partition,
        whatever this option says.
    type: int
    default: 10000
"""

    # Compaction modes and the partition filter (lakekeeper_analyze and lakekeeper_compact).
    COMPACTION = r"""
options:
  mode:
    description:
      - How the engine decides which partitions to compact and which of their files to rewrite (C(--mode)).
      - V(ratio) is the reference rule - compact when the average file size is below O(block_size_mb) divided by
        O(compaction_ratio_threshold).
      - The other modes classify each file against the target file size T (O(target_file_size_mb), else the block
        size) as Hive's Iceberg compaction does with Apache Amoro's evaluator - a B(fragment) is smaller than
        T x O(fragment_ratio), an B(undersized) file is at least that and smaller than T x O(min_target_ratio).
      - V(minor) rewrites only the fragments of a partition, when it has at least O(min_input_files) of them; its
        other files are copied byte for byte into the staging directory so that the swap still brings in a
        complete partition (every byte of the partition is written again, the large files without decoding).
        Parquet and ORC only; text and Avro partitions with files to keep are skipped.
      - V(major) rewrites every file of a partition whose undersized files add up to more than T, or whose two
        smallest undersized files fit in one file of size T.
      - V(smart) chooses per partition - major when its rule holds, else minor, else the partition is skipped.
      - A partition that does not qualify is reported skipped, with the rule that declined it in its C(rule) and
        C(reason).
      - When not set, the config file's value or the engine's default (V(ratio)) applies.
    type: str
    choices: [ratio, minor, major, smart]
  min_input_files:
    description:
      - Minor mode - the fewest fragment files that make a partition worth compacting (C(--min-input-files)).
      - When not set, the config file's value or the engine's default (12) applies.
    type: int
  fragment_ratio:
    description:
      - A file smaller than the target file size times this ratio is a fragment (C(--fragment-ratio)).
      - When not set, the config file's value or the engine's default (0.125, that is 1/8) applies.
    type: float
  min_target_ratio:
    description:
      - A file that is not a fragment and is smaller than the target file size times this ratio is undersized
        (C(--min-target-ratio)).
      - When not set, the config file's value or the engine's default (0.75) applies.
    type: float
  max_file_size_mb:
    description:
      - A file above this many MB is split into files of about the target file size (C(--max-file-size-mb)), as
        Iceberg's C(max-file-size-bytes) and Apache Amoro's split do, in every O(mode).
      - It goes through the ordinary rewrite, its content verified as any rewrite's. A partition of one such file is
        compacted with rule V(split) instead of skipped as a single file; a partition that no size rule compacts
        has only its large files rewritten and its other files kept unchanged, moved by rename (text, Avro and
        O(lakekeeper.hive.lakekeeper_compact#module:dedupe) rewrite the whole partition); V(minor) rewrites them with
        its fragments. Each partition reports C(files_split), C(files_rewritten) and C(files_copied) (the files
        kept, in analyze; a compaction reports them in C(files_moved)).
      - Parquet and ORC are cut at their row groups and stripes - a file of one row group is written as one file.
      - At least 1.5 x the target file size (the files a rewrite writes land within 25% of the target and are
        never split again); a table's property C(lakekeeper.max_file_size_mb) sets it for that table.
      - When not set, the config file's value or the engine's default applies - V(0), off - no file is ever split.
    type: float
  where:
    description:
      - Only the partitions this filter selects are analyzed or compacted (C(--where)), for example
        V(dt >= '2024-09-01' AND region IN ('eu','us')).
      - Comparisons (V(=), V(!=), V(<>), V(<), V(<=), V(>), V(>=)), V(IN) and V(NOT IN) lists, V(BETWEEN),
        V(AND), V(OR), V(NOT), parentheses, string and number literals, on B(partition columns) only.
      - The engine parses it with its own strict parser and evaluates it on each partition's values - it never
        reaches SQL. Values are compared as numbers when both sides are numbers, else as strings.
      - A table that is not partitioned, or that lacks a column of the filter, is refused (named or in a
        O(database) run alike; see O(fail_on_refused)); a syntax error fails the run before anything is read.
    type: str
  queues:
    description:
      - Apache Amoro's optimizer groups mapped to YARN queues (C(--queues)), for example
        group C(nightly) to queue C(root.etl.nightly). A table whose property C(self-optimizing.group) names a group is reported
        with that group's queue in C(tables[].queue); a group not named here is a queue of the same name. A table's
        own property C(lakekeeper.queue) names its queue directly and wins over its group.
      - The engine only reports each table's queue (one application runs in one queue); the role
        C(lakekeeper.hive.maintenance) groups the tables to compact by it and starts one application per queue
        (filter C(lakekeeper.hive.queue_groups)).
      - Amoro's C(self-optimizing.quota) is not read - the queue's capacity is the tables' share - and is named in
        C(tables[].policy_not_read).
      - When not set, the config file's C(queues) applies, else none.
    type: dict
"""

    # The attributes of every module; each module adds its support and details.
    ATTRIBUTES = r"""
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
  idempotent:
    description: When run twice with the same options, the second run reports no change.
  action:
    description: Indicates this has a corresponding action plugin so some parts of the options can be executed on the controller.
    support: full
    details: The action plugin transfers the bundled Spark application to O(app_cache_dir) on the target when needed.
  async:
    description: Supports being used with the C(async) keyword.
    support: full
    details:
      - A long run can be started with C(async) and C(poll=0) and waited for with M(lakekeeper.hive.lakekeeper_wait)
        (or polled with M(ansible.builtin.async_status)), so the run outlives the connection; O(progress_file) shows
        where it is meanwhile.
  action_group:
    description: Action is part of action_group(s), for convenient setting of module_defaults.
    support: full
    membership:
      - lakekeeper.hive.lakekeeper
  platform:
    description: Target OS/families that can be operated against.
    support: full
    platforms: posix
"""
