# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private runner shared by the lakekeeper.hive modules (not a public API).

It runs on the target: reads the config file, makes sure the application
transferred by the action plugin is unpacked in its cache directory, builds
the engine's argv with _lakekeeper_cmd, runs it with module.run_command (an
argv list, never a shell string) and turns the JSON result into the module's
result.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import stat
import sys
import tarfile
import tempfile
import traceback

try:
    import yaml
except ImportError:
    HAS_YAML = False
    YAML_IMPORT_ERROR = traceback.format_exc()
else:
    HAS_YAML = True
    YAML_IMPORT_ERROR = None

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.lakekeeper.hive.plugins.module_utils._lakekeeper_cmd import (
    DEFAULT_STATE_DIR,
    LakekeeperError,
    build_command,
    build_diff,
    config_spark_submit,
    did_change,
    failure_message,
    find_application_id,
    ignored_embedded_keys,
    is_failed,
    join_cmd,
    mask_argv,
    merge_spark_submit,
    parse_result,
    properties_text,
    refresh_argv,
    refresh_targets,
    resolve_spark_submit,
    secret_properties_path,
    secret_values,
    selector_args,
    split_conf,
    tail_lines,
    would_change,
)

APP_ENTRY = 'run_lakekeeper.py'
APP_MARKER = '.lakekeeper_app.sha256'
DEFAULT_APP_CACHE_DIR = '~/.cache/lakekeeper'
RESULT_FILE = 'lakekeeper-result.json'
TAIL = 40


def spark_submit_suboptions():
    return dict(
        enabled=dict(type='bool'),
        master=dict(type='str'),
        deploy_mode=dict(type='str', choices=['client', 'cluster']),
        principal=dict(type='str'),
        keytab=dict(type='path', no_log=False),
        queue=dict(type='str'),
        archives=dict(type='str'),
        python_env=dict(type='str'),
        executor_memory=dict(type='str'),
        num_executors=dict(type='int'),
        executor_cores=dict(type='int'),
        driver_memory=dict(type='str'),
        script_path=dict(type='path'),
        extra_conf=dict(type='dict'),
        extra_files=dict(type='list', elements='str'),
    )


def dedupe_suboptions():
    return dict(
        keys=dict(type='list', elements='str', required=True, no_log=False),
        order_by=dict(type='str', required=True),
        delete_marker=dict(type='str'),
        delete_marker_value=dict(type='raw'),
    )


def argument_spec(command):
    spec = dict(
        table=dict(type='str'),
        tables=dict(type='list', elements='str'),
        database=dict(type='str'),
        config_file=dict(type='path'),
        block_size_mb=dict(type='int'),
        compaction_ratio_threshold=dict(type='float'),
        target_file_size_mb=dict(type='int'),
        backup_prefix=dict(type='str'),
        log_level=dict(type='str', choices=['DEBUG', 'INFO', 'WARNING', 'ERROR']),
        spark_submit=dict(type='dict', options=spark_submit_suboptions()),
        spark_submit_path=dict(type='path'),
        spark_home=dict(type='path'),
        hadoop_conf_dir=dict(type='path'),
        environment=dict(type='dict'),
        python=dict(type='str'),
        state_dir=dict(type='path'),
        app_cache_dir=dict(type='path', default=DEFAULT_APP_CACHE_DIR),
        _lakekeeper_app=dict(type='dict'),
    )
    if command in ('cleanup', 'analyze'):
        spec['older_than'] = dict(type='str')
        spec['keep_last'] = dict(type='int')
        spec['grace_period'] = dict(type='str')
    if command == 'cleanup':
        spec['pin'] = dict(type='str')
        spec['unpin'] = dict(type='str')
    if command == 'compact':
        spec['sort_by'] = dict(type='list', elements='str')
        spec['min_piece_mb'] = dict(type='float')
        spec['dedupe'] = dict(type='dict', options=dedupe_suboptions(),
                              required_by={'delete_marker_value': 'delete_marker'})
        spec['refresh_command'] = dict(type='list', elements='str')
    if command == 'rollback':
        spec['mode'] = dict(type='str', choices=['rollback', 'recover'], default='rollback')
    if command in ('analyze', 'compact'):
        spec.update(compaction_suboptions())
    return spec


