# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private runner shared by the lakekeeper.hive modules (not a public API).

Why one file of more than 500 lines: it is one flow, the steps of a module
run in the order they happen (settings, launch, argv, run, result), which a
reader follows top to bottom; the pure parts already live beside it
(_lakekeeper_argv, _lakekeeper_result, _lakekeeper_catalog).

It runs on the target, in named steps: read the spark_submit settings (the
module's over the config file's), resolve the launch (the application
transferred by the action plugin, python or spark-submit, environment,
state directory), build the engine's argv with _lakekeeper_argv, execute it
with module.run_command (an argv list, never a shell string), parse the JSON
result with _lakekeeper_result, and run the refresh command. It knows no
module: what differs between them is the argument spec each one builds (see
_lakekeeper_argspec) and the Engine each one passes to run_module.
"""

from __future__ import annotations

import importlib.util
import os
import stat
import sys
import time
import traceback

try:
    import yaml
except ImportError:
    HAS_YAML = False
    YAML_IMPORT_ERROR = traceback.format_exc()
else:
    HAS_YAML = True
    YAML_IMPORT_ERROR = None

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.lakekeeper.hive.plugins.module_utils._lakekeeper_app import (
    APP_ENTRY,
    AppError,
    ensure_app,
    internal_info,
    package_zip,
)
from ansible_collections.lakekeeper.hive.plugins.module_utils._lakekeeper_catalog import (
    defaults_properties,
    find_metastore,
    host_conf_message,
    host_hive_site,
    no_metastore_message,
    spark_defaults_path,
    spark_home,
    spark_home_version,
)
from ansible_collections.lakekeeper.hive.plugins.module_utils._lakekeeper_argv import (
    DEFAULT_STATE_DIR,
    DEPLOY_MODE_KEY,
    DRIVER_PYTHON_KEY,
    ENGINE_OPTION_NAMES,
    HANDOFF_OPTION,
    PY_FILES_ZIP,
    PYTHON_KEY,
    WAIT_KEY,
    LakekeeperError,
    archive_driver_python,
    archive_driver_python_message,
    banner_version,
    build_command,
    check_cluster_mode,
    config_spark_submit,
    deploy_mode,
    handoff_uris,
    ignored_embedded_keys,
    join_cmd,
    loads_spark_defaults,
    mask_argv,
    merge_spark_submit,
    new_run_id,
    refresh_argv,
    resolve_spark_submit,
    result_uri,
    secret_properties_path,
    secret_properties_text,
    secret_values,
    selector_args,
    split_conf,
)
from ansible_collections.lakekeeper.hive.plugins.module_utils._lakekeeper_handoff import HandoffRelay
from ansible_collections.lakekeeper.hive.plugins.module_utils._lakekeeper_metrics import write_metrics
from ansible_collections.lakekeeper.hive.plugins.module_utils._lakekeeper_result import (
    CATALOG_KEYS,
    build_diff,
    failure_message,
    find_application_id,
    is_failed,
    module_fields,
    parse_result,
    refresh_targets,
    table_warnings,
    tail_lines,
)
from ansible_collections.lakekeeper.hive.plugins.module_utils._lakekeeper_yarn import (
    HELPER_TIMEOUT,
    Helpers,
    Supervised,
    cat_argv,
    driver_exit_status,
    rm_argv,
)

RESULT_FILE = "lakekeeper-result.json"
TAIL = 40


class Engine:
    """What a module asks of the engine.

    ``command`` is the engine command, or ``command_option`` names the module
    option that holds it (that option is then not passed as an engine flag);
    ``writes`` is false for a module that never changes anything; ``module``
    is the module's name (for messages).
    """

    def __init__(self, module, command=None, command_option=None, writes=True):
        self.module = module
        self.command = command
        self.command_option = command_option
        self.writes = writes

    def resolve_command(self, params):
        return params[self.command_option] if self.command_option else self.command

    def options(self, params):
        """The engine options the module has (those it lacks are None)."""
        out = dict((name, params.get(name)) for name in ENGINE_OPTION_NAMES if name != self.command_option)
        out[HANDOFF_OPTION] = params.get(HANDOFF_OPTION)  # compact's analyze_first (the others lack it)
        return out


class Launch:
    """How the engine is started on the target."""

    def __init__(self, script, env, python=None, spark_submit=None, state_dir=None, explicit_state_dir=False):
        self.script = script
        self.env = env
        self.python = python
        self.spark_submit = spark_submit
        self.state_dir = state_dir
        self.explicit_state_dir = explicit_state_dir
        self.mode = "client"  # spark-submit's deploy mode (run_mode); the embedded engine is a local driver

    @property
    def cwd(self):
        # The embedded Metastore's files (derby.log, ...) land in the working directory.
        return self.state_dir


def _abspath(path):
    return os.path.abspath(os.path.expanduser(path)) if path else path


def _read_text(path):
    with open(path, "rb") as handle:
        return handle.read().decode("utf-8", errors="replace")


def _fail_on(module, func, *args, **kwargs):
    """``func(*args, **kwargs)``, a LakekeeperError becoming fail_json."""
    try:
        return func(*args, **kwargs)
    except LakekeeperError as exc:
        module.fail_json(msg=str(exc))


# --------------------------------------------------------------------------
# binaries
# --------------------------------------------------------------------------

def _can_import_pyspark():
    try:
        return importlib.util.find_spec("pyspark") is not None
    except (ImportError, ValueError):
        return False


def find_python(module, explicit):
    if explicit:
        if os.sep in explicit:
            path = _abspath(explicit)
            if not os.access(path, os.X_OK):
                module.fail_json(msg="python %s is not an executable file" % path)
            return path
        path = module.get_bin_path(explicit)
        if not path:
            module.fail_json(msg="python %r not found on PATH" % explicit)
        return path
    if sys.executable and _can_import_pyspark():
        return sys.executable
    path = module.get_bin_path("python3")
    if not path:
        module.fail_json(msg="no python3 on PATH and the module interpreter %s cannot import pyspark; "
                             "set the python option" % sys.executable)
    rc, _out, err = module.run_command([path, "-c", "import pyspark"])
    if rc != 0:
        module.fail_json(msg="neither the module interpreter %s nor %s can import pyspark; install pyspark or set "
                             "the python option" % (sys.executable, path), stderr_lines=tail_lines(err, 5))
    return path


def find_spark_submit(module, env):
    explicit = module.params["spark_submit_path"]
    if explicit:
        if not os.access(explicit, os.X_OK) or os.path.isdir(explicit):
            module.fail_json(msg="spark_submit_path %s is not an executable file" % explicit)
        return explicit
    dirs = []
    for home in (module.params["spark_home"], env.get("SPARK_HOME"), os.environ.get("SPARK_HOME")):
        if home:
            dirs.append(os.path.join(home, "bin"))
    path = module.get_bin_path("spark-submit", opt_dirs=dirs)
    if not path:
        module.fail_json(msg="spark-submit not found in %s nor on PATH; set spark_submit_path or spark_home"
                             % (", ".join(dirs) or "$SPARK_HOME/bin"))
    return path


# --------------------------------------------------------------------------
# the steps
# --------------------------------------------------------------------------

def check_keytab(module, path):
    """Fail before launching when the keytab is missing, unreadable or
    readable by every user (a keytab is a password)."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        if not os.path.exists(path):
            module.fail_json(msg="spark_submit.keytab %s does not exist on the target" % path)
        module.fail_json(msg="spark_submit.keytab %s cannot be read: %s" % (path, exc.strerror))
    if not stat.S_ISREG(mode):
        module.fail_json(msg="spark_submit.keytab %s is not a regular file" % path)
    if mode & stat.S_IROTH:
        module.fail_json(msg="spark_submit.keytab %s is readable by every user (mode %04o): a keytab is a "
                             "password; chmod 600 it (owner only)" % (path, stat.S_IMODE(mode)))
    if not os.access(path, os.R_OK):
        module.fail_json(msg="spark_submit.keytab %s is not readable by the user running the module" % path)


