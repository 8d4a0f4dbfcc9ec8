"""The equivalence file of `nats-conformance mutants` (`mutants-equivalent.toml`): an entry covers the
mutants that make its change in its function, on its line when it names one; a bad entry is one error."""

from __future__ import annotations

from pathlib import Path

import pytest

from nats_conformance.fixtures.options import OptionError
from nats_conformance.records.mutants import Mutant
from nats_conformance.suites.mutants import EQUIVALENT_PATH, load_equivalents

CHANGE = (
    'file = "server/sublist.go"\nfunction = "f"\noperator = "boundary"\n'
    'original = "a < b"\nmutated = "a <= b"\n'
)


def mutant(number: int, line: int) -> Mutant:
    return Mutant(number, "server/sublist.go", "f", line, "boundary", "a < b", "a <= b")


def test_an_entry_with_a_line_covers_that_line_only_and_one_without_covers_every_line(tmp_path: Path) -> None:
    path = tmp_path / "equivalent.toml"
    path.write_text(f'[[equivalent]]\n{CHANGE}line = 12\nreason = "r"\n')
    (entry,) = load_equivalents(path)
    assert [entry.covers(mutant(1, 12)), entry.covers(mutant(2, 13))] == [True, False]
    path.write_text(f'[[equivalent]]\n{CHANGE}reason = "r"\n')
    (entry,) = load_equivalents(path)
    assert [entry.covers(mutant(1, 12)), entry.covers(mutant(2, 13))] == [True, True]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ('line = "12"\nreason = "r"\n', "may have a line"),
        ('reason = "r"\ncolumn = 3\n', "must have exactly"),
        ('reason = " "\n', "gives no reason"),
    ],
)
def test_a_bad_entry_is_one_error(tmp_path: Path, extra: str, message: str) -> None:
    path = tmp_path / "equivalent.toml"
    path.write_text(f"[[equivalent]]\n{CHANGE}{extra}")
    with pytest.raises(OptionError, match=message):
        load_equivalents(path)


def test_the_shipped_file_loads_and_every_entry_has_a_reason() -> None:
    entries = load_equivalents(EQUIVALENT_PATH)
    assert entries
    assert all(len(entry.reason) > 40 for entry in entries)
