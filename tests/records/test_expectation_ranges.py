"""Release ranges from data: a run remembers on which releases it covered and confirmed each entry, and
`--update-expectations` closes the range of an entry the run shows ended instead of dropping it,
editing the file in place."""

from __future__ import annotations

import difflib
import pickle
from dataclasses import replace
from pathlib import Path

import pytest

import nats_conformance.records.expectations
import nats_conformance.suites.__main__
import nats_conformance.suites.commands
import nats_conformance.suites.expectations_check
from nats_conformance.records.expectations import (
    Ending,
    Expectation,
    Expectations,
    ExpectationsError,
    Widening,
    default_to_update,
    ended_entries,
    in_checkout,
    load_expectations,
    read_endings,
    updated_entries,
    write_endings,
    write_expectations,
)
from nats_conformance.records.schema import Case
from tests.records.samples import CRASHING

CRASH = Expectation(
    id="crash",
    feature="partition",
    difference="server-crash",
    min_version="2.9.0",
    functions=("partition",),
    note="The server panics.",
)
AGREEING = replace(CRASHING, server_version="2.12.15", observed="0", verdict="agree", difference="")


def judged(known: Expectations, case: Case) -> Case:
    """The case as a campaign judges it (suites.engine.verdicts): its release noted, its feature noted,
    a divergence classified."""
    known.note_run(case.implementation, case.server_version)
    known.note_feature(case.server_version, case.feature, case.functions)
    if not case.difference:
        return case
    entry = known.classify(
        case.implementation,
        case.server_version,
        feature=case.feature,
        functions=case.functions,
        difference=case.difference,
    )
    return replace(case, verdict="expected", expectation=entry.id) if entry else case


def test_a_run_remembers_the_releases_of_each_entry_and_a_task_s_evidence_merges() -> None:
    known = Expectations((CRASH,))
    judged(known, CRASHING)
    task = pickle.loads(pickle.dumps(Expectations((CRASH,))))  # as a scaled-out task hands it back
    with task.known_part() as part:
        judged(part, replace(CRASHING, server_version="2.11.17"))
    judged(task, AGREEING)
    known.absorb(pickle.loads(pickle.dumps(task)))
    assert known.covered == {"crash": {"2.10.27", "2.11.17", "2.12.15"}}
    assert known.confirmed == {"crash": {"2.10.27"}}
    assert known.known_confirmed == {"crash": {"2.11.17"}}
    assert known.tested(CRASH) == {"2.10.27", "2.11.17", "2.12.15"}
    assert known.shown(CRASH) == {"2.10.27", "2.11.17"}
    assert known.stale() == []
    assert known.ended() == [Ending(CRASH, "2.11.17", "2.12.15")]


def test_an_update_closes_the_range_of_an_entry_a_newer_release_no_longer_shows() -> None:
    """Before, the entry was dropped as stale only when no release showed it, and kept open otherwise.
    The range closes on the line the run shows it ended on: 2.12's releases from 2.12.15 on."""
    known = Expectations((CRASH,))
    assert judged(known, CRASHING).verdict == "expected"
    judged(known, AGREEING)
    update = updated_entries(known, [], run_id="r1")
    closed = replace(
        CRASH,
        ended_in=("2.12.15",),
        note="The server panics. Ends on the 2.12 line at 2.12.15: shown on 2.10.27, not on 2.12.15 "
        "(run r1).",
    )
    assert update.entries == [closed]
    assert update.closed == [Ending(CRASH, "2.10.27", "2.12.15")]
    assert [
        closed.covers("nats-server", v) for v in ("2.10.27", "2.12.14", "2.12.15", "2.12.16", "2.14.5")
    ] == [
        True,
        True,
        False,
        False,
        True,
    ]
    # a release older than one that still shows it is no evidence of an end
    older = Expectations((CRASH,))
    judged(older, replace(AGREEING, server_version="2.9.25"))
    judged(older, CRASHING)
    assert older.ended() == []
    assert updated_entries(older, [], run_id="r1").entries == [CRASH]


