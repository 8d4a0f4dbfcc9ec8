"""`suites.changes` on made-up Go sources and profiles (no server, no Go): functions read from gofmt'd
source, the changed lines of R2's functions, each marked reached, not reached or not a statement by the
profile's blocks, the listing and its summary; and the `changes` command end to end with its
campaigns replaced, and its bad input as one line with exit status 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import nats_conformance.suites.changes
import nats_conformance.suites.commands
from nats_conformance import main
from nats_conformance.records.coverage import Block, parse_profile
from nats_conformance.records.pairs import WITHIN, Pair, write_pairs
from nats_conformance.suites.changes import (
    NO_STATEMENT,
    NOT_REACHED,
    REACHED,
    changed_functions,
    changed_lines,
    go_functions,
    listing,
    mark,
    package_functions,
    ranges,
    statements_document,
)
from nats_conformance.suites.coverage import PROFILE

OLD_GO = """package server

// Match maps a subject.
func (tr *subjectTransform) Match(subject string) (string, error) {
	if tr == nil {
		return subject, nil
	}
	return tr.transform(subject)
}

func isValid(s string) bool { return s != "" }

func removed() {
}
"""
NEW_GO = """package server

func (tr *subjectTransform) Match(subject string) (string, error) {
	if tr == nil {
		return subject, nil
	}
	// an empty subject is refused
	if subject == "" {
		return "", errBad
	}
	return tr.transform(subject)
}

func isValid(s string) bool { return s != "" }

func added(
	s string,
) bool {
	return s == "x"
}

