"""The engine target built from the module proxy (cached), asked the worked examples of the mapping
document (docs.nats.io, "Subject Mapping and Partitioning"), and a small deterministic engine check."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from nats_conformance.fixtures.clients.adapter import AdapterProcess
from nats_conformance.fixtures.engine import engine_command
from nats_conformance.fixtures.provision import NATS_SERVER
from nats_conformance.reference.protocol import (
    Answer,
    Mapped,
    Matched,
    MatchQuestion,
    Partitioned,
    PartitionQuestion,
    Refusal,
    TransformQuestion,
)
from nats_conformance.suites.engine_check import check_release, selected_releases

pytestmark = pytest.mark.live

ROOT = Path(__file__).resolve().parents[2]
RELEASE = "2.14.5"


@pytest.fixture(scope="module")
def engine() -> Iterator[AdapterProcess]:
    with AdapterProcess(engine_command(RELEASE)) as adapter:
        yield adapter


def transform(engine: AdapterProcess, source: str, destination: str, subject: str) -> str:
    (answer,) = engine.ask([TransformQuestion(source, destination, subject)])
    assert isinstance(answer, Mapped), answer
    return str(answer.subject)


def test_hello_names_the_release_and_its_operations(engine: AdapterProcess) -> None:
    assert engine.hello.server_version == RELEASE
    assert engine.ops == {"hello", "match", "partition", "transform", "valid_subject"}


# "Subject Token Reordering" (and the legacy $n form)
@pytest.mark.parametrize(
    ("source", "destination", "subject", "expected"),
    [
        ("foo.*.*", "bar.$2.$1", "foo.a.b", "bar.b.a"),
        ("bar.*.*", "baz.{{wildcard(2)}}.{{wildcard(1)}}", "bar.one.two", "baz.two.one"),
        ("*", "{{split(1,-)}}", "foo-bar", "foo.bar"),
        ("*", "{{splitfromleft(1,4)}}", "1234567", "1234.567"),
        ("*", "{{SliceFromRight(1,2)}}", "1234567", "1.23.45.67"),
    ],
)
def test_documented_reordering_split_and_slice(
    engine: AdapterProcess, source: str, destination: str, subject: str, expected: str
) -> None:
    assert transform(engine, source, destination, subject) == expected


# "Deterministic Subject token Partitioning", both tables
@pytest.mark.parametrize(("customer", "partition"), [(1, 0), (2, 2), (3, 1), (4, 2), (5, 1), (6, 0)])
def test_documented_partition_table_neworders(engine: AdapterProcess, customer: int, partition: int) -> None:
    subject = f"neworders.customerid{customer}"
    destination = "neworders.{{wildcard(1)}}.{{partition(3,1)}}"
    assert transform(engine, "neworders.*", destination, subject) == f"{subject}.{partition}"


@pytest.mark.parametrize(
    ("subject", "partition"), [("foo.1.a", 1), ("foo.1.b", 0), ("foo.2.b", 9), ("foo.2.a", 2)]
)
def test_documented_partition_table_composite_key(
    engine: AdapterProcess, subject: str, partition: int
) -> None:
    destination = "foo.{{wildcard(1)}}.{{wildcard(2)}}.{{partition(10,1,2)}}"
    assert transform(engine, "foo.*.*", destination, subject) == f"{subject}.{partition}"
    answer = engine.ask([PartitionQuestion(subject.split(".")[1:], 10)])[0]
    assert answer == Partitioned(partition)


OLD_RELEASES = {
    "2.2.6": {"hello", "match", "transform", "valid_subject"},
    "2.8.4": {"hello", "match", "partition", "transform", "valid_subject"},
}
"""Before 2.9 the transform is unexported and reached by linkname; 2.2 has no partition function."""


@pytest.fixture(scope="module", params=sorted(OLD_RELEASES))
def old_engine(request: pytest.FixtureRequest) -> Iterator[AdapterProcess]:
    with AdapterProcess(engine_command(request.param)) as adapter:
        yield adapter


def error_kind(engine: AdapterProcess, question: TransformQuestion) -> str | Answer:
    """The kind of the engine's refusal, or its answer when it maps the subject."""
    (answer,) = engine.ask([question])
    assert answer is not None
    return answer.kind if isinstance(answer, Refusal) else answer


def test_old_releases_answer_transform_in_both_modes(old_engine: AdapterProcess) -> None:
    release = old_engine.hello.server_version
    assert old_engine.ops == OLD_RELEASES[release]
    assert old_engine.ask([MatchQuestion("foo.*.>", "foo.a.b")]) == [Matched(True)]
    assert transform(old_engine, "foo.*.*", "bar.$2.$1", "foo.a.b") == "bar.b.a"
    assert transform(old_engine, "foo.>", "bar.>", "foo.a.b") == "bar.a.b"
    # a source without `*` takes its destination verbatim (literal-source-destination-not-parsed)
    assert transform(old_engine, "foo", "bar.$1", "foo") == "bar.$1"
    kinds = {
        ("foo.*", "bar.$2"): "wildcard-index-out-of-range",
        ("foo.*.*", "bar.$1"): "wildcards-not-used",
        ("foo.*", "bar.*"): "invalid-destination",
        ("foo.>", "bar"): "invalid-destination",
        ("foo..x", "bar"): "invalid-source",
    }
    for (source, destination), kind in kinds.items():
        question = TransformQuestion(source, destination, "foo.a")
        assert error_kind(old_engine, question) == kind, (source, destination)
    assert error_kind(old_engine, TransformQuestion("foo.*", "bar.$1", "x.a")) == "subject-mismatch"
    # whitespace: the account-mapping validator refuses it, the bare engine does not look
    assert error_kind(old_engine, TransformQuestion("foo.*", "a b.$1", "foo.a")) == "invalid-destination"
    spaced = TransformQuestion("foo.*", "a b.$1", "foo.a", engine_only=True)
    assert error_kind(old_engine, spaced) == Mapped("a b.a")


