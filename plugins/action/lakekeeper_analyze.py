# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Action plugin of lakekeeper.hive.lakekeeper_analyze: ships the bundled Spark application, then runs the module."""

from __future__ import annotations

from ansible_collections.lakekeeper.hive.plugins.plugin_utils._lakekeeper_action import LakekeeperAction


class ActionModule(LakekeeperAction):
    pass
