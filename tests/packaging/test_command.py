"""`nats-conformance`: every `python -m` sub-command under one name, one help line each, the same
one-line errors with exit status 2."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

from nats_conformance import main, version

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = (
    "campaign",
    "replay",
    "pair",
    "coverage",
    "mutants",
    "bisect",
    "engine-check",
    "expectations",
    "surface",
    "changes",
    "report",
    "site",
    "baseline",
    "gate",
    "provision",
    "adapters",
    "releases",
    "map",
    "serve",
)


def test_help_lists_every_command_on_one_line() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "nats_conformance", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
        env={**os.environ, "COLUMNS": "80"},
    )
    assert result.returncode == 0
    commands, environment = result.stdout.split("\nenvironment variables:\n")
    listed = {  # a command's line is indented by 4; a wrapped help's next line by more
        line.split()[0]: line for line in commands.splitlines() if line.startswith("    ") and line[4] != " "
    }
    assert set(listed) == set(COMMANDS)
    assert "NATS_CONFORMANCE_CACHE" in environment
    assert all(len(line.split()) > 2 for line in listed.values())


@pytest.mark.parametrize("name", COMMANDS)
def test_each_command_has_its_own_help(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main([name, "--help"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: nats-conformance {name} ")


def test_version_names_the_distribution(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"nats-conformance {metadata.version('nats-conformance')}\n"


def test_version_without_metadata_is_pyprojects(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)
    assert version() == tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def test_report_is_reports_build(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["report", "--help"])
    assert "--engine {spark,duckdb}" in capsys.readouterr().out


def test_map_prints_the_mapped_subjects(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["map", "bar.*.*", "baz.{{wildcard(2)}}.{{wildcard(1)}}", "bar.a.b"]) == 0
    assert capsys.readouterr().out == "baz.b.a\n"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ((), "required: COMMAND"),
        (("frobnicate",), "invalid choice: 'frobnicate'"),
        (("campaign", "--cases", "-5"), "argument --cases: expected a whole number >= 0 (got '-5')"),
        (("report", "runs", "--out", "r", "--engine", "nope"), "argument --engine: invalid choice"),
        (("gate", "runs"), "required: --baseline"),
        (("provision", "--product", "nope"), "argument --product: invalid choice"),
        (("provision", "--product", "natscli", "--newest"), "--newest: names nats-server releases"),
        (("releases", "2.14.5"), "releases: takes release lines such as 2.14 (got '2.14.5')"),
        (("map", "foo.*", "bar.{{nope(1)}}", "foo.x"), "unknown-function: "),
    ],
)
def test_errors_are_one_line_with_exit_status_2(
    args: tuple[str, ...], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(list(args)) == 2
    errors = capsys.readouterr().err
    assert len(errors.splitlines()) == 1, errors
    assert errors.startswith("nats-conformance: error: ")
    assert expected in errors
    assert "python -m" not in errors
