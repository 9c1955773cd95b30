# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The kinit role's filters: klist output as MIT klist prints it with
LC_ALL=C and TZ=UTC, and durations."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.lakekeeper.hive.plugins.filter.lakekeeper_klist import duration_seconds, klist_ticket

KLIST = """Ticket cache: FILE:/tmp/krb5cc_lakekeeper_1000
Default principal: lakekeeper@LAKEKEEPER.TEST

Valid starting     Expires            Service principal
11/24/26 23:50:35  11/25/26 09:50:35  krbtgt/LAKEKEEPER.TEST@LAKEKEEPER.TEST
\trenew until 11/25/26 23:50:35
11/24/26 23:51:00  11/25/26 09:50:35  HTTP/nn1.lakekeeper.test@LAKEKEEPER.TEST
"""


@pytest.mark.parametrize("value, seconds", [
    ("1h", 3600), ("1h30m", 5400), ("600", 600), (600, 600), ("90s", 90), ("1d 2h", 93600), ("0", 0), ("2H", 7200),
])
def test_duration_seconds(value, seconds):
    assert duration_seconds(value) == seconds


@pytest.mark.parametrize("value", ["", "1x", "h", "-5", "1.5h"])
def test_duration_seconds_refuses_what_is_not_a_duration(value):
    with pytest.raises(AnsibleFilterError, match="not a duration"):
        duration_seconds(value)


def test_ticket_of_the_principal_with_its_time_left():
    t = klist_ticket(KLIST, now="11/25/26 08:50:35\n", principal="lakekeeper@LAKEKEEPER.TEST")
    assert t == {"principal": "lakekeeper@LAKEKEEPER.TEST", "realm": "LAKEKEEPER.TEST", "principal_matches": True,
                 "tgt_expires": "11/25/26 09:50:35", "remaining_seconds": 3600}


def test_expired_ticket_has_negative_time_left():
    assert klist_ticket(KLIST, now="11/25/26 09:50:45", principal="lakekeeper")["remaining_seconds"] == -10


def test_two_digit_years_across_a_new_year():
    out = KLIST.replace("11/25/26 09:50:35  krbtgt", "01/01/27 00:10:00  krbtgt")
    assert klist_ticket(out, now="12/31/26 23:10:00")["remaining_seconds"] == 3600


def test_principal_without_realm_matches_any_realm_and_others_do_not():
    assert klist_ticket(KLIST, principal="lakekeeper")["principal_matches"]
    assert not klist_ticket(KLIST, principal="lakekeeper@OTHER.TEST")["principal_matches"]
    assert not klist_ticket(KLIST, principal="other")["principal_matches"]


def test_only_the_tgt_of_the_principals_realm_counts():
    # a cross-realm TGT and a service ticket, but no krbtgt/LAKEKEEPER.TEST@LAKEKEEPER.TEST
    out = KLIST.replace("krbtgt/LAKEKEEPER.TEST@LAKEKEEPER.TEST", "krbtgt/OTHER.TEST@LAKEKEEPER.TEST")
    t = klist_ticket(out, now="11/25/26 08:50:35", principal="lakekeeper@LAKEKEEPER.TEST")
    assert t["tgt_expires"] == "" and t["remaining_seconds"] == -1


def test_unknown_time_or_empty_cache():
    assert klist_ticket(KLIST, now="")["remaining_seconds"] == -1
    assert klist_ticket("", now="11/25/26 08:50:35", principal="x") == {
        "principal": "", "realm": "", "principal_matches": False, "tgt_expires": "", "remaining_seconds": -1}
