"""`nats-conformance changes 2.14.9 2.14.10 --plan quick` on real releases (skipped when the Go module
proxy cannot be reached and the Go module cache lacks their sources): 2.14.10's changed lines of the
mapping surface, each marked from its -cover build's counters; the account-hash functions it adds, which
the reference models; and the paired change of behaviour its fix of `*`-prefixed tokens in stream transforms
makes (a known case, run in every campaign).

About 100 s on 2 cores with the -cover build of 2.14.10 cached, 45 s more to build it."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from nats_conformance import main
from nats_conformance.fixtures.cover import module_source
from nats_conformance.fixtures.errors import ProvisionError
from nats_conformance.records.coverage import parse_profile
from nats_conformance.suites.coverage import PROFILE

pytestmark = pytest.mark.live

OLD, NEW = "2.14.9", "2.14.10"
ACCOUNT_HASH = ["account-hash", "account-hash-import", "account-hash-leaf-remote"]
STAR_FIX = "stream-transform:wildcard: wrong-subject-star-prefixed-token on 2.14.9, agree on 2.14.10"


@pytest.fixture(scope="module")
def changes(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, list[str], dict[str, Any]]:
    """(exit status, stdout lines, --json document) of the command."""
    try:
        module_source(OLD), module_source(NEW)
    except ProvisionError as error:
        pytest.skip(f"no module source of nats-server {OLD} and {NEW}: {error}")
    folder = tmp_path_factory.mktemp("changes")
    printed = io.StringIO()
    with redirect_stdout(printed):
        status = main(
            [
                *("changes", OLD, NEW, "--plan", "quick"),
                *("--out", str(folder / "runs"), "--json", str(folder / "changes.json")),
            ]
        )
    document = json.loads((folder / "changes.json").read_text()) if status == 0 else {}
    return status, printed.getvalue().splitlines(), document


def test_the_listing_ends_with_the_json_documents_summary(
    changes: tuple[int, list[str], dict[str, Any]],
) -> None:
    status, lines, document = changes
    assert status == 0
    assert lines[-1] == document["summary"]
    assert lines[-1].startswith(f"{NEW} changes {document['statements']} statements of the mapping surface: ")
    assert "; 3 new functions (0 not modelled); " in lines[-1]
    assert f"changed statements by function (lines of {NEW}'s files):" in lines


def test_changed_statements_are_marked_from_the_cover_builds_counters(
    changes: tuple[int, list[str], dict[str, Any]],
) -> None:
    _, lines, document = changes
    assert document["reached"] > 0
    assert document["not_reached"] > 0
    assert document["statements"] == document["reached"] + document["not_reached"]
    source = module_source(NEW)
    blocks = parse_profile(
        (Path(document["coverage_run"]) / PROFILE).read_text(), "github.com/nats-io/nats-server/v2"
    )
    rows = {row["name"]: row for row in document["functions"]}
    # 2.14.10 calls the new isMappingFunctionToken where 2.14.9 tested the braces inline: every mapping
    # destination with a function passes there
    assert rows["indexPlaceHolders"]["reached"]
    assert rows["expandSubjectPlaceholders"]["added"]
    for row in document["functions"]:
        text = (source / row["path"]).read_text().splitlines()
        assert text[row["line"] - 1].startswith("func "), row
        spans = [b for b in blocks if b.path == row["path"]]
        for line in row["reached"]:
            assert any(b.start <= line <= b.end and b.reached for b in spans), (row["name"], line)
        for line in row["not_reached"]:
            assert not any(b.start <= line <= b.end and b.reached for b in spans), (row["name"], line)
    shown = [line for line in lines if line.startswith("    indexPlaceHolders:")]
    assert shown
    assert " reached " in shown[0]


def test_the_account_hash_functions_are_new_and_modelled(
    changes: tuple[int, list[str], dict[str, Any]],
) -> None:
    _, lines, document = changes
    assert document["mapping_functions"] == {"added": ACCOUNT_HASH, "removed": [], "unmodelled": []}
    assert f"mapping functions added in {NEW}: {', '.join(ACCOUNT_HASH)}" in lines


def test_the_star_prefixed_token_fix_is_a_paired_behaviour_change(
    changes: tuple[int, list[str], dict[str, Any]],
) -> None:
    _, lines, document = changes
    (fix,) = [change for change in document["behaviour_changes"] if change["text"] == STAR_FIX]
    assert f"  {STAR_FIX}" in lines
    on_old, on_new = fix["replay"].split("; ")
    assert on_old.endswith(f"--server-version {OLD}")
    assert on_new == on_old.removesuffix(OLD) + NEW
    assert (Path(document["paired_run"]) / "pairs" / fix["case_file"]).is_file()