def test_an_end_on_two_lines_closes_each_and_leaves_their_older_patches_in_range() -> None:
    """transform-match-star-prefixed-token: shown on 2.10.29 and 2.12.15, not on 2.14.10 and 2.15.3 (the
    newest patches), so it ends at 2.14.10 on 2.14 and at 2.15.3 on 2.15; 2.14.9 and 2.15.2 stay in
    range, where one closed range (max_version 2.12.15) would have left them out."""
    known = Expectations((replace(CRASH, min_version="2.10.0"),))
    for version in ("2.10.29", "2.12.15"):
        judged(known, replace(CRASHING, server_version=version))
    for version in ("2.14.10", "2.15.3"):
        judged(known, replace(AGREEING, server_version=version))
    assert [(e.last, e.next) for e in known.ended()] == [("2.12.15", "2.14.10"), ("2.12.15", "2.15.3")]
    (closed,) = updated_entries(known, [], run_id="r1").entries
    assert closed.ended_in == ("2.14.10", "2.15.3")
    inside = [
        v for v in ("2.12.15", "2.14.9", "2.14.10", "2.15.2", "2.15.3") if closed.covers("nats-server", v)
    ]
    assert inside == ["2.12.15", "2.14.9", "2.15.2"]
    # a later run of 2.14.9 and 2.14.10 agrees with the file: the listed end is confirmed (the headline
    # names it again), and the file is left as it is
    again = Expectations((closed,))
    judged(again, replace(CRASHING, server_version="2.14.9"))
    judged(again, replace(AGREEING, server_version="2.14.10"))
    assert [(e.last, e.next, e.listed) for e in again.ended()] == [("2.14.9", "2.14.10", True)]
    update = updated_entries(again, [], run_id="r2")
    assert (update.entries, update.closed) == ([closed], [])
    # a run of the newest patches alone shows no end: nothing older showed it
    newest = Expectations((closed,))
    judged(newest, replace(AGREEING, server_version="2.14.10"))
    assert newest.ended() == []


def test_an_entry_shown_on_no_release_of_the_run_is_kept_with_its_range() -> None:
    known = Expectations((CRASH,))
    judged(known, AGREEING)
    judged(known, replace(AGREEING, server_version="2.14.5"))
    assert known.stale() == [CRASH]
    assert known.ended() == []
    assert updated_entries(known, [], run_id="r1").entries == [CRASH]


def test_an_intermittent_entry_s_range_is_never_closed() -> None:
    now_and_then = replace(CRASH, intermittent=True)
    known = Expectations((now_and_then,))
    judged(known, CRASHING)
    judged(known, AGREEING)
    assert known.ended() == []
    assert updated_entries(known, [], run_id="r1").entries == [now_and_then]


FILE = '''# Known divergences, with a comment the rewrite keeps.

[[divergence]]
id = "first"
min_version = "2.2.0"
feature = "mapping"
difference = "wrong-subject"
note = "Unchanged."

[[divergence]]
id = "crash"   # a comment on a key
min_version = "2.9.0"
feature = "partition"
difference = "server-crash"
functions = ["partition"]
note = """The server panics
on the first message."""

# a comment before the last table
[[divergence]]
id = "last"
feature = "*"
difference = "value"
'''


def test_closing_a_range_rewrites_only_its_lines_and_keeps_comments(tmp_path: Path) -> None:
    path = tmp_path / "expectations.toml"
    path.write_text(FILE)
    known = load_expectations(path)
    judged(known, CRASHING)
    judged(known, AGREEING)
    update = updated_entries(known, [], run_id="r1")
    write_expectations(path, update.entries, update.cases)
    diff = [
        line
        for line in difflib.unified_diff(FILE.splitlines(), path.read_text().splitlines(), n=0, lineterm="")
        if not line.startswith(("---", "+++", "@@"))
    ]
    assert diff == [
        '+ended_in = ["2.12.15"]',
        '-on the first message."""',
        "+on the first message.",
        '+Ends on the 2.12 line at 2.12.15: shown on 2.10.27, not on 2.12.15 (run r1)."""',
    ]
    assert load_expectations(path).entries == tuple(update.entries)


