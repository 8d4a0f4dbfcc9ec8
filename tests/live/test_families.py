"""The campaign's family selection on a live target: `--family` runs only the named families, the operator
family runs the mapping cases on a server whose mappings are pushed in account JWTs, and a family name no
family has is one line and exit 2."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from nats_conformance.fixtures.options import Target
from nats_conformance.records.replay import REPLAY, replay_command
from nats_conformance.records.schema import Case
from nats_conformance.records.writer import CASES
from nats_conformance.suites.__main__ import main

pytestmark = pytest.mark.live
ROOT = Path(__file__).resolve().parents[2]


def test_the_operator_family_pushes_its_mappings_in_account_jwts(target: Target, tmp_path: Path) -> None:
    if target.backend == "external":
        pytest.skip("operator mode needs a server this suite starts")
    status = main(
        [
            *("campaign", "--server-version", target.spec.text, "--backend", target.backend),
            *("--family", "operator", "--budget", "operator=2000", "--out", str(tmp_path)),
        ]
    )
    (run_dir,) = tmp_path.iterdir()
    manifest = json.loads((run_dir / "manifest.json").read_text())
    table = pq.read_table(run_dir / CASES, columns=["backend", "feature", "verdict"])
    assert manifest["cases"] == table.num_rows >= 2000
    assert set(table.column("backend").to_pylist()) == {f"{target.backend}-operator"}
    assert set(table.column("feature").to_pylist()) <= {"mapping", "partition", "validation"}
    assert table.column("verdict").to_pylist().count("agree") > 0
    assert status == 0, manifest["verdicts"]


def test_an_unknown_family_is_one_line() -> None:
    command = [
        sys.executable,
        "-m",
        "nats_conformance.suites",
        "campaign",
        "--family",
        "nosuch",
        "--server-version",
        "2.14.5",
    ]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert "--family takes one of mapping, validation" in done.stderr
    assert "Traceback" not in done.stderr


def test_an_operator_case_replays_in_operator_mode(
    target: Target, capsys: pytest.CaptureFixture[str]
) -> None:
    if target.backend == "external":
        pytest.skip("operator mode needs a server this suite starts")
    case = Case(
        run_id="r",
        case_id=0,
        implementation="nats-server",
        server_version=target.spec.label,
        backend=f"{target.backend}-operator",
        feature="mapping",
        functions="wildcard",
        source="a.*",
        destination="b.{{wildcard(1)}}",
        subject="a.x",
        expected="b.x",
        observed="b.x",
        verdict="agree",
    )
    words = shlex.split(replay_command(case))
    assert words[words.index("--backend") + 1 :][:3] == [target.backend, "--layout", "operator"]
    assert main(words[len(REPLAY) - 1 :]) == 0  # from "replay" on
    shown = f"mapping agree on nats-server {target.spec.label} ({target.backend}-operator)"
    assert shown in capsys.readouterr().out


@pytest.mark.parametrize(
    ("source", "destination"),
    [
        *(("cc.*", d) for d in ["d\x01x.$1", 'd"x.$1', "d\\x.$1", "d\tx.$1", "d\x7fx\r.$1"]),
        *((s, "d.$1") for s in ["c\tc.*", "c\nc.*", "c c.*", "c\\tc.*", 'c"c.*', "c'c.*"]),
    ],
)
def test_control_characters_and_quotes_reach_the_server_as_written(
    target: Target, source: str, destination: str
) -> None:
    """A source and a destination are written into the config file so that the server reads exactly
    them (a key verbatim, a value with the parser's escapes): the validation case agrees (accepted and
    delivered, or refused like the reference) instead of a config parse error or another subject."""
    if target.backend == "external":
        pytest.skip("the config file of a server this suite starts")
    command = ["replay", "--server-version", target.spec.text, "--backend", target.backend]
    assert main([*command, "--feature", "validation", "--source", source, "--destination", destination]) == 0


def test_an_operator_case_without_a_subject_replays_with_one_of_its_source(
    target: Target, capsys: pytest.CaptureFixture[str]
) -> None:
    """A validation case the operator family recorded (no subject) publishes a subject of its source."""
    if target.backend == "external":
        pytest.skip("operator mode needs a server this suite starts")
    command = ["replay", "--server-version", target.spec.text, "--backend", target.backend, "--operator"]
    assert main([*command, "--feature", "validation", "--source", "a.*", "--destination", "b.$1"]) == 0
    assert f"({target.backend}-operator)" in capsys.readouterr().out
