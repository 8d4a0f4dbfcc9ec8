"""The documentation: the MkDocs site builds with --strict (every relative link and anchor resolves, every
page is in the nav), its CLI reference is generated from the parser, and README.md stays short."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from nats_conformance import parser

ROOT = Path(__file__).resolve().parents[2]

pytest.importorskip("mkdocs", reason="mkdocs is in the dev extra")


def test_site_builds_strict(tmp_path: Path) -> None:
    site = tmp_path / "site"
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "WARNING" not in result.stderr, result.stderr
    for page in ("index.html", "cli/index.html", "guide/servers/index.html", "benchmarks/index.html"):
        assert (site / page).is_file(), page
    assert not (site / "hooks.py").exists()
    # The CLI reference is the parser's help text, one section per sub-command.
    cli = (site / "cli" / "index.html").read_text()
    commands = parser(width=100)._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    for name in commands:
        assert f"nats-conformance {name}</code>" in cli, name
    assert "--max-unknown SHARE" in cli


def test_readme_is_short_and_links_resolve() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) < 200
    for command in ("./dev campaign", "./dev test"):
        assert command in readme
    for section in ("## Test my server", "## Test my library", "## Read the report", "## Exit statuses"):
        assert section in readme
    # Every relative link of the README names a file of the repository.
    for target in {part.split(")")[0] for part in readme.split("](")[1:]}:
        if "://" not in target:
            assert (ROOT / target.split("#")[0]).is_file(), target
