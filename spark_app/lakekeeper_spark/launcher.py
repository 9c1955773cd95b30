"""lakekeeper 0.0.x's launcher, kept so that a crontab written for 0.0.x
(``lakekeeper --config-file lakekeeper.yaml compact --database mydb`` on an
edge node) runs today's engine unchanged (docs/upgrading-from-0.0.x.md).

When ``run_lakekeeper.py`` is run by plain python (not by spark-submit) with
a config file whose ``spark_submit:`` section has ``enabled: true``, it
builds the spark-submit command from that section as 0.0.6 did
(``utils/spark.py`` ``build_spark_submit_command``, ``cli.py``
``_maybe_submit``), runs it (an argv list, never a shell) and exits with its
code (not with ``--state-dir`` or ``--master``: the engine's own Spark was
asked for). The application it submits is this ``run_lakekeeper.py``, with
the same arguments and ``--require-metastore``; under spark-submit (the
``LAKEKEEPER_SUBMITTED`` variable 0.0.6 set, or the Python driver's gateway)
the engine runs. Imports nothing of Spark.

The Ansible modules read the same section themselves
(plugins/module_utils/_lakekeeper_argv.py); this is for the command line.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import zipfile
from typing import Any, Callable

SUBMITTED_ENV = "LAKEKEEPER_SUBMITTED"  # 0.0.6 cli.py _SUBMITTED_ENV
# 0.0.6 config.py SparkSubmitConfig, in its order, with its defaults
SPARK_SUBMIT_DEFAULTS: dict[str, Any] = {
    "enabled": False, "submit_command": "spark-submit", "master": "yarn", "deploy_mode": "client",
    "principal": None, "keytab": None, "queue": None, "archives": None, "python_env": None,
    "executor_memory": None, "num_executors": None, "executor_cores": None, "driver_memory": None,
    "script_path": "run_lakekeeper.py", "extra_conf": {}, "extra_files": [], "py_files": [],
}
# keys of today's modules' spark_submit section that 0.0.x did not have: used by the modules only
MODULE_ONLY_KEYS = ("name", "proxy_user", "extra_args")


class LaunchError(Exception):
    """The spark_submit section cannot be launched (exit code 2)."""


def config_file_of(argv: list[str]) -> str | None:
    """The ``-c``/``--config-file`` of a command line, before or after the
    command (the last one given wins, as the one after the command does)."""
    found = None
    for i, arg in enumerate(argv):
        if arg in ("-c", "--config-file") and i + 1 < len(argv):
            found = argv[i + 1]
        elif arg.startswith("--config-file="):
            found = arg.split("=", 1)[1]
    return found


def spark_submit_section(path: str) -> dict[str, Any] | None:
    """The config file's ``spark_submit:`` section with 0.0.6's defaults, or
    None when it is absent or not enabled."""
    from .policy.config import read_config_file

    section = read_config_file(path).get("spark_submit")
    if section is None:
        return None
    if not isinstance(section, dict):
        raise LaunchError(f"config file {path}: spark_submit must be a mapping")
    if not section.get("enabled"):
        return None
    unknown = sorted(str(k) for k in section if k not in SPARK_SUBMIT_DEFAULTS and k not in MODULE_ONLY_KEYS)
    if unknown:
        raise LaunchError(f"config file {path}: unknown spark_submit key(s) {', '.join(unknown)}")
    merged = dict(SPARK_SUBMIT_DEFAULTS)
    merged.update({k: v for k, v in section.items() if k in SPARK_SUBMIT_DEFAULTS and v is not None})
    for key in ("extra_files", "py_files"):
        if isinstance(merged[key], str):
            merged[key] = [f.strip() for f in merged[key].split(",") if f.strip()]
    if not isinstance(merged["extra_conf"], dict):
        raise LaunchError(f"config file {path}: spark_submit.extra_conf must be a mapping")
    if merged["deploy_mode"] not in ("client", "cluster"):
        raise LaunchError(f"config file {path}: spark_submit.deploy_mode must be client or cluster")
    return merged


def _cluster_args(argv: list[str]) -> tuple[list[str], list[str]]:
    """In cluster mode the driver runs in a YARN container: a local config
    file is shipped with ``--files`` and named by its base name (0.0.6 cli.py
    ``_extract_config_file_for_cluster``)."""
    out, files = list(argv), []
    for i, arg in enumerate(out):
        path = out[i + 1] if arg in ("-c", "--config-file") and i + 1 < len(out) else None
        if arg.startswith("--config-file="):
            path = arg.split("=", 1)[1]
        if path and not path.startswith("hdfs://") and os.path.isfile(path):
            files.append(path)
            if arg.startswith("--config-file="):
                out[i] = "--config-file=" + os.path.basename(path)
            else:
                out[i + 1] = os.path.basename(path)
    return out, files


def package_zip(directory: str) -> str:
    """The engine package (``lakekeeper_spark`` next to run_lakekeeper.py) as a
    zip for ``--py-files``: a cluster-mode driver has only what is shipped."""
    fd, path = tempfile.mkstemp(prefix="lakekeeper_spark-", suffix=".zip")
    os.close(fd)
    root = os.path.join(directory, "lakekeeper_spark")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for here, dirs, names in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(names):
                if name.endswith(".py"):
                    full = os.path.join(here, name)
                    zf.write(full, os.path.relpath(full, directory))
    return path


def build_command(ss: dict[str, Any], script: str, argv: list[str],
                  engine_zip: Callable[[], str] | None = None) -> tuple[list[str], list[str]]:
    """(the spark-submit argv, notes): 0.0.6's ``build_spark_submit_command``
    for ``script`` (this run_lakekeeper.py), with ``LAKEKEEPER_SUBMITTED``
    set on a cluster-mode driver as 0.0.6 set it."""
    notes = []
    given = ss.get("script_path")
    if given and given != SPARK_SUBMIT_DEFAULTS["script_path"] and os.path.realpath(given) != script:
        notes.append(f"spark_submit.script_path {given} (lakekeeper 0.0.x's entry point) is not used: the engine's "
                     f"{script} is submitted")
    args, files = list(argv), list(ss["extra_files"])
    py_files = list(ss["py_files"])
    if ss["deploy_mode"] == "cluster":
        args, shipped = _cluster_args(args)
        files += shipped
        py_files.append((engine_zip or (lambda: package_zip(os.path.dirname(script))))())
    cmd = [str(ss["submit_command"]), "--master", str(ss["master"]), "--deploy-mode", str(ss["deploy_mode"])]
    for key, flag in (("principal", "--principal"), ("keytab", "--keytab")):
        if ss[key]:
            cmd += [flag, str(ss[key])]
    if ss["queue"]:
        cmd += ["--conf", f"spark.yarn.queue={ss['queue']}"]
    if ss["archives"]:
        cmd += ["--archives", str(ss["archives"])]
    if ss["python_env"]:
        cmd += ["--conf", f"spark.pyspark.python={ss['python_env']}"]
    if ss["executor_memory"]:
        cmd += ["--executor-memory", str(ss["executor_memory"])]
    for key, flag in (("num_executors", "--num-executors"), ("executor_cores", "--executor-cores")):
        if ss[key] is not None:
            cmd += [flag, str(ss[key])]
    if ss["driver_memory"]:
        cmd += ["--driver-memory", str(ss["driver_memory"])]
    conf = dict(ss["extra_conf"], **{f"spark.yarn.appMasterEnv.{SUBMITTED_ENV}": "1"})
    for key, value in conf.items():
        cmd += ["--conf", f"{key}={value}"]
    if files:
        cmd += ["--files", ",".join(str(f) for f in files)]
    if py_files:
        cmd += ["--py-files", ",".join(str(f) for f in py_files)]
    cmd.append(script)
    cmd += args
    if "--require-metastore" not in args:  # the cluster's Metastore, never a private embedded one
        cmd.append("--require-metastore")
    return cmd, notes


def submitted(environ: dict[str, str]) -> bool:
    """Already the application spark-submit runs (0.0.6's guard, or the
    Python driver's gateway that spark-submit gives it)."""
    return bool(environ.get(SUBMITTED_ENV) or environ.get("PYSPARK_GATEWAY_PORT"))


def _plain_python_mode(argv: list[str]) -> bool:
    """The caller chose the engine's own Spark (``--state-dir``, ``--master``:
    the Ansible modules' embedded mode, whose spark_submit option may turn
    the file's off): never launched."""
    return any(a in ("--state-dir", "--master") or a.startswith(("--state-dir=", "--master=")) for a in argv)


def submit_if_configured(argv: list[str], script: str, environ: dict[str, str] | None = None,
                         run: Callable[..., Any] = subprocess.run) -> int | None:
    """The exit code of the spark-submit this command line asks for (a config
    file with ``spark_submit.enabled: true``, not already submitted), or None:
    run the engine here."""
    environ = dict(os.environ if environ is None else environ)
    path = config_file_of(argv)
    if not path or submitted(environ) or _plain_python_mode(argv):
        return None
    from .report.errors import UsageError

    try:
        ss = spark_submit_section(path)
    except UsageError:
        return None  # the engine reports the config file's problem, with the JSON result
    except LaunchError as exc:
        print(f"lakekeeper: {exc}", file=sys.stderr)
        return 2
    if ss is None:
        return None
    cmd, notes = build_command(ss, script, argv)
    for note in notes:
        print(f"lakekeeper: {note}", file=sys.stderr)
    print(f"lakekeeper: launching via spark-submit: {cmd[0]} ... {script} {' '.join(cmd[cmd.index(script) + 1:])}",
          file=sys.stderr)
    environ[SUBMITTED_ENV] = "1"
    try:
        return run(cmd, env=environ, check=False).returncode  # noqa: S603 - an argv list, no shell
    except OSError as exc:
        print(f"lakekeeper: cannot run {cmd[0]}: {exc.strerror or exc}", file=sys.stderr)
        return 127
