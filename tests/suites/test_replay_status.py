"""`replay` ends with a campaign's exit statuses (README, "Exit statuses"): 0 when every replayed case
agrees, 1 when one diverges, 3 when too many are unknown, 2 on bad input, each of the last as one line."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from nats_conformance.suites.__main__ import main

ROOT = Path(__file__).resolve().parents[2]
PYTHON = shlex.quote(sys.executable)
QUESTION = ["--source", "*", "--destination", "{{sliceFromLeft(1,1)}}", "--subject", "00"]
"""A question the planted `sliceFromLeft` bug answers wrongly (examples/adapters/planted_bugs.py)."""


def replay(target: str, *extra: str) -> int:
    return main(["replay", "--target", target, *QUESTION, *extra])


@pytest.mark.parametrize(
    ("adapter", "status", "verdict"),
    [("correct.py", 0, "agree"), ("planted_bugs.py", 1, "diverge")],
)
def test_a_replay_exits_0_when_it_agrees_and_1_when_it_diverges(
    adapter: str, status: int, verdict: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert replay(f"adapter:{PYTHON} {ROOT / 'examples/adapters' / adapter}") == status
    assert f"mapping {verdict} on " in capsys.readouterr().out


def test_a_replay_that_learns_nothing_exits_3_unless_allowed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    silent = tmp_path / "silent.py"
    silent.write_text(  # answers its hello, then no question
        "import json, sys\nfrom nats_conformance.reference.adapter import handle_line\n"
        "print(json.dumps(handle_line(sys.stdin.buffer.readline())), flush=True)\n"
    )
    target = f"adapter:{PYTHON} {silent}"
    assert replay(target) == 3
    out = capsys.readouterr().out
    assert "mapping unknown on " in out
    assert "1 of 1 cases unknown (100.0%), above --max-unknown 5%" in out
    assert replay(target, "--max-unknown", "100%") == 0


@pytest.mark.parametrize(
    "argv",
    [
        ["replay", "{missing}"],
        ["replay", "{malformed}"],
        ["replay", "{null_source}", "--target", f"adapter:{PYTHON} {ROOT / 'examples/adapters/correct.py'}"],
        ["replay", "--target", "adapter:true", *QUESTION],
        ["replay", "--max-unknown", "lots", *QUESTION],
    ],
    ids=["missing-file", "malformed-file", "null-source", "adapter-without-hello", "bad-option"],
)
def test_bad_input_to_a_replay_is_one_line_and_exit_2(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    malformed = tmp_path / "malformed.json"
    malformed.write_text("{not json")
    null_source = tmp_path / "null-source.json"  # was replayed as the literal source `None`, exit 0
    null_source.write_text(
        '{"format": "nats-conformance-case", "version": 3, "feature": "mapping", "source": null, '
        '"destination": "b", "subject": "None", "server_version": "2.14.5"}'
    )
    paths = {
        "missing": str(tmp_path / "missing.json"),
        "malformed": str(malformed),
        "null_source": str(null_source),
    }
    assert main([part.format(**paths) for part in argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("nats-conformance: error: ")
    assert err.count("\n") == 1
