# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Private helpers of the lakekeeper.hive modules (not a public API): the
argument specs.

Every module starts from lakekeeper_argspec() (table selectors, the engine's
shared options, how the engine is launched) and adds its own options with
ArgumentSpec.update_argspec, as community.crypto's module_utils/_argspec.py
does; the option groups shared by two modules are the functions below.
"""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.lakekeeper.hive.plugins.module_utils._lakekeeper_app import (
    DEFAULT_APP_CACHE_DIR,
)
from ansible_collections.lakekeeper.hive.plugins.module_utils._lakekeeper_argv import (
    SELECTORS,
    dedupe_suboptions,
    secret_values,
    spark_submit_suboptions,
    tiering_suboptions,
)


class _Module(AnsibleModule):
    """AnsibleModule that also keeps secret-looking extra_conf and
    environment values out of its syslog/journald invocation message (that
    message is written before run_module could extend no_log_values)."""

    def _log_invocation(self):
        params = self.params or {}
        for value in secret_values(params.get("spark_submit"), params.get("environment")):
            self.no_log_values.add(value)
        super()._log_invocation()


class ArgumentSpec:
    """An argument spec and its constraints, to be extended by each module."""

    def __init__(self, argument_spec=None, mutually_exclusive=None, required_one_of=None):
        self.argument_spec = dict(argument_spec or {})
        self.mutually_exclusive = list(mutually_exclusive or [])
        self.required_one_of = list(required_one_of or [])

    def update_argspec(self, **kwargs):
        self.argument_spec.update(kwargs)
        return self

    def update(self, mutually_exclusive=None, required_one_of=None):
        self.mutually_exclusive.extend(mutually_exclusive or [])
        self.required_one_of.extend(required_one_of or [])
        return self

    def create_ansible_module(self, **kwargs):
        return _Module(argument_spec=self.argument_spec, mutually_exclusive=self.mutually_exclusive,
                       required_one_of=self.required_one_of, supports_check_mode=True, **kwargs)


def lakekeeper_argspec():
    """The options of every module (doc fragments lakekeeper and lakekeeper.spark)."""
    return ArgumentSpec(
        argument_spec=dict(
            table=dict(type="str"),
            tables=dict(type="list", elements="str"),
            database=dict(type="str"),
            config_file=dict(type="path"),
            block_size_mb=dict(type="int"),
            compaction_ratio_threshold=dict(type="float"),
            target_file_size_mb=dict(type="int"),
            backup_prefix=dict(type="str"),
            log_level=dict(type="str", choices=["DEBUG", "INFO", "WARNING", "ERROR"]),
            parallelism=dict(type="int"),
            lease_timeout=dict(type="str"),
            fail_on_refused=dict(type="bool", default=False),
            progress_file=dict(type="path"),
            metrics_dir=dict(type="path"),
            spark_submit=dict(type="dict", options=spark_submit_suboptions()),
            spark_submit_path=dict(type="path"),
            spark_home=dict(type="path"),
            hadoop_conf_dir=dict(type="path"),
            hdfs_binary=dict(type="str"),
            yarn_binary=dict(type="str"),
            environment=dict(type="dict"),
            python=dict(type="str"),
            state_dir=dict(type="path"),
            app_cache_dir=dict(type="path", default=DEFAULT_APP_CACHE_DIR),
            max_partitions_listed=dict(type="int", default=10000),
        ),
        mutually_exclusive=[SELECTORS],
        required_one_of=[SELECTORS],
    )


def retention_options():
    """Backup retention (cleanup, and analyze for its verdicts; doc fragment lakekeeper.retention)."""
    return dict(
        older_than=dict(type="str"),
        keep_last=dict(type="int"),
        grace_period=dict(type="str"),
    )


def compaction_options():
    """Compaction modes and the partition filter (analyze and compact; doc fragment lakekeeper.compaction)."""
    return dict(
        mode=dict(type="str", choices=["ratio", "minor", "major", "smart"]),
        min_input_files=dict(type="int"),
        fragment_ratio=dict(type="float"),
        min_target_ratio=dict(type="float"),
        max_file_size_mb=dict(type="float"),
        where=dict(type="str"),
        queues=dict(type="dict"),
    )


def tiering_option():
    """compact's ``tiering`` (its rules are checked by _lakekeeper_argv.tiering_args)."""
    return dict(type="dict", options=tiering_suboptions())


def dedupe_option():
    """compact's ``dedupe`` (its rules are checked by _lakekeeper_argv.rewrite_args)."""
    return dict(type="dict", options=dedupe_suboptions())
