# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Filter lakekeeper_progress: the engine's progress records (JSON lines of
its --progress-file) that are new since the last poll, as lines for a
person. Documentation in lakekeeper_progress.yml."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.lakekeeper.hive.plugins.plugin_utils._lakekeeper_progress import (
    ProgressError,
    lakekeeper_progress as _progress,
    progress_line,
)

__all__ = ["lakekeeper_progress", "progress_line"]


def lakekeeper_progress(text, seen=0):
    """See plugin_utils/_lakekeeper_progress.py (errors as filter errors)."""
    try:
        return _progress(text, seen)
    except ProgressError as e:
        raise AnsibleFilterError(str(e)) from None


class FilterModule(object):
    def filters(self):
        return {"lakekeeper_progress": lakekeeper_progress}
