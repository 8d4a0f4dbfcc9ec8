"""``python -m nats_conformance.reference map`` mirrors ``nats server mapping``; errors are one line and exit
2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nats_conformance.reference", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=30,
        check=False,
    )


def test_map_prints_each_mapped_subject() -> None:
    result = run("map", "bar.*.*", "baz.{{wildcard(2)}}.{{wildcard(1)}}", "bar.a.b", "bar.one.two")
    assert result.returncode == 0
    assert result.stdout.splitlines() == ["baz.b.a", "baz.two.one"]


def test_map_honours_server_version() -> None:
    assert (
        run("map", "*", "{{SplitFromLeft(1,4)}}", "1234567", "--server-version", "2.9.25").stdout
        == "1234.567\n"
    )
    result = run("map", "*", "{{split(1,-)}}", "a-b", "--server-version", "2.8.4")
    assert result.returncode == 2
    assert result.stderr.startswith("nats-conformance: error: ")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("map", "foo.*", "bar.{{nope(1)}}", "foo.x"), "unknown-function"),
        (("map", "foo.*", "bar.$1", "baz.x"), "subject-mismatch"),
        (("map", "foo.*", "bar.$1", "foo.x", "--server-version", "7.0"), "unknown-version"),
        (("map", "foo.*", "bar.$1", "foo.x", "--server-version", "2.14.99"), "unknown-version"),
        (("map",), "required"),
        (("frobnicate",), "invalid choice"),
    ],
)
def test_errors_are_one_line_exit_2_no_traceback(args: tuple[str, ...], expected: str) -> None:
    result = run(*args)
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("nats-conformance: error: ")
    assert expected in lines[0]
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("suites", "campaign", "--cases", "-5"), "--cases"),
        (("suites", "campaign", "--cases", "abc"), "--cases"),
        (("suites", "campaign", "--seed", "x"), "--seed"),
        (("suites", "campaign", "--max-unknown", "150%"), "--max-unknown"),
        (("suites", "campaign", "--max-unknown", "lots"), "--max-unknown"),
        (("suites", "replay", "--partitions", "-1"), "--partitions"),
        (("suites", "engine-check", "--questions", "-3"), "--questions"),
        (("suites", "frobnicate"), "invalid choice"),
        (("reports", "build", "runs", "--out", "r", "--engine", "nope"), "--engine"),
        (("reports", "gate", "runs", "--baseline", "b", "--max-unknown", "-1"), "--max-unknown"),
        (("reports", "gate", "runs"), "--baseline"),
        (("fixtures", "provision", "--product", "nope"), "--product"),
    ],
)
def test_every_cli_gives_one_line_for_a_bad_option(args: tuple[str, ...], expected: str) -> None:
    module, *rest = args
    result = subprocess.run(
        [sys.executable, "-m", f"nats_conformance.{module}", *rest],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("nats-conformance: error: ")
    assert expected in lines[0]
    assert "usage:" not in result.stderr
