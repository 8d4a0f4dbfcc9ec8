"""Validation property: a server accepts a mapping configuration iff the reference says it is valid
for that release (start or reload outcome; the server's message is kept in the record).

https://docs.nats.io/nats-concepts/subject_mapping (the mapping functions and their arguments) with the
release
rules of reference/profiles.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nats_conformance.fixtures.config import ServerConfig
from nats_conformance.fixtures.servers.base import Backend
from nats_conformance.fixtures.session import Session
from nats_conformance.records.writer import RecordWriter
from nats_conformance.reference.versions import Version
from nats_conformance.suites.engine.family import cases_of, check
from nats_conformance.suites.engine.verdicts import RunContext
from nats_conformance.suites.families import FAMILIES
from nats_conformance.suites.properties import check_validation
from nats_conformance.suites.reproduce import describe_divergences
from nats_conformance.suites.strategies import MappingBatch

pytestmark = [pytest.mark.live, pytest.mark.validation]


@given(data=st.data())
def test_server_accepts_exactly_the_mappings_the_reference_accepts(
    server: Backend, context: RunContext, recorder: RecordWriter, data: st.DataObject
) -> None:
    check_validation(server, context, recorder, data)


KNOWN_EXAMPLES = [
    pytest.param("v.bar.*.*", "baz.{{wildcard(2)}}.{{wildcard(1)}}", id="token-reordering"),
    pytest.param("v.neworders.*", "neworders.{{wildcard(1)}}.{{partition(3,1)}}", id="partition"),
    pytest.param("v.*", "{{split(1,-)}}", id="split"),
    pytest.param("v.*", "{{splitfromleft(1,4)}}", id="splitfromleft"),
    pytest.param("v.*", "{{slicefromright(1,2)}}", id="slicefromright"),
    pytest.param("v.*", "x.{{left(1,2)}}", id="left"),
    pytest.param("v.*", "x.{{right(1,2)}}", id="right"),
    pytest.param("v.*", "", id="empty-destination"),
]


@pytest.mark.parametrize(("source", "destination"), KNOWN_EXAMPLES)
def test_documented_and_known_examples(
    server: Backend, context: RunContext, recorder: RecordWriter, source: str, destination: str
) -> None:
    cases = cases_of(check(FAMILIES["validation"], Session.of(server), context, (source, destination)))
    recorder.extend(cases)
    assert [case.verdict for case in cases] in (["agree"], ["expected"]), describe_divergences(cases)


@pytest.mark.min_server("2.9.0")
def test_a_server_crash_is_recorded_with_its_input(
    server_factory: Callable[[], Backend], context: RunContext, recorder: RecordWriter
) -> None:
    """A mapping the server accepts gets one message; a server it kills is a `server-crash` case (with
    the panic line) and is running again afterwards."""
    fresh = server_factory()
    fresh.start(ServerConfig())
    session = Session.of(fresh)
    run_context = replace(context, backend=fresh.name)
    judged = check(FAMILIES["validation"], session, run_context, ("z.*", "z.{{partition(0,1)}}"))
    (crash,) = cases_of(judged)
    recorder.extend([crash])
    assert fresh.is_running()
    assert crash.verdict == "expected", describe_divergences([crash])
    if session.profile.version < Version(2, 12, 0):
        assert crash.case_class == "validation:partition:server-crash"
        assert crash.expectation == "partition-zero-crashes"
        assert "panic" in crash.detail
    else:
        assert crash.expectation == "partition-count-below-one"
    (after,) = cases_of(check(FAMILIES["validation"], session, run_context, ("y.*", "y.$1")))
    assert after.verdict == "agree"


@pytest.mark.min_server("2.9.0")
def test_validation_and_mapping_records_name_functions_alike(
    server: Backend, context: RunContext, recorder: RecordWriter
) -> None:
    """The functions column has one spelling and order, whichever suite writes it (reference.functions)."""
    session = Session.of(server)
    destination = "x.{{SliceFromRight(1,2)}}.{{splitfromleft(1,1)}}"
    validation = cases_of(check(FAMILIES["validation"], session, context, ("v.*", destination)))
    batch = MappingBatch((("m0.*", destination),), (("m0.abcd",),))
    mapped = cases_of(check(FAMILIES["mapping"], session, context, batch))
    recorder.extend([*validation, *mapped])
    assert [case.verdict for case in validation] == ["agree"], describe_divergences(validation)
    assert [case.verdict for case in mapped] == ["agree"], describe_divergences(mapped)
    assert {case.functions for case in (*validation, *mapped)} == {"splitFromLeft+sliceFromRight"}
