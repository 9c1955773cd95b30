# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private helpers of the lakekeeper.hive modules (not a public API): the argv.

Why one file of more than 500 lines: the engine's tests
(tests/engine/test_engine.py, test_flag_contract.py) and the security tests
(tests/security/test_secrets_and_keytab.py) load it by path, on lanes
without ansible-core and outside an ``ansible_collections`` tree, so it
cannot import a sibling module_utils file; what it holds is one concern,
the argv of an engine run (its two tables, then the builders by section).

Pure functions that build the engine's argv (embedded ``python`` or
``spark-submit``) from two declarative tables (ENGINE_FLAGS, the
command/flag contract: the engine's flags, which command takes each and how
it is written; SPARK_SUBMIT for the ``spark_submit`` settings, their
argument spec and their spark-submit flags), merge and validate the
``spark_submit`` settings of a lakekeeper YAML file with the module's, and
keep secrets off the command line. Nothing here touches the filesystem or
runs a process, so all of it is unit-tested directly. The engine's result is
read by _lakekeeper_result.

This file imports nothing from the collection (and ansible-core only where
the config file is validated), so tests outside the
collection tree can load it by path.
"""

from __future__ import annotations

import binascii
import os
import re
import shlex
import time

COMMANDS = ("analyze", "compact", "rollback", "cleanup", "recover")
# The table selectors: exactly one of them (AnsibleModule and selector_args).
SELECTORS = ("table", "tables", "database")
MASK = "********"

DEFAULT_MASTER_SPARK_SUBMIT = "yarn"
DEFAULT_MASTER_EMBEDDED = "local[*]"
DEFAULT_STATE_DIR = "~/.lakekeeper/state"
# Secret-looking extra_conf values never go on a command line (any local user
# can read /proc/<pid>/cmdline): they are written to this properties file
# (mode 0600, next to the result file in the module's private tmpdir) and
# passed with --properties-file.
SECRET_PROPERTIES_FILE = "lakekeeper-secret.properties"
# spark-submit reads spark-defaults.conf only when no --properties-file is
# given; --load-spark-defaults (from Spark 4.0 on, "Unrecognized option" on
# 3.x) makes it read both. On an older or unknown line the module copies the
# cluster's spark-defaults.conf into the properties file, before the secret
# keys (secret_properties_text), which gives the same values on every line.
LOAD_SPARK_DEFAULTS_SINCE = (4, 0)
_VERSION_RE = re.compile(r"^\s*(\d+)\.(\d+)(?:[.\-+]|$)")
# the banner of ``spark-submit --version`` (its stderr): "... version 3.5.8",
# not the "Using Scala version 2.12.18" line
_BANNER_VERSION_RE = re.compile(r"(?<!Scala )\bversion\s+(\d+\.\d+\S*)")


def _flag(name):
    """``name value`` (two arguments)."""
    return lambda value: [name, _text(value)]


def _conf(key):
    """``--conf key=value``."""
    return lambda value: ["--conf", "%s=%s" % (key, _text(value))]


_DURATION = re.compile(r"^\s*(\d+)\s*([smhdw])\s*$")
_DURATION_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def absolute_deadline(value, now=None):
    """A deadline given as a duration (``2h``) counts from the module's start,
    not from whenever the engine gets its resources (a YARN queue may hold it
    for a while): made an absolute UTC time here. A time of day or an ISO
    time passes unchanged (the engine checks every form)."""
    text = _text(value).strip()
    m = _DURATION.match(text.lower())
    if not m:
        return text
    at = (time.time() if now is None else now) + int(m.group(1)) * _DURATION_SECONDS[m.group(2)]
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


def _mapping_text(value):
    """``{a: b, c: d}`` -> ``a=b,c=d`` (sorted by key); a text is kept as it is."""
    if isinstance(value, dict):
        return ",".join("%s=%s" % (_text(k), _text(v)) for k, v in sorted(value.items()))
    return _text(value)


def _comma_list(name):
    """``name a,b``."""
    return lambda value: [name, ",".join(str(v) for v in value)]


# The command/flag contract: which engine command takes which flag, and how
# the module writes it. The engine reads the same table from its generated
# copy, spark_app/lakekeeper_spark/flags.py (scripts/flag_contract.py writes
# it from this one; tests/engine/test_flag_contract.py proves it is current
# and that the engine's parser takes exactly these flags). Rows:
#   (module option, engine flag, engine dest, type, commands, render)
# type, the engine's parse of the value: float, int, str, lower, upper
# (str.lower/str.upper), switch (a flag without a value);
# commands: the engine commands that take the flag (the engine refuses it
# on the others: "--flag only applies to ...");
# render, how the module writes a set value (as community.general's
# cmd_runner_fmt): value (``flag value``), joined (``flag=value``: a value such
# as the filter "-1 < hour" is never taken for another flag by the engine's
# parser), switch (``flag`` alone when true; nothing when false: the config
# file's value, else the engine's default, applies), deadline (``flag value``,
# a duration made an absolute time: absolute_deadline), rewrite (compact's row
# rewrite flags, written together by rewrite_args, which checks them
# together; ``dedupe.keys`` is the key ``keys`` of the option ``dedupe``),
# tiering (the keys of compact's mapping option ``tiering``: tiering_args).
# Rows are emitted in this order; an option left unset (None) is not passed,
# so the config file's value, else the engine's default, applies.
ALL = COMMANDS
ENGINE_FLAGS = (
    ("block_size_mb", "--block-size", "block_size_mb", "float", ALL, "value"),
    ("compaction_ratio_threshold", "--ratio-threshold", "compaction_ratio_threshold", "float", ALL, "value"),
    ("target_file_size_mb", "--target-file-size", "target_file_size_mb", "float", ALL, "value"),
    ("backup_prefix", "--backup-prefix", "backup_prefix", "str", ALL, "value"),
    # cleanup's retention policy; analyze reports its verdicts
    ("older_than", "--older-than", "older_than", "str", ("cleanup", "analyze"), "value"),
    ("keep_last", "--keep-last", "keep_last", "int", ("cleanup", "analyze"), "value"),
    ("grace_period", "--grace-period", "grace_period", "str", ("cleanup", "analyze"), "value"),
    ("pin", "--pin", "pin", "str", ("cleanup",), "value"),
    ("unpin", "--unpin", "unpin", "str", ("cleanup",), "value"),
    ("run_id", "--run-id", "rollback_run", "str", ("rollback",), "value"),
    ("log_level", "--log-level", "log_level", "upper", ALL, "value"),
    ("min_piece_mb", "--min-piece-mb", "min_piece_mb", "float", ALL, "value"),
    ("quiet_period", "--quiet-period", "quiet_period", "str", ("compact",), "value"),
    ("parallelism", "--parallelism", "parallelism", "int", ALL, "value"),
    ("deadline", "--deadline", "deadline", "str", ("compact",), "deadline"),
    # which tables and partitions start first, with or without a deadline (Iceberg's rewrite-job-order)
    ("order", "--order", "order", "lower", ("compact",), "value"),
    ("verify", "--verify", "verify", "lower", ("compact",), "value"),
    # verify: sample: the share of each table's units verified by content (policy/verify_sample.py)
    ("verify_sample", "--verify-sample", "verify_sample", "float", ("compact",), "value"),
    # Amoro optimizer group -> YARN queue (policy/queues.py): each table's queue, reported for the split by queue
    ("queues", "--queues", "queues", "str", ("analyze", "compact"), "mapping"),
    # bounded retries of a unit that failed for a reason that passes (policy/retries.py; Amoro's num-retries)
    ("retries", "--retries", "retries", "int", ("compact",), "value"),
    ("retry_backoff", "--retry-backoff", "retry_backoff", "float", ("compact",), "value"),
    ("allow_by_name_projection", "--allow-by-name-projection", "allow_by_name_projection", "switch", ("compact",),
     "switch"),
    ("allow_owner_change", "--allow-owner-change", "allow_owner_change", "switch", ("compact",), "switch"),
    ("allow_replicated", "--allow-replicated", "allow_replicated", "switch", ("compact", "analyze"), "switch"),
    # a refused table (docs/statuses.md) fails the run (exit code 1) only with this switch
    ("fail_on_refused", "--fail-on-refused", "fail_on_refused", "switch", ALL, "switch"),
    # one run per table: when a lease is stale; recover only: take over a live one
    ("lease_timeout", "--lease-timeout", "lease_timeout", "str", ALL, "value"),
    # progress records for whoever watches a long (async) run
    ("progress_file", "--progress-file", "progress_file", "str", ALL, "value"),
    # cluster mode: the Hadoop URI the driver (in a YARN container) writes its result to, which the module
    # chose (result_uri) and reads back; set by build_command, never a module option of its own
    ("result_uri", "--result-uri", "result_uri", "str", ALL, "value"),
    ("break_lease", "--break-lease", "break_lease", "switch", ("recover",), "switch"),
    # cleanup: also remove orphaned staging copies of killed runs (analyze's reconcile: removable)
    ("orphans", "--orphans", "orphans", "switch", ("cleanup",), "switch"),
    # compaction modes and the partition filter
    ("mode", "--mode", "mode", "lower", ALL, "value"),
    ("min_input_files", "--min-input-files", "min_input_files", "int", ALL, "value"),
    ("fragment_ratio", "--fragment-ratio", "fragment_ratio", "float", ALL, "value"),
    ("min_target_ratio", "--min-target-ratio", "min_target_ratio", "float", ALL, "value"),
    # a file above this bound is split into files of about the target size (planner.split_rule)
    ("max_file_size_mb", "--max-file-size-mb", "max_file_size_mb", "float", ("analyze", "compact"), "value"),
    ("where", "--where", "where", "str", ("analyze", "compact", "rollback"), "joined"),
    # analyze: how many of the table's history records to return
    ("history", "--history", "history", "int", ("analyze",), "value"),
    # compact's row rewrite, after the table; analyze takes the dedupe flags to measure trigger_ratio
    ("sort_by", "--sort-by", "sort_by", "str", ("compact",), "rewrite"),
    ("dedupe.keys", "--dedupe-keys", "dedupe_keys", "str", ("compact", "analyze"), "rewrite"),
    ("dedupe.order_by", "--dedupe-order-by", "dedupe_order_by", "str", ("compact", "analyze"), "rewrite"),
    ("dedupe.delete_marker", "--dedupe-delete-marker", "dedupe_delete_marker", "str", ("compact", "analyze"),
     "rewrite"),
    ("dedupe.delete_marker_value", "--dedupe-delete-value", "dedupe_delete_value", "str", ("compact", "analyze"),
     "rewrite"),
    ("dedupe.trigger_ratio", "--dedupe-trigger-ratio", "dedupe_trigger_ratio", "float", ("compact", "analyze"),
     "rewrite"),
    ("merge_from", "--merge-from", "merge_from", "str", ("compact",), "rewrite"),
    # compact: partitions whose newest file is older than older_than are written under a storage policy and/or
    # an erasure coding policy (the option ``tiering``, a mapping; written by tiering_args)
    ("tiering.older_than", "--tier-older-than", "tier_older_than", "str", ("compact",), "tiering"),
    ("tiering.storage_policy", "--tier-storage-policy", "tier_storage_policy", "str", ("compact",), "tiering"),
    ("tiering.erasure_coding_policy", "--tier-ec-policy", "tier_erasure_coding_policy", "str", ("compact",),
     "tiering"),
)
# How a set value is written, by the row's render (rewrite: rewrite_args).
RENDER = {
    "value": lambda flag, value: [flag, _text(value)],
    "joined": lambda flag, value: ["%s=%s" % (flag, _text(value))],
    "switch": lambda flag, value: [flag] if value else [],
    "deadline": lambda flag, value: [flag, absolute_deadline(value)],
    # a mapping {a: b} as ``flag=a=b,c=d`` (sorted; the engine checks the names); text as it is
    "mapping": lambda flag, value: ["%s=%s" % (flag, _mapping_text(value))] if value else [],
}
# The engine flag of each option (and dedupe key).
FLAG_OF = dict((row[0], row[1]) for row in ENGINE_FLAGS)
# compact's row rewrite options, after the table (rewrite_args checks them together).
REWRITE_OPTIONS = tuple(dict.fromkeys(row[0].split(".")[0] for row in ENGINE_FLAGS if row[5] == "rewrite"))
# The mapping option whose keys are the rows rendered "tiering" (tiering_args).
TIERING_OPTION = "tiering"
TIERING_KEYS = tuple(row[0].split(".", 1)[1] for row in ENGINE_FLAGS if row[5] == "tiering")
# Every module option that becomes an engine flag.
ENGINE_OPTION_NAMES = tuple(row[0] for row in ENGINE_FLAGS if row[5] not in ("rewrite", "tiering")) + \
    REWRITE_OPTIONS + (TIERING_OPTION,)


def option_commands(option):
    """The engine commands that take a module option (of ``dedupe``: any of its keys)."""
    return tuple(c for c in COMMANDS if any(c in row[4] for row in ENGINE_FLAGS
                                            if row[0] == option or row[0].startswith(option + ".")))


# The dedupe option of compact: its argument spec (rewrite_args checks the
# rules between the keys: delete_marker_value needs delete_marker, ...).
DEDUPE_SPEC = dict(
    keys=dict(type="list", elements="str", required=True, no_log=False),
    order_by=dict(type="str", required=True),
    delete_marker=dict(type="str"),
    delete_marker_value=dict(type="raw"),
    # 0 < r <= 1: also rewrite a partition the size rule skips when this share of its rows would be removed
    trigger_ratio=dict(type="float"),
)
DEDUPE_KEYS = tuple(DEDUPE_SPEC)


# Every key of the reference configuration's ``spark_submit:`` section:
# (key, argument spec, spark-submit flags of a set value or None, only used by
# spark-submit), in the order the flags are emitted. ``extra_conf`` goes
# where its row is: public keys as --conf, secret ones in a properties file,
# then the driver's python (see spark_submit_flags).
SPARK_SUBMIT = (
    ("enabled", dict(type="bool"), None, False),
    ("master", dict(type="str"), _flag("--master"), False),
    ("deploy_mode", dict(type="str", choices=["client", "cluster"]), _flag("--deploy-mode"), True),
    # the application's name in the cluster's lists (default: default_app_name, set by build_command)
    ("name", dict(type="str"), _flag("--name"), True),
    ("proxy_user", dict(type="str"), _flag("--proxy-user"), True),
    ("principal", dict(type="str"), _flag("--principal"), True),
    ("keytab", dict(type="path", no_log=False), _flag("--keytab"), True),
    ("queue", dict(type="str"), _conf("spark.yarn.queue"), True),
    ("archives", dict(type="str"), _flag("--archives"), True),
    ("python_env", dict(type="str"), _conf("spark.pyspark.python"), True),
    ("executor_memory", dict(type="str"), _flag("--executor-memory"), True),
    ("num_executors", dict(type="int"), _flag("--num-executors"), True),
    ("executor_cores", dict(type="int"), _flag("--executor-cores"), True),
    ("driver_memory", dict(type="str"), _flag("--driver-memory"), True),
    ("script_path", dict(type="path"), None, False),
    ("extra_conf", dict(type="dict"), None, False),
    ("extra_files", dict(type="list", elements="str"), _comma_list("--files"), True),
    # free-form spark-submit arguments, last before the application (check_extra_args)
    ("extra_args", dict(type="list", elements="str"), None, True),
    # cluster mode: the Hadoop directory of the result files (result_uri); no flag of its own
    ("result_dir", dict(type="str"), None, True),
)
SPARK_SUBMIT_KEYS = tuple(row[0] for row in SPARK_SUBMIT)
# Keys that only mean something to spark-submit (ignored, with a warning, in
# the embedded mode).
SPARK_SUBMIT_ONLY_KEYS = tuple(row[0] for row in SPARK_SUBMIT if row[3])

_NO_RETENTION_POLICY = (
    "lakekeeper_cleanup needs a retention policy: set older_than (e.g. 7d: keep the backups younger than that) "
    "or keep_last (keep the N newest backups of each table), or older_than: all to delete every backup that "
    "is neither pinned nor within grace_period; nothing was deleted")

# spark-submit flags that have their own spark_submit key: refused in
# extra_args, where spark-submit's last-one-wins would silently override it.
_OWN_KEY_FLAGS = {
    "--master": "master", "--deploy-mode": "deploy_mode", "--name": "name", "--proxy-user": "proxy_user",
    "--principal": "principal", "--keytab": "keytab", "--queue": "queue", "--archives": "archives",
    "--executor-memory": "executor_memory", "--num-executors": "num_executors",
    "--executor-cores": "executor_cores", "--driver-memory": "driver_memory", "--files": "extra_files",
    "--properties-file": "extra_conf (secret-looking keys go to a properties file)",
}
# The default application name carries at most this much of the selection.
_APP_NAME_TARGET_MAX = 80

# Cluster mode (the driver in a YARN container): what reaches it, and where its result goes.
DEPLOY_MODE_KEY = "spark.submit.deployMode"
WAIT_KEY = "spark.yarn.submit.waitAppCompletion"
AM_PYTHON_KEY = "spark.yarn.appMasterEnv.PYSPARK_PYTHON"
# the result files' directory: relative, so the driver's Hadoop client resolves it in its user's home
# directory on the default filesystem (/user/<user>, where Spark's own .sparkStaging is), and so does the
# module's (the same user: the same credentials, HADOOP_PROXY_USER for spark_submit.proxy_user)
DEFAULT_RESULT_DIR = ".lakekeeper/results"
# the name config_file gets in the driver's working directory (--files <path>#<alias>)
CONFIG_ALIAS = "lakekeeper-config.yaml"
# the engine's package, zipped for --py-files: only run_lakekeeper.py itself is shipped otherwise
PY_FILES_ZIP = "lakekeeper_spark.zip"


def spark_submit_suboptions():
    """The argument spec of ``spark_submit`` (a fresh copy)."""
    return dict((key, dict(spec)) for key, spec, _fmt, _only in SPARK_SUBMIT)


def tiering_suboptions():
    """The argument spec of ``tiering`` (a fresh copy)."""
    return dict((key, dict(type="str")) for key in TIERING_KEYS)


def tiering_args(command, tiering):
    """compact's ``tiering`` mapping (older_than, storage_policy,
    erasure_coding_policy) as ``--tier-older-than D --tier-storage-policy P
    --tier-ec-policy E``; [] when not given. older_than and at least one
    policy go together (the engine checks the names against the NameNode)."""
    if tiering in (None, {}):
        return []
    if not isinstance(tiering, dict):
        raise LakekeeperError("tiering must be a mapping (older_than, storage_policy, erasure_coding_policy)")
    if command != "compact":
        raise LakekeeperError("tiering only applies to compact")
    unknown = sorted(str(k) for k in tiering if k not in TIERING_KEYS)
    if unknown:
        raise LakekeeperError("unknown tiering keys: %s" % ", ".join(unknown))
    given = dict((k, _text(v).strip()) for k, v in tiering.items() if v is not None and _text(v).strip())
    if not given:
        return []
    if "older_than" not in given or len(given) < 2:
        raise LakekeeperError("tiering needs older_than (e.g. 30d) and a storage_policy (e.g. COLD) or an "
                              "erasure_coding_policy (e.g. RS-6-3-1024k)")
    argv = []
    for key in TIERING_KEYS:
        if key in given:
            argv += [FLAG_OF["tiering." + key], given[key]]
    return argv


def dedupe_suboptions():
    """The argument spec of ``dedupe`` (a fresh copy)."""
    return dict((key, dict(spec)) for key, spec in DEDUPE_SPEC.items())


# A Spark/Hadoop property or environment variable whose value must not be
# echoed. ``keytab`` is a path, not a secret, and does not match.
_SECRET_KEY_RE = re.compile(
    r"(passw(or)?d|pwd|secret|token|credential|api[._-]?key|access[._-]?key|"
    r"private[._-]?key|signing[._-]?key|session[._-]?key|auth[._-]?key)",
    re.IGNORECASE,
)

_COLUMN_RE = re.compile(r"^[A-Za-z0-9_]{1,128}$")
_TABLE_RE = re.compile(r"^[^\s.,`]+\.[^\s.,`]+$")
_DATABASE_RE = re.compile(r"^[^\s.,`]+$")


class LakekeeperError(Exception):
    """A problem with the module's input, reported through fail_json."""