def compaction_suboptions():
    """Compaction modes and the partition filter (analyze and compact)."""
    return dict(
        mode=dict(type='str', choices=['ratio', 'minor', 'major', 'smart']),
        min_input_files=dict(type='int'),
        fragment_ratio=dict(type='float'),
        min_target_ratio=dict(type='float'),
        where=dict(type='str'),
    )


def _abspath(path):
    return os.path.abspath(os.path.expanduser(path)) if path else path


def _read_text(path):
    with open(path, 'rb') as handle:
        return handle.read().decode('utf-8', errors='replace')


# --------------------------------------------------------------------------
# the application
# --------------------------------------------------------------------------

def _safe_members(archive):
    for member in archive.getmembers():
        name = member.name
        parts = name.replace('\\', '/').split('/')
        if name.startswith('/') or '..' in parts:
            raise LakekeeperError('refusing unsafe path %r in the application archive' % name)
        if not (member.isfile() or member.isdir()):
            raise LakekeeperError('refusing non-regular entry %r in the application archive' % name)
        yield member


def unpack_app(archive_path, app_dir, sha256):
    """Unpack the transferred archive into app_dir, atomically.

    The archive is unpacked into a hidden sibling, the checksum marker is
    written last, and the directory is renamed into place; a concurrent run
    that won the race is kept.
    """
    cache_dir = os.path.dirname(app_dir)
    if not os.path.isdir(cache_dir):
        os.makedirs(cache_dir, 0o700)
    staging = tempfile.mkdtemp(prefix='.%s.' % os.path.basename(app_dir), dir=cache_dir)
    try:
        with tarfile.open(archive_path, 'r:gz') as archive:
            for member in _safe_members(archive):
                if hasattr(tarfile, 'data_filter'):
                    archive.extract(member, staging, filter='data')
                else:
                    archive.extract(member, staging)
        with open(os.path.join(staging, APP_MARKER), 'w') as handle:
            handle.write(sha256 + '\n')
        os.chmod(staging, 0o755)
        try:
            os.rename(staging, app_dir)
        except OSError:
            if not os.path.isfile(os.path.join(app_dir, APP_MARKER)):
                raise
    finally:
        if os.path.isdir(staging):
            shutil.rmtree(staging, ignore_errors=True)


def ensure_app(module):
    """The directory of the bundled application on the target, or None."""
    info = module.params.get('_lakekeeper_app') or {}
    sha256 = info.get('sha256')
    if not sha256:
        return None
    cache_dir = _abspath(module.params['app_cache_dir'] or DEFAULT_APP_CACHE_DIR)
    app_dir = os.path.join(cache_dir, 'app-%s' % sha256[:12])
    marker = os.path.join(app_dir, APP_MARKER)
    archive = info.get('archive')
    if archive and not os.path.isfile(marker):
        try:
            unpack_app(archive, app_dir, sha256)
        except (OSError, tarfile.TarError, LakekeeperError) as exc:
            module.fail_json(msg='could not unpack the Spark application into %s: %s' % (app_dir, exc))
    if not os.path.isfile(marker):
        module.fail_json(msg='the cached Spark application %s is missing; run the task again' % app_dir)
    if _read_text(marker).strip() != sha256:
        module.fail_json(msg='the cached Spark application %s does not match checksum %s; delete that directory '
                             'and run the task again' % (app_dir, sha256))
    return app_dir


# --------------------------------------------------------------------------
# binaries
# --------------------------------------------------------------------------

def _can_import_pyspark():
    try:
        return importlib.util.find_spec('pyspark') is not None
    except (ImportError, ValueError):
        return False