def load_config(module, path):
    if not os.path.isfile(path):
        module.fail_json(msg="config_file %s not found on the target" % path)
    if not HAS_YAML:
        module.fail_json(msg=missing_required_lib("PyYAML", reason="to read config_file"),
                         exception=YAML_IMPORT_ERROR)
    try:
        return yaml.safe_load(_read_text(path))
    except yaml.YAMLError as exc:
        module.fail_json(msg="config_file %s is not valid YAML: %s" % (path, " ".join(str(exc).split())))


def read_spark_submit(module, config_file):
    """The spark_submit settings: the module's over the config file's,
    validated, with their defaults; refused or warned about before anything
    runs."""
    config_ss = {}
    if config_file:
        try:
            config_ss, warnings = config_spark_submit(load_config(module, config_file))
        except LakekeeperError as exc:
            module.fail_json(msg="config_file %s: %s" % (config_file, exc))
        for warning in warnings:
            module.warn(warning)
    ss = _fail_on(module, resolve_spark_submit, merge_spark_submit(module.params["spark_submit"], config_ss))
    if ss["enabled"] and ss.get("keytab"):
        check_keytab(module, _abspath(str(ss["keytab"])))
    ignored = ignored_embedded_keys(ss)
    if ignored:
        module.warn("spark_submit.enabled is false: %s only apply to spark-submit and are ignored"
                    % ", ".join(ignored))
    return ss


