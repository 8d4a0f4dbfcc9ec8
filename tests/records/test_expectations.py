"""The expectations file: which divergences are known, for which releases, and which entries went stale."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from nats_conformance.records.casefile import CaseFile
from nats_conformance.records.expectations import (
    Expectation,
    Expectations,
    ExpectationsError,
    Update,
    load_expectations,
    updated_entries,
    write_expectations,
)
from nats_conformance.records.schema import Case

LEFT_RIGHT = Expectation(
    id="lr",
    feature="validation",
    difference="reference-accept-server-reject",
    min_version="2.10.16",
    functions=("left", "right"),
)
CRASH = Expectation(
    id="crash", feature="partition", difference="server-crash", min_version="2.9.0", max_version="2.11.99"
)
EMPTY = Expectation(id="empty", feature="validation", difference="*-server-accept", functions=("literal",))


def classify(known: Expectations, version: str, functions: str, case_class: str) -> Expectation | None:
    feature, _, difference = case_class.partition(":")
    return known.classify("nats-server", version, feature=feature, functions=functions, difference=difference)


def test_a_divergence_is_expected_only_in_its_range_and_for_its_functions() -> None:
    known = Expectations((LEFT_RIGHT, CRASH, EMPTY))
    reject = "validation:reference-accept-server-reject"
    assert classify(known, "2.10.16", "wildcard+left", reject) == LEFT_RIGHT
    assert classify(known, "2.10.15", "wildcard+left", reject) is None
    assert classify(known, "2.14.5", "split", reject) is None
    assert (
        known.classify(
            "other-server", "2.14.5", feature="validation", functions="left", difference=reject.split(":")[1]
        )
        is None
    )
    assert classify(known, "2.11.17", "partition", "partition:server-crash") == CRASH
    assert classify(known, "2.12.0", "partition", "partition:server-crash") is None
    assert classify(known, "2.14.5", "", "validation:reference-reject-x-server-accept") == EMPTY
    assert classify(known, "2.14.5", "wildcard", "validation:reference-reject-x-server-accept") is None


def test_the_literal_source_partition_is_expected_under_any_function_combination() -> None:
    """The CI failure this format fixes: the intermittent literal-source partition showed up as
    partition:random+partition:wrong-subject-literal-source, a combination the entry did not spell."""
    shipped = load_expectations()
    entry = shipped.classify(
        "nats-server",
        "2.14.5",
        feature="partition",
        functions="random+partition",
        difference="wrong-subject-literal-source",
    )
    assert entry is not None
    assert entry.id == "partition-of-literal-source-hashes-nothing"


def test_an_entry_is_stale_when_its_feature_and_range_ran_without_it() -> None:
    known = Expectations((LEFT_RIGHT, CRASH))
    known.note_run("nats-server", "2.14.5")
    assert known.stale() == []  # no validation or partition case ran yet
    known.note_feature("2.14.5", "validation", "wildcard")
    assert known.stale() == []  # no validation case used left or right
    known.note_feature("2.14.5", "validation", "wildcard+left")
    assert known.stale() == [LEFT_RIGHT]  # 2.14.5 is outside the crash entry's range
    classify(known, "2.14.5", "left", "validation:reference-accept-server-reject")
    assert known.stale() == []


def test_an_entry_keeping_a_known_case_is_stale_only_when_its_case_ran() -> None:
    """`campaign --family mapping --strict` exited 1 with no divergence: the mapping family records a
    refused mapping as a validation case, so entries only another family shows (an operator-mode
    refusal, a `*` entry only invalid mappings show) were called stale."""
    everywhere = Expectation(
        id="everywhere", feature="*", difference="reference-reject-*-accept", case="known-cases/e.json"
    )
    jwt = replace(everywhere, id="jwt", feature="validation", case="known-cases/j.json")
    cases = (
        CaseFile("validation", "a.*", "b.$0", "", "2.14.5"),
        CaseFile("validation", "a", "{{split(1, )}}", "", "2.14.5", found_on={"backend": "operator"}),
    )
    known = Expectations((everywhere, LEFT_RIGHT, jwt), known_cases=cases)
    known.note_run("nats-server", "2.14.5")
    known.note_feature("2.14.5", "mapping", "wildcard")
    known.note_feature("2.14.5", "validation", "left")
    assert known.stale() == [LEFT_RIGHT]  # no known case ran: only the entry keeping none
    known.note_known([cases[1]])
    assert known.stale() == [LEFT_RIGHT, jwt]
    task = Expectations(known.entries, known_cases=cases)
    task.note_known(cases[:1])
    known.absorb(task)
    assert known.stale() == [everywhere, LEFT_RIGHT, jwt]


def test_an_intermittent_entry_is_never_stale_and_survives_an_update(tmp_path: Path) -> None:
    """A run that misses a divergence which shows only now and then is no evidence that it went away."""
    now_and_then = Expectation(
        id="now-and-then", feature="partition", difference="wrong-subject-*", intermittent=True
    )
    known = Expectations((now_and_then, CRASH))
    known.note_run("nats-server", "2.10.27")
    known.note_feature("2.10.27", "partition", "partition")
    assert known.stale() == [CRASH]
    assert updated_entries(known, [], run_id="r") == Update([now_and_then, CRASH], {}, [])
    path = tmp_path / "expectations.toml"
    write_expectations(path, [now_and_then])
    assert load_expectations(path).entries == (now_and_then,)
    shipped = {entry.id: entry for entry in load_expectations().entries}
    assert shipped["partition-of-literal-source-hashes-nothing"].intermittent


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            'id = "x"\nfeature = "a"\ndifference = "b"\nmin_version = "two"\n',
            r"'version' must look like 2\.10\.16 \(got 'two'\)",
        ),
        ('id = "x"\n', "needs 'id', 'feature', 'difference'"),
        ('id = "x"\nfeature = "a"\ndifference = "b"\nintermittent = "yes"\n', "must be true or false"),
        (
            'id = "x"\ncase_class = "a:*:b"\nfeature = "a"\ndifference = "b"\n',
            r"divergence 'x' has unknown keys \['case_class'\]",
        ),
    ],
)
def test_a_bad_entry_is_one_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "expectations.toml"
    path.write_text("[[divergence]]\n" + text)
    with pytest.raises(ExpectationsError, match=message) as raised:
        load_expectations(path)
    assert "\n" not in str(raised.value)


def test_an_unknown_top_level_key_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "expectations.toml"
    path.write_text('[[divergences]]\nid = "x"\nfeature = "a"\ndifference = "b"\n')
    with pytest.raises(ExpectationsError, match=r"unknown key 'divergences' \(known: divergence\)"):
        load_expectations(path)


def test_an_unreadable_or_missing_file_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "expectations.toml"
    path.write_text("[[divergence]\n")
    with pytest.raises(ExpectationsError, match="cannot read expectations"):
        load_expectations(path)
    with pytest.raises(ExpectationsError, match=r"^no expectations file .*missing\.toml$"):
        load_expectations(tmp_path / "missing.toml")


def test_entries_written_from_a_run_read_back(tmp_path: Path) -> None:
    found = Case(
        run_id="r",
        case_id=0,
        implementation="lib",
        server_version="2.14.5",
        backend="adapter",
        feature="mapping",
        functions="wildcard+split",
        source="a.*",
        destination="b.{{split(1,-)}}",
        subject="a.x",
        expected="b.x",
        observed="b",
        verdict="diverge",
        difference="value",
    )
    update = updated_entries(Expectations((CRASH,)), [found], run_id="r")
    entries = update.entries
    path = tmp_path / "expectations.toml"
    write_expectations(path, entries, update.cases)
    again = load_expectations(path)
    assert again.entries == tuple(entries)
    (new,) = (entry for entry in again.entries if entry.id != "crash")
    assert (new.feature, new.difference, new.functions) == ("mapping", "value", ("split", "wildcard"))
    assert again.classify("lib", "2.14.5", feature="mapping", functions="split", difference="value") == new
    # the new entry keeps the divergence's case beside the file, and a campaign reads it back to run first
    assert new.case == f"known-cases/{new.id}.json"
    (known,) = again.known_cases
    assert (known.source, known.destination, known.subject, known.case_class) == (
        "a.*",
        "b.{{split(1,-)}}",
        "a.x",
        "mapping:wildcard+split:value",
    )


def test_an_intermittent_entry_keeps_no_known_case(tmp_path: Path) -> None:
    """Its case would diverge in some runs and not in others, and campaigns of one seed must record the
    same verdicts."""
    path = tmp_path / "expectations.toml"
    write_expectations(path, [replace(CRASH, intermittent=True, case="known-cases/crash.json")])
    with pytest.raises(ExpectationsError, match=r"'crash' is intermittent and keeps no case"):
        load_expectations(path)


def test_a_missing_known_case_is_a_one_line_error(tmp_path: Path) -> None:
    path = tmp_path / "expectations.toml"
    write_expectations(path, [replace(CRASH, case="known-cases/crash.json")])
    with pytest.raises(ExpectationsError, match=r"the case of 'crash': no case file .*crash\.json$"):
        load_expectations(path)


def test_the_shipped_file_loads() -> None:
    shipped = load_expectations()
    assert {"partition-zero-crashes", "partition-of-literal-source-hashes-nothing"} <= {
        entry.id for entry in shipped.entries
    }


def test_the_known_cases_confirmations_are_told_apart_from_the_draws() -> None:
    """An entry its known case alone confirmed is not stale, and the run says no drawn case showed it."""
    known = Expectations((LEFT_RIGHT, CRASH))
    known.note_run("nats-server", "2.10.27")
    known.note_feature("2.10.27", "validation", "left")
    known.note_feature("2.10.27", "partition", "partition")
    with known.known_part() as part:
        classify(part, "2.10.27", "left", "validation:reference-accept-server-reject")
        classify(part, "2.10.27", "partition", "partition:server-crash")
        assert known.stale() == [LEFT_RIGHT, CRASH]  # the part's confirmations count once it ends
    classify(known, "2.10.27", "partition", "partition:server-crash")
    assert known.stale() == []
    assert known.by_known_case_alone() == [LEFT_RIGHT]


def test_a_class_asked_again_is_answered_alike_and_a_part_notes_its_own_evidence() -> None:
    """The entries in range of a release are worked out once per `Expectations` (`in_range`): a class
    asked again is answered alike, the known cases' part notes what it confirmed even when the run asked
    the same class before it, and a copy with other entries works out its own."""
    known = Expectations((LEFT_RIGHT, CRASH))
    for _ in range(2):
        assert classify(known, "2.10.27", "partition", "partition:server-crash") == CRASH
        assert classify(known, "2.12.0", "partition", "partition:server-crash") is None
    assert known.confirmed == {"crash": {"2.10.27"}}
    assert known.covered == {"lr": {"2.10.27", "2.12.0"}, "crash": {"2.10.27"}}
    with known.known_part() as part:
        assert classify(part, "2.10.27", "partition", "partition:server-crash") == CRASH
        assert part.confirmed == {"crash": {"2.10.27"}}
    assert known.known_confirmed == {"crash": {"2.10.27"}}
    assert (
        replace(known, entries=(LEFT_RIGHT,)).classify(
            "nats-server", "2.10.27", feature="partition", functions="partition", difference="server-crash"
        )
        is None
    )


def test_each_load_is_fresh_and_a_changed_file_is_read_again(tmp_path: Path) -> None:
    """A file read before gives a new `Expectations` whose evidence starts empty; once the file is
    rewritten, its new entries."""
    path = tmp_path / "expectations.toml"
    write_expectations(path, [CRASH])
    first = load_expectations(path)
    first.note_run("nats-server", "2.10.27")
    first.note_feature("2.10.27", "partition", "partition")
    second = load_expectations(path)
    assert second is not first
    assert second.entries == first.entries == (CRASH,)
    assert second.stale() == []
    assert first.stale() == [CRASH]
    write_expectations(path, [CRASH, LEFT_RIGHT])
    assert load_expectations(path).entries == (CRASH, LEFT_RIGHT)
