"""Odd tokens of mapping sources and destinations (`suites.strategies.ODD_TOKENS`): U+FFFD, the character
Go decodes a byte that is not UTF-8 to, is drawn, and the reference takes it as any other character a
token may hold ("Subject-Based Messaging")."""

from __future__ import annotations

from hypothesis import find, settings

from nats_conformance.reference.subjects import is_server_valid_subject, is_valid_subject
from nats_conformance.suites.strategies import sources


def test_sources_draw_the_replacement_character_as_a_token() -> None:
    search = settings(max_examples=5000, database=None, derandomize=True)
    find(sources(), lambda drawn: "\ufffd" in drawn.split("."), settings=search)
    assert is_valid_subject("a.\ufffd.*")
    assert is_server_valid_subject("a.\ufffd.*")
    assert not is_valid_subject("a.\x00")
