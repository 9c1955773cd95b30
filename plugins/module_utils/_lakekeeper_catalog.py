# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private helpers of the lakekeeper.hive modules (not a public API): which
Hive catalog an engine run will use, decided on the target before anything
starts.

Without a Metastore configuration a Spark driver silently makes a private
embedded Derby catalog, where every table of the cluster is "not found".
The rules:

* plain python (``spark_submit`` not enabled) is the embedded catalog. It is
  used when asked for (``state_dir`` given), or when the host has no Hive
  configuration at all (the demo, a laptop); on a host that has one (a
  cluster's edge node) it is refused: the user almost certainly meant the
  cluster's Metastore.
* spark-submit with ``state_dir`` is the embedded catalog on purpose.
* spark-submit without it needs the cluster's Metastore where a client-mode
  driver reads it: ``spark.hadoop.hive.metastore.uris`` (or a Metastore
  database URL) in ``spark_submit.extra_conf`` or in ``spark-defaults.conf``,
  or a ``hive-site.xml`` in the driver's class path directories
  (``SPARK_CONF_DIR``, else ``<SPARK_HOME>/conf``; ``HADOOP_CONF_DIR``,
  ``YARN_CONF_DIR``, also as ``spark-env.sh`` sets them). None found: the
  module fails before starting and says where to put it. Found: the engine
  still checks what its driver really loaded (``--require-metastore``).

The same places tell the other things the module must know of the host's
spark-submit before starting it: its spark-defaults.conf (spark_defaults_path)
and its Spark version, read from the files of its SPARK_HOME
(spark_home_version: the ``jars/spark-core_<scala>-<version>.jar`` every Spark
distribution and pyspark package has, else the ``RELEASE`` file), which costs
no JVM start.
"""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET

from ansible_collections.lakekeeper.hive.plugins.module_utils._lakekeeper_argv import flag_values

METASTORE_KEYS = ("hive.metastore.uris", "javax.jdo.option.ConnectionURL")
# where a host's Hive client configuration usually lives (Bigtop, CDH, HDP, ODP packages)
HOST_HIVE_CONF_DIRS = ("/etc/hive/conf", "/etc/spark/conf", "/etc/spark3/conf")
_ENV_LINE = re.compile(r"^\s*(?:export\s+)?(HADOOP_CONF_DIR|YARN_CONF_DIR)=[\"']?([^\"'#\s]+)")
_PROPERTY_LINE = re.compile(r"^\s*([^\s=:]+)\s*[=:\s]\s*(.*?)\s*$")
_VARIABLE = re.compile(r"\$\{(\w+)\}|\$(\w+)")
_DEFAULT_FORM = re.compile(r"^\$\{(\w+):?-([^}]*)\}$")


def hive_site_settings(path):
    """The Metastore keys a hive-site.xml sets (empty if unreadable)."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return {}
    found = {}
    for prop in root.iter("property"):
        name, value = prop.findtext("name"), prop.findtext("value")
        if name and name.strip() in METASTORE_KEYS and value and value.strip():
            found[name.strip()] = value.strip()
    return found


def _read_lines(path):
    """The lines of a small text file, or none when it cannot be read."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read().splitlines()
    except OSError:
        return []


def defaults_settings(path):
    """``spark.hadoop.<Metastore key>`` lines of a spark-defaults.conf."""
    found = {}
    for line in _read_lines(path):
        match = _PROPERTY_LINE.match(line)
        if match and not match.group(1).startswith(("#", "!")):
            key = match.group(1)
            if key.startswith("spark.hadoop.") and key[len("spark.hadoop."):] in METASTORE_KEYS and match.group(2):
                found[key[len("spark.hadoop."):]] = match.group(2).strip()
    return found


def _env_script_dirs(path, env):
    """HADOOP_CONF_DIR / YARN_CONF_DIR as a spark-env.sh sets them (plain
    values and ``${VAR:-default}``)."""
    found = []
    for line in _read_lines(path):
        match = _ENV_LINE.match(line)
        if not match:
            continue
        value = match.group(2)
        default = _DEFAULT_FORM.match(value)
        if default:
            value = env.get(default.group(1)) or default.group(2)
        value = _VARIABLE.sub(lambda m: env.get(m.group(1) or m.group(2), m.group(0)), value)
        if value and "$" not in value:
            found.append(value)
    return found


def spark_home(env, spark_submit):
    """The SPARK_HOME of a spark-submit run: the variable, else the parent of
    the ``bin`` directory the (resolved) spark-submit is in, or None."""
    home = env.get("SPARK_HOME")
    if not home and spark_submit:
        bin_dir = os.path.dirname(os.path.realpath(spark_submit))
        home = os.path.dirname(bin_dir) if os.path.basename(bin_dir) == "bin" else None
    return home or None


def spark_conf_dir(env, spark_submit):
    """The conf directory the spark-submit launcher puts first on the class path."""
    if env.get("SPARK_CONF_DIR"):
        return env["SPARK_CONF_DIR"]
    home = spark_home(env, spark_submit)
    return os.path.join(home, "conf") if home else None


def spark_defaults_path(env, spark_submit):
    """The spark-defaults.conf this spark-submit reads when no --properties-file replaces it (or None)."""
    conf = spark_conf_dir(env, spark_submit)
    return os.path.join(conf, "spark-defaults.conf") if conf else None


_CORE_JAR = re.compile(r"^spark-core_\d+\.\d+-(\d+\.\d+\.\d+[^/]*?)\.jar$")
_RELEASE = re.compile(r"^\s*Spark\s+(\d+\.\d+\.\d+\S*)")


def spark_home_version(home):
    """The Spark version of a SPARK_HOME from its files, or None: the name of
    ``jars/spark-core_<scala>-<version>.jar``, else the first line of
    ``RELEASE`` (``Spark 3.5.1 built for Hadoop 3.3.4``)."""
    if not home:
        return None
    try:
        names = sorted(os.listdir(os.path.join(home, "jars")))
    except OSError:
        names = []
    for name in names:
        match = _CORE_JAR.match(name)
        if match:
            return match.group(1)
    for line in _read_lines(os.path.join(home, "RELEASE"))[:1]:
        match = _RELEASE.match(line)
        if match:
            return match.group(1)
    return None


def defaults_properties(path, keys):
    """The values of ``keys`` set in a spark-defaults.conf (simple ``key value`` lines)."""
    found = {}
    for line in _read_lines(path) if path else []:
        match = _PROPERTY_LINE.match(line)
        if match and match.group(1) in keys and match.group(2):
            found[match.group(1)] = match.group(2).strip()
    return found


def driver_conf_dirs(env, spark_submit):
    """The directories a client-mode driver reads hive-site.xml from, in class path order."""
    conf = spark_conf_dir(env, spark_submit)
    dirs = [conf] if conf else []
    for name in ("HADOOP_CONF_DIR", "YARN_CONF_DIR"):
        if env.get(name):
            dirs.append(env[name])
    if conf:
        dirs += _env_script_dirs(os.path.join(conf, "spark-env.sh"), dict(env, SPARK_CONF_DIR=conf))
    out = []
    for d in dirs:
        if d and d not in out:
            out.append(d)
    return out


def _describe(settings, source):
    if settings.get("hive.metastore.uris"):
        return dict(kind="metastore", uris=settings["hive.metastore.uris"], source=source)
    url = settings.get("javax.jdo.option.ConnectionURL")
    if url and not url.startswith("jdbc:derby:"):
        return dict(kind="database", url=url.split(";")[0].split("?")[0], source=source)
    return None


def _extra_args_settings(extra_args):
    """``(settings, properties files)`` of ``--conf spark.hadoop.<key>=...``
    and ``--properties-file F`` in spark_submit.extra_args."""
    settings = {}
    for value in flag_values(extra_args, "--conf"):
        key, _sep, item = value.partition("=")
        if key.startswith("spark.hadoop.") and key[len("spark.hadoop."):] in METASTORE_KEYS and item.strip():
            settings[key[len("spark.hadoop."):]] = item.strip()
    files = flag_values(extra_args, "--properties-file")
    return settings, files


def find_metastore(extra_conf, extra_args, env, spark_submit):
    """``(found, looked)``: how a client-mode driver would reach the cluster's
    Metastore (a dict with ``kind`` and ``source``, or None) and the places
    looked at, for the message."""
    looked = ["spark_submit.extra_conf", "spark_submit.extra_args"]
    conf_settings = {}
    for key in METASTORE_KEYS:
        value = (extra_conf or {}).get("spark.hadoop." + key)
        if value not in (None, ""):
            conf_settings[key] = str(value).strip()
    found = _describe(conf_settings, "spark_submit.extra_conf")
    if found:
        return found, looked
    arg_settings, properties_files = _extra_args_settings(extra_args)
    found = _describe(arg_settings, "spark_submit.extra_args")
    if found:
        return found, looked
    conf = spark_conf_dir(env, spark_submit)
    # spark-submit reads --properties-file instead of spark-defaults.conf
    for defaults in properties_files or ([os.path.join(conf, "spark-defaults.conf")] if conf else []):
        looked.append(defaults)
        found = _describe(defaults_settings(defaults), defaults)
        if found:
            return found, looked
    for directory in driver_conf_dirs(env, spark_submit):
        site = os.path.join(directory, "hive-site.xml")
        looked.append(site)
        found = _describe(hive_site_settings(site), site)
        if found:
            return found, looked
    return None, looked


def host_hive_site(env):
    """A hive-site.xml this host has (the environment's conf directories, then
    the usual package locations), or None."""
    dirs = [env.get(name) for name in ("SPARK_CONF_DIR", "HADOOP_CONF_DIR", "HIVE_CONF_DIR")]
    for directory in [d for d in dirs if d] + list(HOST_HIVE_CONF_DIRS):
        site = os.path.join(directory, "hive-site.xml")
        if os.path.isfile(site):
            return site
    return None


def no_metastore_message(looked):
    return ("spark_submit is enabled without state_dir, so the engine needs the cluster's Hive Metastore, "
            "and no Metastore configuration was found for a client-mode driver on this host (looked in %s). "
            "Put the cluster's hive-site.xml in SPARK_CONF_DIR or HADOOP_CONF_DIR (environment option, or "
            "hadoop_conf_dir), or set spark_submit.extra_conf spark.hadoop.hive.metastore.uris: "
            "thrift://HOST:9083; --files hive-site.xml does not reach a client-mode driver. For a private "
            "embedded catalog on purpose, set state_dir" % ", ".join(looked))


def host_conf_message(site, state_dir):
    return ("spark_submit is not enabled, so the engine would run with a private embedded catalog (in %s) "
            "that knows none of the cluster's tables, but this host has a Hive configuration (%s). Enable "
            "spark_submit to use the cluster's Metastore, or set state_dir to use an embedded catalog on "
            "purpose" % (state_dir, site))