def is_secret_key(key):
    """True when a conf key or variable name looks like it holds a secret."""
    return bool(_SECRET_KEY_RE.search(str(key)))


def _text(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# --------------------------------------------------------------------------
# selectors and engine options
# --------------------------------------------------------------------------

def selector_args(table=None, tables=None, database=None):
    """The engine's selector flags; exactly one selector must be given."""
    given = [name for name, value in zip(SELECTORS, (table, tables, database)) if value not in (None, "", [])]
    if not given:
        raise LakekeeperError("one of %s or %s is required" % (", ".join(SELECTORS[:-1]), SELECTORS[-1]))
    if len(given) > 1:
        raise LakekeeperError("%s and %s are mutually exclusive (got %s)"
                              % (", ".join(SELECTORS[:-1]), SELECTORS[-1], ", ".join(given)))
    if table not in (None, ""):
        table = str(table).strip()
        if not _TABLE_RE.match(table):
            raise LakekeeperError("table must look like DB.TABLE, got %r" % table)
        return ["--table", table]
    if tables not in (None, []):
        names = []
        for name in tables:
            name = str(name).strip() if name is not None else ""
            if not _TABLE_RE.match(name):
                raise LakekeeperError("every item of tables must look like DB.TABLE, got %r" % name)
            if name not in names:
                names.append(name)
        return ["--tables", ",".join(names)]
    database = str(database).strip()
    if not _DATABASE_RE.match(database):
        raise LakekeeperError("database must be a single name without dots, commas or spaces, got %r" % database)
    return ["--database", database]


def missing_retention_policy(params):
    """Why a cleanup with these module parameters must not run (no
    retention policy: neither older_than nor keep_last, no pin/unpin, no
    orphans and no config_file that could hold one - the engine checks that
    file), or None."""
    if any(params.get(k) not in (None, "") for k in ("older_than", "keep_last", "pin", "unpin", "config_file")):
        return None
    if params.get("orphans"):  # only the orphaned staging copies: the backups are left alone
        return None
    return _NO_RETENTION_POLICY


def _column(value, what):
    name = "" if value is None else str(value).strip()
    if not _COLUMN_RE.match(name):
        raise LakekeeperError("%s must be a column name (letters, digits and underscore), got %r" % (what, value))
    return name


def _columns(values, what):
    if isinstance(values, str):
        values = values.split(",")
    if not isinstance(values, (list, tuple)) or not values:
        raise LakekeeperError("%s must be a non-empty list of column names" % what)
    names = [_column(v, "every item of %s" % what) for v in values]
    lowered = [n.lower() for n in names]
    if len(set(lowered)) != len(lowered):
        raise LakekeeperError("%s names a column twice: %s" % (what, ", ".join(names)))
    return names


ZORDER_MAX_COLUMNS = 4


def _zorder(values):
    """sort_by as a Z-order, V(zorder(a, b)) (a list option splits it on its commas: the items are joined
    back), passed on as ``zorder(a,b)``; None when it is not one."""
    if isinstance(values, (list, tuple)):
        values = ",".join("" if v is None else str(v) for v in values)
    if not isinstance(values, str) or not values.strip().lower().startswith("zorder("):
        return None
    text = values.strip()
    if not text.endswith(")"):
        raise LakekeeperError("sort_by: %r is not zorder(col, ...)" % values)
    names = _columns([c.strip() for c in text[len("zorder("):-1].split(",")], "sort_by zorder")
    if not 1 <= len(names) <= ZORDER_MAX_COLUMNS:
        raise LakekeeperError("sort_by: zorder takes 1 to %d columns, got %d" % (ZORDER_MAX_COLUMNS, len(names)))
    return "zorder(%s)" % ",".join(names)


def _sort_columns(values):
    """sort_by items: a column name, optionally followed by ASC or DESC
    (passed on as ``col`` / ``col DESC``), or one Z-order V(zorder(a, b))."""
    z = _zorder(values)
    if z is not None:
        return [z]
    if isinstance(values, str):
        values = values.split(",")
    if not isinstance(values, (list, tuple)) or not values:
        raise LakekeeperError("sort_by must be a non-empty list of column names")
    items, names = [], []
    for value in values:
        words = ("" if value is None else str(value)).split()
        direction = words[1].upper() if len(words) == 2 else ""
        if len(words) > 2 or direction not in ("", "ASC", "DESC"):
            raise LakekeeperError("every item of sort_by must be a column name, optionally followed by ASC or DESC, "
                                  "got %r" % value)
        names.append(_column(words[0] if words else "", "every item of sort_by"))
        items.append(names[-1] + (" DESC" if direction == "DESC" else ""))
    lowered = [n.lower() for n in names]
    if len(set(lowered)) != len(lowered):
        raise LakekeeperError("sort_by names a column twice: %s" % ", ".join(names))
    return items


def rewrite_args(sort_by=None, dedupe=None, merge_from=None):
    """``--sort-by``, ``--dedupe-*`` and ``--merge-from`` flags of compact
    (docs/engine-contract.md).

    ``dedupe`` is a mapping with ``keys`` (list, required), ``order_by``
    (required), ``delete_marker``, ``delete_marker_value`` (needs
    ``delete_marker``) and ``trigger_ratio`` (0 < r <= 1). ``merge_from``
    (a batch directory URI or a db.table name) needs ``dedupe``.
    """
    argv = []
    if sort_by not in (None, [], ""):
        argv += [FLAG_OF["sort_by"], ",".join(_sort_columns(sort_by))]
    if merge_from is not None and not str(merge_from).strip():
        merge_from = None
    if merge_from is not None:
        if dedupe in (None, {}):
            raise LakekeeperError("merge_from needs dedupe (keys and order_by, optionally delete_marker): they say "
                                  "which rows are versions of the same key")
        if not isinstance(merge_from, str) or any(c in merge_from for c in "\n\r\x00"):
            raise LakekeeperError("merge_from must be a directory URI or a db.table name, got %r" % (merge_from,))
    if dedupe in (None, {}):
        return argv
    if not isinstance(dedupe, dict):
        raise LakekeeperError("dedupe must be a mapping (keys, order_by, delete_marker, delete_marker_value, "
                              "trigger_ratio)")
    unknown = sorted(str(k) for k in dedupe if k not in DEDUPE_KEYS)
    if unknown:
        raise LakekeeperError("unknown dedupe keys: %s" % ", ".join(unknown))
    keys = _columns(dedupe.get("keys"), "dedupe.keys")
    order_by = _column(dedupe.get("order_by"), "dedupe.order_by")
    if order_by.lower() in [k.lower() for k in keys]:
        raise LakekeeperError("dedupe.order_by %s must not be one of dedupe.keys" % order_by)
    argv += [FLAG_OF["dedupe.keys"], ",".join(keys), FLAG_OF["dedupe.order_by"], order_by]
    marker = dedupe.get("delete_marker")
    value = dedupe.get("delete_marker_value")
    if marker not in (None, ""):
        marker = _column(marker, "dedupe.delete_marker")
        if marker.lower() in [k.lower() for k in keys] + [order_by.lower()]:
            raise LakekeeperError("dedupe.delete_marker %s must not be a key or the order_by column" % marker)
        argv += [FLAG_OF["dedupe.delete_marker"], marker]
        if value is not None:
            argv += [FLAG_OF["dedupe.delete_marker_value"], _text(value)]
    elif value is not None:
        raise LakekeeperError("dedupe.delete_marker_value needs dedupe.delete_marker")
    ratio = dedupe.get("trigger_ratio")
    if ratio is not None:
        argv += [FLAG_OF["dedupe.trigger_ratio"], _trigger_ratio(ratio)]
    if merge_from is not None:
        argv += [FLAG_OF["merge_from"], merge_from.strip()]
    return argv


def _trigger_ratio(value):
    """dedupe.trigger_ratio: a number greater than 0 and at most 1, as the engine's flag."""
    try:
        ratio = None if isinstance(value, bool) else float(value)
    except (TypeError, ValueError):
        ratio = None
    if ratio is None or not 0 < ratio <= 1:  # also NaN
        raise LakekeeperError("dedupe.trigger_ratio must be a number greater than 0 and at most 1 (the share of a "
                              "partition's rows that the dedupe would remove), got %r" % (value,))
    return "%r" % ratio


# compact's option for one application a maintenance window (issue 49): analyze first, then wait for the go
HANDOFF_OPTION = "analyze_first"


def handoff_args(command, analyze_first, dry_run=False):
    """lakekeeper_compact's ``analyze_first`` (analysis_file, go_file,
    timeout, history) as the engine's ``--analysis-file F --go-file G
    [--go-timeout S] [--history N]`` (the engine's report/handoff.py); []
    when not given."""
    if not analyze_first:
        return []
    if command != "compact":
        raise LakekeeperError("analyze_first only applies to compact")
    if dry_run:
        raise LakekeeperError("analyze_first is not for check mode: a check-mode compaction plans without writing, "
                              "which is its own analysis")
    analysis, go = analyze_first.get("analysis_file"), analyze_first.get("go_file")
    if not analysis or not go:
        raise LakekeeperError("analyze_first needs analysis_file and go_file")
    if analysis == go:
        raise LakekeeperError("analyze_first: analysis_file and go_file must be two files, got %s twice" % analysis)
    argv = ["--analysis-file", _text(analysis), "--go-file", _text(go)]
    timeout = analyze_first.get("timeout")
    if timeout is not None:
        try:
            seconds = None if isinstance(timeout, bool) else float(timeout)
        except (TypeError, ValueError):
            seconds = None
        if seconds is None or not 0 < seconds < float("inf"):  # also NaN
            raise LakekeeperError("analyze_first.timeout must be a number of seconds greater than 0, got %r"
                                  % (timeout,))
        argv += ["--go-timeout", "%r" % seconds]
    history = analyze_first.get("history")
    if history is not None:
        argv += [FLAG_OF["history"], str(int(history))]
    return argv


def engine_args(command, selectors, options=None, config_file=None, dry_run=False,
                state_dir=None, master=None, conf=None, result_file=None, properties_file=None,
                require_metastore=False, run_id=None):
    """``<command> <selectors> <options>`` as run_lakekeeper.py expects them.

    ``master``, ``conf`` and ``state_dir`` are the plain-python (embedded)
    options of the contract; the caller passes them only in that mode (or
    ``state_dir`` when the user asked for it explicitly).
    """
    if command not in COMMANDS:
        raise LakekeeperError("unknown engine command %r" % command)
    options = options or {}
    argv = [command] + list(selectors)
    for option, flag, _dest, _type, _commands, render in ENGINE_FLAGS:
        if render in RENDER and options.get(option) is not None:
            argv += RENDER[render](flag, options[option])
    if any(options.get(name) for name in REWRITE_OPTIONS):
        if any(options.get(name) and command not in option_commands(name) for name in REWRITE_OPTIONS):
            raise LakekeeperError("sort_by and merge_from only apply to compact, dedupe to compact and analyze")
        if options.get("merge_from") and "--table" not in selectors:
            raise LakekeeperError("merge_from merges one batch into one table: give table, not tables or database")
        argv += rewrite_args(options.get("sort_by"), options.get("dedupe"), options.get("merge_from"))
    argv += tiering_args(command, options.get(TIERING_OPTION))
    argv += handoff_args(command, options.get(HANDOFF_OPTION), dry_run)
    if config_file:
        argv += ["--config-file", config_file]
    if dry_run:
        argv.append("--dry-run")
    if state_dir:
        argv += ["--state-dir", state_dir]
    if master:
        argv += ["--master", master]
    for key, value in (conf or {}).items():
        argv += ["--conf", "%s=%s" % (key, _text(value))]
    if properties_file:
        argv += ["--properties-file", properties_file]
    if run_id:
        argv += ["--new-run-id", run_id]
    if require_metastore:
        argv.append("--require-metastore")
    if result_file:
        argv += ["--result-file", result_file]
    return argv


def split_conf(conf):
    """``(public, secret)``: extra_conf split by whether the key looks secret."""
    public, secret = {}, {}
    for key, value in (conf or {}).items():
        (secret if is_secret_key(key) else public)[key] = value
    return public, secret


def secret_properties_path(result_file):
    """Where the secret properties of a run go: beside its result file."""
    if not result_file:
        raise LakekeeperError("secret extra_conf values need a private directory for their properties file")
    return os.path.join(os.path.dirname(result_file), SECRET_PROPERTIES_FILE)


def _escape_property(text, key=False):
    out = []
    for i, char in enumerate(text):
        if char == "\\":
            out.append("\\\\")
        elif char == "\n":
            out.append("\\n")
        elif char == "\r":
            out.append("\\r")
        elif char == "\t":
            out.append("\\t")
        elif char in "=:#!" or (char == " " and (key or i == 0)):
            out.append("\\" + char)
        elif ord(char) > 0xFFFF:  # a UTF-16 surrogate pair, as Java reads it
            code = ord(char) - 0x10000
            out.append("\\u%04x\\u%04x" % (0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF)))
        elif ord(char) > 126 or ord(char) < 32:
            out.append("\\u%04x" % ord(char))
        else:
            out.append(char)
    return "".join(out)