def test_a_new_entry_is_appended_as_a_table(tmp_path: Path) -> None:
    path = tmp_path / "expectations.toml"
    path.write_text(FILE)
    update = updated_entries(load_expectations(path), [replace(CRASHING, difference="value")], run_id="r1")
    write_expectations(path, update.entries, update.cases)
    text = path.read_text()
    assert text.startswith(FILE)
    assert text[len(FILE) :].startswith('\n[[divergence]]\nid = "nats-server-partition-value"\n')
    assert [entry.id for entry in load_expectations(path).entries] == [
        "first",
        "crash",
        "last",
        "nats-server-partition-value",
    ]


def test_only_a_checkout_s_file_is_rewritten_by_default(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / "pyproject.toml").write_text('[project]\nname = "nats-conformance"\n')
    assert in_checkout(checkout / "expectations.toml")
    other = tmp_path / "other"
    other.mkdir()
    (other / "pyproject.toml").write_text('[project]\nname = "something-else"\n')
    assert not in_checkout(other / "records" / "expectations.toml")
    installed = checkout / ".venv" / "lib" / "python3.11" / "site-packages" / "records"
    installed.mkdir(parents=True)
    assert not in_checkout(installed / "expectations.toml")
    assert in_checkout(nats_conformance.records.expectations.DEFAULT_PATH)  # this checkout's own


def test_update_expectations_refuses_to_write_into_an_installed_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    shipped = tmp_path / "site-packages" / "records" / "expectations.toml"
    shipped.parent.mkdir(parents=True)
    shipped.write_text(FILE)
    monkeypatch.setattr(nats_conformance.records.expectations, "DEFAULT_PATH", shipped)
    # the command's module holds its own name for the file (imported here first, so that the patch is
    # undone for later tests: a first import during the patch would keep the temporary file)
    monkeypatch.setattr(nats_conformance.suites.commands, "DEFAULT_PATH", shipped)
    with pytest.raises(ExpectationsError, match="name the file to rewrite with --expectations PATH"):
        default_to_update()
    status = nats_conformance.suites.__main__.main(
        ["campaign", "--update-expectations", "--out", str(tmp_path / "runs")]
    )
    error = capsys.readouterr().err
    assert status == 2
    assert error.startswith("nats-conformance: error: --update-expectations: the default expectations file")
    assert error.count("\n") == 1
    assert shipped.read_text() == FILE
    assert not (tmp_path / "runs").exists()