def engine_environment(params):
    """The environment of the engine run: SPARK_HOME, HADOOP_CONF_DIR, then ``environment``."""
    env = {}
    if params["spark_home"]:
        env["SPARK_HOME"] = params["spark_home"]
    if params["hadoop_conf_dir"]:
        env["HADOOP_CONF_DIR"] = params["hadoop_conf_dir"]
    for key, value in (params["environment"] or {}).items():
        env[str(key)] = "" if value is None else str(value)
    return env


def resolve_launch(module, engine, ss):
    """The application, the binary that starts it, its environment and state directory."""
    params = module.params
    env = engine_environment(params)
    for value in secret_values(ss, env):
        module.no_log_values.add(value)

    if ss.get("script_path"):
        script = _abspath(ss["script_path"])
    else:
        app_dir = ensure_app(module)
        if not app_dir:
            module.fail_json(msg="no Spark application: run this module through its action plugin "
                                 "(lakekeeper.hive.%s) or set spark_submit.script_path" % engine.module)
        script = os.path.join(app_dir, APP_ENTRY)
    if not os.path.isfile(script):
        module.fail_json(msg="Spark application entry point %s not found on the target" % script)

    state_dir = _abspath(params["state_dir"])
    if ss["enabled"]:
        spark_submit = find_spark_submit(module, env)
        python = params["python"]
        if python and os.sep in python:
            python = _abspath(python)
    else:
        spark_submit = None
        python = find_python(module, params["python"])
        state_dir = state_dir or _abspath(DEFAULT_STATE_DIR)
        if "PYSPARK_PYTHON" not in env:
            env["PYSPARK_PYTHON"] = python
    if state_dir:
        try:
            if not os.path.isdir(state_dir):
                os.makedirs(state_dir, 0o700)
        except OSError as exc:
            module.fail_json(msg="could not create state_dir %s: %s" % (state_dir, exc))
    return Launch(script, env, python=python, spark_submit=spark_submit, state_dir=state_dir,
                  explicit_state_dir=bool(params["state_dir"]))


def _host_env(launch):
    """The environment spark-submit will see: the module's, updated with the run's."""
    env = dict(os.environ)
    env.update(launch.env)
    return env


