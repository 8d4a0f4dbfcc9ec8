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
from nats_conformance.records.writer import RecordWriter
from nats_conformance.suites.engine.verdicts import RunContext
from nats_conformance.suites.properties import check_transform

pytestmark = [pytest.mark.live, pytest.mark.mapping]


@given(data=st.data())
def test_every_subject_arrives_on_the_reference_subject(
    server: Backend, context: RunContext, recorder: RecordWriter, data: st.DataObject
) -> None:
    check_transform(server, context, recorder, data)
