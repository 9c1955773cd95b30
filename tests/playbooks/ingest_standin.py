# -*- coding: utf-8 -*-
# Copyright: Lakekeeper for Ansible contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""A stand-in ingestion process: appends the current time to a file every
0.1 s until killed.

    python ingest_standin.py TICKS_FILE

The playbook tests pause it with SIGSTOP and resume it with SIGCONT (hooks of
the pipeline role): while it is paused, no tick is written, which the tests
compare with the ingestion window the maintenance role reports.
"""

from __future__ import annotations

import sys
import time


def main(path):
    with open(path, "a", buffering=1) as out:
        while True:
            out.write("%.3f\n" % time.time())
            time.sleep(0.1)


if __name__ == "__main__":
    main(sys.argv[1])