def test_2_8_has_the_wildcard_and_partition_functions() -> None:
    with AdapterProcess(engine_command("2.8.4")) as engine:
        destination = "neworders.{{wildcard(1)}}.{{partition(3,1)}}"
        for customer, partition in [(1, 0), (2, 2), (3, 1), (4, 2), (5, 1), (6, 0)]:
            subject = f"neworders.customerid{customer}"
            assert transform(engine, "neworders.*", destination, subject) == f"{subject}.{partition}"
        assert engine.ask([PartitionQuestion(["2", "b"], 10)]) == [Partitioned(9)]
        assert (
            error_kind(engine, TransformQuestion("foo.*", "{{wildcard(x)}}", "foo.a")) == "invalid-argument"
        )
        # other spellings are literal text in 2.8
        assert transform(engine, "foo.*", "$1.{{Wildcard(1)}}", "foo.a") == "a.{{Wildcard(1)}}"


@pytest.mark.parametrize("release", sorted(OLD_RELEASES))
def test_a_small_engine_check_of_old_releases_is_classified(release: str) -> None:
    """Every answer has a known kind (no unclassified refusal, no panic); partition only from 2.8."""
    check = check_release(release, questions=400, seed=0, minimise=False)
    assert check.asked["transform"] > 0
    assert ("partition" in check.asked) == (release == "2.8.4")
    assert not check.classes, check.classes  # every difference is a finding expectations.toml lists


def test_a_release_the_proxy_does_not_serve_is_one_line(tmp_path: Path) -> None:
    """Refused before the build when the cached list of releases knows the line, else by the build."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "nats_conformance.suites",
            "campaign",
            "--target",
            "engine:2.2.99",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        check=False,
    )
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if not line.startswith("nats-conformance:   ")]
    assert lines[-1] in {
        "nats-conformance: error: building the engine of nats-server v2.2.99 failed: "
        "no such release on the Go module proxy",
        "nats-conformance: error: unknown nats-server release '2.2.99'; "
        "the newest known 2.2 release is 2.2.6",
    }, result.stderr


@pytest.mark.parametrize("release", ["2.9.0", "2.10.27", RELEASE])
def test_a_small_engine_check_answers_every_question(release: str) -> None:
    """The offline reference check on a small budget: seed 0 draws the same questions every run; a
    correct build answers all of them, agrees on matching, subject validity and the partition hash
    (the documents and the engine agree there), and every other difference is a listed finding."""
    check = check_release(release, questions=2000, seed=0, minimise=False)
    assert check.total == 2000
    assert set(check.asked) == {"transform", "partition", "match", "valid_subject"}
    for kind in ("match", "partition", "valid_subject"):
        assert check.agreed[kind] == check.asked[kind], kind
    assert not check.classes, check.classes


def test_engine_check_exits_1_on_a_class_the_expectations_do_not_list(tmp_path: Path) -> None:
    """With the repository's expectations every difference of 2.14.5's engine is a known finding (exit
    0, each printed with its id); with none listed, the same differences are unexpected (exit 1)."""
    empty = tmp_path / "none.toml"
    empty.write_text("")
    command = [
        sys.executable,
        "-m",
        "nats_conformance.suites",
        "engine-check",
        "--releases",
        RELEASE,
        "--questions",
        "5000",
    ]
    known = subprocess.run([*command, "--no-minimise"], capture_output=True, text=True, cwd=ROOT, check=False)
    assert known.returncode == 0, known.stdout
    listed = re.findall(r"^\s+\d+\s+(\S+)\s+\(expected: [a-z0-9-]+\)$", known.stdout, re.MULTILINE)
    assert listed, known.stdout  # the drawn questions show known findings of 2.14.5's engine
    assert ", 0 unexpected diverging classes" in known.stdout
    unlisted = subprocess.run(
        [*command, "--no-minimise", "--expectations", str(empty)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert unlisted.returncode == 1, unlisted.stdout
    assert all(name in unlisted.stdout for name in listed)
    assert "(expected:" not in unlisted.stdout


def test_engine_check_without_releases_asks_every_pinned_release() -> None:
    """The default was read letter by letter ('2', '.', ...) and the command failed at once."""
    assert selected_releases([]) == list(NATS_SERVER.lines.values())
    assert selected_releases(["2.9.0,2.10", "2.14.5"]) == ["2.9.0", "2.10", "2.14.5"]
