"""The texts of a release bisection (`records.bisection`, read with the records) that the renderers share."""

from __future__ import annotations

from nats_conformance.records.bisection import OUTCOME_TEXT, Probe


def probe_text(probe: Probe) -> str:
    """`2.8.4 does not occur (agrees)`."""
    text = f"{probe.release} {OUTCOME_TEXT[probe.outcome]}"
    return f"{text} ({probe.detail})" if probe.detail else text
