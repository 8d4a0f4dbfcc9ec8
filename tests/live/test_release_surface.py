"""`suites.surface` on real releases' module sources (the Go module proxy; skipped when it cannot be
reached and the Go module cache lacks them): what 2.14.10 and 2.15.3 add to their predecessors."""

from __future__ import annotations

import pytest

from nats_conformance.fixtures.errors import ProvisionError
from nats_conformance.suites.surface import Surface, diff, surface_of, unmodelled, unmodelled_lines

pytestmark = pytest.mark.live

ACCOUNT_HASH = {"account-hash", "account-hash-import", "account-hash-leaf-remote"}


def surface(release: str) -> Surface:
    try:
        return surface_of(release)
    except ProvisionError as error:
        pytest.skip(f"no module source of nats-server {release}: {error}")


@pytest.mark.parametrize(("old", "new"), [("2.14.9", "2.14.10"), ("2.15.2", "2.15.3")])
def test_a_patch_adds_the_account_hash_functions_and_nothing_else(old: str, new: str) -> None:
    before, after = surface(old), surface(new)
    changes = diff(before, after)
    assert changes.added == {"functions": ACCOUNT_HASH, "error codes": set(), "config keys": set()}
    assert not any(changes.removed.values())
    assert unmodelled(after, new) == frozenset()  # modelled since they appeared
    assert unmodelled(after, old) == ACCOUNT_HASH  # judged by the rules of the patch before
    assert unmodelled(before, old) == frozenset()
    assert after.config_keys["SubjectTransformConfig"] == {"src", "dest"}
    assert {"mirror", "sources", "subject_transform", "republish"} == after.config_keys["StreamConfig"]
    assert after.error_codes["JSSourceConsumerFlowControlStalledErr"] == 10228


def test_a_campaign_of_releases_the_reference_models_names_nothing_unmodelled() -> None:
    surface("2.14.10")  # skips where the module source cannot be had
    assert unmodelled_lines(["2.14.9", "2.14.10", "2.15.2", "2.15.3"]) == []
