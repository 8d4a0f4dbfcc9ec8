"""The transform and validation properties, one example each: run on a server by suites/test_transform.py
and suites/test_validation.py, on an operator-mode server by suites/test_operator_mode.py."""

from __future__ import annotations

from hypothesis import strategies as st

from nats_conformance.fixtures.servers.base import Backend
from nats_conformance.fixtures.session import Session
from nats_conformance.records.writer import RecordWriter
from nats_conformance.suites.engine.family import cases_of, check, divergences, record
from nats_conformance.suites.engine.verdicts import RunContext
from nats_conformance.suites.families import FAMILIES
from nats_conformance.suites.reproduce import assert_agrees
from nats_conformance.suites.strategies import destination_templates, mapping_batches, sources


def check_transform(
    server: Backend, context: RunContext, recorder: RecordWriter, data: st.DataObject
) -> None:
    """A drawn batch of mappings through the mapping family, recorded; raises on a divergence."""
    session = Session.of(server)
    batch = data.draw(mapping_batches(session.profile), label="batch")
    judged = check(FAMILIES["mapping"], session, context, batch)
    record(recorder, judged)
    assert_agrees(divergences(judged))


def check_validation(
    server: Backend, context: RunContext, recorder: RecordWriter, data: st.DataObject
) -> None:
    """A drawn mapping through the validation family, recorded; raises on a divergence."""
    session = Session.of(server)
    source = data.draw(sources(namespace="v"), label="source")
    destination = data.draw(destination_templates(source, session.profile), label="destination")
    cases = cases_of(check(FAMILIES["validation"], session, context, (source, destination)))
    recorder.extend(cases)
    assert_agrees(divergences(cases))