def spark_line(version):
    """``(major, minor)`` of a Spark version string (``3.5.8``, ``4.0.0-preview1``), or None."""
    m = _VERSION_RE.match(_text(version)) if version not in (None, "") else None
    return (int(m.group(1)), int(m.group(2))) if m else None


def banner_version(text):
    """The Spark version in the output of ``spark-submit --version``, or None."""
    m = _BANNER_VERSION_RE.search(text or "")
    return m.group(1) if m and spark_line(m.group(1)) else None


def loads_spark_defaults(version):
    """Whether spark-submit of this Spark ``version`` takes ``--load-spark-defaults``
    (4.0 and later); an unknown version does not."""
    line = spark_line(version)
    return bool(line) and line >= LOAD_SPARK_DEFAULTS_SINCE


def secret_properties_text(secret_conf, defaults_text=None):
    """The text of the secret properties file: the secret keys (properties_text),
    after ``defaults_text`` when given (the cluster's spark-defaults.conf, copied
    as it is, for a spark-submit without --load-spark-defaults: the file then
    replaces spark-defaults.conf). A key given twice is the last one's, as Java
    reads a properties file, so a secret key wins over the same key in the
    defaults, as it would over spark-defaults.conf."""
    secret = properties_text(secret_conf)
    if defaults_text is None:
        return secret
    text = _text(defaults_text)
    # a blank line ends a last line continued with a backslash
    return text + ("" if text.endswith("\n") or not text else "\n") + "\n# lakekeeper: secret extra_conf\n" + secret


