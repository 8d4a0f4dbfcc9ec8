"""Case files: a run keeps the smallest case of each divergence class and writes it as JSON that reads
back to the same question; anything else is a one-line error."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from nats_conformance.records.casefile import CaseFile, CaseFileError, read_case_file
from nats_conformance.records.writer import RecordWriter
from nats_conformance.reference.channels import ServerSpec
from nats_conformance.reference.protocol import (
    MatchQuestion,
    PartitionQuestion,
    TransformQuestion,
    ValidSubjectQuestion,
)
from nats_conformance.reference.weighted import WeightedDestination
from tests.records.samples import CRASHING

BASE = replace(
    CRASHING,
    run_id="r",
    destination="b.{{partition(0,1)}}",
    subject="a.xyz",
    expected="b.0",
    verdict="expected",
)


def test_a_run_writes_the_smallest_case_of_each_class(tmp_path: Path) -> None:
    with RecordWriter(tmp_path / "run") as writer:
        writer.add(BASE)
        writer.add(replace(BASE, case_id=1, subject="a.x"))
        writer.add(replace(BASE, case_id=2, subject="a.x", verdict="agree", difference=""))
        writer.add(
            replace(
                BASE,
                case_id=3,
                feature="matching",
                source="a.>",
                subject="a",
                verdict="diverge",
                functions="full",
                difference="value",
                destination="",
            )
        )
    files = sorted((tmp_path / "run" / "divergences").glob("*.json"))
    assert [path.name for path in files] == [
        "nats-server-2.10.27-matching_full_value.json",
        "nats-server-2.10.27-partition_partition_server-crash.json",
    ]
    crash = read_case_file(files[1])
    assert crash.subject == "a.x"
    assert crash.found_on["verdict"] == "expected"
    assert crash.question() == TransformQuestion("a.*", "b.{{partition(0,1)}}", "a.x", "2.10.27")
    assert json.loads(files[1].read_text())["request"] == {
        "op": "transform",
        "source": "a.*",
        "destination": "b.{{partition(0,1)}}",
        "subject": "a.x",
        "server_version": "2.10.27",
    }
    assert read_case_file(files[0]).question() == MatchQuestion("a.>", "a")


def test_library_operations_round_trip() -> None:
    partition = CaseFile("partition", '["a", "b"]', "", "", "2.14.5", functions="partition-op", partitions=3)
    assert partition.question() == PartitionQuestion(["a", "b"], 3)
    subjects = CaseFile("subjects", "", "", "a. b", "2.14.5", functions="publish-rule")
    assert subjects.question() == ValidSubjectQuestion("a. b", literal=True)
    assert CaseFile("weighted", "a", "b", "a", "2.14.5").question() is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "cannot read case file"),
        ('{"format": "other"}', "is not a case file"),
        ('{"format": "nats-conformance-case", "version": 9}', "case-file version 9"),
        ('{"format": "nats-conformance-case", "version": 2, "feature": ""}', "'feature' must be"),
        (
            '{"format": "nats-conformance-case", "version": 1, "feature": "x"}',
            "case-file version 1; this reads 2 to 4",
        ),
    ],
)
def test_a_bad_case_file_is_one_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "case.json"
    path.write_text(text)
    with pytest.raises(CaseFileError, match=message) as raised:
        read_case_file(path)
    assert "\n" not in str(raised.value)
    with pytest.raises(CaseFileError, match="no case file"):
        read_case_file(tmp_path / "missing.json")


def _written(tmp_path: Path) -> dict[str, object]:
    """A case file a run wrote, as its JSON object (every typed field present)."""
    with RecordWriter(tmp_path / "run") as writer:
        writer.add(replace(BASE, verdict="diverge", stream_subjects=("s.>",), steps=("publish a",)))
    (path,) = (tmp_path / "run" / "divergences").glob("*.json")
    document: dict[str, object] = json.loads(path.read_text())
    return document


@pytest.mark.parametrize(
    ("name", "value", "kind"),
    [
        ("source", None, "a string"),
        ("destination", 5, "a string"),
        ("subject", ["a"], "a string"),
        ("server_version", False, "a string"),
        ("functions", None, "a string"),
        ("difference", {}, "a string"),
        ("expected", None, "a string"),
        ("observed", 1.5, "a string"),
        ("detail", None, "a string"),
        ("feature", None, "a non-empty string"),
        ("partitions", "3", "an integer"),
        ("partitions", True, "an integer"),
        ("partitions", None, "an integer"),
        ("headers_only", "false", "true or false"),
        ("headers_only", 0, "true or false"),
        ("stream_subjects", "s.>", "a list of strings"),
        ("stream_subjects", [None], "a list of strings"),
        ("steps", None, "a list of strings"),
        ("weights", {"destination": "b"}, "a list of objects"),
        ("weights", [{"destination": "b", "weight": "50"}], "an integer"),
        ("weights", [{"destination": None, "weight": 50}], "a non-empty string"),
        ("weights", [{"destination": "b", "weight": 50, "cluster": 3}], "a string"),
        ("layout", [{"channels": "a"}], "a list of strings"),
        ("layout", [{"channels": ["a"], "clustered": "yes"}], "true or false"),
        ("found_on", None, "an object of strings"),
        ("found_on", {"run_id": 3}, "an object of strings"),
    ],
)
def test_a_field_of_the_wrong_type_is_one_line(tmp_path: Path, name: str, value: object, kind: str) -> None:
    """A null source was replayed as the literal source `None`: every field is checked for its type."""
    document = _written(tmp_path)
    document[name] = value
    path = tmp_path / "case.json"
    path.write_text(json.dumps(document))
    with pytest.raises(CaseFileError, match=rf"field '\w+' must be {kind} \(got ") as raised:
        read_case_file(path)
    assert "\n" not in str(raised.value)


def test_a_written_case_file_reads_back_with_its_typed_fields(tmp_path: Path) -> None:
    document = _written(tmp_path)
    document["weights"] = [{"destination": "b", "weight": 50, "cluster": None}]
    document["layout"] = [{"channels": ["a", "b.*"], "clustered": True}]
    path = tmp_path / "case.json"
    path.write_text(json.dumps(document))
    read = read_case_file(path)
    assert (read.source, read.stream_subjects, read.steps) == ("a.*", ("s.>",), ("publish a",))
    assert read.weights == (WeightedDestination("b", 50, None),)
    assert read.layout == (ServerSpec(("a", "b.*"), True),)
    assert read.found_on["verdict"] == "diverge"


def test_a_version_3_file_reads_its_difference_from_its_class(tmp_path: Path) -> None:
    """Before version 4 a file kept the class text only: its difference is the text's last part, and
    the class it gives back is the one it was written with."""
    document = _written(tmp_path)
    written_class = document["case_class"]
    document["version"] = 3
    del document["difference"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(document))
    read = read_case_file(path)
    assert read.difference == BASE.difference != ""
    assert read.case_class == written_class
