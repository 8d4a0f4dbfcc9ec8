"""Transform property: every published subject arrives on exactly the subject the reference maps it to.

https://docs.nats.io/nats-concepts/subject_mapping, "Subject Token Reordering", "Splitting Tokens",
"Slicing Tokens",
"Deterministic Subject token Partitioning". One configuration per example holds several mappings with
disjoint sources; a wire tap on `>` sees every delivery, each payload carrying its case id.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nats_conformance.fixtures.servers.base import Backend
from nats_conformance.fixtures.session import Session
from nats_conformance.records.writer import RecordWriter
from nats_conformance.suites.engine.family import check, divergences, record
from nats_conformance.suites.engine.verdicts import RunContext
from nats_conformance.suites.families import FAMILIES
from nats_conformance.suites.reproduce import assert_agrees
from nats_conformance.suites.strategies import mapping_batches

pytestmark = [pytest.mark.live, pytest.mark.mapping]


@given(data=st.data())
def test_every_subject_arrives_on_the_reference_subject(
    server: Backend, context: RunContext, recorder: RecordWriter, data: st.DataObject
) -> None:
    session = Session.of(server)
    batch = data.draw(mapping_batches(session.profile), label="batch")
    judged = check(FAMILIES["mapping"], session, context, batch)
    record(recorder, judged)
    assert_agrees(divergences(judged))
