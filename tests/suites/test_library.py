"""Transform libraries as targets (issue 8): the planted bugs of examples/adapters/planted_bugs.py are all
found, each with a minimal case; the correct example adapter shows nothing; case files replay against any
adapter; the baseline gate fails on the changed target; expectations are updated from a run and stale
ones fail a strict run; a broken adapter gives one line or unknown cases, never a lost one."""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from nats_conformance.fixtures.clients.adapter import AdapterError, AdapterProcess
from nats_conformance.records.casefile import read_case_file
from nats_conformance.records.expectations import load_expectations
from nats_conformance.reference.profiles import NEWEST
from nats_conformance.reference.protocol import TransformQuestion
from nats_conformance.reports.baseline import Classes, class_verdicts, gate, read_baseline, write_baseline
from nats_conformance.suites.__main__ import main

ROOT = Path(__file__).resolve().parents[2]
PYTHON = shlex.quote(sys.executable)
CORRECT = f"adapter:{PYTHON} {ROOT / 'examples/adapters/correct.py'}"
PLANTED = f"adapter:{PYTHON} {ROOT / 'examples/adapters/planted_bugs.py'}"
CASES = "20000"
PLANTED_CASES = "40000"
"""The planted partition bug needs one multi-key partition token after one-token parts: 20,000 questions
found it on 4 of seeds 0-5, 40,000 on all 6 (measured); the other bugs show in far fewer."""
PLANTED_NAME = "example-planted-bugs-adapter"


def campaign(tmp_path: Path, target: str, *extra: str, cases: str = CASES) -> tuple[int, Path]:
    out = tmp_path / "runs"
    before = set(out.iterdir()) if out.exists() else set()
    status = main(["campaign", "--target", target, "--cases", cases, "--out", str(out), *extra])
    (run_dir,) = set(out.iterdir()) - before
    return status, run_dir


def manifest(run_dir: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((run_dir / "manifest.json").read_text())
    return document


def case_files(run_dir: Path) -> dict[str, dict[str, Any]]:
    folder = run_dir / "divergences"
    files = sorted(folder.glob("*.json")) if folder.exists() else []
    return {str(doc["case_class"]): doc for doc in (json.loads(path.read_text()) for path in files)}


@pytest.fixture(scope="module")
def planted_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, Path]:
    folder = tmp_path_factory.mktemp("planted")
    (folder / "none.toml").write_text("")
    return campaign(folder, PLANTED, "--expectations", str(folder / "none.toml"), cases=PLANTED_CASES)


def test_every_planted_bug_is_found_with_a_minimal_case(planted_run: tuple[int, Path]) -> None:
    status, run_dir = planted_run
    assert status == 1
    found = case_files(run_dir)
    # Bug 2, slicing: one wildcard, one function token, a two-byte token cut in ones.
    slicing = found["mapping:sliceFromLeft:wrong-subject"]
    assert (slicing["source"], slicing["destination"]) == ("*", "{{sliceFromLeft(1,1)}}")
    assert len(slicing["subject"].encode()) == 2
    assert slicing["observed"].endswith('."}')
    # Bug 1, partition hashing with a separator: in a mapping and in the partition operation.
    mapped = found["partition:partition:wrong-subject"]
    assert re.fullmatch(r"\{\{[Pp]artition\(\d+,\d,\d\)\}\}", mapped["destination"]), mapped
    assert len(mapped["source"].split(".")) <= 2
    assert len(mapped["subject"]) <= 4
    keys = json.loads(found["partition:partition-op:value"]["source"])
    assert len(keys) == 2
    assert len("".join(keys)) <= 4
    # Bug 3, `>` matching nothing: a pattern and the subject it would match without its `>`.
    matching = found["matching:full:unexpected-delivery"]
    assert matching["source"].removesuffix(".>") == matching["subject"]
    # Nothing else: every class is one of the planted bugs.
    planted = ("sliceFromLeft", "partition", "matching:")
    assert all(any(mark in name for mark in planted) for name in found), sorted(found)
    counts = manifest(run_dir)
    assert counts["cases"] == sum(counts["verdicts"].values())
    assert counts["verdicts"]["unknown"] == 0


def test_the_correct_adapter_shows_nothing(tmp_path: Path) -> None:
    """The shipped known cases an adapter can answer are asked first under each profile, then drawn
    questions, all within the budget (as a server family's known cases are)."""
    status, run_dir = campaign(tmp_path, CORRECT, "--profile", "2.9", "--profile", "2.14")
    known = [case for case in load_expectations().known_cases if case.question() is not None]
    assert known
    assert status == 0
    assert manifest(run_dir)["verdicts"] == {
        "agree": 2 * int(CASES),
        "diverge": 0,
        "expected": 0,
        "unknown": 0,
    }
    assert case_files(run_dir) == {}


