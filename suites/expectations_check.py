"""`expectations check RUN_DIR...`: the release range of every listed divergence against what runs saw.

    nats-conformance expectations check runs/RUN_ID --expectations expectations.toml

For each entry, the releases of the runs' records that contradict its range, one line each:

- listed but not seen: a release in its range (and implementation) on which the runs judged cases that
  could show it (its feature and, if listed, one of its functions; `unknown` cases judge nothing), none
  of which it explained (verdict `expected` with its id); never for an intermittent entry;
- seen outside its range: a release outside its range on which a case it explains (`explains`) diverged.

Then a summary line; exit status 1 when any entry is contradicted, else 0 (reference.cli). With
`--update` the file is updated as `campaign --update-expectations` updates it (`updated_entries`:
ranges the runs show ended closed, ranges they show longer widened, new entries for the other
divergences, none removed), from the same evidence read back from the records.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TYPE_CHECKING

from nats_conformance.records.duckdb_sql import connect, open_records
from nats_conformance.records.expectations import (
    DEFAULT_PATH,
    Expectation,
    Expectations,
    default_to_update,
    load_expectations,
    updated_entries,
    version_key,
    write_expectations,
)
from nats_conformance.records.load import load_records
from nats_conformance.records.queries import RECORDS
from nats_conformance.records.schema import Case, case_of
from nats_conformance.reference.cli import Parser, exit_status
from nats_conformance.suites.expectations_export import add_export_action

if TYPE_CHECKING:
    from duckdb import DuckDBPyConnection

COLUMNS = ("implementation", "server_version", "feature", "functions", "verdict", "expectation", "difference")
JUDGED = ("diverge", "expected")
"""The verdicts of a case that differed from the reference, which an entry may explain."""
SPAN = 3
"""Consecutive tested releases from which a list of releases is written as `FIRST to LAST`."""


@dataclass(frozen=True, slots=True)
class Seen:
    """A kind of case the runs recorded, as far as an expectation tells cases apart."""

    implementation: str
    server_version: str
    feature: str
    functions: str
    verdict: str
    expectation: str
    difference: str


@dataclass(frozen=True, slots=True)
class Mismatch:
    """An entry whose range the runs contradict on `releases`, in the way `how` says."""

    entry: Expectation
    how: str
    releases: frozenset[str]


def seen_in(connection: DuckDBPyConnection) -> list[Seen]:
    """The distinct kinds of case of the records open on `connection` (`open_records`)."""
    rows = connection.sql(f"SELECT DISTINCT {', '.join(COLUMNS)} FROM {RECORDS}").fetchall()
    return [Seen(*(str(value or "") for value in row)) for row in rows]


def divergences_in(connection: DuckDBPyConnection) -> list[Case]:
    """The smallest diverging case (shortest subject) of each class on each release of the records open
    on `connection`: what `--update` lists as new entries."""
    key = "implementation, server_version, feature, functions, difference"
    relation = connection.sql(
        f"SELECT * FROM {RECORDS} WHERE verdict = 'diverge' QUALIFY row_number() OVER "
        f"(PARTITION BY {key} ORDER BY length(subject), case_id) = 1"
    )
    rows = [dict(zip(relation.columns, row, strict=True)) for row in relation.fetchall()]
    return [case_of(row) for row in rows]


def mismatches(known: Expectations, seen: Sequence[Seen]) -> list[Mismatch]:
    """Every contradiction of an entry's range by `seen` (see the module), the runs' divergences judged
    again by the entries as they stand (`known`, from `evidence_of`), so that a corrected file is checked
    against the records judged before the correction."""
    unexplained = [row for row in seen if row.verdict in JUDGED and _entry(known, row) is None]
    found = []
    for entry in known.entries:
        missing = known.tested(entry) - known.shown(entry)
        if missing and not entry.intermittent:
            found.append(Mismatch(entry, "listed but not seen on", frozenset(missing)))
        outside = {
            row.server_version
            for row in unexplained
            if fnmatchcase(row.implementation, entry.implementation)
            and entry.explains(row.feature, row.functions, row.difference)
        }
        if outside:
            found.append(Mismatch(entry, "seen outside its range on", frozenset(outside)))
    return found


def update_expectations(
    path: Path, expectations: Expectations, smallest: Iterable[Case], run_id: str
) -> None:
    """Rewrite the expectations file from this run (`updated_entries`): a line per range it closed and
    per entry it keeps unchanged though no release of the run showed it, then a summary."""
    update = updated_entries(
        expectations, [case for case in smallest if case.verdict == "diverge"], run_id=run_id
    )
    write_expectations(path, update.entries, update.cases)
    for ending in update.closed:
        print(f"expectation range closed: {ending.entry.id}: {ending.sentence(run_id)}")
    for beginning in update.started:
        print(f"expectation range moved up: {beginning.entry.id}: {beginning.sentence(run_id)}")
    for widening in update.widened:
        print(f"expectation range widened: {widening.entry.id}: {widening.sentence(run_id)}")
    stale = expectations.stale()
    for entry in stale:
        print(
            f"expectation kept as it was: {entry.id} showed on no release of this run, so none dates its end"
        )
    print(
        f"expectations updated: {path} ({len(update.cases)} new, {len(update.closed)} ranges closed, "
        f"{len(update.started)} moved up, {len(update.widened)} widened, {len(stale)} not seen and kept)"
    )


def evidence_of(entries: Sequence[Expectation], seen: Sequence[Seen]) -> Expectations:
    """The evidence a campaign gathers (`Expectations`), read back from records and judged by `entries`
    as they stand: the releases each entry was covered and tested on (every judged case), and those it
    was confirmed on (the diverging and expected cases it explains there)."""
    known = Expectations(tuple(entries))
    for row in seen:
        if row.verdict == "unknown":
            continue
        known.note_run(row.implementation, row.server_version)
        known.note_feature(row.server_version, row.feature, row.functions)
        if row.verdict in JUDGED:
            _entry(known, row)
    return known


def _entry(known: Expectations, row: Seen | Case) -> Expectation | None:
    """The entry explaining a kind of case that differed, as the entries stand (`classify`)."""
    return known.classify(
        row.implementation,
        row.server_version,
        feature=row.feature,
        functions=row.functions,
        difference=row.difference,
    )


def releases_text(chosen: Iterable[str], tested: Sequence[str]) -> str:
    """`chosen` in the order of `tested` (every release of the runs, oldest first), each `SPAN` or more
    of them consecutive in `tested` written as `FIRST to LAST`."""
    picked = set(chosen)
    spans: list[list[str]] = []
    previous = False
    for release in tested:
        if release in picked:
            if previous:
                spans[-1].append(release)
            else:
                spans.append([release])
        previous = release in picked
    return ", ".join(f"{span[0]} to {span[-1]}" if len(span) >= SPAN else ", ".join(span) for span in spans)


def expectations_check(arguments: argparse.Namespace) -> int:
    path = Path(arguments.expectations or DEFAULT_PATH)
    entries = load_expectations(path).entries
    records = load_records([Path(run_dir) for run_dir in arguments.run_dirs])
    if not arguments.allow_incomplete:
        records.check_complete()
    with connect() as connection:
        open_records(connection, [str(part) for part in records.parts])
        seen = seen_in(connection)
        known = evidence_of(entries, seen)
        new = (
            [case for case in divergences_in(connection) if _entry(known, case) is None]
            if arguments.update
            else []
        )
    tested = sorted({row.server_version for row in seen}, key=version_key)
    found = mismatches(known, seen)
    for mismatch in found:
        print(f"{mismatch.entry.id}: {mismatch.how} {releases_text(mismatch.releases, tested)}")
    contradicted = len({mismatch.entry.id for mismatch in found})
    print(
        f"{contradicted} of {len(entries)} entries of {path} contradicted by {len(records.runs)} run(s) "
        f"on {len(tested)} release(s)"
    )
    if arguments.update:
        target = Path(arguments.expectations) if arguments.expectations else default_to_update()
        runs = ", ".join(run.run_id for run in records.runs)
        update_expectations(target, known, new, runs)
        return 0
    return exit_status(diverged=bool(found), unknown=None)


def add_expectations_command(commands: argparse._SubParsersAction[Parser]) -> None:
    """Register `expectations check` (and `export`, suites.expectations_export) on a sub-command parser."""
    expectations = commands.add_parser(
        "expectations", help="check the expectations file against runs, or export a copy of it"
    )
    actions = expectations.add_subparsers(dest="action", required=True, metavar="ACTION")
    check = actions.add_parser(
        "check",
        help="compare each entry's release range with what runs observed",
        description="Exit status: 0 the runs agree with every range, 1 an entry's range is contradicted, 2 "
        "usage error or unreadable records.",
    )
    check.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run directories, or their parent")
    check.add_argument("--expectations", help="the file to check (default the shipped expectations.toml)")
    check.add_argument(
        "--allow-incomplete",
        action="store_true",
        help="check runs that did not complete (interrupted, crashed or killed) on the records they left",
    )
    check.add_argument(
        "--update",
        action="store_true",
        help="then close the range of every entry the runs show ended, as campaign --update-expectations "
        "does (never removing one), and exit 0",
    )
    check.set_defaults(handler=expectations_check)
    add_export_action(actions)
