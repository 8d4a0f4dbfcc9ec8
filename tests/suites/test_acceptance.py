"""A configuration's acceptance has one name wherever it was configured (`verdicts.acceptance`)."""

from __future__ import annotations

import pytest

from nats_conformance.suites.engine.verdicts import acceptance


@pytest.mark.parametrize(
    ("refusal", "server_message", "judged"),
    [
        ("", None, ("accept", "accept", "")),
        (
            "invalid-destination",
            "stream transform: invalid subject",
            ("reject:invalid-destination", "reject", ""),
        ),
        (
            "invalid-destination",
            None,
            ("reject:invalid-destination", "accept", "reference-reject-invalid-destination-server-accept"),
        ),
        ("", "source subject filter is invalid", ("accept", "reject", "reference-accept-server-reject")),
        (
            "",
            'jwt validation failed - validation errors: [subject "a b" cannot have spaces]',
            ("accept", "reject", "reference-accept-server-reject-jwt-validation"),
        ),
        ("", "", ("accept", "reject", "reference-accept-server-reject")),
    ],
)
def test_a_configuration_is_judged_on_what_each_side_answered(
    refusal: str, server_message: str | None, judged: tuple[str, str, str]
) -> None:
    assert acceptance(refusal, server_message) == judged