def properties_text(conf):
    """``conf`` as a java.util.Properties file (the format of --properties-file)."""
    return "".join("%s=%s\n" % (_escape_property(str(k), key=True), _escape_property(_text(v)))
                   for k, v in sorted(conf.items()))


# --------------------------------------------------------------------------
# spark_submit settings
# --------------------------------------------------------------------------

def config_spark_submit(config):
    """The ``spark_submit:`` section of a parsed lakekeeper YAML document.

    Returns ``(section, warnings)``.
    """
    if config is None:
        return {}, []
    if not isinstance(config, dict):
        raise LakekeeperError("the config file must be a YAML mapping, got %s" % type(config).__name__)
    section = config.get("spark_submit")
    if section is None:
        return {}, []
    if not isinstance(section, dict):
        raise LakekeeperError("spark_submit in the config file must be a mapping, got %s" % type(section).__name__)
    warnings = []
    unknown = sorted(str(k) for k in section if k not in SPARK_SUBMIT_KEYS)
    if unknown:
        warnings.append("config file: unknown spark_submit keys ignored: %s" % ", ".join(unknown))
    return dict((k, v) for k, v in section.items() if k in SPARK_SUBMIT_KEYS), warnings


def merge_spark_submit(module_value=None, config_value=None):
    """Merge the config file's spark_submit section under the module option.

    A key set (not None) in the module option wins over the config file;
    ``extra_conf`` is merged key by key (module keys win), ``extra_files`` of
    the module replaces the config's list.
    """
    merged = dict((k, v) for k, v in (config_value or {}).items() if k in SPARK_SUBMIT_KEYS)
    for key, value in (module_value or {}).items():
        if value is None or key not in SPARK_SUBMIT_KEYS:
            continue
        if key == "extra_conf" and isinstance(merged.get("extra_conf"), dict):
            conf = dict(merged["extra_conf"])
            conf.update(value)
            merged["extra_conf"] = conf
        else:
            merged[key] = value
    return merged