def test_a_case_file_replays_against_any_adapter(
    planted_run: tuple[int, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, run_dir = planted_run
    (path,) = (run_dir / "divergences").glob("*-mapping_sliceFromLeft_wrong-subject.json")
    assert read_case_file(path).question() == TransformQuestion(
        "*",
        "{{sliceFromLeft(1,1)}}",
        read_case_file(path).subject,
        NEWEST.name,  # an adapter's rules default to the newest release's
    )
    assert main(["replay", str(path), "--target", PLANTED]) == 1
    assert "mapping diverge on example-planted-bugs-adapter" in capsys.readouterr().out
    assert main(["replay", str(path), "--target", CORRECT]) == 0
    assert "mapping agree on example-correct-adapter" in capsys.readouterr().out
    assert main(["replay", str(path)]) == 2  # found on an adapter: the target must be named
    assert "found on an adapter" in capsys.readouterr().err


def test_the_gate_fails_only_on_the_changed_target(tmp_path: Path, planted_run: tuple[int, Path]) -> None:
    _, baseline_run = campaign(tmp_path, CORRECT)
    _, changed_run = planted_run
    baseline = tmp_path / "baseline.json"
    # The two targets have different names; the gate compares one target's classes over time.
    write_baseline(baseline, _renamed(class_verdicts([baseline_run]), PLANTED_NAME))
    result = gate(read_baseline(baseline), class_verdicts([changed_run]))
    assert result.failed
    moved = {key.case_class for key in (move.key for move in result.regressions)}
    assert {
        "mapping:sliceFromLeft",
        "partition:partition",
        "partition:partition-op",
        "matching:full",
    } <= moved
    assert (
        f"regression: example-planted-bugs-adapter {NEWEST.name} mapping:sliceFromLeft: agree -> diverge"
        in (result.render())
    )
    back = gate(class_verdicts([changed_run]), _renamed(class_verdicts([baseline_run]), PLANTED_NAME))
    assert not back.failed
    assert {move.key.case_class for move in back.improvements} == moved


def _renamed(classes: Classes, implementation: str) -> Classes:
    return {key._replace(implementation=implementation): verdict for key, verdict in classes.items()}


def test_expectations_are_updated_from_a_run_and_stale_ones_fail_strict_runs(tmp_path: Path) -> None:
    expectations = tmp_path / "adapter-expectations.toml"
    status, _ = campaign(tmp_path, PLANTED, "--expectations", str(expectations), "--update-expectations")
    assert status == 0
    assert PLANTED_NAME in expectations.read_text()
    # each new entry keeps its smallest case beside the file
    entries = load_expectations(expectations).entries
    assert entries
    assert all((tmp_path / entry.case).is_file() for entry in entries)
    status, run_dir = campaign(tmp_path, PLANTED, "--expectations", str(expectations), "--strict")
    verdicts = manifest(run_dir)["verdicts"]
    assert status == 0
    assert verdicts["diverge"] == 0
    assert verdicts["expected"] > 0
    # The same entries for any implementation: the correct adapter no longer shows them.
    text = expectations.read_text().replace(f'implementation = "{PLANTED_NAME}"', 'implementation = "*"')
    expectations.write_text(text)
    status, _ = campaign(tmp_path, CORRECT, "--expectations", str(expectations))
    assert status == 0  # stale entries are reported, not failed, unless --strict
    status, _ = campaign(tmp_path, CORRECT, "--expectations", str(expectations), "--strict")
    assert status == 1


def test_a_missing_adapter_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(AdapterError, match="cannot start adapter 'no-such-adapter-program'"):
        AdapterProcess("no-such-adapter-program --flag")
    assert main(["campaign", "--target", "adapter:no-such-adapter-program", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "cannot start adapter" in err[0]
    assert list(tmp_path.iterdir()) == []  # a campaign that failed leaves no empty run directory


def test_an_adapter_that_exits_at_once_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["campaign", "--target", "adapter:true", "--cases", "5", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("nats-conformance: error: adapter 'true' did not answer hello: adapter ")
    assert err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


def test_an_adapter_that_dies_leaves_unknown_cases_that_add_up(tmp_path: Path) -> None:
    dying = tmp_path / "dying.py"
    dying.write_text(
        "import sys\nfrom nats_conformance.reference.adapter import handle_line\nimport json\n"
        "for number, line in enumerate(sys.stdin.buffer):\n"
        "    if number == 700:\n        sys.exit(3)\n"
        "    sys.stdout.write(json.dumps(handle_line(line)) + '\\n'); sys.stdout.flush()\n"
    )
    _, run_dir = campaign(tmp_path, f"adapter:{PYTHON} {dying}")
    counts = manifest(run_dir)
    verdicts = counts["verdicts"]
    assert counts["cases"] == sum(verdicts.values()) >= int(CASES)
    assert verdicts["unknown"] > 0
    assert verdicts["diverge"] == 0


def test_a_run_of_unknown_cases_exits_3_unless_allowed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    silent = tmp_path / "silent.py"
    silent.write_text(  # answers its hello, then no question
        "import json, sys\nfrom nats_conformance.reference.adapter import handle_line\n"
        "print(json.dumps(handle_line(sys.stdin.buffer.readline())), flush=True)\n"
    )
    target = f"adapter:{PYTHON} {silent}"
    status, run_dir = campaign(tmp_path, target, cases="50")
    verdicts = manifest(run_dir)["verdicts"]
    assert verdicts["unknown"] > 0.9 * sum(verdicts.values())  # every answered question is unknown
    assert verdicts["diverge"] == 0
    assert status == 3
    assert "above --max-unknown 5%" in capsys.readouterr().out
    assert campaign(tmp_path, target, "--max-unknown", "100%", cases="50")[0] == 0
    assert campaign(tmp_path, target, "--max-unknown", "1", cases="50")[0] == 0


def test_a_missing_expectations_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "missing.toml"
    argv = ["campaign", "--target", CORRECT, "--cases", "5", "--expectations", str(missing)]
    assert main([*argv, "--out", str(tmp_path / "runs")]) == 2
    assert capsys.readouterr().err == f"nats-conformance: error: no expectations file {missing}\n"
    assert not (tmp_path / "runs").exists()
