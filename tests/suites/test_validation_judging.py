"""The validation family's judging (`suites.families.validation`), without a server: a refusal that is a
panic of the server's checks is judged as such, not as the refusal the reference expects."""

from __future__ import annotations

import itertools

from nats_conformance.records.expectations import Expectations
from nats_conformance.reference.profiles import for_version
from nats_conformance.suites.engine.verdicts import RunContext
from nats_conformance.suites.families.validation import (
    CHECK_PANICKED,
    Verdict,
    judge_validation,
    parser_panicked,
)

PANIC = "server.conf:12:8: runtime error: index out of range [0] with length 0"
REFUSAL = 'server.conf:12:8: Error adding mapping for "v.*" to "x..x" : invalid mapping destination'


def context() -> RunContext:
    counter = itertools.count(1)
    return RunContext("run", "nats-server", "2.14.10", "process", Expectations(), lambda: next(counter))


def test_a_refusal_is_a_panic_only_when_it_holds_a_go_runtime_error() -> None:
    assert parser_panicked(PANIC)
    assert not parser_panicked(REFUSAL)


def test_a_panicked_refusal_of_a_mapping_the_reference_refuses_still_diverges() -> None:
    profile = for_version("2.14.10")
    refused = judge_validation(context(), profile, "v.*", "x..x", Verdict("reject", REFUSAL))
    panicked = judge_validation(context(), profile, "v.*", "x..x", Verdict("reject", PANIC, panicked=True))
    assert (refused.expected, refused.verdict) == ("reject:invalid-destination", "agree")
    assert (panicked.observed, panicked.difference, panicked.verdict) == ("reject", CHECK_PANICKED, "diverge")