_PYTHON_TYPES = dict(bool=bool, int=int, str=str, path=str, dict=dict, list=list)
_TYPE_NAMES = dict(bool="a boolean", int="an integer", str="a string", path="a path", dict="a mapping",
                   list="a list")


def _validate_spark_submit(merged):
    """``merged`` checked and converted by ansible-core's ArgumentSpecValidator
    against the spark_submit suboptions (the module's option already went
    through the same spec; the config file's section has not)."""
    section = dict((k, v) for k, v in (merged or {}).items() if k in SPARK_SUBMIT_KEYS)
    if isinstance(section.get("extra_files"), str):  # a YAML string: comma-separated files
        section["extra_files"] = [f.strip() for f in section["extra_files"].split(",")]
    spec = spark_submit_suboptions()
    for key, value in section.items():
        # a container must already be one (the validator would make [3] of 3 and a dict of 'a=b')
        wanted = spec[key]["type"]
        if value is not None and wanted in ("dict", "list") and not isinstance(value, (dict, list, tuple)):
            raise LakekeeperError("spark_submit.%s must be %s, got %s"
                                  % (key, _TYPE_NAMES[wanted], type(value).__name__))
    # imported here: the engine's tests load this file by path on Spark lanes
    # that have no ansible-core (only the config file check needs it)
    from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

    result = ArgumentSpecValidator(spec).validate(section)
    if result.error_messages:
        for key, value in result.validated_parameters.items():
            wanted = _PYTHON_TYPES.get(spec[key]["type"])
            if value is not None and wanted and not isinstance(value, wanted):
                raise LakekeeperError("spark_submit.%s must be %s, got %r"
                                      % (key, _TYPE_NAMES[spec[key]["type"]], value))
        raise LakekeeperError("spark_submit: %s" % "; ".join(result.error_messages))
    return result.validated_parameters


