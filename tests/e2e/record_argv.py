"""A stand-in for a post-compaction command (e.g. impala-shell): appends its
arguments as one JSON line to the file named by its first argument; exits 3
when an argument names the table given by --fail-for (a failing refresh)."""

from __future__ import annotations

import json
import sys


def main() -> int:
    args = sys.argv[1:]
    log, rest = args[0], args[1:]
    fail_for = None
    if len(rest) >= 2 and rest[0] == "--fail-for":
        fail_for, rest = rest[1], rest[2:]
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(rest) + "\n")
    if fail_for and any(fail_for in a for a in rest):
        sys.stderr.write(f"refresh of {fail_for} refused by the stand-in\n")
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