def check_driver_python(module, ss, launch):
    """In client mode the driver runs here, on the submitting host: fail
    before starting when its Python (as spark-submit will pick it) is a
    relative path such as the executors' ``./<alias>/bin/python`` of
    ``python_env`` that does not exist here (spark-submit would die with
    "Cannot run program ./lakekeeper_env/bin/python"). A cluster-mode
    driver runs in a YARN container, where the archive is unpacked."""
    if not ss["enabled"] or launch.mode == "cluster":
        return
    env = _host_env(launch)
    defaults = defaults_properties(spark_defaults_path(env, launch.spark_submit), (DRIVER_PYTHON_KEY, PYTHON_KEY))
    found = archive_driver_python(ss, module.params["python"], defaults, env)
    if not found:
        return
    interpreter, source = found
    # the python option was made absolute from the module's directory; Spark resolves the others from its own
    base = os.getcwd() if source == "python" else (launch.cwd or os.getcwd())
    if not os.path.isfile(os.path.join(base, interpreter)):
        module.fail_json(msg=archive_driver_python_message(interpreter, source, ss.get("archives")))


def run_mode(module, ss, launch):
    """Set ``launch.mode``: spark-submit's deploy mode, as it will decide it
    (spark_submit.deploy_mode, else spark.submit.deployMode in extra_conf,
    extra_args or spark-defaults.conf). Cluster mode is checked before
    anything starts: what would not reach a driver in a YARN container is
    refused (check_cluster_mode)."""
    if not ss["enabled"]:
        return
    defaults = defaults_properties(spark_defaults_path(_host_env(launch), launch.spark_submit),
                                   (DEPLOY_MODE_KEY, WAIT_KEY))
    launch.mode = _fail_on(module, deploy_mode, ss, defaults)
    if launch.mode == "cluster":
        _fail_on(module, check_cluster_mode, ss, module.params.get("progress_file"), module.params["state_dir"],
                 defaults)
        if module.params["python"]:
            module.warn("python (%s) is the Python of a client-mode driver on this host; in cluster mode the driver "
                        "runs in a YARN container with spark_submit.python_env, so python is not used"
                        % module.params["python"])


def _executable(module, option, path):
    found = path if os.sep in path else module.get_bin_path(path)
    if not found or os.path.isdir(found) or not os.access(found, os.X_OK):
        module.fail_json(msg="%s %s is not an executable file" % (option, path))
    return found


def find_spark_class(launch):
    """Spark's launcher for any class (``spark-class``) of the run's Spark:
    beside its spark-submit, else in its SPARK_HOME's bin; or None."""
    if not launch.spark_submit:
        return None
    home = spark_home(_host_env(launch), launch.spark_submit)
    for candidate in (os.path.join(os.path.dirname(launch.spark_submit), "spark-class"),
                      os.path.join(home, "bin", "spark-class") if home else None):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def hadoop_helpers(module, ss, launch):
    """The Hadoop client commands of the run (_lakekeeper_yarn.Helpers): read
    and remove a cluster-mode result (``hdfs_binary``'s ``dfs``, else FsShell
    through the run's ``spark-class``, else ``hdfs`` from PATH), kill its
    YARN application when the task is stopped (``yarn_binary``'s
    ``application``, else ApplicationCLI through ``spark-class``, else
    ``yarn`` from PATH: a ``yarn`` on PATH may be another program, Node.js'
    Yarn, hence last). Each with the run's environment and credentials: a
    ticket of its own from spark_submit.keytab (kinit), HADOOP_PROXY_USER for
    spark_submit.proxy_user. Cluster mode fails here without a way to read
    its result."""
    params = module.params
    spark_class = find_spark_class(launch)

    def tool(option, name, kind):
        if params.get(option):
            return kind, _executable(module, option, params[option])
        if spark_class:
            return "spark-class", spark_class
        path = module.get_bin_path(name)
        return (kind, path) if path else None

    fs_tool = tool("hdfs_binary", "hdfs", "hdfs")
    yarn_tool = tool("yarn_binary", "yarn", "yarn") if ss["enabled"] else None
    keytab, principal = ss.get("keytab"), ss.get("principal")
    kinit = module.get_bin_path("kinit") if keytab and principal and ss["enabled"] else None
    cluster = launch.mode == "cluster"
    if cluster and not fs_tool:
        module.fail_json(msg="cluster mode reads the engine's result from HDFS after the application ends, and "
                             "this host has no Hadoop client for it: no spark-class beside %s nor in SPARK_HOME, "
                             "no hdfs on PATH; set hdfs_binary" % launch.spark_submit)
    if keytab and principal and ss["enabled"] and not kinit:
        if cluster:
            module.fail_json(msg="spark_submit.keytab is set, and the module reads the cluster-mode result with "
                                 "that principal's ticket, which needs kinit on this host (not on PATH)")
        module.warn("spark_submit.keytab is set but kinit is not on PATH: if the task is stopped, the YARN "
                    "application is killed with the environment's ticket cache, if any")
    if ss["enabled"] and not yarn_tool and str(ss.get("master") or "").startswith("yarn"):
        module.warn("no YARN client (yarn_binary, spark-class, yarn on PATH): if the task is stopped, only "
                    "spark-submit is stopped%s" % (", and the cluster-mode application runs on" if cluster else ""))
    env = dict(_host_env(launch), **module.run_command_environ_update)
    return Helpers(env, fs_tool=fs_tool, yarn_tool=yarn_tool, kinit=kinit, keytab=_abspath(keytab) if keytab else None,
                   principal=principal, proxy_user=ss.get("proxy_user") if ss["enabled"] else None)