def resolve_spark_submit(merged):
    """Validate merged spark_submit settings and apply the defaults."""
    ss = _validate_spark_submit(merged)
    ss["enabled"] = bool(ss["enabled"])
    if not ss["master"]:
        ss["master"] = DEFAULT_MASTER_SPARK_SUBMIT if ss["enabled"] else DEFAULT_MASTER_EMBEDDED
    ss["extra_conf"] = dict((str(k), v) for k, v in (ss["extra_conf"] or {}).items())
    ss["extra_files"] = [str(f) for f in (ss["extra_files"] or []) if f not in (None, "")]
    return ss


def flag_values(extra_args, flag):
    """The values given to ``flag`` in an argument list, as ``flag VALUE`` or ``flag=VALUE``, in order."""
    args = [str(a) for a in extra_args or []]
    values = []
    for i, arg in enumerate(args):
        if arg.startswith(flag + "="):
            values.append(arg[len(flag) + 1:])
        elif arg == flag and i + 1 < len(args):
            values.append(args[i + 1])
    return values


def conf_value(ss, key, defaults=None):
    """The value spark-submit takes for the Spark property ``key`` from this
    run: the last ``--conf key=...`` of ``extra_args``, else ``extra_conf``,
    else ``defaults`` (spark-defaults.conf's properties); None when unset."""
    given = [a.partition("=")[2] for a in flag_values(ss.get("extra_args"), "--conf")
             if a.partition("=")[0].strip() == key]
    if given:
        return given[-1].strip()
    conf = ss.get("extra_conf") or {}
    if conf.get(key) not in (None, ""):
        return _text(conf[key]).strip()
    value = (defaults or {}).get(key)
    return _text(value).strip() if value not in (None, "") else None


def deploy_mode(ss, defaults=None):
    """``client`` or ``cluster``, as spark-submit decides it: ``--deploy-mode``
    (spark_submit.deploy_mode) first, else the ``spark.submit.deployMode``
    property (extra_args, extra_conf, spark-defaults.conf), else client. The
    embedded mode is always client (its driver is the module's python)."""
    if not ss.get("enabled"):
        return "client"
    mode = ss.get("deploy_mode") or conf_value(ss, DEPLOY_MODE_KEY, defaults) or "client"
    if mode not in ("client", "cluster"):
        raise LakekeeperError("%s=%s: the deploy mode is client or cluster" % (DEPLOY_MODE_KEY, mode))
    return mode


def check_cluster_mode(ss, progress_file=None, state_dir=None, defaults=None):
    """Cluster mode runs the driver in a YARN container: refuse what would
    not reach it, with the fix. The driver's local files are the container's
    (``progress_file``, ``state_dir``); spark-submit must wait for the
    application (the module reads the result after it ends); the engine's
    package goes with ``--py-files`` (which extra_args must not replace).
    ``analyze_first`` reaches it: its files are relayed (handoff_uris)."""
    master = _text(ss.get("master") or "")
    if not master.startswith("yarn"):
        raise LakekeeperError("spark_submit.deploy_mode=cluster runs the driver in a YARN container: master must be "
                              "yarn, got %s (use deploy_mode=client)" % master)
    if progress_file:
        raise LakekeeperError("progress_file is a file on the host that runs the driver, which in cluster mode is a "
                              "YARN container: unset progress_file, or use spark_submit.deploy_mode=client")
    if state_dir:
        raise LakekeeperError("state_dir is an embedded catalog on the host that runs the driver, which in cluster "
                              "mode is a YARN container whose directory goes with it: a cluster-mode run uses the "
                              "cluster's Metastore; unset state_dir, or use spark_submit.deploy_mode=client")
    if (conf_value(ss, WAIT_KEY, defaults) or "true").lower() == "false":
        raise LakekeeperError("%s=false: in cluster mode the module waits for the application (spark-submit reports "
                              "its end, then the module reads the result); leave it true" % WAIT_KEY)
    if any(str(a).split("=", 1)[0] == "--py-files" for a in ss.get("extra_args") or []):
        raise LakekeeperError("spark_submit.extra_args --py-files: in cluster mode the module ships the engine's "
                              "package with --py-files, which a second one would replace")


