# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private helpers of the lakekeeper.hive modules (not a public API).

Pure functions only: they build the engine's argv (embedded ``python`` or
``spark-submit``), merge the ``spark_submit`` settings of a lakekeeper YAML
file with the module's, mask secrets, and turn the engine's JSON document
(docs/engine-contract.md) into a module result. Nothing here touches the
filesystem or runs a process, so all of it is unit-tested directly.
"""

from __future__ import annotations

import json
import os
import re
import shlex

COMMANDS = ('analyze', 'compact', 'rollback', 'cleanup', 'recover')
MASK = '********'

# Every key of the reference configuration's ``spark_submit:`` section.
SPARK_SUBMIT_KEYS = (
    'enabled', 'master', 'deploy_mode', 'principal', 'keytab', 'queue',
    'archives', 'python_env', 'executor_memory', 'num_executors',
    'executor_cores', 'driver_memory', 'script_path', 'extra_conf',
    'extra_files',
)

# Keys that only mean something to spark-submit (ignored, with a warning, in
# the embedded mode).
SPARK_SUBMIT_ONLY_KEYS = (
    'deploy_mode', 'principal', 'keytab', 'queue', 'archives', 'python_env',
    'executor_memory', 'num_executors', 'executor_cores', 'driver_memory',
    'extra_files',
)

DEFAULT_MASTER_SPARK_SUBMIT = 'yarn'
DEFAULT_MASTER_EMBEDDED = 'local[*]'
DEFAULT_STATE_DIR = '~/.lakekeeper/state'
# Secret-looking extra_conf values never go on a command line (any local user
# can read /proc/<pid>/cmdline): they are written to this properties file
# (mode 0600, next to the result file in the module's private tmpdir) and
# passed with --properties-file.
SECRET_PROPERTIES_FILE = 'lakekeeper-secret.properties'

# (module option, engine flag), in the order they are emitted.
ENGINE_OPTIONS = (
    ('block_size_mb', '--block-size'),
    ('compaction_ratio_threshold', '--ratio-threshold'),
    ('target_file_size_mb', '--target-file-size'),
    ('backup_prefix', '--backup-prefix'),
    ('older_than', '--older-than'),
    ('keep_last', '--keep-last'),
    ('grace_period', '--grace-period'),
    ('pin', '--pin'),
    ('unpin', '--unpin'),
    ('log_level', '--log-level'),
    ('min_piece_mb', '--min-piece-mb'),
    # compaction modes and the partition filter (analyze and compact)
    ('mode', '--mode'),
    ('min_input_files', '--min-input-files'),
    ('fragment_ratio', '--fragment-ratio'),
    ('min_target_ratio', '--min-target-ratio'),
    ('where', '--where'),
)

# Flags whose value is joined with '=' into one argument: a filter such as
# "-1 < hour" must never be taken for another flag by the engine's parser.
JOINED_FLAGS = ('--where',)

# A Spark/Hadoop property or environment variable whose value must not be
# echoed. ``keytab`` is a path, not a secret, and does not match.
_SECRET_KEY_RE = re.compile(
    r'(passw(or)?d|pwd|secret|token|credential|api[._-]?key|access[._-]?key|'
    r'private[._-]?key|signing[._-]?key|session[._-]?key|auth[._-]?key)',
    re.IGNORECASE,
)

_COLUMN_RE = re.compile(r'^[A-Za-z0-9_]{1,128}$')
DEDUPE_KEYS = ('keys', 'order_by', 'delete_marker', 'delete_marker_value')
_TABLE_RE = re.compile(r'^[^\s.,`]+\.[^\s.,`]+$')
_DATABASE_RE = re.compile(r'^[^\s.,`]+$')
_APPLICATION_ID_RE = re.compile(r'application_\d+_\d+')

# Table statuses that make a run fail (exit code 1).
FAILED_STATUSES = ('failed', 'refused')


class LakekeeperError(Exception):
    """A problem with the module's input, reported through fail_json."""


def is_secret_key(key):
    """True when a conf key or variable name looks like it holds a secret."""
    return bool(_SECRET_KEY_RE.search(str(key)))


