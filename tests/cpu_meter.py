# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""CPU seconds of the suite's part this process runs in, and the timings of
the steps of long tests (each play, each spark-submit).

Under scripts/suite.py each part runs in a cgroup of its own: the CPU seconds
of every process the part started (Spark JVMs, ansible-playbook, spark-submit)
are counted there. A part runs its tests one after another, so the counter's
change over a step is that step's CPU (background processes a step left
running included). Outside such a cgroup (a plain pytest run) ``cpu_now()``
is None and the timings carry the wall time only.

``TIMINGS`` collects one line a step; tests/conftest.py prints them at the
end of the run ("timings of the steps"), passed or failed.
"""

from __future__ import annotations

import os


def _suite_cgroup_counter():
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:
        controllers, path = line.split(":", 2)[1:]
        if "lakekeeper-suite-" not in path:
            continue
        if controllers == "":  # cgroup v2 (scripts/suite.py: /sys/fs/cgroup/unified or /sys/fs/cgroup)
            counters = ["/sys/fs/cgroup/unified" + path + "/cpu.stat", "/sys/fs/cgroup" + path + "/cpu.stat"]
        elif "cpuacct" in controllers.split(","):
            counters = ["/sys/fs/cgroup/cpuacct" + path + "/cpuacct.usage"]
        else:
            continue
        for counter in counters:
            if os.path.exists(counter):
                return counter
    return None


COUNTER = _suite_cgroup_counter()
TIMINGS: list[str] = []


def cpu_now():
    """The part's CPU seconds so far, or None outside the suite's cgroups."""
    if COUNTER is None:
        return None
    try:
        with open(COUNTER, encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return None
    if COUNTER.endswith("cpu.stat"):
        for line in text.splitlines():
            if line.startswith("usage_usec "):
                return int(line.split()[1]) / 1e6
        return None
    return int(text) / 1e9


def record(label, seconds, cpu_before=None):
    """Append one step's line (CPU when ``cpu_before`` was read under the suite) and return it."""
    after = cpu_now() if cpu_before is not None else None
    line = "%s: %.0f s" % (label, seconds)
    if after is not None:
        line += ", %.1f CPU s" % (after - cpu_before)
    TIMINGS.append(line)
    return line
