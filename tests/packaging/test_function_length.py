"""No function outside the tests is longer than `MAX_LINES` (issue 55), counted from its `def` line to its
last line (`ast`), so that each reads in one screen; the longer ones are split into named steps.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 80
SKIPPED = frozenset({"tests", "node_modules"})
"""Folders not checked, besides hidden ones (`.venv`, `.git`): the tests, and tools' installs."""


def sources(root: Path) -> Iterator[Path]:
    """Every Python file under `root` outside `SKIPPED` and hidden folders (links not followed: the
    package's sub-packages are links to the checkout's top folders, read there)."""
    for folder, folders, files in os.walk(root):
        folders[:] = sorted(name for name in folders if name not in SKIPPED and not name.startswith("."))
        yield from (Path(folder) / name for name in sorted(files) if name.endswith(".py"))


def longer_functions(root: Path, limit: int = MAX_LINES) -> dict[tuple[str, str], int]:
    """(file relative to `root`, function name) -> lines, of every function (methods and nested ones
    too) longer than `limit` lines from its `def` line to its last."""
    found = {}
    for path in sources(root):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > limit:
                    found[(path.relative_to(root).as_posix(), node.name)] = lines
    return found


def test_no_function_outside_the_tests_is_longer_than_the_limit() -> None:
    longer = longer_functions(ROOT)
    assert not longer, f"over {MAX_LINES} lines, split into named steps: {longer}"


def statements(count: int, indent: str) -> str:
    """`count` lines of one statement each, at `indent`."""
    return "".join(f"{indent}x = {n}\n" for n in range(count))


def test_a_function_of_81_lines_is_found_one_of_80_and_the_tests_are_not(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "code.py").write_text(
        f"def short():\n{statements(79, '    ')}\n\nclass C:\n    def long(self):\n{statements(80, ' ' * 8)}"
    )
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_code.py").write_text(f"def test_long():\n{statements(100, '    ')}")
    assert longer_functions(tmp_path) == {("pkg/code.py", "long"): 81}
