"""Validation property: a server accepts a mapping configuration iff the reference says it is valid
for that release (start or reload outcome; the server's message is kept in the record).

subject-mapping-and-partitioning.md (the mapping functions and their arguments) with the release
rules of reference/profiles.py.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fixtures.backends.base import Backend
from records.writer import RecordWriter
from reference.profiles import for_version
from suites.differential import RunContext, run_validation_case
from suites.reproduce import describe_divergences
from suites.strategies import destination_templates, sources

pytestmark = [pytest.mark.live, pytest.mark.validation]


@given(data=st.data())
def test_server_accepts_exactly_the_mappings_the_reference_accepts(
    server: Backend, context: RunContext, recorder: RecordWriter, data: st.DataObject
) -> None:
    profile = for_version(server.version)
    source = data.draw(sources(namespace="v"), label="source")
    destination = data.draw(destination_templates(source, profile), label="destination")
    case = run_validation_case(server, profile, source, destination, context)
    recorder.add(case)
    assert case.verdict != "diverge", describe_divergences([case])
