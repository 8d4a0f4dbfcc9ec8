"""suites.harness against a live server: every delivery is observed by the barrier, none is invented."""

from __future__ import annotations

import socket

import pytest

from fixtures.config import Mapping, ServerConfig
from fixtures.servers.base import Backend
from suites.harness import Observation, publish_and_observe

pytestmark = pytest.mark.live


def test_note_keeps_the_first_subject_and_the_repeats() -> None:
    observation = Observation(first=[None, None])
    for case_id, subject in [(0, "a"), (1, "b"), (0, "c"), (7, "z"), (-1, "z")]:
        observation.note(case_id, subject)
    assert observation.subjects_of(0) == ["a", "c"]
    assert observation.subjects_of(1) == ["b"]
    assert observation.received == 3


def test_every_publication_is_observed_across_chunks(server: Backend) -> None:
    server.apply(ServerConfig(mappings=(Mapping("m.*", "out.{{wildcard(1)}}"),)))
    subjects = [f"m.{index}" for index in range(2_500)] + ["plain.ö", "x.\udcff"]
    observation = publish_and_observe(server.url, subjects, chunk=100, window=2)
    assert observation.failure == ""
    assert observation.published == len(subjects)
    assert [observation.subjects_of(i) for i in range(2_500)] == [[f"out.{i}"] for i in range(2_500)]
    assert observation.subjects_of(2_500) == ["plain.ö"]
    assert observation.subjects_of(2_501) == ["x.\udcff"]  # not UTF-8: kept as a surrogate escape
    assert observation.received == len(subjects)


def test_no_server_is_a_failure() -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    observation = publish_and_observe(f"nats://127.0.0.1:{port}", ["a"])
    assert "cannot connect" in observation.failure
    assert observation.subjects_of(0) == []
