"""The places a transform applies (`reference.contexts`): which releases have them and which validator
each runs."""

from __future__ import annotations

import pytest

from nats_conformance.reference.contexts import (
    CONTEXTS,
    IrreversibleImportError,
    UnsupportedContextError,
    compile_in,
    context_named,
    jetstream_applies,
    local_pattern,
    requested,
)
from nats_conformance.reference.errors import MappingError
from nats_conformance.reference.profiles import for_version


def test_every_place_takes_what_an_account_mapping_takes_from_the_release_that_has_it() -> None:
    profile = for_version("2.14.5")
    for place in ("mapping", "stream-import", "service-import", "stream", "source", "mirror"):
        with pytest.raises(MappingError, match="whitespace"):
            compile_in(place, "a.*", "b.x y.$1", profile)
    for place in ("mapping", "stream-import", "stream", "source", "mirror"):
        assert compile_in(place, "a.*", "b.{{left(1,2)}}", profile).apply("a.xyz") == "b.xy"
    with pytest.raises(UnsupportedContextError, match=r"appeared in 2\.10\.0, not in 2\.9\.25"):
        compile_in("stream", "a.*", "b.$1", for_version("2.9.25"))


def test_jetstream_places_start_with_2_10_and_account_ones_are_everywhere() -> None:
    supported = {c.name for c in CONTEXTS if c.supported(for_version("2.9.25"))}
    assert supported == {"mapping", "stream-import", "service-import"}
    assert all(c.supported(for_version("2.10.0")) for c in CONTEXTS)


def test_an_unknown_context_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="known: mapping, stream-import, service-import, stream"):
        context_named("nowhere")


def test_an_empty_destination_keeps_the_subject_in_the_jetstream_places_and_imports_only() -> None:
    """An import without `to` delivers on the subjects as published (observed, issue 30)."""
    profile = for_version("2.14.5")
    for place in ("stream", "source", "mirror", "stream-import", "service-import"):
        assert compile_in(place, "t.*.x.*.>", "", profile).apply("t.a.x.b.c.d") == "t.a.x.b.c.d"
    with pytest.raises(MappingError, match="empty"):
        compile_in("mapping", "t.*", "", profile)


def test_an_empty_source_is_the_full_wildcard_in_the_jetstream_places_only() -> None:
    """The RePublish ADR's default source, `>`, in every JetStream place; elsewhere an empty source is
    refused."""
    profile = for_version("2.14.5")
    for place in ("stream", "source", "mirror"):
        assert compile_in(place, "", "u.>", profile).apply("t.a.b") == "u.t.a.b"
        assert compile_in(place, "", "", profile).apply("t.a") == "t.a"
    for place in ("mapping", "stream-import", "service-import"):
        with pytest.raises(MappingError):
            compile_in(place, "", "u.>", profile)


def test_a_service_import_takes_only_a_to_its_requests_can_travel_backwards() -> None:
    profile = for_version("2.14.5")
    for destination in ("x.{{left(1,2)}}.$2", "x.$1", "x.$1.$1", "x.{{partition(3,1,2)}}"):
        with pytest.raises(IrreversibleImportError):
            compile_in("service-import", "e.*.*", destination, profile)
    transform = compile_in("service-import", "e.*.*.>", "x.$2.y.{{wildcard(1)}}.>", profile)
    assert local_pattern(transform.destination, profile) == "x.*.y.*.>"
    assert requested(transform, "x.b.y.a.c.d") == "e.a.b.c.d"
    assert transform.apply("e.a.b.c.d") == "x.b.y.a.c.d"
    assert requested(transform, "x.b.z.a.c") == ""


def test_a_token_ending_in_a_full_wildcard_character_is_a_literal() -> None:
    transform = compile_in("service-import", "e.*.a>", "$1.0", for_version("2.14.5"))
    assert requested(transform, "q.0") == "e.q.a>"


def test_a_jetstream_transform_leaves_a_subject_with_a_wildcard_token_as_published() -> None:
    transform = compile_in("stream", "t.*.*", "x.$2.$1", for_version("2.14.10"))
    assert jetstream_applies(transform, "t.a.b")
    assert transform.matches("t.*.b")  # the source's `*` takes any token, `*` too
    for published in ("t.*.b", "t.a.*", "t.*.*", "t.a.>", "u.a.b"):
        assert not jetstream_applies(transform, published), published