def engine_package(module, launch):
    """Cluster mode: the engine's package zipped for --py-files, in the module's private directory."""
    if launch.mode != "cluster":
        return None
    try:
        return package_zip(launch.script, os.path.join(module.tmpdir, PY_FILES_ZIP))
    except (AppError, OSError, ValueError) as exc:
        module.fail_json(msg="cluster mode ships the engine's package with --py-files: %s" % exc)


def spark_version(module, launch):
    """The Spark version of the spark-submit this run starts, or None.

    Read from the files of its SPARK_HOME (spark_home_version: no process);
    else from ``spark-submit --version`` (one JVM start, a few seconds: only
    when those files do not tell, e.g. a packaged wrapper outside SPARK_HOME).
    None (unknown) is safe: the secret properties file then carries the
    cluster's spark-defaults.conf itself."""
    version = spark_home_version(spark_home(_host_env(launch), launch.spark_submit))
    if version:
        return version
    try:
        rc, out, err = module.run_command([launch.spark_submit, "--version"], environ_update=launch.env,
                                          cwd=launch.cwd, check_rc=False, handle_exceptions=False)
    except (OSError, IOError):
        return None
    return banner_version((err or "") + "\n" + (out or "")) if rc == 0 else None


def choose_catalog(module, ss, launch):
    """Which Hive catalog the run uses (see _lakekeeper_catalog), decided
    before anything starts; fail_json when the choice would be a silent
    embedded catalog."""
    env = _host_env(launch)
    found, looked = find_metastore(ss.get("extra_conf"), ss.get("extra_args") if ss["enabled"] else None, env,
                                   launch.spark_submit)
    if found:
        return dict(found, reason="the cluster's Metastore, configured in %s" % found["source"])
    embedded = dict(kind="embedded", state_dir=launch.state_dir)
    if launch.explicit_state_dir:
        return dict(embedded, reason="state_dir was given")
    if ss["enabled"]:
        module.fail_json(msg=no_metastore_message(looked))
    site = host_hive_site(env)
    if site:
        module.fail_json(msg=host_conf_message(site, launch.state_dir))
    return dict(embedded, reason="spark_submit is not enabled and this host has no Hive configuration")


