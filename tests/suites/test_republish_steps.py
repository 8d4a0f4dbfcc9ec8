"""A RePublish scenario written as a case's `steps` reads back as the same scenario (what replay runs)."""

from __future__ import annotations

from hypothesis import given

from nats_conformance.reference.profiles import for_version
from nats_conformance.suites.families.republish import RepublishScenario, scenario_of, scenarios, steps_of


@given(scenarios(for_version("2.14")))
def test_steps_read_back_as_the_scenario(scenario: RepublishScenario) -> None:
    steps = steps_of(scenario)
    assert len(steps) == 1 + len(scenario.operations)
    assert scenario_of(steps) == RepublishScenario(
        scenario.subjects,
        scenario.option,
        scenario.storage,
        scenario.max_msgs_per_subject,
        scenario.operations,
    )
