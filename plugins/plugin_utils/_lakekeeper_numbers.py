# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Numbers as the roles' filters read them from module results and
variables (which may be missing, strings, or floats written as text)."""

from __future__ import annotations


def to_int(value, default=0):
    """``value`` as an int (``"12"``, ``12.7`` and ``"12.7"`` give 12), else ``default``."""
    try:
        return int(value)
    except (TypeError, ValueError):
        try:
            return int(float(value))
        except (TypeError, ValueError):
            return default
