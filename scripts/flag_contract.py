"""Write the engine's copy of the command/flag contract.

The contract (which engine command takes which flag, its type, and how the
modules write it) has one source: ``ENGINE_FLAGS`` in
plugins/module_utils/_lakekeeper_argv.py. The engine runs on the cluster
without the collection's plugins, so it reads a generated copy,
spark_app/lakekeeper_spark/flags.py, which this script writes::

    python scripts/flag_contract.py          # rewrite the copy
    python scripts/flag_contract.py --check  # exit 1 when the copy is stale

tests/engine/test_flag_contract.py fails when the copy is stale.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "plugins" / "module_utils" / "_lakekeeper_argv.py"
TARGET = ROOT / "spark_app" / "lakekeeper_spark" / "flags.py"

HEADER = '''"""The command/flag contract, as the engine reads it (args.py): which engine
command takes which flag, of which type. GENERATED from ENGINE_FLAGS in
plugins/module_utils/_lakekeeper_argv.py (the one source, where the rows are
described) by scripts/flag_contract.py: do not edit here.
tests/engine/test_flag_contract.py checks that this copy is current.
"""

'''


def _literal(value: Any) -> str:
    """``value`` (strings and tuples of them) as Python source, double-quoted."""
    if isinstance(value, tuple):
        items = [_literal(v) for v in value]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    return json.dumps(value)


def argv_module() -> Any:
    spec = importlib.util.spec_from_file_location("_lakekeeper_argv", SOURCE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def render() -> str:
    argv = argv_module()
    lines = [HEADER + "COMMANDS = " + _literal(tuple(argv.COMMANDS)),
             "# (module option, engine flag, engine dest, type, commands, render)",
             "ENGINE_FLAGS = ("]
    for row in argv.ENGINE_FLAGS:  # every command: COMMANDS
        cells = [("COMMANDS" if tuple(cell) == tuple(argv.COMMANDS) else _literal(cell)) if i == 4 else _literal(cell)
                 for i, cell in enumerate(row)]
        lines.append("    (" + ", ".join(cells) + "),")
    lines.append(")")
    return "\n".join(lines) + "\n"


def main(args: list[str]) -> int:
    text = render()
    if "--check" in args:
        if TARGET.read_text() != text:
            print(f"{TARGET} is stale: run {Path(__file__).name}", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
