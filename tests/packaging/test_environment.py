"""Every environment variable the shipped code reads is listed in `nats-conformance --help`, and in the help
of each command that reads it (`reference.environment.VARIABLES`, the one list)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from nats_conformance import parser
from nats_conformance.fixtures.configfile import KEYS
from nats_conformance.reference.environment import VARIABLES

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ("reference", "fixtures", "suites", "records", "reports")
PASSED_THROUGH = {"PYTHONPATH"}
"""Read only to hand on to a child process with the checkout added (fixtures/reaper.py): not a setting."""
INDIRECT = {"fixtures/configfile.py": {key.environment for key in KEYS.values() if key.environment}}
"""The variables a module reads through a name the scan cannot follow (the configuration file's keys
that an environment variable overrides)."""


def _constants(tree: ast.Module) -> dict[str, str]:
    """The module's top-level `NAME = "text"` assignments."""
    found = {}
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
        if isinstance(target, ast.Name) and isinstance(value, ast.Constant) and isinstance(value.value, str):
            found[target.id] = value.value
    return found


def _environment_reads(path: Path) -> set[str]:
    """The variable names `path` reads: `os.getenv(X)`, `<...>environ.get(X)`, `.setdefault(X, ...)`,
    `environ[X]`, with X a string or a module constant (anything else fails: the scan must see it)."""
    tree = ast.parse(path.read_text())
    constants = _constants(tree)
    keys: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
            owner = node.func.value
            owner_name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
            if node.func.attr == "getenv" or (
                owner_name == "environ" and node.func.attr in {"get", "setdefault"}
            ):
                keys.append(node.args[0])
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            value = node.value
            if (value.attr if isinstance(value, ast.Attribute) else getattr(value, "id", "")) == "environ":
                keys.append(node.slice)
    names = set()
    for key in keys:
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            names.add(key.value)
        elif isinstance(key, ast.Name) and key.id in constants:
            names.add(constants[key.id])
        elif str(path.relative_to(ROOT)) in INDIRECT:
            names |= INDIRECT[str(path.relative_to(ROOT))]
        else:
            raise AssertionError(f"{path}: an environment read the scan cannot name: {ast.unparse(key)}")
    return names


def read_in_code() -> dict[str, str]:
    """Each variable the shipped modules read, with one file reading it."""
    files = [path for package in SHIPPED for path in sorted((ROOT / package).rglob("*.py"))]
    found: dict[str, str] = {}
    for path in [*files, ROOT / "nats_conformance" / "__init__.py"]:
        for name in _environment_reads(path):
            found.setdefault(name, str(path.relative_to(ROOT)))
    return found


def test_the_scan_finds_the_known_reads() -> None:
    found = read_in_code()
    assert {"NATS_CONFORMANCE_DEADLINE", "NATS_CONFORMANCE_CACHE", "GOPROXY", "DOCKER_HOST", "CI"} <= set(
        found
    )


def test_every_variable_the_code_reads_is_in_the_top_level_help() -> None:
    help_text = parser(width=100).format_help()
    assert "\nenvironment variables:\n" in help_text
    missing = {
        name: where
        for name, where in read_in_code().items()
        if name not in PASSED_THROUGH and f"\n  {name} " not in help_text
    }
    assert missing == {}
    assert {variable.name for variable in VARIABLES} <= set(read_in_code())  # the list names no stale one


@pytest.mark.parametrize("command", ["campaign", "replay", "provision", "report", "gate"])
def test_each_command_lists_the_variables_it_reads(command: str) -> None:
    commands = next(a for a in parser(width=100)._actions if a.dest == "command")
    help_text = commands.choices[command].format_help()  # type: ignore[attr-defined]
    listed = {variable.name for variable in VARIABLES if f"\n  {variable.name} " in help_text}
    assert listed == {variable.name for variable in VARIABLES if command in variable.commands}