def find_python(module, explicit):
    if explicit:
        if os.sep in explicit:
            path = _abspath(explicit)
            if not os.access(path, os.X_OK):
                module.fail_json(msg='python %s is not an executable file' % path)
            return path
        path = module.get_bin_path(explicit)
        if not path:
            module.fail_json(msg='python %r not found on PATH' % explicit)
        return path
    if sys.executable and _can_import_pyspark():
        return sys.executable
    path = module.get_bin_path('python3')
    if not path:
        module.fail_json(msg='no python3 on PATH and the module interpreter %s cannot import pyspark; '
                             'set the python option' % sys.executable)
    rc, _out, err = module.run_command([path, '-c', 'import pyspark'])
    if rc != 0:
        module.fail_json(msg='neither the module interpreter %s nor %s can import pyspark; install pyspark or set '
                             'the python option' % (sys.executable, path), stderr_lines=tail_lines(err, 5))
    return path


def find_spark_submit(module, env):
    explicit = module.params['spark_submit_path']
    if explicit:
        if not os.access(explicit, os.X_OK) or os.path.isdir(explicit):
            module.fail_json(msg='spark_submit_path %s is not an executable file' % explicit)
        return explicit
    dirs = []
    for home in (module.params['spark_home'], env.get('SPARK_HOME'), os.environ.get('SPARK_HOME')):
        if home:
            dirs.append(os.path.join(home, 'bin'))
    path = module.get_bin_path('spark-submit', opt_dirs=dirs)
    if not path:
        module.fail_json(msg='spark-submit not found in %s nor on PATH; set spark_submit_path or spark_home'
                             % (', '.join(dirs) or '$SPARK_HOME/bin'))
    return path


# --------------------------------------------------------------------------
# the run
# --------------------------------------------------------------------------

def check_keytab(module, path):
    """Fail before launching when the keytab is missing, unreadable or
    readable by every user (a keytab is a password)."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        if not os.path.exists(path):
            module.fail_json(msg='spark_submit.keytab %s does not exist on the target' % path)
        module.fail_json(msg='spark_submit.keytab %s cannot be read: %s' % (path, exc.strerror))
    if not stat.S_ISREG(mode):
        module.fail_json(msg='spark_submit.keytab %s is not a regular file' % path)
    if mode & stat.S_IROTH:
        module.fail_json(msg='spark_submit.keytab %s is readable by every user (mode %04o): a keytab is a '
                             'password; chmod 600 it (owner only)' % (path, stat.S_IMODE(mode)))
    if not os.access(path, os.R_OK):
        module.fail_json(msg='spark_submit.keytab %s is not readable by the user running the module' % path)


def write_private(path, text):
    """Write ``text`` to a new file only its owner can read."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, 'w') as handle:
        handle.write(text)


def _stderr_cause(stderr):
    """The last stderr line that says something (not a Java stack frame)."""
    for line in reversed(tail_lines(stderr, TAIL)):
        text = line.strip()
        if text and not text.startswith('at ') and not text.startswith('... '):
            return text
    return None


class _Module(AnsibleModule):
    """AnsibleModule that also keeps secret-looking extra_conf and
    environment values out of its syslog/journald invocation message (that
    message is written before run_module could extend no_log_values)."""

    def _log_invocation(self):
        params = self.params or {}
        for value in secret_values(params.get('spark_submit'), params.get('environment')):
            self.no_log_values.add(value)
        super()._log_invocation()


def load_config(module, path):
    if not os.path.isfile(path):
        module.fail_json(msg='config_file %s not found on the target' % path)
    if not HAS_YAML:
        module.fail_json(msg=missing_required_lib('PyYAML', reason='to read config_file'),
                         exception=YAML_IMPORT_ERROR)
    try:
        return yaml.safe_load(_read_text(path))
    except yaml.YAMLError as exc:
        module.fail_json(msg='config_file %s is not valid YAML: %s' % (path, ' '.join(str(exc).split())))