var accountHashMappingFunctionRegEx = regexp.MustCompile(`{{\\s*[aA]ccount-[hH]ash\\s*\\((.*)\\)\\s*}}`)
var tenantHashMappingFunctionRegEx = regexp.MustCompile(`{{\\s*[tT]enant-[hH]ash\\s*\\((.*)\\)\\s*}}`)
"""
MODULE = "github.com/nats-io/nats-server/v2"
PROFILE_TEXT = "\n".join(
    [
        "mode: set",
        # Match: its first statements, the if's body, the new if, its body (never run), the return
        f"{MODULE}/server/subject_transform.go:3.67,4.13 1 1",
        f"{MODULE}/server/subject_transform.go:4.13,6.3 1 0",
        f"{MODULE}/server/subject_transform.go:8.2,8.19 1 1",
        f"{MODULE}/server/subject_transform.go:8.19,10.3 1 0",
        f"{MODULE}/server/subject_transform.go:11.2,11.30 1 1",
        f"{MODULE}/server/subject_transform.go:14.29,14.46 1 1",
        f"{MODULE}/server/subject_transform.go:18.8,20.2 1 0",
        f"{MODULE}/server/other.go:3.20,5.2 1 1",
    ]
)


def blocks() -> list[Block]:
    return parse_profile(PROFILE_TEXT, MODULE)


def module(folder: Path, transform: str, other: str = "func other() {\n}\n") -> Path:
    """A module source with server/subject_transform.go, a file outside the surface and a test file."""
    (folder / "server").mkdir(parents=True)
    (folder / "server" / "subject_transform.go").write_text(transform)
    (folder / "server" / "other.go").write_text(f"package server\n\n{other}")
    (folder / "server" / "other_test.go").write_text("package server\n\nfunc Match() {\n}\n")
    return folder


def test_functions_of_every_shape_from_their_func_line_to_their_closing_brace() -> None:
    found = go_functions("server/x.go", NEW_GO + "func Map[T any](x T) T {\n\treturn x\n}\n")
    shapes = [(f.receiver, f.name, f.line, len(f.source)) for f in found]
    assert shapes == [
        ("subjectTransform", "Match", 3, 10),
        ("", "isValid", 14, 1),
        ("", "added", 16, 5),
        ("", "Map", 24, 3),
    ]
    assert found[0].label == "subjectTransform.Match"
    assert found[2].source[-1] == "}"


def test_a_package_leaves_out_its_tests_and_keeps_the_first_file_of_a_name(tmp_path: Path) -> None:
    source = module(tmp_path, OLD_GO)
    (tmp_path / "server" / "zz_windows.go").write_text("package server\n\nfunc isValid(s string) bool {\n}\n")
    functions = package_functions(source)
    assert set(functions) == {("subjectTransform", "Match"), ("", "isValid"), ("", "removed"), ("", "other")}
    assert functions[("", "isValid")].path == "server/subject_transform.go"
    assert functions[("subjectTransform", "Match")].path == "server/subject_transform.go"


def test_changed_lines_are_the_inserted_and_replaced_ones_of_the_new_side() -> None:
    old = ["a", "b", "c", "d"]
    assert changed_lines(old, ["a", "B", "c", "x", "d"]) == [1, 3]
    assert changed_lines(old, ["a", "d"]) == []  # deleted lines leave nothing on the new side
    assert changed_lines(old, ["a  ", "b", "c", "d"]) == []  # trailing blanks ignored
    assert changed_lines([], ["a", "b"]) == [0, 1]


def test_a_line_is_reached_when_a_spanning_block_has_a_count() -> None:
    spans = [b for b in blocks() if b.path == "server/subject_transform.go"]
    assert mark(8, '\tif subject == "" {', spans) == REACHED  # the reached block ends on it
    assert mark(9, '\t\treturn "", errBad', spans) == NOT_REACHED
    assert mark(7, "\t// an empty subject is refused", spans) == NO_STATEMENT
    assert mark(13, "", spans) == NO_STATEMENT
    assert mark(16, "func added(", spans) == NO_STATEMENT  # the signature before the body's block


def test_changed_functions_and_their_marks(tmp_path: Path) -> None:
    old = package_functions(module(tmp_path / "old", OLD_GO))
    new = package_functions(module(tmp_path / "new", NEW_GO, "func other() {\n\tx()\n}\n"))
    surface = {key: f for key, f in new.items() if f.path == "server/subject_transform.go"}
    changed = changed_functions(old, surface, blocks())
    assert [(c.function.name, c.added) for c in changed] == [("Match", False), ("added", True)]
    match, added = changed
    assert match.marks == {7: NO_STATEMENT, 8: REACHED, 9: NOT_REACHED, 10: NOT_REACHED}
    assert added.marks == {
        16: NO_STATEMENT,
        17: NO_STATEMENT,
        18: NOT_REACHED,
        19: NOT_REACHED,
        20: NOT_REACHED,
    }


def test_ranges_run_on_over_changed_lines_that_are_no_statement() -> None:
    marks = {3: REACHED, 4: NO_STATEMENT, 5: REACHED, 6: NOT_REACHED, 7: REACHED, 9: REACHED}
    assert ranges(marks, REACHED) == [(3, 5), (7, 7), (9, 9)]
    assert ranges(marks, NOT_REACHED) == [(6, 6)]


def test_the_document_counts_statements_leads_and_new_functions(tmp_path: Path) -> None:
    old, new = module(tmp_path / "old", OLD_GO), module(tmp_path / "new", NEW_GO)
    document = statements_document("2.14.9", "2.14.10", old, new, blocks())
    assert (document["statements"], document["reached"], document["not_reached"]) == (6, 1, 5)
    assert document["functions"][0] | {"not_statements": None} == {
        "path": "server/subject_transform.go",
        "receiver": "subjectTransform",
        "name": "Match",
        "line": 3,
        "added": False,
        "reached": [8],
        "not_reached": [9, 10],
        "not_statements": None,
    }
    assert [(lead["function"], lead["start"], lead["end"], lead["source"]) for lead in document["leads"]] == [
        ("subjectTransform.Match", 9, 10, 'return "", errBad'),
        ("added", 18, 20, ") bool {"),
    ]
    assert [f["name"] for f in document["functions_added"]] == ["added"]
    assert [f["name"] for f in document["functions_removed"]] == ["removed"]
    assert document["mapping_functions"] == {
        "added": ["account-hash", "tenant-hash"],
        "removed": [],
        "unmodelled": ["tenant-hash"],
    }


def fake_campaigns(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    *,
    changed: bool = True,
    recorded: tuple[bool, bool] = (True, True),
) -> list[Any]:
    """Replace the module sources, the -cover campaign and the campaign of both releases (which record
    nothing where `recorded` says so); returns the campaign arguments each was given."""
    sources = {"2.14.9": module(tmp_path / "old", OLD_GO), "2.14.10": module(tmp_path / "new", NEW_GO)}
    given: list[Any] = []
    monkeypatch.setattr(nats_conformance.suites.changes, "module_source", lambda release: sources[release])

    def covered(arguments: Any, run: Any) -> tuple[int, Path, dict[str, Any] | None]:
        given.append(arguments)
        run_dir = Path(arguments.out) / "covered"
        if not recorded[0]:
            return 2, run_dir, None
        (run_dir / PROFILE).parent.mkdir(parents=True)
        (run_dir / PROFILE).write_text(PROFILE_TEXT)
        document = {"release": "2.14.10", "covered": 5, "statements": 7, "files": [], "unreached": [1]}
        return 0, run_dir, document

    def campaign(arguments: Any, *, run_dir: Path) -> int:
        given.append(arguments)
        print("campaign output")
        if not recorded[1]:
            return 2
        run_dir.mkdir(parents=True)
        pair = Pair(
            WITHIN, "nats-server", "validation", "left", "2.14.9", "server-reject", "diverge",
            "2.14.10", "" if changed else "server-reject", "agree" if changed else "diverge", "x.json",
        )  # fmt: skip
        write_pairs(run_dir, WITHIN, [pair], [])
        return 1

    monkeypatch.setattr(nats_conformance.suites.changes, "covered_campaign", covered)
    monkeypatch.setattr(nats_conformance.suites.commands, "campaign", campaign)
    return given


def test_the_command_lists_each_section_and_writes_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    given = fake_campaigns(monkeypatch, tmp_path)
    out = tmp_path / "runs"
    status = main(
        [
            "changes",
            "2.14.9",
            "2.14.10",
            "--plan",
            "quick",
            "--out",
            str(out),
            "--json",
            str(tmp_path / "c.json"),
        ]
    )
    assert status == 0
    captured = capsys.readouterr()
    assert "campaign output" in captured.err  # the campaigns' own lines go to stderr
    lines = captured.out.splitlines()
    assert [(a.server_version, a.plan, a.seed, a.out) for a in given] == [
        (["2.14.10"], "quick", 0, str(out)),
        (["2.14.9", "2.14.10"], "quick", 0, str(out)),
    ]
    assert "    subjectTransform.Match:3  1 reached 8; 2 not reached 9-10" in lines
    assert "    added:16 (new)  3 not reached 18-20" in lines
    assert '  server/subject_transform.go:9-10 subjectTransform.Match: return "", errBad' in lines
    assert "functions of the surface added in 2.14.10: added:16" in lines
    assert "functions of the surface removed since 2.14.9: removed:13" in lines
    assert "  not modelled by the reference: tenant-hash" in lines
    assert "  validation:left: server-reject on 2.14.9, agree on 2.14.10" in lines
    assert lines[-1] == (
        "2.14.10 changes 6 statements of the mapping surface: 1 reached, 5 not; "
        "2 new functions (1 not modelled); 1 behaviour changes"
    )
    document = json.loads((tmp_path / "c.json").read_text())
    assert document["summary"] == lines[-1]
    assert document["paired"] == {"replayed": 1, "changed": 1, "unknown": 0}
    (change,) = document["behaviour_changes"]
    assert change["replay"].startswith(f"nats-conformance replay {out}/")
    assert change["replay"].endswith("x.json --server-version 2.14.10")
    assert listing(document)[-1] == document["summary"]


def test_a_pair_with_the_same_outcome_is_no_behaviour_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_campaigns(monkeypatch, tmp_path, changed=False)
    assert main(["changes", "2.14.9", "2.14.10", "--out", str(tmp_path / "runs")]) == 0
    out = capsys.readouterr().out
    assert "1 one-sided classes replayed, 0 changed, 0 unknown):\n  none\n" in out
    assert out.rstrip().endswith("; 0 behaviour changes")


def test_a_campaign_of_both_releases_that_recorded_nothing_pairs_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_campaigns(monkeypatch, tmp_path, recorded=(True, False))
    assert main(["changes", "2.14.9", "2.14.10", "--out", str(tmp_path / "runs")]) == 0
    out = capsys.readouterr().out
    assert "behaviour changes: not paired (the campaign of 2.14.9 and 2.14.10 did not complete)\n" in out
    assert "(exit status 2)" in out


def test_a_cover_campaign_that_recorded_nothing_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    given = fake_campaigns(monkeypatch, tmp_path, recorded=(False, True))
    assert main(["changes", "2.14.9", "2.14.10", "--out", str(tmp_path / "runs")]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines()[-1] == (
        "nats-conformance: error: changes: the campaign on 2.14.10's -cover build recorded nothing"
    )
    assert len(given) == 1  # the second campaign never started


@pytest.mark.parametrize(
    ("options", "says"),
    [
        (("2.14.9", "2.14.9"), "R1 and R2 are both 2.14.9"),
        (("system", "2.14.10"), "surface reads a release's source"),
        (("foo", "2.14.10"), "invalid nats-server version"),
        (("2.14.9",), "the following arguments are required: R2"),
        (("2.14.9", "2.14.10", "--plan", "huge"), "argument --plan: invalid choice"),
        (("2.14.9", "2.14.10", "--json", "/nonexistent/c.json"), "--json: the folder of"),
    ],
)
def test_bad_input_is_one_line_with_exit_status_2(
    options: tuple[str, ...], says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["changes", *options, "--out", str(tmp_path / "runs")]) == 2
    error = capsys.readouterr().err
    assert error.startswith("nats-conformance: error: ")
    assert says in error
    assert error.count("\n") == 1
    assert not (tmp_path / "runs").exists()