def result_uri(result_dir, run_id):
    """Where a cluster-mode driver writes the run's result: ``<result_dir>/<run_id>.json``."""
    base = _text(result_dir or DEFAULT_RESULT_DIR).strip().rstrip("/") or DEFAULT_RESULT_DIR
    if not run_id:
        raise LakekeeperError("a cluster-mode run needs its run id for the result's name")
    return "%s/%s.json" % (base, run_id)


def handoff_uris(result_dir, run_id):
    """Cluster mode's hand-over files (analyze_first), beside the result on
    the cluster's filesystem: ``<result_dir>/<run_id>.analysis.json`` and
    ``<run_id>.go.json``. The driver in its YARN container writes and reads
    these; the module relays them to and from analyze_first's files on the
    edge node (_lakekeeper_handoff.HandoffRelay)."""
    base = result_uri(result_dir, run_id)[:-len(".json")]
    return base + ".analysis.json", base + ".go.json"


def check_extra_args(ss):
    """``spark_submit.extra_args``: strings, none of them a flag that has its
    own key (given twice, spark-submit would silently take the last)."""
    for arg in ss.get("extra_args") or []:
        if arg is None or str(arg) == "":
            raise LakekeeperError("spark_submit.extra_args: an empty argument")
        flag = str(arg).split("=", 1)[0]
        if flag in _OWN_KEY_FLAGS:
            raise LakekeeperError("spark_submit.extra_args: %s has its own key, spark_submit.%s; set it there"
                                  % (flag, _OWN_KEY_FLAGS[flag]))


def new_run_id(now=None, token=None):
    """A run id as the engine makes them (``20240301T020000-3f9a1c``: UTC
    time and six random hex digits), chosen by the module so that the
    application's name can carry it (``--new-run-id``)."""
    now = now if now is not None else time.time()
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime(now)) + "-" + (token or binascii.hexlify(os.urandom(3)).decode())


def default_app_name(command, selectors, job_id=None, run_id=None):
    """``lakekeeper-<command>-<DB.TABLE | DB | first table+N>[-awx-<job id>][-<run id>]``:
    what the cluster's application list shows for a run, and where to find
    it from an AWX job or a run id of a result."""
    flag, value = selectors[0], str(selectors[1])
    if flag == "--tables":
        names = value.split(",")
        value = names[0] + ("+%d" % (len(names) - 1) if len(names) > 1 else "")
    name = "lakekeeper-%s-%s" % (command, value[:_APP_NAME_TARGET_MAX])
    if job_id not in (None, ""):
        name += "-awx-%s" % job_id
    if run_id:
        name += "-%s" % run_id
    return name


def ignored_embedded_keys(ss):
    """spark-submit-only keys that are set while spark_submit is disabled."""
    if ss.get("enabled"):
        return []
    return [k for k in SPARK_SUBMIT_ONLY_KEYS if ss.get(k) not in (None, "", [], {})]


def spark_submit_flags(ss, driver_python=None, properties_file=None, spark_version=None, cluster=None):
    """spark-submit flags in the reference order (before the script), from
    the SPARK_SUBMIT table.

    Secret extra_conf values are not flags: they go to ``properties_file``
    (see secret_properties_text), which the caller writes. With a
    ``spark_version`` of 4.0 or later it is followed by
    ``--load-spark-defaults``; otherwise (3.x, or unknown) the caller copies
    spark-defaults.conf into it.

    ``cluster`` (cluster mode) is a mapping: ``py_files`` (the engine's
    package, ``--py-files``) and ``files`` (more ``--files``, after
    extra_files: the config file with its alias). The driver then takes
    ``python_env`` too (``spark.yarn.appMasterEnv.PYSPARK_PYTHON``, before
    extra_conf, which may say otherwise) and spark-submit waits for the
    application (``spark.yarn.submit.waitAppCompletion=true``).
    """
    argv = []
    for key, _spec, fmt, _only in SPARK_SUBMIT:
        value = ss.get(key)
        if key == "extra_conf":
            public, secret = split_conf(value)
            for name, item in public.items():
                argv += ["--conf", "%s=%s" % (name, _text(item))]
            if secret:
                argv += ["--properties-file", properties_file]
                if loads_spark_defaults(spark_version):  # Spark 4: spark-defaults.conf is still read
                    argv.append("--load-spark-defaults")
            if driver_python:
                argv += ["--conf", "%s=%s" % (DRIVER_PYTHON_KEY, driver_python)]
        elif key == "extra_files":
            files = list(value or []) + list((cluster or {}).get("files") or [])
            if files:
                argv += fmt(files)
            if cluster is not None:
                if cluster.get("py_files"):
                    argv += ["--py-files", cluster["py_files"]]
                argv += ["--conf", "%s=true" % WAIT_KEY]
        elif key == "extra_args":
            argv += [_text(a) for a in value or []]
        elif fmt and value not in (None, "", []):
            argv += fmt(value)
            if key == "python_env" and cluster is not None:
                argv += ["--conf", "%s=%s" % (AM_PYTHON_KEY, _text(value))]
    return argv


DRIVER_PYTHON_KEY = "spark.pyspark.driver.python"
PYTHON_KEY = "spark.pyspark.python"


def client_driver_python(ss, python=None, defaults=None, environ=None):
    """``(interpreter, where it is set)``: the Python a client-mode driver of
    this spark-submit runs, on the submitting host, chosen as Spark's
    PythonRunner does: spark.pyspark.driver.python, else spark.pyspark.python
    (each from the last ``--conf`` of the argv: extra_conf, then the module's
    own flag, then extra_args; else from ``defaults``, the spark-defaults.conf
    properties), else the PYSPARK_DRIVER_PYTHON, PYSPARK_PYTHON variables of
    ``environ``, else ``python3``."""
    conf = ss.get("extra_conf") or {}
    defaults = defaults or {}
    environ = environ or {}

    def from_argv(key, own, own_source, own_first):
        given = [(conf.get(key), "spark_submit.extra_conf %s" % key)]
        given.insert(0 if own_first else 1, (own, own_source))
        given += [(v, "spark_submit.extra_args --conf %s" % key)
                  for v in (a.partition("=")[2] for a in flag_values(ss.get("extra_args"), "--conf")
                            if a.partition("=")[0].strip() == key)]
        given = [(_text(v).strip(), src) for v, src in given if v not in (None, "")]
        return given[-1] if given else None

    def from_defaults(key):
        value = _text(defaults.get(key) or "").strip()
        return (value, "spark-defaults.conf %s" % key) if value else None

    found = (from_argv(DRIVER_PYTHON_KEY, python, "python", own_first=False) or from_defaults(DRIVER_PYTHON_KEY)
             or from_argv(PYTHON_KEY, ss.get("python_env"), "spark_submit.python_env", own_first=True)
             or from_defaults(PYTHON_KEY))
    if found:
        return found
    for name in ("PYSPARK_DRIVER_PYTHON", "PYSPARK_PYTHON"):
        if environ.get(name):
            return environ[name], "environment %s" % name
    return "python3", "Spark's default"


def archive_driver_python(ss, python=None, defaults=None, environ=None):
    """The driver's Python when it is a path relative to the working
    directory (``./lakekeeper_env/bin/python``, an archive's alias), as
    ``(interpreter, where it is set)``; else None. A client-mode driver runs
    on the submitting host, where only the executors' containers unpack
    ``spark_submit.archives``: such a path usually does not exist there (the
    caller checks)."""
    if not ss.get("enabled"):
        return None
    interpreter, source = client_driver_python(ss, python, defaults, environ)
    if os.path.isabs(interpreter) or "/" not in interpreter:
        return None
    return interpreter, source


