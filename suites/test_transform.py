"""Transform property: every published subject arrives on exactly the subject the reference maps it to.

subject-mapping-and-partitioning.md, "Subject Token Reordering", "Splitting Tokens", "Slicing Tokens",
"Deterministic Subject token Partitioning". One configuration per example holds several mappings with
disjoint sources; a wire tap on `>` sees every delivery, each payload carrying its case id.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fixtures.backends.base import Backend
from records.writer import RecordWriter
from reference.profiles import for_version
from suites.differential import RunContext, run_mapping_batch
from suites.reproduce import describe_divergences
from suites.strategies import mapping_batches

pytestmark = [pytest.mark.live, pytest.mark.mapping]


@given(data=st.data())
def test_every_subject_arrives_on_the_reference_subject(
    server: Backend, context: RunContext, recorder: RecordWriter, data: st.DataObject
) -> None:
    profile = for_version(server.version)
    batch = data.draw(mapping_batches(profile), label="batch")
    result = run_mapping_batch(server, profile, batch, context)
    result.record(recorder)
    assert not result.unexpected, describe_divergences(result.unexpected)
