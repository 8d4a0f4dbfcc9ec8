"""The mapping family's batch where the server's refusal names no line (an account JWT's, in operator
mode): the batch is halved until each refusal names one mapping, every refused mapping gets the words of
its own refusal, and the mappings taken are in force at the end. No live server: a scripted backend
refuses every configuration that holds a bad source, behind a real `Session` (`apply_apart`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from nats_conformance.fixtures.config import ServerConfig
from nats_conformance.fixtures.errors import ConfigRejectedError
from nats_conformance.fixtures.session import Session
from nats_conformance.reference.profiles import for_version
from nats_conformance.reference.transform import Transform, compile_transform
from nats_conformance.suites.families.mapping import _apply_bisecting

PROFILE = for_version("2.14.5")


@dataclass
class Backend:
    """Refuses every configuration that maps a bad source, naming no line (as an account JWT's refusal)."""

    bad: set[str]
    name: str = "process"
    applied: list[tuple[str, ...]] = field(default_factory=list)
    in_force: tuple[str, ...] = ()

    def apply(self, config: ServerConfig) -> None:
        sources = tuple(mapping.source for mapping in config.mappings)
        self.applied.append(sources)
        refused = sorted(self.bad & set(sources))
        if refused:
            raise ConfigRejectedError("refused", f"bad mappings {refused}")
        self.in_force = sources


def batch(count: int) -> list[tuple[Transform, tuple[str, ...]]]:
    return [(compile_transform(f"s{index}.*", "d.$1", PROFILE), ("x",)) for index in range(count)]


@pytest.mark.parametrize(
    "bad", [set(), {"s5.*"}, {"s0.*"}, {"s3.*", "s11.*"}, {f"s{i}.*" for i in range(12)}]
)
def test_halving_refuses_exactly_the_bad_mappings_each_with_its_own_words(bad: set[str]) -> None:
    backend = Backend(bad)
    session = Session(backend, PROFILE)  # type: ignore[arg-type]
    rejected: list[tuple[Transform, tuple[str, ...], str]] = []
    accepted = _apply_bisecting(session, batch(12), rejected)
    assert {transform.source for transform, _, _ in rejected} == bad
    assert all(words == f"bad mappings {[transform.source]}" for transform, _, words in rejected)
    assert [transform.source for transform, _ in accepted] == [
        f"s{index}.*" for index in range(12) if f"s{index}.*" not in bad
    ]
    assert backend.in_force == tuple(transform.source for transform, _ in accepted)
    if len(bad) == 1:
        assert len(backend.applied) <= 10  # halving 12 mappings: two tries a level, not one a mapping
