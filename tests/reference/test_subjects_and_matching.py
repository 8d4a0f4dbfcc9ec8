"""Subject validity rules (document vs observed server) and matching."""

from __future__ import annotations

import pytest

from nats_conformance.reference import (
    SubjectIndex,
    is_pedantic_valid,
    is_server_valid_subject,
    is_valid_publish_subject,
    is_valid_subject,
    matches,
    tokenize,
)


def test_tokenize_keeps_empty_tokens() -> None:
    assert tokenize("a.b.c") == ["a", "b", "c"]
    assert tokenize("a..b") == ["a", "", "b"]


@pytest.mark.parametrize(
    ("subject", "document", "server", "pedantic"),
    [
        ("foo.bar", True, True, True),
        ("foo.a*b", False, True, True),  # observed: literal token on every release
        ("foo.\x00x", False, True, True),  # observed: pedantic lets null through
        ("foo.*", True, True, False),
        ("foo.>", True, True, False),
        ("foo..bar", False, False, False),
        (".foo", False, False, False),
        ("foo.", False, False, False),
        ("foo\tbar", False, False, True),
        ("foo.>.bar", False, False, False),
        ("", False, False, False),
    ],
)
def test_validity_rules(subject: str, document: bool, server: bool, pedantic: bool) -> None:
    assert is_valid_subject(subject) is document
    assert is_server_valid_subject(subject) is server
    assert is_pedantic_valid(subject) is pedantic


def test_publish_subjects_have_no_wildcards() -> None:
    assert is_valid_publish_subject("a.b")
    assert not is_valid_publish_subject("a.*")
    assert not is_valid_publish_subject("")


def test_matches_needs_equal_length_without_full_wildcard() -> None:
    assert matches("a.*", "a.b")
    assert not matches("a.*", "a")
    assert not matches("a.*", "a.b.c")
    assert matches("a", "a")
    assert not matches("a", "b")


def test_subject_index_returns_every_matching_pattern() -> None:
    index = SubjectIndex(["a.b", "a.*", "a.>", ">", "*.b", "b.*", "a.b.c", "a.b"])
    assert len(index) == 7
    assert index.match("a.b") == {"a.b", "a.*", "a.>", ">", "*.b"}
    assert index.match("a.b.c") == {"a.>", ">", "a.b.c"}
    assert index.match("c") == {">"}
    assert SubjectIndex([]).match("a") == frozenset()
