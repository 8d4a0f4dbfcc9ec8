"""reports.baseline and `python -m nats_conformance.reports baseline|gate`: class verdicts, the baseline file,
the gate."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from handmade import case, one_error_line

from nats_conformance.records.pairs import Pair
from nats_conformance.records.schema import REFUSED, Case
from nats_conformance.records.writer import RecordWriter
from nats_conformance.reports.__main__ import main
from nats_conformance.reports.baseline import (
    BaselineError,
    ClassKey,
    ClassVerdict,
    baseline_text,
    class_verdicts,
    counterparts,
    gate,
    paired,
    read_baseline,
    write_baseline,
)

RunOf = Callable[[list[Case]], Path]
LATEST = "2.14.5"
PARTITION = ClassKey("nats-server", LATEST, "partition:partition")
MAPPING = ClassKey("nats-server", LATEST, "mapping:wildcard")


def cases(count: int, verdict: str = "agree", **fields: object) -> list[Case]:
    return [case(**{"server_version": LATEST, **fields}, verdict=verdict) for _ in range(count)]


def partition(count: int, verdict: str = "agree") -> list[Case]:
    return cases(count, verdict, feature="partition", functions="partition")


def unpaired(compared: Path) -> str:
    """The gate's last line when the run was not paired with `compared` and a class moved."""
    return (
        "unpaired: moves are by class, sampling included; for paired evidence: "
        f"nats-conformance pair RUN_DIR --with {compared}"
    )


def test_a_class_takes_its_worst_verdict_and_ignores_unknown_cases(run_of: RunOf) -> None:
    run = run_of(
        [
            *cases(3),
            *cases(1, "expected"),
            *cases(2, "unknown"),  # mapping:wildcard -> expected, 4 judged cases
            *cases(2, functions="wildcard+partition"),
            *cases(1, "expected", functions="wildcard+partition"),
            *cases(1, "diverge", functions="wildcard+partition"),  # -> diverge, 1 of 4
            *cases(2, feature="matching", functions=""),  # no function: matching:literal
            *cases(3, "unknown", feature="validation", functions="random"),  # only unknown: left out
            *cases(1, server_version="2.9.25"),  # another target, another class
            *cases(1, "diverge", implementation="other-server"),
        ]
    )
    assert class_verdicts([run]) == {
        MAPPING: ClassVerdict("expected", 4, 1, 1),
        ClassKey("nats-server", LATEST, "mapping:wildcard+partition"): ClassVerdict("diverge", 4, 1, 2),
        ClassKey("nats-server", LATEST, "matching:literal"): ClassVerdict("agree", 2, 2, 0),
        ClassKey("nats-server", "2.9.25", "mapping:wildcard"): ClassVerdict("agree", 1, 1, 0),
        ClassKey("other-server", LATEST, "mapping:wildcard"): ClassVerdict("diverge", 1, 1, 1),
    }


def test_several_runs_are_read_together(run_of: RunOf, tmp_path: Path) -> None:
    run_of(partition(5))
    run_of(partition(2, "diverge"))
    assert class_verdicts([tmp_path]) == {PARTITION: ClassVerdict("diverge", 7, 2, 2)}


def test_the_baseline_file_is_sorted_indented_and_reads_back(tmp_path: Path) -> None:
    classes = {
        PARTITION: ClassVerdict("diverge", 7, 2, 2),
        ClassKey("nats-server", "2.9.25", "mapping:literal"): ClassVerdict("agree", 3, 3, 0),
    }
    path = tmp_path / "baseline.json"
    write_baseline(path, classes)
    assert path.read_text() == (
        "{\n"
        '  "cases": [],\n'
        '  "classes": {\n'
        '    "nats-server 2.14.5 partition:partition": {\n'
        '      "cases": 7,\n'
        '      "diverging": 2,\n'
        '      "verdict": "diverge"\n'
        "    },\n"
        '    "nats-server 2.9.25 mapping:literal": {\n'
        '      "cases": 3,\n'
        '      "diverging": 0,\n'
        '      "verdict": "agree"\n'
        "    }\n"
        "  },\n"
        '  "format": "nats-conformance-baseline",\n'
        '  "version": 2\n'
        "}\n"
    )
    assert read_baseline(path) == {
        key: ClassVerdict(v.verdict, v.cases, diverging=v.diverging) for key, v in classes.items()
    }
    assert baseline_text(dict(reversed(classes.items()))) == path.read_text()  # order-independent


