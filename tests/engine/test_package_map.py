"""The map and the code agree: each engine package's ``__init__`` docstring
names every module of the package (and no other), and every file the
README's "What it does, step by step" table names exists. Pure: reads text."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PKG_DIR = ROOT / "spark_app" / "lakekeeper_spark"
PACKAGES = sorted(p.parent.name for p in PKG_DIR.glob("*/__init__.py") if p.parent.name != "commands")


@pytest.mark.parametrize("package", PACKAGES)
def test_each_package_docstring_names_its_modules(package):
    doc = ast.get_docstring(ast.parse((PKG_DIR / package / "__init__.py").read_text())) or ""
    named = set(re.findall(r"^- ``(\w+)``", doc, flags=re.M))
    modules = {p.stem for p in (PKG_DIR / package).glob("*.py") if p.stem != "__init__"}
    assert named == modules, f"{package}/__init__.py names {sorted(named - modules)} and misses {sorted(modules - named)}"


def test_the_root_docstring_names_every_package():
    doc = ast.get_docstring(ast.parse((PKG_DIR / "__init__.py").read_text())) or ""
    named = set(re.findall(r"^- ``(\w+)/``", doc, flags=re.M))
    assert named == set(PACKAGES) | {"commands"}


def test_the_readme_step_table_names_files_that_exist():
    text = (ROOT / "README.md").read_text()
    section = text.split("## What it does, step by step", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| step")]
    paths = [p for row in rows for p in re.findall(r"`([\w/]+\.py)`", row.split(" | ")[1])]
    assert len(paths) >= 15
    missing = [p for p in paths if not (PKG_DIR / p).is_file()]
    assert not missing, f"README step table names files that do not exist: {missing}"
