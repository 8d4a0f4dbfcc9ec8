"""The places a transform applies (`reference.contexts`): which releases have them and which validator
each runs."""

from __future__ import annotations

import pytest

from reference.contexts import CONTEXTS, UnsupportedContextError, compile_in, context_named
from reference.errors import MappingError
from reference.profiles import for_version


def test_every_place_takes_what_an_account_mapping_takes_from_the_release_that_has_it() -> None:
    profile = for_version("2.14.5")
    for place in ("mapping", "import", "stream", "source", "mirror"):
        with pytest.raises(MappingError, match="whitespace"):
            compile_in(place, "a.*", "b.x y.$1", profile)
        assert compile_in(place, "a.*", "b.{{left(1,2)}}", profile).apply("a.xyz") == "b.xy"
    with pytest.raises(UnsupportedContextError, match=r"appeared in 2\.10\.0, not in 2\.9\.25"):
        compile_in("stream", "a.*", "b.$1", for_version("2.9.25"))


def test_jetstream_places_start_with_2_10_and_account_ones_are_everywhere() -> None:
    supported = {c.name for c in CONTEXTS if c.supported(for_version("2.9.25"))}
    assert supported == {"mapping", "import"}
    assert all(c.supported(for_version("2.10.0")) for c in CONTEXTS)


def test_an_unknown_context_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="known: mapping, import, stream"):
        context_named("nowhere")


def test_an_empty_destination_keeps_the_subject_in_the_jetstream_places_only() -> None:
    profile = for_version("2.14.5")
    for place in ("stream", "source", "mirror"):
        assert compile_in(place, "t.*.x.*.>", "", profile).apply("t.a.x.b.c.d") == "t.a.x.b.c.d"
    with pytest.raises(MappingError, match="empty"):
        compile_in("mapping", "t.*", "", profile)