def _text(value):
    if isinstance(value, bool):
        return 'true' if value else 'false'
    return str(value)


# --------------------------------------------------------------------------
# selectors and engine options
# --------------------------------------------------------------------------

def selector_args(table=None, tables=None, database=None):
    """The engine's selector flags; exactly one selector must be given."""
    given = [name for name, value in (('table', table), ('tables', tables), ('database', database))
             if value not in (None, '', [])]
    if not given:
        raise LakekeeperError('one of table, tables or database is required')
    if len(given) > 1:
        raise LakekeeperError('table, tables and database are mutually exclusive (got %s)' % ', '.join(given))
    if table not in (None, ''):
        table = str(table).strip()
        if not _TABLE_RE.match(table):
            raise LakekeeperError("table must look like DB.TABLE, got %r" % table)
        return ['--table', table]
    if tables not in (None, []):
        names = []
        for name in tables:
            name = str(name).strip() if name is not None else ''
            if not _TABLE_RE.match(name):
                raise LakekeeperError("every item of tables must look like DB.TABLE, got %r" % name)
            if name not in names:
                names.append(name)
        return ['--tables', ','.join(names)]
    database = str(database).strip()
    if not _DATABASE_RE.match(database):
        raise LakekeeperError("database must be a single name without dots, commas or spaces, got %r" % database)
    return ['--database', database]


def _column(value, what):
    name = '' if value is None else str(value).strip()
    if not _COLUMN_RE.match(name):
        raise LakekeeperError('%s must be a column name (letters, digits and underscore), got %r' % (what, value))
    return name


def _columns(values, what):
    if isinstance(values, str):
        values = values.split(',')
    if not isinstance(values, (list, tuple)) or not values:
        raise LakekeeperError('%s must be a non-empty list of column names' % what)
    names = [_column(v, 'every item of %s' % what) for v in values]
    lowered = [n.lower() for n in names]
    if len(set(lowered)) != len(lowered):
        raise LakekeeperError('%s names a column twice: %s' % (what, ', '.join(names)))
    return names


def rewrite_args(sort_by=None, dedupe=None):
    """``--sort-by`` and ``--dedupe-*`` flags of compact (docs/engine-contract.md).

    ``dedupe`` is a mapping with ``keys`` (list, required), ``order_by``
    (required), ``delete_marker`` and ``delete_marker_value`` (needs
    ``delete_marker``).
    """
    argv = []
    if sort_by not in (None, [], ''):
        argv += ['--sort-by', ','.join(_columns(sort_by, 'sort_by'))]
    if dedupe in (None, {}):
        return argv
    if not isinstance(dedupe, dict):
        raise LakekeeperError('dedupe must be a mapping (keys, order_by, delete_marker, delete_marker_value)')
    unknown = sorted(str(k) for k in dedupe if k not in DEDUPE_KEYS)
    if unknown:
        raise LakekeeperError('unknown dedupe keys: %s' % ', '.join(unknown))
    keys = _columns(dedupe.get('keys'), 'dedupe.keys')
    order_by = _column(dedupe.get('order_by'), 'dedupe.order_by')
    if order_by.lower() in [k.lower() for k in keys]:
        raise LakekeeperError('dedupe.order_by %s must not be one of dedupe.keys' % order_by)
    argv += ['--dedupe-keys', ','.join(keys), '--dedupe-order-by', order_by]
    marker = dedupe.get('delete_marker')
    value = dedupe.get('delete_marker_value')
    if marker not in (None, ''):
        marker = _column(marker, 'dedupe.delete_marker')
        if marker.lower() in [k.lower() for k in keys] + [order_by.lower()]:
            raise LakekeeperError('dedupe.delete_marker %s must not be a key or the order_by column' % marker)
        argv += ['--dedupe-delete-marker', marker]
        if value is not None:
            argv += ['--dedupe-delete-value', _text(value)]
    elif value is not None:
        raise LakekeeperError('dedupe.delete_marker_value needs dedupe.delete_marker')
    return argv