def archive_driver_python_message(interpreter, source, archives=None):
    """Why a run whose driver's Python is inside an archive alias is refused, and the fix."""
    alias = interpreter.split("/")[1] if interpreter.startswith("./") else interpreter.split("/")[0]
    shipped = [a for a in _text(archives or "").split(",") if a.strip().endswith("#" + alias)]
    return ("the Spark driver would run %s (%s)%s, but in client mode the driver runs on this host, where that "
            "relative path does not exist: only the executors unpack spark_submit.archives. Set the python option "
            "to an interpreter of this host for the driver (the same Python major.minor as the packed "
            "environment, with PyYAML), e.g. python: /usr/bin/python3.11, and keep spark_submit.python_env for "
            "the executors" % (interpreter, source,
                               ", a path inside the archive %s" % shipped[0].strip() if shipped else ""))


def build_command(command, selectors, ss, script, options=None, config_file=None, dry_run=False,
                  state_dir=None, result_file=None, python=None, spark_submit=None, job_id=None,
                  require_metastore=False, run_id=None, spark_version=None, mode=None, py_files=None):
    """The complete argv of one engine run.

    Embedded (``ss['enabled']`` false)::

        <python> <script> <command> <selectors> <options> [--config-file F] [--dry-run]
            --state-dir D --master M [--conf K=V ...] --result-file R

    spark-submit, client mode (the driver runs here)::

        <spark-submit> <flags in the reference order> <script> <command> <selectors>
            <options> [--config-file F] [--dry-run] [--state-dir D] --result-file R

    spark-submit, cluster mode (``mode``, else deploy_mode(ss); the driver
    runs in a YARN container)::

        <spark-submit> <flags> [--files ...,F#lakekeeper-config.yaml] --py-files <py_files>
            --conf spark.yarn.submit.waitAppCompletion=true [...] <script> <command> <selectors>
            <options> --result-uri <result_dir>/<run_id>.json [--config-file lakekeeper-config.yaml]
            [--dry-run]

    In client mode ``python`` (when given) becomes
    ``--conf spark.pyspark.driver.python=...`` and ``state_dir`` is only passed
    when given (a cluster normally has its own Metastore). In cluster mode the
    driver's Python is ``python_env`` (spark_submit_flags), the config file
    goes with ``--files`` and is read by its alias, the result goes to
    result_uri (``ss['result_dir']``) and ``python`` is not used.

    Secret-looking extra_conf values are left out of the argv: both forms
    then carry ``--properties-file <secret_properties_path(result_file)>``,
    a file the caller writes with secret_properties_text before the run;
    spark-submit also gets ``--load-spark-defaults`` when ``spark_version``
    (of that spark-submit) is 4.0 or later, and otherwise the caller puts the
    cluster's spark-defaults.conf into that file (see spark_submit_flags).

    spark-submit always gets ``--name``: ``ss['name']``, else
    default_app_name (with the AWX ``job_id`` and the ``run_id`` when
    given; the engine then takes ``run_id`` as its own: ``--new-run-id``); with
    ``require_metastore`` the engine refuses to start on an embedded catalog
    (``--require-metastore``: what its driver really loaded is checked).
    """
    secret = split_conf(ss.get("extra_conf"))[1]
    properties_file = secret_properties_path(result_file) if secret else None
    if ss["enabled"]:
        if not spark_submit:
            raise LakekeeperError("spark-submit binary not given")
        check_extra_args(ss)
        if not ss.get("name"):
            ss = dict(ss, name=default_app_name(command, selectors, job_id, run_id))
        cluster = None
        if (mode or deploy_mode(ss)) == "cluster":
            check_cluster_mode(ss, progress_file=(options or {}).get("progress_file"), state_dir=state_dir)
            if not py_files:
                raise LakekeeperError("cluster mode needs the engine's package for --py-files")
            cluster = dict(py_files=py_files, files=["%s#%s" % (config_file, CONFIG_ALIAS)] if config_file else [])
            options = dict(options or {}, result_uri=result_uri(ss.get("result_dir"), run_id))
            if options.get(HANDOFF_OPTION):  # the driver's files are on the cluster's filesystem, relayed
                analysis, go = handoff_uris(ss.get("result_dir"), run_id)
                options[HANDOFF_OPTION] = dict(options[HANDOFF_OPTION], analysis_file=analysis, go_file=go)
            python, config_file, result_file = None, CONFIG_ALIAS if config_file else None, None
        flags = spark_submit_flags(ss, driver_python=python, properties_file=properties_file,
                                   spark_version=spark_version, cluster=cluster)
        head = [spark_submit] + flags + [script]
        tail = engine_args(command, selectors, options, config_file=config_file, dry_run=dry_run,
                           state_dir=state_dir, result_file=result_file, require_metastore=require_metastore,
                           run_id=run_id)
        return head + tail
    if not python:
        raise LakekeeperError("python interpreter not given")
    tail = engine_args(command, selectors, options, config_file=config_file, dry_run=dry_run,
                       state_dir=state_dir or os.path.expanduser(DEFAULT_STATE_DIR), master=ss["master"],
                       conf=split_conf(ss.get("extra_conf"))[0], result_file=result_file,
                       properties_file=properties_file, require_metastore=require_metastore)
    return [python, script] + tail


_PLACEHOLDER_RE = re.compile(r"\{(database|table|name|partitions)\}")


def refresh_argv(template, table, partitions=None):
    """One post-compaction command (e.g. an Impala ``REFRESH``): the argv
    template with ``{database}``, ``{table}``, ``{name}`` (DB.TABLE) and
    ``{partitions}`` (the compacted partition specs, comma-separated) filled
    in. An argument list, never a shell string; other braces are kept."""
    if not template or not isinstance(template, (list, tuple)):
        raise LakekeeperError("refresh_command must be a non-empty list of arguments")
    database, _sep, name = str(table).partition(".")
    values = dict(database=database, table=name, name=str(table), partitions=",".join(partitions or []))
    return [_PLACEHOLDER_RE.sub(lambda m: values[m.group(1)], str(arg)) for arg in template]


def mask_argv(argv):
    """Copy of argv with secret-looking ``--conf K=V`` values replaced."""
    masked = []
    previous = None
    for arg in argv:
        if previous == "--conf" and "=" in arg:
            key, _sep, value = arg.partition("=")
            if value and is_secret_key(key):
                arg = "%s=%s" % (key, MASK)
        masked.append(arg)
        previous = arg
    return masked


def secret_values(ss=None, environment=None):
    """Values to add to the module's no_log_values (secret conf/env values)."""
    values = set()
    for mapping in ((ss or {}).get("extra_conf") or {}, environment or {}):
        for key, value in mapping.items():
            if value is None or not is_secret_key(key):
                continue
            text = _text(value)
            if len(text) >= 3 and text.lower() not in ("true", "false", "none"):
                values.add(text)
    return values


def join_cmd(argv):
    """One shell-quoted line (for humans; the module never runs a shell)."""
    return " ".join(shlex.quote(str(a)) for a in argv)
