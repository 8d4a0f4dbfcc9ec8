"""The root conftest's guard: a test session that leaves a file changed or new in the checkout fails
(`./dev test` on a fresh clone leaves `git status --porcelain` empty)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.checkout import checkout_status


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def test_a_written_or_changed_file_shows_and_an_ignored_one_does_not(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    (tmp_path / ".gitignore").write_text("/runs/\n")
    (tmp_path / "kept.txt").write_text("a\n")
    git(tmp_path, "add", ".")
    git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "start")
    before = checkout_status(tmp_path)
    assert before == frozenset()
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "cases.parquet").write_text("ignored")
    assert checkout_status(tmp_path) == before
    (tmp_path / "kept.txt").write_text("b\n")
    (tmp_path / "left" / "behind").mkdir(parents=True)
    (tmp_path / "left" / "behind" / "x.json").write_text("{}")
    assert checkout_status(tmp_path) == {" M kept.txt", "?? left/behind/x.json"}


def test_outside_a_checkout_there_is_nothing_to_guard(tmp_path: Path) -> None:
    inside = subprocess.run(["git", "-C", str(tmp_path), "rev-parse"], check=False, capture_output=True)
    if inside.returncode == 0:
        pytest.skip("the temporary folder is inside a git checkout")
    assert checkout_status(tmp_path) is None