def engine_args(command, selectors, options=None, config_file=None, dry_run=False,
                state_dir=None, master=None, conf=None, result_file=None, properties_file=None):
    """``<command> <selectors> <options>`` as run_lakekeeper.py expects them.

    ``master``, ``conf`` and ``state_dir`` are the plain-python (embedded)
    options of the contract; the caller passes them only in that mode (or
    ``state_dir`` when the user asked for it explicitly).
    """
    if command not in COMMANDS:
        raise LakekeeperError('unknown engine command %r' % command)
    options = options or {}
    argv = [command] + list(selectors)
    for name, flag in ENGINE_OPTIONS:
        value = options.get(name)
        if value is None:
            continue
        if flag in JOINED_FLAGS:
            argv.append('%s=%s' % (flag, _text(value)))
        else:
            argv += [flag, _text(value)]
    if options.get('sort_by') or options.get('dedupe'):
        if command != 'compact':
            raise LakekeeperError('sort_by and dedupe only apply to compact')
        argv += rewrite_args(options.get('sort_by'), options.get('dedupe'))
    if config_file:
        argv += ['--config-file', config_file]
    if dry_run:
        argv.append('--dry-run')
    if state_dir:
        argv += ['--state-dir', state_dir]
    if master:
        argv += ['--master', master]
    for key, value in (conf or {}).items():
        argv += ['--conf', '%s=%s' % (key, _text(value))]
    if properties_file:
        argv += ['--properties-file', properties_file]
    if result_file:
        argv += ['--result-file', result_file]
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
        raise LakekeeperError('secret extra_conf values need a private directory for their properties file')
    return os.path.join(os.path.dirname(result_file), SECRET_PROPERTIES_FILE)


def _escape_property(text, key=False):
    out = []
    for i, char in enumerate(text):
        if char == '\\':
            out.append('\\\\')
        elif char == '\n':
            out.append('\\n')
        elif char == '\r':
            out.append('\\r')
        elif char == '\t':
            out.append('\\t')
        elif char in '=:#!' or (char == ' ' and (key or i == 0)):
            out.append('\\' + char)
        elif ord(char) > 0xFFFF:  # a UTF-16 surrogate pair, as Java reads it
            code = ord(char) - 0x10000
            out.append('\\u%04x\\u%04x' % (0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF)))
        elif ord(char) > 126 or ord(char) < 32:
            out.append('\\u%04x' % ord(char))
        else:
            out.append(char)
    return ''.join(out)


