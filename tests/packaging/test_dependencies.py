"""Every third-party package the shipped modules import is declared in pyproject.toml, as a core
dependency or in an extra (the distribution that provides it, found by importlib.metadata)."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ("reference", "fixtures", "suites", "records", "reports")
OURS = {*SHIPPED, "nats_conformance"}


def imported_names() -> dict[str, str]:
    """Each top-level name imported by a shipped module, with one module importing it."""
    found: dict[str, str] = {}
    files = [path for package in SHIPPED for path in (ROOT / package).rglob("*.py")]
    for path in [*files, ROOT / "nats_conformance" / "__init__.py"]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name.split(".")[0], str(path.relative_to(ROOT)))
    return {name: where for name, where in found.items() if name not in sys.stdlib_module_names | OURS}


def normalized(requirement: str) -> str:
    name = re.split(r"[\s<>=!~\[;]", requirement, maxsplit=1)[0]
    return re.sub(r"[-_.]+", "-", name).lower()


def test_every_imported_package_is_declared() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {normalized(r) for r in project["dependencies"]}
    declared |= {normalized(r) for extra in project["optional-dependencies"].values() for r in extra}
    providers = metadata.packages_distributions()
    undeclared = {
        name: where
        for name, where in imported_names().items()
        if not {normalized(d) for d in providers.get(name, [name])} & declared
    }
    assert undeclared == {}