def write_private(path, text):
    """Write ``text`` to a new file only its owner can read."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)


def secret_file_text(module, ss, launch, secret_conf, version):
    """The secret properties file: the secret keys, after the cluster's
    spark-defaults.conf when spark-submit cannot be told to read it too
    (Spark before 4.0, or unknown: --properties-file replaces it there)."""
    defaults_text = None
    if ss["enabled"] and not loads_spark_defaults(version):
        path = spark_defaults_path(_host_env(launch), launch.spark_submit)
        if path and os.path.isfile(path):
            try:
                defaults_text = _read_text(path)
            except (OSError, IOError) as exc:
                module.fail_json(msg="could not read %s (secret extra_conf values replace spark-defaults.conf on "
                                     "Spark %s, so the module copies it): %s"
                                     % (path, version or "before 4.0", exc.strerror))
    return secret_properties_text(secret_conf, defaults_text)


def build_argv(module, engine, command, selectors, ss, launch, config_file, result_file, catalog, run_id=None):
    """The engine's argv; secret extra_conf values are written to their private properties file."""
    secret_conf = split_conf(ss.get("extra_conf"))[1]
    version = spark_version(module, launch) if ss["enabled"] and secret_conf else None
    argv = _fail_on(module, build_command, command, selectors, ss, launch.script,
                    options=engine.options(module.params), config_file=config_file, dry_run=module.check_mode,
                    state_dir=launch.state_dir, result_file=result_file, python=launch.python,
                    spark_submit=launch.spark_submit,
                    job_id=internal_info().get("job_id"),
                    require_metastore=catalog["kind"] != "embedded" and not launch.explicit_state_dir,
                    run_id=run_id, spark_version=version, mode=launch.mode,
                    py_files=engine_package(module, launch))
    if secret_conf:
        text = secret_file_text(module, ss, launch, secret_conf, version)
        try:
            write_private(secret_properties_path(result_file), text)
        except OSError as exc:
            module.fail_json(msg="could not write the secret properties file in %s: %s"
                                 % (module.tmpdir, exc.strerror))
    return argv


def execute(module, argv, launch, helpers, remote_files=()):
    """Run the engine under supervision (_lakekeeper_yarn.Supervised: its
    YARN application is killed if the task is stopped, by a signal, the
    controller going away, or, through the watchdog, SIGKILL; then
    ``remote_files``, a cluster-mode run's result and hand-over files, are
    removed). Returns the Outcome."""
    env = dict(_host_env(launch), **module.run_command_environ_update)
    run = Supervised(argv, env, cwd=launch.cwd, helpers=helpers, cache_dir=module.tmpdir, remote_files=remote_files)
    try:
        return run.run()
    except OSError as exc:
        module.fail_json(msg="could not start %s: %s" % (argv[0], exc.strerror or exc), rc=None,
                         cmd=join_cmd(mask_argv(argv)))


def fetch_result(module, helpers, uri, result, also_remove=()):
    """Cluster mode: the engine's result, written by the driver to ``uri``
    on the cluster's filesystem, read with the run's Hadoop client and
    removed (with ``also_remove``, the hand-over's files, in one command).
    Returns its text, or None (``result['result_fetch']`` says why)."""
    env, error = helpers.environ(module.tmpdir)
    argv = cat_argv(helpers.fs_tool, uri)
    rc, out, err = module.run_command(argv, environ_update=env, check_rc=False)
    if rc != 0:
        result["result_fetch"] = dict(cmd=join_cmd(argv), rc=rc,
                                      stderr_lines=tail_lines(err, 5) + ([error] if error else []))
        if also_remove:
            remove_files(module, helpers, env, list(also_remove))
        return None
    remove_files(module, helpers, env, [uri] + list(also_remove))
    return out


def remove_files(module, helpers, env, uris):
    """Remove the run's own files on the cluster's filesystem (a failure is a warning)."""
    removal = rm_argv(helpers.fs_tool, *uris)
    rm_rc, _out, rm_err = module.run_command(removal, environ_update=env, check_rc=False)
    if rm_rc != 0:
        module.warn("could not remove %s (rc %s): %s" % (
            ", ".join(uris), rm_rc, (tail_lines(rm_err, 1) or [""])[0].strip()))


def start_relay(module, helpers, ss, run_id):
    """Cluster mode with analyze_first: the relay of its files between the
    edge node and the driver (_lakekeeper_handoff), started before the engine."""
    first = module.params[HANDOFF_OPTION]
    analysis, go = handoff_uris(ss.get("result_dir"), run_id)
    relay = HandoffRelay(helpers, module.tmpdir, first["analysis_file"], first["go_file"], analysis, go)
    relay.start()
    return relay


