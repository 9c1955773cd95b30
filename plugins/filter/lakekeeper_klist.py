# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Filters of the kinit role: the cached ticket as klist prints it, and
durations such as 1h30m. The documentation is in klist_ticket.yml and
duration_seconds.yml."""

from __future__ import annotations

import datetime
import re

from ansible.errors import AnsibleFilterError

# klist prints timestamps with strftime("%x %X"); with LC_ALL=C that is
# "%m/%d/%y %H:%M:%S" (two-digit year: 00-68 is 20xx, 69-99 is 19xx).
KLIST_DATE_FORMAT = "%m/%d/%y %H:%M:%S"
DURATION_UNITS = {"d": 86400, "h": 3600, "m": 60, "s": 1, "": 1}


def duration_seconds(value):
    """Seconds of a duration made of d/h/m/s parts: "1h30m" -> 5400,
    "600" -> 600."""
    text = str(value).strip().lower()
    if not re.match(r"^(\d+\s*[dhms]?\s*)+$", text):
        raise AnsibleFilterError("duration_seconds: %r is not a duration such as 90s, 30m, 1h, 1h30m" % (value,))
    return sum(int(number) * DURATION_UNITS[unit] for number, unit in re.findall(r"(\d+)\s*([dhms]?)", text))


def klist_ticket(stdout, now="", principal=""):
    """What klist (LC_ALL=C, TZ=UTC) says of the cache: its default
    principal, that principal's realm, whether it is the wanted principal
    (without "@REALM" any realm matches), the expiry of the realm's TGT and
    the seconds left from now (date -u "+%m/%d/%y %H:%M:%S" on the same
    host; -1 when either is unknown)."""
    stdout = stdout or ""
    found = re.search(r"^Default principal:\s*(\S+)", stdout, re.M)
    found = found.group(1) if found else ""
    realm = found.split("@")[-1]
    matches = found == principal or ("@" not in principal and found.split("@")[0] == principal)
    # "<valid starting> <expires> krbtgt/REALM@REALM": the second timestamp
    expires = re.search(r"^\S+ \S+\s+(\d\d/\d\d/\d\d \d\d:\d\d:\d\d)\s+krbtgt/" + re.escape(realm) + "@"
                        + re.escape(realm) + r"\s*$", stdout, re.M)
    expires = expires.group(1) if expires else ""
    now = (now or "").strip()
    remaining = -1
    if expires and now:
        delta = (datetime.datetime.strptime(expires, KLIST_DATE_FORMAT)
                 - datetime.datetime.strptime(now, KLIST_DATE_FORMAT))
        remaining = int(delta.total_seconds())
    return {"principal": found, "realm": realm, "principal_matches": matches, "tgt_expires": expires,
            "remaining_seconds": remaining}


class FilterModule(object):
    def filters(self):
        return {"klist_ticket": klist_ticket, "duration_seconds": duration_seconds}
