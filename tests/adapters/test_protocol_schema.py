"""The adapter protocol's JSON Schema (docs/adapter-protocol.schema.json, issue 58): every message of an
adapter run validates against it, and it refuses what the protocol does not allow."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from nats_conformance.suites.__main__ import main
from tests.adapters.schema_check import errors, load

ROOT = Path(__file__).resolve().parents[2]
RECORDING = ROOT / "tests" / "adapters" / "recording.py"
PYTHON = shlex.quote(sys.executable)


def recorded_messages(log: Path) -> list[tuple[str, str]]:
    """The lines a run wrote to an adapter (`>`) and the adapter's answers (`<`)."""
    lines = log.read_bytes().decode().splitlines()
    return [(line[:1], line[2:]) for line in lines if line[2:].strip()]


def check_run(log: Path) -> int:
    """Every recorded message valid by the schema; returns how many there were."""
    import json

    schema = load()
    messages = recorded_messages(log)
    wrong = [(side, text, errors(json.loads(text), schema, schema)) for side, text in messages]
    wrong = [item for item in wrong if item[2]]
    assert not wrong, wrong[:3]
    not_ascii = [text for side, text in messages if side == "<" and not text.isascii()]
    assert not not_ascii, not_ascii[:3]  # answers are ASCII JSON (docs/adapter-protocol.md, "Framing")
    return len(messages)


def test_every_message_of_a_correct_adapter_run_is_valid(tmp_path: Path) -> None:
    log = tmp_path / "messages.log"
    correct = ROOT / "examples" / "adapters" / "correct.py"
    target = f"adapter:{PYTHON} {RECORDING} {log} {PYTHON} {correct}"
    status = main(["campaign", "--target", target, "--cases", "3000", "--out", str(tmp_path / "runs")])
    assert status == 0
    # Every operation of version 2 was asked, and answered.
    text = log.read_text()
    for op in ("transform", "match", "valid_subject", "partition", "contains", "valid_mapping"):
        assert f'"op": "{op}"' in text
    assert check_run(log) > 6000


def test_the_schema_refuses_what_the_protocol_does_not_allow() -> None:
    schema = load()
    assert errors({"id": 1, "op": "contains", "filter": "a"}, schema, schema)  # no `within`
    assert errors({"id": 1, "contained": "yes"}, schema, schema)
    assert errors({"id": 1, "error": "Not Kebab", "detail": ""}, schema, schema)
    assert errors({"id": 1, "op": "partition", "tokens": ["a"], "n": 0}, schema, schema)
    assert not errors({"id": 1, "valid": False}, schema, schema)
    assert not errors({"id": 0, "protocol": 2, "implementation": "x", "ops": ["hello"]}, schema, schema)
    named = {"id": 0, "protocol": 2, "answered_by": {"contains": "Subject.IsContainedIn"}}
    assert not errors(named, schema, schema)
    assert errors({**named, "answered_by": {"containment": "Subject.IsContainedIn"}}, schema, schema)
    assert errors({**named, "answered_by": {"contains": ""}}, schema, schema)
