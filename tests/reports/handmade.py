"""Hand-built case records for the report tests, and how to write them as a run directory."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from nats_conformance.records.casefile import CaseFile
from nats_conformance.records.pairs import WITHIN, Pair, write_pairs
from nats_conformance.records.schema import DELIVERED, LOST, UNCHANGED, Case
from nats_conformance.records.writer import RecordWriter
from nats_conformance.reference.weighted import WeightedDestination
from nats_conformance.reports.__main__ import main

BASE = Case(
    run_id="run-1",
    case_id=0,
    implementation="nats-server",
    server_version="2.9.25",
    backend="process",
    feature="mapping",
    functions="wildcard",
    source="m.*",
    destination="n.{{wildcard(1)}}",
    subject="m.a",
    expected="n.a",
    observed="n.a",
    verdict="agree",
)

WEIGHTED_LIST = (WeightedDestination("w.a", 60), WeightedDestination("w.b", 30))
LOSS_LIST = (WeightedDestination("w.l", 50),)
PARTITION_DESTINATION = "p.{{wildcard(1)}}.{{partition(3,1)}}"
SPLIT = "mapping:splitFromLeft:wrong-subject"
"""The class of the diverging splitFromLeft cases of ``hand_cases()``."""


def case(**fields: Any) -> Case:
    """A case differing from ``BASE`` in ``fields``."""
    return replace(BASE, **fields)


def wrong_split(version: str) -> Case:
    """A mapping case of ``splitFromLeft`` that maps to the wrong subject (no expectation lists it)."""
    return case(
        server_version=version,
        functions="splitFromLeft",
        destination="n.{{splitFromLeft(1,1)}}",
        subject="m.ab",
        expected="n.a.b",
        observed="n.ab",
        verdict="diverge",
        difference="wrong-subject",
    )


def hand_cases() -> list[Case]:
    """Small records whose aggregates the tests work out by hand (see each test for the sums).

    - 2.9.25: mapping ``wildcard`` 3 agree; mapping ``splitFromLeft`` 1 diverge (long); matching 2 agree;
      validation ``random`` 2 rejected as unsupported by both (agree); validation ``left`` 1 the same.
    - 2.10.27: mapping ``wildcard`` 2 agree + 1 unknown; mapping ``splitFromLeft`` 1 diverge (short:
      the class's smallest case); validation ``left`` 1 expected (``left-right``); validation
      ``random`` 1 rejected as unsupported (agree);
      partition over 3 buckets: 10, 20 and 30 distinct keys, the 10 keys of bucket 0 published a
      second time, one key lost (no bucket), one ``unknown`` row and one summary row;
      weighted 60/30 (remainder unchanged): 55, 35, 10 of 100 messages, plus one unknown and one
      summary row; weighted loss list (source listed at 50 %): 40 delivered, 60 lost.
    """
    cases = [
        *(case(subject=f"m.{i}") for i in range(3)),
        case(
            functions="splitFromLeft",
            destination="n.{{splitFromLeft(1,2)}}.long",
            subject="m.abcdef",
            expected="n.ab.cdef.long",
            observed="n.abcdef.long",
            verdict="diverge",
            difference="wrong-subject",
        ),
        *(
            case(feature="matching", functions="", source="x.*", destination="", subject=f"x.{i}")
            for i in range(2)
        ),
        *(
            case(
                feature="validation",
                functions="random",
                destination="{{random(3)}}",
                subject="",
                expected="reject:unsupported-function",
                observed="reject",
            )
            for _ in range(2)
        ),
        case(
            feature="validation",
            functions="left",
            destination="{{left(1,2)}}",
            subject="",
            expected="reject:unsupported-function",
            observed="reject",
        ),
    ]
    later = "2.10.27"
    cases += [
        *(case(server_version=later, subject=f"m.{i}") for i in range(2)),
        case(server_version=later, subject="m.u", observed="", verdict="unknown", detail="connection lost"),
        wrong_split(later),
        case(
            server_version=later,
            feature="validation",
            functions="left",
            destination="{{left(1,2)}}",
            subject="",
            expected="accept",
            observed="reject",
            verdict="expected",
            expectation="left-right",
            difference="reference-accept-server-reject",
        ),
        case(
            server_version=later,
            feature="validation",
            functions="random",
            destination="{{random(3)}}",
            subject="",
            expected="reject:unsupported-function",
            observed="reject",
        ),
    ]
    partition = {
        "server_version": later,
        "feature": "partition",
        "functions": "wildcard+partition",
        "source": "p.*",
        "destination": PARTITION_DESTINATION,
        "partitions": 3,
    }
    delivered = {**partition, "outcome": DELIVERED}
    for bucket, keys in enumerate((10, 20, 30)):
        cases += [case(**delivered, subject=f"p.k{bucket}-{key}", bucket=bucket) for key in range(keys)]
    cases += [case(**delivered, subject=f"p.k0-{key}", bucket=0, detail="round 2") for key in range(10)]
    cases += [
        case(**partition, subject="p.gone", observed="", outcome=LOST),
        case(**partition, subject="p.unknown", observed="", outcome=LOST, verdict="unknown"),
        case(
            **partition, subject="", expected="uniform over 3 partitions", observed="chi2=10", kind="summary"
        ),
    ]
    weighted = {
        "server_version": later,
        "feature": "weighted",
        "functions": "",
        "source": "w.s",
        "destination": "",
        "weights": WEIGHTED_LIST,
        "subject": "w.s",
    }
    for bucket, observed, outcome, count in (
        (0, "w.a", DELIVERED, 55),
        (1, "w.b", DELIVERED, 35),
        (None, "w.s", UNCHANGED, 10),
    ):
        cases += [case(**weighted, observed=observed, bucket=bucket, outcome=outcome) for _ in range(count)]
    cases += [
        case(**weighted, observed="", outcome=LOST, verdict="unknown"),
        case(**{**weighted, "subject": ""}, expected="shares", observed="chi2", kind="summary"),
    ]
    loss = {**weighted, "source": "w.l", "weights": LOSS_LIST, "subject": "w.l"}
    cases += [case(**loss, observed="w.l", bucket=0, outcome=DELIVERED) for _ in range(40)]
    cases += [case(**loss, observed="", outcome=LOST) for _ in range(60)]
    return [replace(c, case_id=index) for index, c in enumerate(cases)]


def pair(case: Case, replayed_on: str, replayed_difference: str) -> Pair:
    """A pair (records.pairs) of ``case`` replayed on ``replayed_on`` with that outcome ('' agrees)."""
    return Pair(
        against=WITHIN,
        implementation="nats-server",
        feature=case.feature,
        functions=case.functions,
        seen_on=case.server_version,
        seen_difference=case.difference,
        seen_verdict=case.verdict,
        replayed_on=replayed_on,
        replayed_difference=replayed_difference,
        replayed_verdict="diverge" if replayed_difference else "agree",
        case_file=f"{case.server_version}-{case.functions}.json",
    )


def paired(run_dir: Path, *pairs: tuple[Case, Pair]) -> Path:
    """The run directory with these pairs between its releases (and their case files) written as
    `suites.pairing` writes them."""
    write_pairs(run_dir, WITHIN, [p for _, p in pairs], [(p.case_file, CaseFile.of(c)) for c, p in pairs])
    return run_dir


def write_run(run_dir: Path, cases: list[Case], *, part_rows: int = 250_000) -> Path:
    """A run directory holding ``cases`` (parts of ``part_rows``) and its manifest."""
    with RecordWriter(run_dir, run_id=run_dir.name, part_rows=part_rows) as writer:
        writer.extend(cases)
    return run_dir


def one_error_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """Run the command line; it must fail with status 2 and exactly one line on stderr."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith("nats-conformance: error: ")
    return err.strip()


def cells(line: str) -> list[str]:
    """The cells of a Markdown table row (``\\|`` is a pipe inside a cell)."""
    assert line.startswith("|"), line
    assert line.endswith("|"), line
    return re.split(r"(?<!\\)\|", line[1:-1])


def markdown_tables(markdown: str) -> list[list[str]]:
    """Every table of a Markdown text, as its lines."""
    tables: list[list[str]] = []
    previous = ""
    for line in markdown.splitlines():
        if line.startswith("|"):
            if not previous.startswith("|"):
                tables.append([])
            tables[-1].append(line)
        previous = line
    return tables


def serve_site(site: Path) -> tuple[subprocess.Popen[str], str]:
    """`nats-conformance site serve` on a free port, and the address it printed."""
    server = subprocess.Popen(
        [sys.executable, "-m", "nats_conformance", "site", "serve", str(site), "--port", "0"],
        cwd=Path(__file__).resolve().parents[2],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    line = server.stdout.readline()
    match = re.search(r"http://127\.0\.0\.1:\d+/", line)
    assert match, line
    return server, match.group(0)
