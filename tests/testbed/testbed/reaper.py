"""Watchdog for a test bed owned by one process (pytest).

Reads "PGID TICKS NAME" lines on stdin. When stdin closes without a final
"done" line (its owner died, however), it kills those process groups, so no
JVM outlives a crashed or killed pytest run.

    python -m testbed.reaper < pipe
"""
from __future__ import annotations

import sys

from .procs import Proc, stop_all


def main() -> int:
    groups: list[tuple[int, int, str]] = []
    done = False
    for line in sys.stdin:
        line = line.strip()
        if line == "done":
            done = True
            break
        if line:
            pgid, ticks, name = line.split(" ", 2)
            groups.append((int(pgid), int(ticks), name))
    if done:
        return 0
    print(f"reaper: owner went away; stopping {len(groups)} service groups", flush=True)
    procs = [Proc(name=n, pid=g, ticks=t or None, log="") for g, t, n in groups]
    for note in stop_all(procs, timeout=10.0):
        print(f"reaper: {note}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