def cancelled(module, result, outcome):
    """The task was stopped while the engine ran: fail with what was done to its application."""
    result.update(cancelled=outcome.cancelled, rc=outcome.rc)
    done = []
    for action in outcome.cancelled["actions"]:
        if action["action"] == "kill_application":
            done.append("killed the YARN application %s (rc %s)" % (action["application_id"], action["rc"]))
        elif action["action"] == "remove_files":
            done.append("removed the run's files on the cluster (rc %s)" % action["rc"])
        elif action["signal"]:
            done.append("stopped the engine's process group %s (%s)" % (action["pgid"], action["signal"]))
    module.fail_json(msg="lakekeeper %s cancelled: %s; %s. The next run recovers the tables from their journal"
                         % (result["command"], outcome.cancelled["reason"], "; ".join(done) or "nothing to stop"),
                     stderr_lines=tail_lines(outcome.stderr, TAIL), **result)


def _stderr_cause(stderr):
    """The last stderr line that says something (not a Java stack frame)."""
    for line in reversed(tail_lines(stderr, TAIL)):
        text = line.strip()
        if text and not text.startswith("at ") and not text.startswith("... "):
            return text
    return None


def write_run_metrics(module, command, doc, rc, started):
    """The Prometheus textfile of this run in ``metrics_dir`` (not in check
    mode); a failure to write is a warning, never the run's failure."""
    directory = module.params.get("metrics_dir")
    if not directory or module.check_mode:
        return None
    try:
        return write_metrics(directory, command, doc, rc, round(time.time() - started, 3), time.time())
    except (IOError, OSError) as exc:
        module.warn("could not write the metrics of this run into metrics_dir %s: %s" % (directory, exc))
        return None


def parse(module, engine, command, result, rc, stdout, stderr, result_text, started=None):
    """Fill ``result`` from the engine's document; fail_json when it failed. Returns the document."""
    dry_run = module.check_mode
    doc = parse_result(stdout, result_text)
    if started is not None:
        path = write_run_metrics(module, command, doc, rc, started)
        if path:
            result["metrics_file"] = path
    application_id = result.get("application_id") or find_application_id(stderr)
    if application_id:
        result["application_id"] = application_id

    if doc is None:
        cause = _stderr_cause(stderr)
        msg = failure_message(command, None, rc)
        if cause:
            msg += ": %s" % cause
        if result.get("result_uri") and application_id:
            msg += " (the driver ran in YARN: its log is in yarn logs -applicationId %s)" % application_id
        module.fail_json(msg=msg, tables=[], stdout_lines=tail_lines(stdout, TAIL),
                         stderr_lines=tail_lines(stderr, TAIL), **result)

    fields = module_fields(doc, engine.writes, dry_run, module.params.get("max_partitions_listed"))
    if "catalog" in fields:  # what the driver really loaded
        fields["catalog"] = dict(result.get("catalog") or {}, **fields["catalog"])
    result.update(fields)
    if module._diff:
        result["diff"] = build_diff(doc, dry_run=dry_run)

    if is_failed(doc, rc, bool(module.params.get("fail_on_refused"))):
        module.fail_json(msg=failure_message(command, doc, rc), stdout_lines=tail_lines(stdout, TAIL),
                         stderr_lines=tail_lines(stderr, TAIL), **result)
    return doc


def run_refresh(module, template, doc, env):
    """Run the post-compaction command once per changed table (argv list,
    never a shell). A failure is reported for its table, with a warning; it
    never undoes the compaction."""
    out = []
    for table, partitions in refresh_targets(doc):
        argv = _fail_on(module, refresh_argv, template, table, partitions)
        try:
            rc, stdout, stderr = module.run_command(argv, environ_update=env, check_rc=False,
                                                    handle_exceptions=False)
        except (OSError, IOError) as exc:  # a missing executable: reported, not fatal
            rc, stdout, stderr = None, "", str(exc)
        entry = dict(table=table, cmd=join_cmd(argv), rc=rc, failed=rc != 0,
                     stdout_lines=tail_lines(stdout, 10), stderr_lines=tail_lines(stderr, 10))
        if entry["failed"]:
            module.warn("refresh_command for %s failed (rc %s): %s" % (
                table, rc, (tail_lines(stderr, 1) or tail_lines(stdout, 1) or [""])[0].strip()))
        out.append(entry)
    return out