def test_the_campaign_prints_a_line_per_closed_range_and_per_entry_kept_unseen(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "expectations.toml"
    path.write_text(FILE)
    known = load_expectations(path)
    judged(known, CRASHING)
    judged(known, AGREEING)
    judged(known, replace(AGREEING, feature="mapping", functions="wildcard"))  # "first" and "last" unseen
    nats_conformance.suites.expectations_check.update_expectations(path, known, [], "r1")
    assert capsys.readouterr().out.splitlines() == [
        "expectation range closed: crash: Ends on the 2.12 line at 2.12.15: shown on 2.10.27, not on 2.12.15 "
        "(run r1).",
        "expectation kept as it was: first showed on no release of this run, so none dates its end",
        "expectation kept as it was: last showed on no release of this run, so none dates its end",
        f"expectations updated: {path} (0 new, 1 ranges closed, 0 moved up, 0 widened, 2 not seen and kept)",
    ]
    assert [entry.id for entry in load_expectations(path).entries] == ["first", "crash", "last"]


def test_the_shipped_file_rewritten_with_its_own_entries_is_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "expectations.toml"
    path.write_text(nats_conformance.records.expectations.DEFAULT_PATH.read_text())
    write_expectations(path, load_expectations(nats_conformance.records.expectations.DEFAULT_PATH).entries)
    assert path.read_text() == nats_conformance.records.expectations.DEFAULT_PATH.read_text()


def test_a_new_divergence_gets_one_entry_per_run_of_releases_that_show_it() -> None:
    """A sweep's new finding is dated by its data: shown on 2.2.0-2.2.2 and again on 2.9.0, not on the
    releases between that checked its feature, gives two entries, the first closed at 2.2.2; the second
    is open, as no newer release was checked."""
    known = Expectations()
    shown = ("2.2.0", "2.2.1", "2.2.2", "2.9.0")
    divergences = [judged(known, replace(CRASHING, server_version=v)) for v in shown]
    for version in ("2.2.3", "2.8.4"):
        judged(known, replace(AGREEING, server_version=version))
    judged(known, replace(AGREEING, server_version="2.8.0", feature="matching"))  # another feature
    update = updated_entries(known, divergences, run_id="r9")
    first, second = update.entries
    name = "nats-server-partition-server-crash"
    assert (first.id, first.min_version, first.max_version) == (name, "2.2.0", "2.2.2")
    assert first.note.endswith("Ends at 2.2.2: not shown from 2.2.3 on (run r9).")
    assert (second.id, second.min_version, second.max_version) == (f"{name}-2", "2.9.0", "")
    assert {case.server_version for case in update.cases.values()} == {"2.2.0", "2.9.0"}


def test_a_divergence_next_to_an_entry_s_range_widens_it_and_one_further_off_is_new() -> None:
    """The entry says 2.9.0 and later; the run shows the crash on 2.8.3 and 2.8.4 too (every release it
    ran between them and 2.9.0), so the range starts at 2.8.3; on 2.2.0, with 2.8.0 not showing it, it is
    a range of its own."""
    known = Expectations((CRASH,))
    divergences = [judged(known, replace(CRASHING, server_version=v)) for v in ("2.2.0", "2.8.3", "2.8.4")]
    judged(known, replace(AGREEING, server_version="2.8.0"))
    judged(known, replace(CRASHING, server_version="2.9.25"))
    update = updated_entries(known, [case for case in divergences if case.verdict == "diverge"], run_id="r2")
    widened, new = update.entries
    assert (widened.min_version, widened.max_version) == ("2.8.3", "")
    assert widened.note == "The server panics. Shown from 2.8.3 on (run r2)."
    assert update.widened == [Widening(CRASH, "2.8.3", "")]
    assert (new.min_version, new.max_version) == ("2.2.0", "2.2.0")


def test_an_entry_first_shown_on_a_newer_release_than_its_range_says_starts_there() -> None:
    """Listed from 2.9.0; the run checked 2.9.0 and 2.9.25 without it, and shows it from 2.10.27."""
    known = Expectations((CRASH,))
    for version in ("2.9.0", "2.9.25"):
        judged(known, replace(AGREEING, server_version=version))
    judged(known, CRASHING)
    update = updated_entries(known, [], run_id="r3")
    (moved,) = update.entries
    assert (moved.min_version, moved.max_version) == ("2.10.27", "")
    assert moved.note == "The server panics. Starts at 2.10.27: not shown up to 2.9.25 (run r3)."


def test_an_ending_is_a_headline_with_its_replay_and_is_kept_in_the_run(tmp_path: Path) -> None:
    """The campaign prints each ended entry first, and writes it into the run for the report and gate."""
    entry = replace(CRASH, min_version="2.10.0", case="known-cases/crash.json")
    known = Expectations((entry,))
    for version in ("2.10.29", "2.12.15"):
        judged(known, replace(CRASHING, server_version=version))
    for version in ("2.15.3", "2.14.10"):
        judged(known, replace(AGREEING, server_version=version))
    (ended,) = ended_entries(known.ended(), tmp_path / "expectations.toml")
    assert ended.headline() == "ended on 2.14.10 and 2.15.3: crash"
    case = tmp_path.resolve() / "known-cases" / "crash.json"
    assert ended.replay_line() == (
        f"nats-conformance replay {case} --server-version 2.14.10; "
        f"nats-conformance replay {case} --server-version 2.15.3"
    )
    write_endings(tmp_path, [ended])
    assert read_endings(tmp_path) == (ended,)
    assert read_endings(tmp_path / "none") == ()
