"""reports.matrix: cell states, support evidence and the first release behaving as documented."""

from __future__ import annotations

from typing import Any

import pytest

from nats_conformance.records.aggregates import EXERCISED, UNSUPPORTED, VerdictCount
from nats_conformance.records.releases import Release, sorted_releases, version_key
from nats_conformance.reports.matrix import (
    AGREES,
    DIVERGES,
    KNOWN,
    NO_EVIDENCE,
    NOT_SUPPORTED,
    Tally,
    cell_state,
    compatibility_matrices,
    context_matrices,
    first_documented,
    function_names,
)
from nats_conformance.reports.report import gaps

R = [Release("nats-server", v) for v in ("2.8.4", "2.9.25", "2.10.27", "2.12.15", "2.14.5")]


def count(release: Release, *counted: Any) -> VerdictCount:
    """Counted cases (feature, functions, verdict, evidence, count) of one verdict, tallied under it."""
    return VerdictCount(release, *counted, counted[2])


def test_releases_sort_by_version_number_not_text() -> None:
    shuffled = [R[2], R[4], R[0], R[3], R[1], R[2]]
    assert sorted_releases(shuffled) == R
    assert version_key("2.11.0-RC.1") < version_key("2.11.0") < version_key("2.11.1")
    other = Release("other-broker", "1.0")
    assert sorted_releases([other, R[1]]) == [R[1], other]
    assert other.label == "other-broker 1.0"


@pytest.mark.parametrize(
    ("tally", "refused", "state"),
    [
        (Tally(agree=5, diverge=1, expected=1), False, DIVERGES),
        (Tally(agree=5, expected=1), False, KNOWN),
        (Tally(agree=5, expected=1), True, KNOWN),
        (Tally(agree=5, unsupported=5), True, NOT_SUPPORTED),
        (Tally(agree=5), False, AGREES),
        (Tally(unknown=3), False, NO_EVIDENCE),
        (Tally(), False, NO_EVIDENCE),
    ],
)
def test_cell_state_rules_in_order(tally: Tally, refused: bool, state: str) -> None:
    assert cell_state(tally, refused=refused) == state


@pytest.mark.parametrize(
    ("states", "first"),
    [
        ([NOT_SUPPORTED, NOT_SUPPORTED, AGREES, AGREES, AGREES], "2.10.27"),
        ([AGREES, DIVERGES, AGREES, AGREES, AGREES], "2.10.27"),
        ([AGREES, AGREES, NO_EVIDENCE, AGREES, NO_EVIDENCE], "2.8.4"),
        ([AGREES, AGREES, AGREES, AGREES, KNOWN], None),
        ([AGREES, AGREES, AGREES, AGREES, DIVERGES], None),
        ([NO_EVIDENCE] * 5, None),
        ([DIVERGES, KNOWN, NOT_SUPPORTED, NO_EVIDENCE, AGREES], "2.14.5"),
        ([AGREES, NOT_SUPPORTED, AGREES, AGREES, AGREES], "2.10.27"),
    ],
)
def test_first_release_from_which_every_later_release_agrees(states: list[str], first: str | None) -> None:
    found = first_documented(R, states)
    assert (found.version if found else None) == first


def test_function_names_are_canonical_and_skip_unknown_names() -> None:
    assert function_names("splitfromleft+wildcard+nosuch+$n") == ("splitFromLeft", "wildcard", "$n")
    assert function_names("") == ()
    assert function_names("SliceFromRight+slicefromright") == ("sliceFromRight",)


