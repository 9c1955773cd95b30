"""The engine package's layering, read from its syntax trees (no Spark, no
imports of the package itself).

Every ``import`` counts, at module level and inside functions alike (an
import moved into a function hides a cycle from Python, not from this
test): the package's import graph has no cycle, no module in ``commands/``
imports another ``commands/`` module (shared code lives below the
commands), no module reaches for another module's private
(``_underscore``) names, and every name is imported from the module that
defines it (not through another module that happens to import it).

The sub-packages are layers too (``LAYERS``, lowest first): every import
from one package into another goes down the list, so no package imports
one above it and no two packages import each other.
"""

from __future__ import annotations

import ast
from pathlib import Path

PKG_DIR = Path(__file__).resolve().parents[2] / "spark_app" / "lakekeeper_spark"
PKG = PKG_DIR.name
# Private attributes of pyspark/py4j objects, not of this package.
PYSPARK_PRIVATE = {"_jvm", "_jsc", "_jsparkSession", "_jdf", "_gateway", "_gateway_client", "_active_spark_context",
                   "_ensure_initialized"}  # SparkContext's: the gateway spark-submit started, before a context


# The engine's packages, lowest first (the package docstring of
# lakekeeper_spark says what each holds and why it sits where it does).
# The root's __init__ (only __version__, importing nothing) is below them
# all; the root's own modules (cli, session: the entry point) above them all.
LAYERS = ["report", "compat", "storage", "policy", "catalog", "protocol", "rewrite", "commands"]
ROOT_INIT = "(version)"
ENTRY = "(entry)"


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PKG_DIR.rglob("*.py")):
        parts = list(path.relative_to(PKG_DIR.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _package_of(module: str) -> str:
    return module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]


def _imports(module: str) -> list[tuple[str, list[str], int]]:
    """(imported module of this package, names imported from it, line) of
    every import statement anywhere in ``module``."""
    tree = ast.parse(MODULES[module].read_text(), filename=str(MODULES[module]))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, [], node.lineno) for a in node.names if a.name.split(".")[0] == PKG]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = _package_of(module).split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != PKG:
                continue
            names = [a.name for a in node.names]
            subs = [f"{target}.{n}" for n in names if f"{target}.{n}" in MODULES]
            rest = [n for n in names if f"{target}.{n}" not in MODULES]
            out += [(s, [], node.lineno) for s in subs]
            if rest or not subs:
                out.append((target, rest, node.lineno))
    return out


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for m in MODULES:
        for target, _names, _line in _imports(m):
            assert target in MODULES, f"{m} imports {target}, which is not a module of the package"
            if target != m:
                graph[m].add(target)
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                return path[path.index(n):] + [n]
            if n not in state:
                found = visit(n)
                if found:
                    return found
        path.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return None


def test_the_graph_is_read_from_every_import():
    """The reader sees module-level and function-local imports, relative and
    absolute (guards the tests below against reading nothing)."""
    graph = _graph()
    assert f"{PKG}.cli" in MODULES and f"{PKG}.commands.compact" in MODULES
    assert f"{PKG}.report.errors" in graph[f"{PKG}.cli"]  # module level
    assert f"{PKG}.session" in graph[f"{PKG}.cli"]  # inside main()
    assert f"{PKG}.commands.compact" in graph[f"{PKG}.cli"]  # inside _run_tables()
    assert any(f"{PKG}.commands." in t for t in graph[f"{PKG}.cli"])
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set(), "c": {"a"}}) is None


def test_no_import_cycle():
    cycle = _cycle(_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_no_command_imports_another():
    commands = {m for m in MODULES if m.startswith(f"{PKG}.commands.")}
    sideways = [(m, t, line) for m in sorted(commands) for t, _names, line in _imports(m)
                if t in commands and t != m]
    assert not sideways, f"commands importing commands: {sideways}"


def test_no_private_name_crosses_a_module():
    reached = []
    for m in MODULES:
        for target, names, line in _imports(m):
            reached += [f"{m}:{line} imports {target}.{n}" for n in names if n.startswith("_") and not n.startswith("__")]
        tree = ast.parse(MODULES[m].read_text())
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                    and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
                    and node.attr not in PYSPARK_PRIVATE):
                reached.append(f"{m}:{node.lineno} reads .{node.attr}")
    assert not reached, "private names used across modules:\n" + "\n".join(reached)


def _defined(module: str) -> set[str]:
    """Names a module defines at its top level (functions, classes, assignments)."""
    out = set()
    for node in ast.parse(MODULES[module].read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.Assign):
            out |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.add(node.target.id)
    return out


def test_names_come_from_the_module_that_defines_them():
    assert "recover_table" in _defined(f"{PKG}.protocol.recovery") and "__version__" in _defined(PKG)
    borrowed = [f"{m}:{line} imports {n} from {target}" for m in MODULES for target, names, line in _imports(m)
                for n in names if n not in _defined(target)]
    assert not borrowed, "names imported through a module that does not define them:\n" + "\n".join(borrowed)


def _layer(module: str) -> str:
    """The package ``module`` belongs to: a name of ``LAYERS``, ``ROOT_INIT`` or ``ENTRY``."""
    if module == PKG:
        return ROOT_INIT
    parts = module.split(".")
    if len(parts) == 2 and MODULES[module].name != "__init__.py":
        return ENTRY
    return parts[1]


def _rank(layer: str) -> int:
    order = [ROOT_INIT] + LAYERS + [ENTRY]
    assert layer in order, f"package {layer} is not in LAYERS: place it among the layers"
    return order.index(layer)


def test_layers_are_read_from_the_tree():
    """Every module's package is known, and the reader places modules where
    they are (guards the test below against checking nothing)."""
    assert _layer(PKG) == ROOT_INIT and _layer(f"{PKG}.cli") == ENTRY
    assert _layer(f"{PKG}.report.errors") == "report" and _layer(f"{PKG}.commands.compact") == "commands"
    assert _layer(f"{PKG}.compat") == "compat"
    assert _rank("report") < _rank("storage") < _rank("catalog") < _rank("protocol") < _rank("commands")
    assert {_layer(m) for m in MODULES} == set(LAYERS) | {ROOT_INIT, ENTRY}
    assert not _imports(PKG), "the root __init__ holds the version only and imports nothing"


def test_every_import_between_packages_goes_down():
    upward = sorted(f"{m}:{line} ({_layer(m)}) imports {target} ({_layer(target)})"
                    for m in MODULES for target, _names, line in _imports(m)
                    if _layer(target) != _layer(m) and _rank(_layer(target)) > _rank(_layer(m)))
    assert not upward, "imports that go up the layers (LAYERS, lowest first):\n" + "\n".join(upward)
