"""The expectations file: which divergences are known, for which releases, and which entries went stale."""

from __future__ import annotations

from pathlib import Path

import pytest

from suites.expectations import Expectation, Expectations, ExpectationsError, load_expectations

LEFT_RIGHT = Expectation(
    id="lr",
    case_class="validation:*:reference-accept-server-reject",
    min_version="2.10.16",
    functions=("left", "right"),
)
CRASH = Expectation(
    id="crash", case_class="partition:*:server-crash", min_version="2.9.0", max_version="2.11.99"
)


def test_a_divergence_is_expected_only_in_its_range_and_for_its_functions() -> None:
    known = Expectations((LEFT_RIGHT, CRASH))
    reject = "validation:wildcard+left:reference-accept-server-reject"
    assert known.classify("nats-server", "2.10.16", reject) == LEFT_RIGHT
    assert known.classify("nats-server", "2.10.15", reject) is None
    assert known.classify("nats-server", "2.14.5", "validation:split:reference-accept-server-reject") is None
    assert known.classify("other-server", "2.14.5", reject) is None
    assert known.classify("nats-server", "2.11.17", "partition:partition:server-crash") == CRASH
    assert known.classify("nats-server", "2.12.0", "partition:partition:server-crash") is None


def test_an_entry_is_stale_when_its_feature_and_range_ran_without_it() -> None:
    known = Expectations((LEFT_RIGHT, CRASH))
    known.note_run("nats-server", "2.14.5")
    assert known.stale() == []  # no validation or partition case ran yet
    known.note_feature("validation")
    assert known.stale() == [LEFT_RIGHT]  # 2.14.5 is outside the crash entry's range
    known.classify("nats-server", "2.14.5", "validation:left:reference-accept-server-reject")
    assert known.stale() == []


def test_a_bad_file_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "expectations.toml"
    path.write_text('[[divergence]]\nid = "x"\ncase_class = "a:*:b"\nmin_version = "two"\n')
    with pytest.raises(ExpectationsError, match=r"'version' must look like 2\.10\.16 \(got 'two'\)"):
        load_expectations(path)
    path.write_text('[[divergence]]\nid = "x"\n')
    with pytest.raises(ExpectationsError, match="needs 'id' and 'case_class'"):
        load_expectations(path)
    path.write_text("[[divergence]\n")
    with pytest.raises(ExpectationsError, match="cannot read expectations"):
        load_expectations(path)
    assert load_expectations(tmp_path / "missing.toml").entries == ()


def test_the_shipped_file_loads() -> None:
    shipped = load_expectations()
    assert {"partition-zero-crashes", "partition-of-literal-source-hashes-nothing"} <= {
        entry.id for entry in shipped.entries
    }