def test_matrix_from_evidence() -> None:
    old, v10, v12 = R[1], R[2], R[3]
    verdicts = [
        # random: rejected as unsupported by both on 2.9 and 2.10, mapped on 2.12
        count(old, "validation", "random", "agree", UNSUPPORTED, 2),
        count(v10, "validation", "random", "agree", UNSUPPORTED, 1),
        count(v12, "mapping", "random", "agree", EXERCISED, 40),
        # left: unsupported on 2.9; from 2.10 the reference accepts, servers reject (listed)
        count(old, "validation", "left", "agree", UNSUPPORTED, 1),
        count(v10, "validation", "left", "expected", "", 3),
        count(v12, "validation", "left", "expected", "", 2),
        # wildcard: a rejection as unsupported in a mixed template does not outweigh being exercised
        count(old, "validation", "left+wildcard", "agree", UNSUPPORTED, 1),
        count(old, "mapping", "wildcard", "agree", EXERCISED, 10),
        count(v10, "mapping", "wildcard", "diverge", EXERCISED, 1),
        count(v10, "mapping", "wildcard", "agree", EXERCISED, 9),
        count(v12, "mapping", "wildcard", "agree", EXERCISED, 10),
        count(v12, "mapping", "wildcard", "unknown", "", 4),
        # partition feature: no partition cases on 2.9, where the function is unsupported
        count(old, "validation", "partition", "agree", UNSUPPORTED, 1),
        count(v10, "partition", "partition", "agree", EXERCISED, 5),
        count(v12, "partition", "partition", "agree", EXERCISED, 5),
    ]
    (matrix,) = compatibility_matrices(verdicts)
    assert matrix.releases == (old, v10, v12)
    rows = {(row.kind, row.name): row for row in matrix.rows}
    assert list(rows) == [
        ("feature", "mapping"),
        ("feature", "validation"),
        ("feature", "partition"),
        ("function", "wildcard"),
        ("function", "partition"),
        ("function", "left"),
        ("function", "random"),
    ]

    def states(kind: str, name: str) -> list[str]:
        return [cell.state for cell in rows[(kind, name)].cells]

    def first(kind: str, name: str) -> str | None:
        release = rows[(kind, name)].first_documented
        return release.version if release else None

    assert states("function", "random") == [NOT_SUPPORTED, NOT_SUPPORTED, AGREES]
    assert first("function", "random") == "2.12.15"
    assert states("function", "left") == [NOT_SUPPORTED, KNOWN, KNOWN]
    assert first("function", "left") is None
    assert states("function", "wildcard") == [AGREES, DIVERGES, AGREES]
    assert first("function", "wildcard") == "2.12.15"
    assert rows[("function", "wildcard")].cells[2].tally.unknown == 4
    assert states("feature", "partition") == [NOT_SUPPORTED, AGREES, AGREES]
    assert first("feature", "partition") == "2.10.27"
    assert states("feature", "validation") == [AGREES, KNOWN, KNOWN]
    assert states("feature", "mapping") == [AGREES, DIVERGES, AGREES]


def test_what_an_adapter_does_not_support_is_a_not_supported_cell() -> None:
    # An adapter whose hello lists no `match` op and no `partition` function: its questions are
    # unknown cases with difference not-supported (evidence UNSUPPORTED), never judged.
    library = Release("some-library", "2.14.5")
    (matrix,) = compatibility_matrices(
        [
            count(library, "matching", "full", "unknown", UNSUPPORTED, 30),
            count(library, "partition", "partition", "unknown", UNSUPPORTED, 20),
            count(library, "partition", "partition-op", "unknown", UNSUPPORTED, 20),
            count(library, "mapping", "split", "agree", EXERCISED, 50),
            count(library, "mapping", "split", "unknown", "", 1),
        ]
    )
    states = {(row.kind, row.name): row.cells[0].state for row in matrix.rows}
    assert states == {
        ("feature", "mapping"): AGREES,
        ("feature", "matching"): NOT_SUPPORTED,
        ("feature", "partition"): NOT_SUPPORTED,
        ("function", "partition"): NOT_SUPPORTED,
        ("function", "split"): AGREES,
    }


def test_one_matrix_per_implementation() -> None:
    other = Release("other-broker", "1.0")
    matrices = compatibility_matrices(
        [
            count(R[1], "mapping", "", "agree", EXERCISED, 1),
            count(other, "mapping", "", "diverge", EXERCISED, 1),
        ]
    )
    assert [(m.implementation, m.releases) for m in matrices] == [
        ("nats-server", (R[1],)),
        ("other-broker", (other,)),
    ]
    assert matrices[1].rows[0].cells[0].state == DIVERGES


def test_a_class_not_shown_on_some_releases_between_its_first_and_last_lists_them() -> None:
    swept = {Release("nats-server", f"2.9.{patch}") for patch in range(6)} | {Release("other", "2.9.3")}
    shown = tuple(Release("nats-server", v) for v in ("2.9.1", "2.9.2", "2.9.4"))
    assert gaps(shown, swept) == (Release("nats-server", "2.9.3"),)
    assert gaps(shown[:2], swept) == ()


def test_the_contexts_matrix_shows_where_a_function_is_taken_in_one_place_and_not_another() -> None:
    verdicts = [
        count(R[2], "validation", "left", "expected", "", 3),  # refused in mappings {} (listed)
        count(R[2], "stream-transform", "wildcard+left", "agree", EXERCISED, 5),
        count(R[4], "stream-transform", "left", "expected", "", 2),
        count(R[4], "source-transform", "split", "agree", EXERCISED, 4),
        count(R[4], "matching", "", "agree", EXERCISED, 9),  # no transform: in no context
    ]
    (matrix,) = context_matrices(verdicts)
    assert matrix.releases == (R[2], R[4])
    states = {row.name: [cell.state for cell in row.cells] for row in matrix.rows}
    assert states == {
        "mapping: left": [KNOWN, NO_EVIDENCE],
        "stream: wildcard": [AGREES, NO_EVIDENCE],
        "stream: left": [AGREES, KNOWN],
        "source: split": [NO_EVIDENCE, AGREES],
    }
    assert [row.name for row in matrix.rows][:2] == ["mapping: left", "stream: wildcard"]