def test_a_version_1_baseline_reads_without_diverging_counts(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    path.write_text(
        '{"format": "nats-conformance-baseline", "version": 1, '
        '"classes": {"nats-server 2.14.5 partition:partition": {"cases": 7, "verdict": "diverge"}}}'
    )
    assert read_baseline(path) == {PARTITION: ClassVerdict("diverge", 7)}


def test_a_regression_fails_and_names_the_class() -> None:
    result = gate(
        {PARTITION: ClassVerdict("agree", 1000), MAPPING: ClassVerdict("agree", 5)},
        {PARTITION: ClassVerdict("diverge", 1000, 3), MAPPING: ClassVerdict("agree", 5, 5)},
    )
    assert result.failed
    assert [move.key for move in result.regressions] == [PARTITION]
    assert (result.improvements, result.others, result.unchanged) == ((), (), 1)
    assert result.render().splitlines() == [  # the verdict first
        "gate failed: 1 regression, 0 fixed, 0 other changes, 1 class unchanged",
        "regression: nats-server 2.14.5 partition:partition: agree -> diverge (3 of 1000 cases)",
    ]


def test_a_fix_is_printed_as_fixed_and_passes() -> None:
    result = gate(
        {PARTITION: ClassVerdict("diverge", 10), MAPPING: ClassVerdict("expected", 4)},
        {PARTITION: ClassVerdict("agree", 12, 12), MAPPING: ClassVerdict("agree", 4, 4)},
    )
    assert not result.failed
    assert result.render().splitlines() == [
        "gate passed: 0 regressions, 2 fixed, 0 other changes, 0 classes unchanged",
        "fixed: nats-server 2.14.5 mapping:wildcard: expected -> agree (4 cases)",
        "fixed: nats-server 2.14.5 partition:partition: diverge -> agree (12 cases)",
    ]


def test_other_moves_are_details_and_never_fail(tmp_path: Path) -> None:
    new = ClassKey("nats-server", "2.15.0", "mapping:wildcard")
    gone = ClassKey("nats-server", "2.9.25", "mapping:wildcard")
    worse = ClassKey("nats-server", LATEST, "weighted:literal")
    result = gate(
        {
            MAPPING: ClassVerdict("agree", 10),
            gone: ClassVerdict("agree", 8),
            worse: ClassVerdict("expected", 9),
        },
        {
            MAPPING: ClassVerdict("expected", 10, 2),
            new: ClassVerdict("diverge", 6, 1),
            worse: ClassVerdict("diverge", 9, 9),
        },
    )
    assert not result.failed
    assert (result.regressions, result.improvements) == ((), ())
    assert [move.kind for move in result.others] == ["missing", "changed", "changed", "new"]
    details = tmp_path / "gate-details.txt"
    assert result.render(details).splitlines() == [
        "gate passed: 0 regressions, 0 fixed, 4 other changes, 0 classes unchanged",
        f"4 other changes (new, missing or changed classes): {details}",
    ]
    assert result.details().splitlines() == [  # in release order: 2.9.25 before 2.14.5
        "gate passed: 0 regressions, 0 fixed, 4 other changes, 0 classes unchanged",
        "MISSING nats-server 2.9.25 mapping:wildcard: agree (8 cases) in the baseline, "
        "no judged case in the run",
        "CHANGED nats-server 2.14.5 mapping:wildcard: agree -> expected (2 of 10 cases)",
        "CHANGED nats-server 2.14.5 weighted:literal: expected -> diverge (9 cases)",
        "NEW nats-server 2.15.0 mapping:wildcard: diverge (1 of 6 cases), not in the baseline",
    ]


def test_cli_baseline_then_gate_on_the_same_run_passes(
    capsys: pytest.CaptureFixture[str], run_of: RunOf, tmp_path: Path
) -> None:
    run = run_of([*partition(4), *cases(2)])
    path = tmp_path / "ci" / "baseline.json"
    assert main(["baseline", str(run), "--out", str(path)]) == 0
    assert capsys.readouterr().out == f"{path}: 2 classes\n"
    assert json.loads(path.read_text())["classes"] == {
        str(MAPPING): {"verdict": "agree", "cases": 2, "diverging": 0},
        str(PARTITION): {"verdict": "agree", "cases": 4, "diverging": 0},
    }
    assert main(["gate", str(run), "--baseline", str(path)]) == 0
    assert capsys.readouterr().out == (
        "gate passed: 0 regressions, 0 fixed, 0 other changes, 2 classes unchanged\n"
    )
    assert (run / "gate-details.txt").read_text() == (
        "gate passed: 0 regressions, 0 fixed, 0 other changes, 2 classes unchanged\n"
    )


def test_cli_gate_exit_statuses(capsys: pytest.CaptureFixture[str], run_of: RunOf, tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    assert main(["baseline", str(run_of([*partition(1000), *cases(5, "expected")])), "--out", str(path)]) == 0
    capsys.readouterr()

    regressed = run_of([*partition(997), *partition(3, "diverge"), *cases(5, "expected")])
    assert main(["gate", str(regressed), "--baseline", str(path)]) == 1
    assert capsys.readouterr().out == (
        "gate failed: 1 regression, 0 fixed, 0 other changes, 1 class unchanged\n"
        "regression: nats-server 2.14.5 partition:partition: agree -> diverge (3 of 1000 cases)\n"
        f"{unpaired(path)}\n"
    )

    improved = run_of([*partition(1000), *cases(5)])
    assert main(["gate", str(improved), "--baseline", str(path)]) == 0
    assert "fixed: nats-server 2.14.5 mapping:wildcard: expected -> agree (5 cases)\n" in (
        capsys.readouterr().out
    )

    softened = run_of([*partition(999), *partition(1, "expected"), *cases(5, "expected")])
    details = tmp_path / "details" / "softened.txt"
    assert main(["gate", str(softened), "--baseline", str(path), "--details", str(details)]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == [
        f"1 other change (new, missing or changed classes): {details}",
        unpaired(path),
    ]
    assert "CHANGED nats-server 2.14.5 partition:partition: agree -> expected (1 of 1000 cases)\n" in (
        details.read_text()
    )
    assert not (softened / "gate-details.txt").exists()

    elsewhere = run_of(cases(5, "diverge", server_version="2.15.0"))  # both old classes missing
    assert main(["gate", str(elsewhere), "--baseline", str(path)]) == 0
    lines = (elsewhere / "gate-details.txt").read_text().splitlines()
    assert [line.split(" ", 1)[0] for line in lines[1:]] == ["MISSING", "MISSING", "NEW"]


def test_cli_update_rewrites_the_baseline_after_printing(
    capsys: pytest.CaptureFixture[str], run_of: RunOf, tmp_path: Path
) -> None:
    path = tmp_path / "baseline.json"
    assert main(["baseline", str(run_of(partition(10))), "--out", str(path)]) == 0
    capsys.readouterr()
    regressed = run_of([*partition(9), *partition(1, "diverge"), *cases(2)])
    assert main(["gate", str(regressed), "--baseline", str(path), "--update"]) == 1  # still a regression
    out = capsys.readouterr().out
    assert out.index("regression:") < out.index(f"{path}: updated from the run, 2 classes")
    assert read_baseline(path) == {
        PARTITION: ClassVerdict("diverge", 10, diverging=1),
        MAPPING: ClassVerdict("agree", 2, diverging=0),
    }
    assert main(["gate", str(regressed), "--baseline", str(path)]) == 0  # the run is the baseline now


def test_cli_missing_baseline_file(capsys: pytest.CaptureFixture[str], run_of: RunOf, tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    line = one_error_line(capsys, ["gate", str(run_of(cases(1))), "--baseline", str(missing), "--update"])
    assert line == (
        f"nats-conformance: error: baseline file {missing} does not exist (create it with: "
        f"python -m nats_conformance.reports baseline RUN_DIR... --out {missing})"
    )
    assert not missing.exists()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "is not a baseline file (not JSON: "),
        (
            '{"version": 1, "classes": {}}',
            'is not a baseline file (no "format": "nats-conformance-baseline")',
        ),
        ('{"format": "nats-conformance-baseline", "classes": {}}', "unreadable version None"),
        (
            '{"format": "nats-conformance-baseline", "version": 3, "classes": {}}',
            "is a baseline of version 3, newer than the 2 this gate reads; update nats-conformance",
        ),
        (
            '{"format": "nats-conformance-baseline", "version": 1, "classes": {"x": {}}}',
            "has a malformed class entry 'x': {}",
        ),
    ],
)
def test_cli_bad_baseline_files(
    capsys: pytest.CaptureFixture[str], run_of: RunOf, tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "baseline.json"
    path.write_text(text)
    line = one_error_line(capsys, ["gate", str(run_of(cases(1))), "--baseline", str(path)])
    assert line.startswith(f"nats-conformance: error: {path} ")
    assert message in line
    assert path.read_text() == text


def test_cli_empty_run_directory(capsys: pytest.CaptureFixture[str], run_of: RunOf, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    path = tmp_path / "baseline.json"
    line = one_error_line(capsys, ["baseline", str(empty), "--out", str(path)])
    assert f"no case records in {empty}" in line
    assert not path.exists()
    write_baseline(path, {})
    line = one_error_line(capsys, ["gate", str(empty), "--baseline", str(path)])
    assert f"no case records in {empty}" in line


def test_a_baseline_that_cannot_be_written(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(BaselineError, match=r"^cannot write baseline .*file/baseline.json: "):
        write_baseline(tmp_path / "file" / "baseline.json", {})


@pytest.mark.parametrize(
    "setting",
    [
        (0, "", 0),
        (1, "", 0),
        (2, "", 3),
        (2, "--max-unknown=20%", 0),
        (2, "--max-unknown=0.09", 3),
    ],
)
def test_cli_gate_exits_3_on_too_many_unknown_cases(
    capsys: pytest.CaptureFixture[str],
    run_of: RunOf,
    tmp_path: Path,
    setting: tuple[int, str, int],
) -> None:
    unknown, extra, status = setting
    path = tmp_path / "baseline.json"
    write_baseline(path, class_verdicts([run_of(partition(18))]))
    run = run_of([*partition(20 - unknown), *partition(unknown, "unknown")])
    assert main(["gate", str(run), "--baseline", str(path), *extra.split()]) == status
    out = capsys.readouterr().out
    assert ("cases unknown" in out) == (status == 3)
    assert ("gate passed" in out) == (status == 0)  # exit 3 said "gate passed" first
    assert ("gate unknown" in out) == (status == 3)


def test_cli_gate_a_regression_outranks_unknown_cases(run_of: RunOf, tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    write_baseline(path, class_verdicts([run_of(partition(10))]))
    run = run_of([*partition(1, "diverge"), *partition(9, "unknown")])
    assert main(["gate", str(run), "--baseline", str(path)]) == 1


def test_cli_gate_refuses_a_manifest_of_a_newer_schema(
    capsys: pytest.CaptureFixture[str], run_of: RunOf, tmp_path: Path
) -> None:
    path = tmp_path / "baseline.json"
    write_baseline(path, class_verdicts([run_of(partition(2))]))
    run = run_of(partition(2))
    manifest = json.loads((run / "manifest.json").read_text())
    (run / "manifest.json").write_text(
        json.dumps({**manifest, "schema_version": manifest["schema_version"] + 1})
    )
    line = one_error_line(capsys, ["gate", str(run), "--baseline", str(path)])
    assert line.startswith(f"nats-conformance: error: {run / 'manifest.json'} is of schema version ")


def test_cli_gate_does_not_count_the_subjects_of_a_refused_mapping(run_of: RunOf, tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    write_baseline(path, class_verdicts([run_of(partition(10))]))
    refused = [case(server_version=LATEST, verdict="unknown", difference=REFUSED) for _ in range(9)]
    run = run_of([*partition(10), *refused, *partition(1, "unknown")])
    assert main(["gate", str(run), "--baseline", str(path)]) == 0  # 1 unknown of 20 cases: 5%
    assert main(["gate", str(run), "--baseline", str(path), "--max-unknown", "4%"]) == 3


def test_cli_gate_against_another_release_of_the_line(
    capsys: pytest.CaptureFixture[str], run_of: RunOf, tmp_path: Path
) -> None:
    """Did 2.14.6 regress against 2.14.5's baseline? Keys are compared by line; other releases of the
    baseline are left out."""
    path = tmp_path / "baseline.json"
    older = cases(4, feature="validation", functions="split", server_version="2.12.15")
    assert main(["baseline", str(run_of([*partition(100), *cases(5), *older])), "--out", str(path)]) == 0
    capsys.readouterr()
    newer = run_of(
        [
            *cases(98, feature="partition", functions="partition", server_version="2.14.6"),
            *cases(2, "diverge", feature="partition", functions="partition", server_version="2.14.6"),
            *cases(5, server_version="2.14.6"),
        ]
    )
    assert main(["gate", str(newer), "--baseline", str(path)]) == 0  # by release: nothing in common
    capsys.readouterr()
    assert main(["gate", str(newer), "--baseline", str(path), "--against", LATEST]) == 1
    assert capsys.readouterr().out == (
        "gate failed: 1 regression, 0 fixed, 0 other changes, 1 class unchanged\n"
        "regression: nats-server 2.14 partition:partition: agree -> diverge (2 of 100 cases)\n"
        f"{unpaired(path)}\n"
    )


@pytest.mark.parametrize(
    ("against", "message"),
    [
        ("2.14.4", "the baseline has no class of 2.14.4 (it has 2.14.5)"),
        ("2.12.15", "the run has no class of a 2.12 release to compare with 2.12.15"),
        ("latest", "--against takes a release such as 2.14.5 (got 'latest')"),
    ],
)
def test_cli_gate_against_errors_are_one_line(
    capsys: pytest.CaptureFixture[str], run_of: RunOf, tmp_path: Path, against: str, message: str
) -> None:
    path = tmp_path / "baseline.json"
    run = run_of(partition(3))
    assert main(["baseline", str(run), "--out", str(path)]) == 0
    if against == "2.12.15":
        older = run_of(cases(3, server_version="2.12.15"))
        assert main(["baseline", str(older), "--out", str(path)]) == 0
    capsys.readouterr()
    assert main(["gate", str(run), "--baseline", str(path), "--against", against]) == 2
    assert capsys.readouterr().err == f"nats-conformance: error: {message}\n"


def test_cli_gate_against_a_previous_run_of_another_release_fails_on_regressions_verdict_first(
    capsys: pytest.CaptureFixture[str], run_of: RunOf
) -> None:
    """What changed since 2.14.5? Classes are compared by feature and functions across the releases;
    against a run, expected -> diverge and a new diverging class are regressions too."""
    previous = run_of([*partition(100), *cases(5, "expected"), *cases(3, feature="matching", functions="")])
    run = run_of(
        [
            *cases(98, feature="partition", functions="partition", server_version="2.14.9"),
            *cases(2, "diverge", feature="partition", functions="partition", server_version="2.14.9"),
            *cases(5, "diverge", server_version="2.14.9"),
            *cases(1, "diverge", feature="validation", functions="split", server_version="2.14.9"),
        ]
    )
    assert main(["gate", str(run), "--against", str(previous)]) == 1
    details = run / "gate-details.txt"
    assert capsys.readouterr().out.splitlines() == [
        "gate failed: 3 regressions, 0 fixed, 1 other change, 0 classes unchanged",
        "regression: nats-server 2.14.5..2.14.9 mapping:wildcard: expected -> diverge (5 cases)",
        "regression: nats-server 2.14.5..2.14.9 partition:partition: agree -> diverge (2 of 100 cases)",
        "regression: nats-server 2.14.5..2.14.9 validation:split: diverge (1 case), not in the previous run",
        f"1 other change (new, missing or changed classes): {details}",
        unpaired(previous),
    ]
    assert details.read_text().splitlines()[-1] == (
        "MISSING nats-server 2.14.5..2.14.9 matching:literal: agree (3 cases) in the previous run, "
        "no judged case in the run"
    )


def test_cli_gate_against_a_previous_run_prints_a_fix_as_fixed_and_passes(
    capsys: pytest.CaptureFixture[str], run_of: RunOf
) -> None:
    previous = run_of([*partition(7), *partition(3, "diverge"), *cases(4)])
    run = run_of([*partition(10), *cases(4), *cases(2, feature="matching", functions="")])
    assert main(["gate", str(run), "--against", str(previous)]) == 0
    assert capsys.readouterr().out.splitlines() == [  # the same release: compared release by release
        "gate passed: 0 regressions, 1 fixed, 1 other change, 1 class unchanged",
        "fixed: nats-server 2.14.5 partition:partition: diverge -> agree (10 cases)",
        f"1 other change (new, missing or changed classes): {run / 'gate-details.txt'}",
        unpaired(previous),
    ]
    assert "NEW nats-server 2.14.5 matching:literal: agree (2 cases), not in the previous run" in (
        (run / "gate-details.txt").read_text()
    )


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([], "the following arguments are required: --baseline FILE or --against PREVIOUS_RUN_DIR"),
        (
            ["--against", "2.14.5"],
            "--against takes a previous run directory, or a release with --baseline FILE "
            "(2.14.5 is no directory)",
        ),
        (["--against", "RUN", "--update"], "--update rewrites a baseline file: give it --baseline FILE"),
    ],
)
def test_cli_gate_needs_a_baseline_or_a_previous_run(
    capsys: pytest.CaptureFixture[str], run_of: RunOf, extra: list[str], message: str
) -> None:
    run = run_of(partition(2))
    argv = ["gate", str(run), *(str(run) if word == "RUN" else word for word in extra)]
    assert one_error_line(capsys, argv) == f"nats-conformance: error: {message}"
    assert not (run / "gate-details.txt").exists()


def test_cli_baseline_refuses_an_incomplete_run_unless_allowed(
    capsys: pytest.CaptureFixture[str], run_of: RunOf, tmp_path: Path
) -> None:
    """As the gate does: a killed or interrupted run's classes are those of the cases it got to."""
    run = tmp_path / "run-interrupted"
    writer = RecordWriter(run, run_id="interrupted")
    writer.extend(partition(10))
    writer.close("interrupted", signal="SIGINT")
    path = tmp_path / "baseline.json"
    line = one_error_line(capsys, ["baseline", str(run), "--out", str(path)])
    assert "incomplete (interrupted by SIGINT)" in line
    assert "--allow-incomplete" in line
    assert not path.exists()
    assert main(["baseline", str(run), "--out", str(path), "--allow-incomplete"]) == 0
    document = json.loads(path.read_text())
    assert document["incomplete"] == ["interrupted"]
    assert read_baseline(path) == {PARTITION: ClassVerdict("agree", 10, diverging=0)}
    complete = tmp_path / "complete.json"
    assert main(["baseline", str(run_of(partition(3))), "--out", str(complete)]) == 0
    assert "incomplete" not in json.loads(complete.read_text())


def paired_pair(gate_class: str, seen_on: str, replayed_on: str, seen: str, replayed: str) -> Pair:
    """A pair of a class's case seen with difference `seen` and replayed with `replayed` ('' agrees)."""
    feature, functions = gate_class.split(":")
    return Pair(
        against="baseline.json",
        implementation="nats-server",
        feature=feature,
        functions=functions,
        seen_on=seen_on,
        seen_difference=seen,
        seen_verdict="diverge" if seen else "agree",
        replayed_on=replayed_on,
        replayed_difference=replayed,
        replayed_verdict="diverge" if replayed else "agree",
        case_file="x.json",
    )


def test_a_paired_gate_claims_only_moves_a_pair_or_a_share_test_shows() -> None:
    """Baseline on 2.14.9, run on 2.14.10: each release meets its line's. partition regressed and a pair
    shows its case agreeing on 2.14.9; mapping's fix was not drawn on both (its case gives the same
    outcome on 2.14.10); weighted's 1 in 400 against 0 is chance, while 60 in 400 is a change."""
    old, new = "2.14.9", "2.14.10"
    baseline = {
        ClassKey("nats-server", old, "partition:partition"): ClassVerdict("agree", 100, diverging=0),
        ClassKey("nats-server", old, "mapping:wildcard"): ClassVerdict("expected", 10, diverging=2),
        ClassKey("nats-server", old, "weighted:literal"): ClassVerdict("agree", 400, diverging=0),
        ClassKey("nats-server", old, "weighted:split"): ClassVerdict("agree", 400, diverging=0),
        ClassKey("nats-server", "2.9.25", "matching:literal"): ClassVerdict("agree", 5, diverging=0),
    }
    run = {
        ClassKey("nats-server", new, "partition:partition"): ClassVerdict("diverge", 100, 2, 2),
        ClassKey("nats-server", new, "mapping:wildcard"): ClassVerdict("agree", 10, 10, 0),
        ClassKey("nats-server", new, "weighted:literal"): ClassVerdict("diverge", 400, 1, 1),
        ClassKey("nats-server", new, "weighted:split"): ClassVerdict("diverge", 400, 60, 60),
    }
    pairs = [
        paired_pair("partition:partition", new, old, "wrong-partition", ""),
        paired_pair("mapping:wildcard", old, new, "wrong-subject", "wrong-subject"),
    ]
    result = paired(gate(*counterparts(baseline, run)), pairs)
    assert [move.line() for move in result.regressions] == [
        f"regression: nats-server {old}..{new} partition:partition: agree -> diverge (2 of 100 cases)",
        f"regression: nats-server {old}..{new} weighted:split: agree -> diverge (60 of 400 cases)",
    ]
    assert sorted(str(move.key) for move in result.not_drawn) == [
        f"nats-server {old}..{new} mapping:wildcard",
        f"nats-server {old}..{new} weighted:literal",
        "nats-server 2.9.25 matching:literal",
    ]
    assert result.verdict().endswith(", 3 not drawn on both")
    assert result.details().splitlines()[-1].startswith("not drawn on both: ")


def test_counterparts_key_a_release_by_its_line_on_the_other_side() -> None:
    before = {
        ClassKey("nats-server", v, "mapping:wildcard"): ClassVerdict("agree", 1)
        for v in ("2.14.8", "2.14.9", "2.12.15")
    }
    after = {
        ClassKey("nats-server", v, "mapping:wildcard"): ClassVerdict("agree", 1)
        for v in ("2.14.10", "2.12.15", "2.15.3")
    }
    theirs, ours = counterparts(before, after)
    assert sorted(key.server_version for key in ours) == ["2.12.15", "2.14.9..2.14.10", "2.15.3"]
    assert sorted(key.server_version for key in theirs) == ["2.12.15", "2.14.8", "2.14.9..2.14.10"]