def run_refresh(module, template, doc, env):
    """Run the post-compaction command once per changed table (argv list,
    never a shell). A failure is reported for its table, with a warning; it
    never undoes the compaction."""
    out = []
    for table, partitions in refresh_targets(doc):
        try:
            argv = refresh_argv(template, table, partitions)
        except LakekeeperError as exc:
            module.fail_json(msg=str(exc))
        try:
            rc, stdout, stderr = module.run_command(argv, environ_update=env, check_rc=False,
                                                    handle_exceptions=False)
        except (OSError, IOError) as exc:  # a missing executable: reported, not fatal
            rc, stdout, stderr = None, '', str(exc)
        entry = dict(table=table, cmd=join_cmd(argv), rc=rc, failed=rc != 0,
                     stdout_lines=tail_lines(stdout, 10), stderr_lines=tail_lines(stderr, 10))
        if entry['failed']:
            module.warn('refresh_command for %s failed (rc %s): %s' % (
                table, rc, (tail_lines(stderr, 1) or tail_lines(stdout, 1) or [''])[0].strip()))
        out.append(entry)
    return out


def run_module(kind):
    """Entry point of the module ``lakekeeper_<kind>``."""
    module = _Module(
        argument_spec=argument_spec(kind),
        mutually_exclusive=[('table', 'tables', 'database')] + ([('pin', 'unpin')] if kind == 'cleanup' else []),
        required_one_of=[('table', 'tables', 'database')],
        supports_check_mode=True,
    )
    params = module.params
    # rollback's mode is the engine command (rollback or recover); analyze's and compact's is the compaction mode
    command = (params.get('mode') or kind) if kind == 'rollback' else kind
    dry_run = module.check_mode

    try:
        selectors = selector_args(params['table'], params['tables'], params['database'])
    except LakekeeperError as exc:
        module.fail_json(msg=str(exc))

    config_file = _abspath(params['config_file'])
    config_ss = {}
    if config_file:
        try:
            config_ss, warnings = config_spark_submit(load_config(module, config_file))
        except LakekeeperError as exc:
            module.fail_json(msg='config_file %s: %s' % (config_file, exc))
        for warning in warnings:
            module.warn(warning)

    try:
        ss = resolve_spark_submit(merge_spark_submit(params['spark_submit'], config_ss))
    except LakekeeperError as exc:
        module.fail_json(msg=str(exc))
    if ss['enabled'] and ss.get('deploy_mode') == 'cluster':
        module.fail_json(msg='spark_submit.deploy_mode=cluster is not supported: the driver would run inside the '
                             'cluster and the module could not read its JSON result; use deploy_mode=client')
    if ss['enabled'] and ss.get('keytab'):
        check_keytab(module, _abspath(str(ss['keytab'])))
    ignored = ignored_embedded_keys(ss)
    if ignored:
        module.warn('spark_submit.enabled is false: %s only apply to spark-submit and are ignored'
                    % ', '.join(ignored))

    env = {}
    if params['spark_home']:
        env['SPARK_HOME'] = params['spark_home']
    if params['hadoop_conf_dir']:
        env['HADOOP_CONF_DIR'] = params['hadoop_conf_dir']
    for key, value in (params['environment'] or {}).items():
        env[str(key)] = '' if value is None else str(value)
    for value in secret_values(ss, env):
        module.no_log_values.add(value)

    if ss.get('script_path'):
        script = _abspath(ss['script_path'])
    else:
        app_dir = ensure_app(module)
        if not app_dir:
            module.fail_json(msg='no Spark application: run this module through its action plugin '
                                 '(lakekeeper.hive.lakekeeper_%s) or set spark_submit.script_path' % kind)
        script = os.path.join(app_dir, APP_ENTRY)
    if not os.path.isfile(script):
        module.fail_json(msg='Spark application entry point %s not found on the target' % script)

    options = dict(
        block_size_mb=params['block_size_mb'],
        compaction_ratio_threshold=params['compaction_ratio_threshold'],
        target_file_size_mb=params['target_file_size_mb'],
        backup_prefix=params['backup_prefix'],
        older_than=params.get('older_than'),
        keep_last=params.get('keep_last'),
        grace_period=params.get('grace_period'),
        pin=params.get('pin'),
        unpin=params.get('unpin'),
        log_level=params['log_level'],
        sort_by=params.get('sort_by'),
        dedupe=params.get('dedupe'),
        min_piece_mb=params.get('min_piece_mb'),
    )
    if kind in ('analyze', 'compact'):
        for key in compaction_suboptions():
            options[key] = params[key]
    result_file = os.path.join(module.tmpdir, RESULT_FILE)
    state_dir = _abspath(params['state_dir'])
    cwd = None
    if ss['enabled']:
        spark_submit = find_spark_submit(module, env)
        python = params['python']
        if python and os.sep in python:
            python = _abspath(python)
    else:
        spark_submit = None
        python = find_python(module, params['python'])
        state_dir = state_dir or _abspath(DEFAULT_STATE_DIR)
        if 'PYSPARK_PYTHON' not in env:
            env['PYSPARK_PYTHON'] = python
    if state_dir:
        # The embedded Metastore's files (derby.log, ...) land in the working directory.
        try:
            if not os.path.isdir(state_dir):
                os.makedirs(state_dir, 0o700)
        except OSError as exc:
            module.fail_json(msg='could not create state_dir %s: %s' % (state_dir, exc))
        cwd = state_dir

    try:
        argv = build_command(command, selectors, ss, script, options=options, config_file=config_file,
                             dry_run=dry_run, state_dir=state_dir, result_file=result_file,
                             python=python, spark_submit=spark_submit)
    except LakekeeperError as exc:
        module.fail_json(msg=str(exc))
    cmd = join_cmd(mask_argv(argv))
    secret_conf = split_conf(ss.get('extra_conf'))[1]
    if secret_conf:
        try:
            write_private(secret_properties_path(result_file), properties_text(secret_conf))
        except OSError as exc:
            module.fail_json(msg='could not write the secret properties file in %s: %s'
                                 % (module.tmpdir, exc.strerror))

    rc, stdout, stderr = module.run_command(argv, environ_update=env, cwd=cwd, check_rc=False)

    result_text = None
    if os.path.isfile(result_file):
        result_text = _read_text(result_file)
    doc = parse_result(stdout, result_text)

    result = dict(changed=False, cmd=cmd, rc=rc, command=command, dry_run=dry_run, script=script)
    application_id = find_application_id(stderr, stdout)
    if application_id:
        result['application_id'] = application_id

    if doc is None:
        cause = _stderr_cause(stderr)
        msg = failure_message(command, None, rc)
        if cause:
            msg += ': %s' % cause
        module.fail_json(msg=msg, tables=[], stdout_lines=tail_lines(stdout, TAIL),
                         stderr_lines=tail_lines(stderr, TAIL), **result)

    tables = [t for t in (doc.get('tables') or []) if isinstance(t, dict)]
    result.update(tables=tables, run_id=doc.get('run_id'))
    if kind == 'analyze':
        result['changed'] = False  # analyze never writes
    else:
        result['changed'] = would_change(doc) if dry_run else did_change(doc)
    if module._diff:
        result['diff'] = build_diff(doc, dry_run=dry_run)

    if is_failed(doc, rc):
        module.fail_json(msg=failure_message(command, doc, rc), stdout_lines=tail_lines(stdout, TAIL),
                         stderr_lines=tail_lines(stderr, TAIL), **result)

    msg = doc.get('msg') or '%s: %d table(s)' % (command, len(tables))
    if params.get('refresh_command') and not dry_run:
        result['refresh'] = run_refresh(module, params['refresh_command'], doc, env)
        failed = [r['table'] for r in result['refresh'] if r['failed']]
        if failed:
            msg += '; refresh_command failed for %s (the compaction itself succeeded and stays)' % ', '.join(failed)
    if dry_run:
        msg = '(dry run) ' + msg
    result['msg'] = ' '.join(str(msg).split())
    module.exit_json(**result)