def properties_text(conf):
    """``conf`` as a java.util.Properties file (the format of --properties-file)."""
    return ''.join('%s=%s\n' % (_escape_property(str(k), key=True), _escape_property(_text(v)))
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
        raise LakekeeperError('the config file must be a YAML mapping, got %s' % type(config).__name__)
    section = config.get('spark_submit')
    if section is None:
        return {}, []
    if not isinstance(section, dict):
        raise LakekeeperError('spark_submit in the config file must be a mapping, got %s' % type(section).__name__)
    warnings = []
    unknown = sorted(str(k) for k in section if k not in SPARK_SUBMIT_KEYS)
    if unknown:
        warnings.append('config file: unknown spark_submit keys ignored: %s' % ', '.join(unknown))
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
        if key == 'extra_conf' and isinstance(merged.get('extra_conf'), dict):
            conf = dict(merged['extra_conf'])
            conf.update(value)
            merged['extra_conf'] = conf
        else:
            merged[key] = value
    return merged


def _as_bool(value, key):
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ('1', 'true', 'yes', 'on', 'y'):
        return True
    if text in ('0', 'false', 'no', 'off', 'n', ''):
        return False
    raise LakekeeperError('spark_submit.%s must be a boolean, got %r' % (key, value))


def resolve_spark_submit(merged):
    """Apply defaults and check types of merged spark_submit settings."""
    ss = dict((k, None) for k in SPARK_SUBMIT_KEYS)
    ss.update(merged or {})
    ss['enabled'] = _as_bool(ss['enabled'], 'enabled') if ss['enabled'] is not None else False
    if not ss['master']:
        ss['master'] = DEFAULT_MASTER_SPARK_SUBMIT if ss['enabled'] else DEFAULT_MASTER_EMBEDDED
    ss['master'] = str(ss['master'])
    if ss['deploy_mode'] not in (None, 'client', 'cluster'):
        raise LakekeeperError("spark_submit.deploy_mode must be 'client' or 'cluster', got %r" % ss['deploy_mode'])
    conf = ss['extra_conf']
    if conf is None:
        conf = {}
    if not isinstance(conf, dict):
        raise LakekeeperError('spark_submit.extra_conf must be a mapping, got %s' % type(conf).__name__)
    ss['extra_conf'] = dict((str(k), v) for k, v in conf.items())
    files = ss['extra_files']
    if files is None:
        files = []
    elif isinstance(files, str):
        files = [f.strip() for f in files.split(',')]
    elif not isinstance(files, (list, tuple)):
        raise LakekeeperError('spark_submit.extra_files must be a list, got %s' % type(files).__name__)
    ss['extra_files'] = [str(f) for f in files if f not in (None, '')]
    for key in ('num_executors', 'executor_cores'):
        if ss[key] is not None:
            try:
                ss[key] = int(ss[key])
            except (TypeError, ValueError):
                raise LakekeeperError('spark_submit.%s must be an integer, got %r' % (key, ss[key]))
    return ss


def ignored_embedded_keys(ss):
    """spark-submit-only keys that are set while spark_submit is disabled."""
    if ss.get('enabled'):
        return []
    return [k for k in SPARK_SUBMIT_ONLY_KEYS if ss.get(k) not in (None, '', [], {})]


def spark_submit_flags(ss, driver_python=None, properties_file=None):
    """spark-submit flags in the reference order (before the script).

    Secret extra_conf values are not flags: they go to ``properties_file``
    (see properties_text), which the caller writes.
    """
    argv = ['--master', ss['master']]
    if ss.get('deploy_mode'):
        argv += ['--deploy-mode', ss['deploy_mode']]
    if ss.get('principal'):
        argv += ['--principal', str(ss['principal'])]
    if ss.get('keytab'):
        argv += ['--keytab', str(ss['keytab'])]
    if ss.get('queue'):
        argv += ['--conf', 'spark.yarn.queue=%s' % ss['queue']]
    if ss.get('archives'):
        argv += ['--archives', str(ss['archives'])]
    if ss.get('python_env'):
        argv += ['--conf', 'spark.pyspark.python=%s' % ss['python_env']]
    if ss.get('executor_memory'):
        argv += ['--executor-memory', str(ss['executor_memory'])]
    if ss.get('num_executors') is not None:
        argv += ['--num-executors', str(ss['num_executors'])]
    if ss.get('executor_cores') is not None:
        argv += ['--executor-cores', str(ss['executor_cores'])]
    if ss.get('driver_memory'):
        argv += ['--driver-memory', str(ss['driver_memory'])]
    public, secret = split_conf(ss.get('extra_conf'))
    for key, value in public.items():
        argv += ['--conf', '%s=%s' % (key, _text(value))]
    if secret:
        # --load-spark-defaults (Spark 4): spark-defaults.conf is still read
        argv += ['--properties-file', properties_file, '--load-spark-defaults']
    if driver_python:
        argv += ['--conf', 'spark.pyspark.driver.python=%s' % driver_python]
    if ss.get('extra_files'):
        argv += ['--files', ','.join(ss['extra_files'])]
    return argv


def build_command(command, selectors, ss, script, options=None, config_file=None, dry_run=False,
                  state_dir=None, result_file=None, python=None, spark_submit=None):
    """The complete argv of one engine run.

    Embedded (``ss['enabled']`` false)::

        <python> <script> <command> <selectors> <options> [--config-file F] [--dry-run]
            --state-dir D --master M [--conf K=V ...] --result-file R

    spark-submit::

        <spark-submit> <flags in the reference order> <script> <command> <selectors>
            <options> [--config-file F] [--dry-run] [--state-dir D] --result-file R

    In spark-submit mode ``python`` (when given) becomes
    ``--conf spark.pyspark.driver.python=...`` and ``state_dir`` is only passed
    when given (a cluster normally has its own Metastore).

    Secret-looking extra_conf values are left out of the argv: both forms
    then carry ``--properties-file <secret_properties_path(result_file)>``,
    a file the caller writes with properties_text before the run.
    """
    secret = split_conf(ss.get('extra_conf'))[1]
    properties_file = secret_properties_path(result_file) if secret else None
    if ss['enabled']:
        if not spark_submit:
            raise LakekeeperError('spark-submit binary not given')
        if ss.get('deploy_mode') == 'cluster':
            raise LakekeeperError(
                'spark_submit.deploy_mode=cluster is not supported: the driver would run inside the '
                'cluster and its JSON result could not be read back by the module; use deploy_mode=client')
        head = [spark_submit] + spark_submit_flags(ss, driver_python=python, properties_file=properties_file) + [script]
        tail = engine_args(command, selectors, options, config_file=config_file, dry_run=dry_run,
                           state_dir=state_dir, result_file=result_file)
        return head + tail
    if not python:
        raise LakekeeperError('python interpreter not given')
    tail = engine_args(command, selectors, options, config_file=config_file, dry_run=dry_run,
                       state_dir=state_dir or os.path.expanduser(DEFAULT_STATE_DIR), master=ss['master'],
                       conf=split_conf(ss.get('extra_conf'))[0], result_file=result_file,
                       properties_file=properties_file)
    return [python, script] + tail


_PLACEHOLDER_RE = re.compile(r'\{(database|table|name|partitions)\}')


def refresh_targets(doc):
    """The tables a post-compaction command runs for: those the run changed,
    with the partitions it compacted."""
    out = []
    for table in doc.get('tables') or []:
        if not isinstance(table, dict) or not table.get('changed') or table.get('status') != 'compacted':
            continue
        specs = [p.get('spec') for p in _partitions(table) if p.get('status') == 'compacted' and p.get('spec')]
        out.append((table_name(table), specs))
    return out


def refresh_argv(template, table, partitions=None):
    """One post-compaction command (e.g. an Impala ``REFRESH``): the argv
    template with ``{database}``, ``{table}``, ``{name}`` (DB.TABLE) and
    ``{partitions}`` (the compacted partition specs, comma-separated) filled
    in. An argument list, never a shell string; other braces are kept."""
    if not template or not isinstance(template, (list, tuple)):
        raise LakekeeperError('refresh_command must be a non-empty list of arguments')
    database, _sep, name = str(table).partition('.')
    values = dict(database=database, table=name, name=str(table), partitions=','.join(partitions or []))
    return [_PLACEHOLDER_RE.sub(lambda m: values[m.group(1)], str(arg)) for arg in template]


def mask_argv(argv):
    """Copy of argv with secret-looking ``--conf K=V`` values replaced."""
    masked = []
    previous = None
    for arg in argv:
        if previous == '--conf' and '=' in arg:
            key, _sep, value = arg.partition('=')
            if value and is_secret_key(key):
                arg = '%s=%s' % (key, MASK)
        masked.append(arg)
        previous = arg
    return masked


def secret_values(ss=None, environment=None):
    """Values to add to the module's no_log_values (secret conf/env values)."""
    values = set()
    for mapping in ((ss or {}).get('extra_conf') or {}, environment or {}):
        for key, value in mapping.items():
            if value is None or not is_secret_key(key):
                continue
            text = _text(value)
            if len(text) >= 3 and text.lower() not in ('true', 'false', 'none'):
                values.add(text)
    return values


def join_cmd(argv):
    """One shell-quoted line (for humans; the module never runs a shell)."""
    return ' '.join(shlex.quote(str(a)) for a in argv)


# --------------------------------------------------------------------------
# the engine's result
# --------------------------------------------------------------------------

def parse_result(stdout=None, result_file_text=None):
    """The engine's JSON document, from the result file or else stdout.

    Returns None when neither holds a JSON object.
    """
    for text in (result_file_text, stdout):
        doc = _find_json_object(text)
        if doc is not None:
            return doc
    return None


def _find_json_object(text):
    if not text or not text.strip():
        return None
    text = text.strip()
    try:
        doc = json.loads(text)
        if isinstance(doc, dict):
            return doc
    except ValueError:
        pass
    # Stray lines around the document: take the last object that parses and
    # starts at the beginning of a line.
    decoder = json.JSONDecoder()
    found = None
    starts = [0] if text.startswith('{') else []
    starts += [m.start() + 1 for m in re.finditer(r'\n\{', text)]
    for start in starts:
        try:
            doc, _end = decoder.raw_decode(text, start)
        except ValueError:
            continue
        if isinstance(doc, dict) and ('tables' in doc or 'command' in doc):
            found = doc
    return found


def find_application_id(*texts):
    """The first YARN application id printed by spark-submit, or None."""
    for text in texts:
        if text:
            match = _APPLICATION_ID_RE.search(text)
            if match:
                return match.group(0)
    return None


def tail_lines(text, count=40):
    lines = (text or '').splitlines()
    return lines[-count:]


def table_name(table):
    return str(table.get('table') or table.get('name') or '?')


def would_change(doc):
    """Whether a (dry) run reports that something would change."""
    tables = doc.get('tables') or []
    if any(t.get('would_change') for t in tables if isinstance(t, dict)):
        return True
    if doc.get('would_change'):
        return True
    # An engine that omits would_change: a planned table would change.
    return any(t.get('status') == 'planned' for t in tables if isinstance(t, dict) and 'would_change' not in t)


def did_change(doc):
    tables = doc.get('tables') or []
    return bool(doc.get('changed')) or any(t.get('changed') for t in tables if isinstance(t, dict))


def is_failed(doc, rc):
    if rc not in (0, None):
        return True
    if doc.get('failed'):
        return True
    return any(t.get('status') in FAILED_STATUSES for t in (doc.get('tables') or []) if isinstance(t, dict))


def _partitions(table):
    parts = table.get('partitions') or []
    return [p for p in parts if isinstance(p, dict)]


def _count(part, key):
    value = part.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


def build_diff(doc, dry_run=False):
    """Before/after file counts per table (and per partition).

    In a dry run a planned partition's ``after`` is its ``target_files`` (the
    engine's ``files_after`` then still counts what is on disk).
    """
    before = {}
    after = {}
    for table in doc.get('tables') or []:
        if not isinstance(table, dict):
            continue
        name = table_name(table)
        b_parts = {}
        a_parts = {}
        for part in _partitions(table):
            spec = str(part.get('spec') or '')
            fb = _count(part, 'files_before')
            fa = _count(part, 'files_after')
            if dry_run and part.get('status') == 'planned' and _count(part, 'target_files') is not None:
                # A dry run reports what is on disk (nothing changed); the diff shows the plan.
                fa = _count(part, 'target_files')
            if fa is None:
                fa = fb
            if fb is None:
                fb = fa
            if fb is None:
                continue
            b_parts[spec] = fb
            a_parts[spec] = fa
        if not b_parts:
            continue
        before[name] = {'files': sum(b_parts.values()), 'partitions': b_parts}
        after[name] = {'files': sum(a_parts.values()), 'partitions': a_parts}
    return {'before': before, 'after': after}


def failure_message(command, doc, rc):
    """One line: what failed, why, and what was left in place."""
    head = 'lakekeeper %s failed (rc=%s)' % (command, rc)
    if doc is None:
        return head + ': the engine printed no JSON result'
    details = []
    for table in doc.get('tables') or []:
        if not isinstance(table, dict) or table.get('status') not in FAILED_STATUSES:
            continue
        item = '%s: %s' % (table_name(table), table.get('status'))
        if table.get('reason'):
            item += ': %s' % table['reason']
        kept = []
        if table.get('backup_table'):
            kept.append('backup table %s' % table['backup_table'])
        for key in ('left_in_place', 'leftovers', 'kept'):
            value = table.get(key)
            if isinstance(value, (list, tuple)):
                kept += [str(v) for v in value]
            elif value:
                kept.append(str(value))
        if kept:
            item += ' (left in place: %s)' % ', '.join(kept)
        details.append(item)
    msg = head
    if doc.get('msg'):
        msg += ': %s' % doc['msg']
    if details:
        msg += ' -- ' + '; '.join(details)
    return ' '.join(msg.split())
