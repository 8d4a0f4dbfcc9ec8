"""The places a transform applies (`reference.contexts`): which releases have them and which validator
each runs."""

from __future__ import annotations

import pytest

from reference.contexts import CONTEXTS, compile_in, context_named
from reference.errors import MappingError
from reference.profiles import for_version


def test_a_stream_runs_the_engine_without_the_account_validator() -> None:
    profile = for_version("2.14.5")
    with pytest.raises(MappingError, match="whitespace"):
        compile_in("mapping", "a.*", "b.x y.$1", profile)
    assert compile_in("stream", "a.*", "b.x y.$1", profile).apply("a.q") == "b.x y.q"
    assert compile_in("stream", "a.*", "b.{{left(1,2)}}", profile).apply("a.xyz") == "b.xy"


def test_jetstream_places_start_with_2_10_and_account_ones_are_everywhere() -> None:
    supported = {c.name for c in CONTEXTS if c.supported(for_version("2.9.25"))}
    assert supported == {"mapping", "import"}
    assert all(c.supported(for_version("2.10.0")) for c in CONTEXTS)


def test_an_unknown_context_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="known: mapping, import, stream"):
        context_named("nowhere")