def refresh(module, doc, launch, result, msg):
    """The refresh command after a run that wrote (``refresh_command``, not in
    check mode), in ``result['refresh']``; returns the message."""
    template = module.params.get("refresh_command")
    if not template or module.check_mode:
        return msg
    result["refresh"] = run_refresh(module, template, doc, launch.env)
    failed = [r["table"] for r in result["refresh"] if r["failed"]]
    if failed:
        msg += "; refresh_command failed for %s (the compaction itself succeeded and stays)" % ", ".join(failed)
    return msg


def warn_locked(module, doc):
    """A table another run holds (``locked``: nothing was done to it) or that
    was refused (``refused``: managed, transactional, excluded, replicated, a
    backup...; docs/statuses.md) is not a failure of this run, but it was not
    maintained: say so once per table."""
    for warning in table_warnings(doc):
        module.warn(warning)


def run_module(module, engine):
    """Run the engine for ``module`` (built from an _lakekeeper_argspec spec) and exit."""
    params = module.params
    command = engine.resolve_command(params)
    selectors = _fail_on(module, selector_args, params["table"], params["tables"], params["database"])
    config_file = _abspath(params["config_file"])
    ss = read_spark_submit(module, config_file)
    launch = resolve_launch(module, engine, ss)
    run_mode(module, ss, launch)
    check_driver_python(module, ss, launch)
    catalog = choose_catalog(module, ss, launch)
    helpers = hadoop_helpers(module, ss, launch)
    result_file = os.path.join(module.tmpdir, RESULT_FILE)
    run_id = new_run_id() if ss["enabled"] else None
    argv = build_argv(module, engine, command, selectors, ss, launch, config_file, result_file, catalog, run_id)
    result = dict(changed=False, cmd=join_cmd(mask_argv(argv)), rc=None, command=command,
                  dry_run=module.check_mode, script=launch.script,
                  catalog=dict((k, catalog.get(k)) for k in CATALOG_KEYS))
    uri = result_uri(ss.get("result_dir"), run_id) if launch.mode == "cluster" else None
    if uri:
        result["result_uri"] = uri
    started = time.time()
    relay = start_relay(module, helpers, ss, run_id) if uri and params.get(HANDOFF_OPTION) else None
    handoff_files = relay.remote_files if relay else []
    outcome = execute(module, argv, launch, helpers, [uri] + handoff_files if uri else [])
    if relay:
        relay.stop(HELPER_TIMEOUT)
        result["handoff_relay"] = relay.report()
    result["rc"] = outcome.rc
    if outcome.application_id:
        result["application_id"] = outcome.application_id
    if outcome.cancelled:
        cancelled(module, result, outcome)
    result_text = None
    if uri:
        # the driver's own exit code, which spark-submit logs with the application's end
        status = driver_exit_status(outcome.stderr)
        result["rc"] = status if status is not None else outcome.rc
        if outcome.application_id:
            result_text = fetch_result(module, helpers, uri, result, handoff_files)
        elif relay and relay.go_at is not None:  # no application, but the play's go went over
            remove_files(module, helpers, helpers.environ(module.tmpdir)[0], handoff_files)
    elif os.path.isfile(result_file):
        result_text = _read_text(result_file)
    doc = parse(module, engine, command, result, result["rc"], outcome.stdout, outcome.stderr, result_text, started)

    warn_locked(module, doc)
    msg = doc.get("msg") or "%s: %d table(s)" % (command, len(result["tables"]))
    msg = refresh(module, doc, launch, result, msg)
    if module.check_mode:
        msg = "(dry run) " + msg
    result["msg"] = " ".join(str(msg).split())
    module.exit_json(**result)
