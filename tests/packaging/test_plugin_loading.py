"""The pytest plugin loads once by any route (entry point, `-p fixtures.plugin`, a conftest's
`pytest_plugins`), and `--hypothesis-profile` chooses among its profiles by every route."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")

PROFILE_TEST = """
from hypothesis import settings

def test_profile():
    assert settings.get_current_profile_name() == "nightly"
    assert settings.default.max_examples == 2000
"""


@pytest.mark.parametrize(
    ("conftest", "arguments"),
    [
        (False, []),
        (False, ["-p", "fixtures.plugin"]),
        (True, []),
        (True, ["-p", "fixtures.plugin"]),
    ],
    ids=["entry-point", "dash-p", "conftest", "conftest-and-dash-p"],
)
def test_hypothesis_profile_is_honoured_however_the_plugin_is_loaded(
    pytester: pytest.Pytester, conftest: bool, arguments: list[str]
) -> None:
    if conftest:
        pytester.makeconftest('pytest_plugins = ["fixtures.plugin"]')
    pytester.makepyfile(test_profile=PROFILE_TEST)
    # A subprocess: loading a profile changes Hypothesis's settings for the whole process.
    result = pytester.runpytest_subprocess(
        *arguments, "--hypothesis-profile", "nightly", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=1)


def test_the_entry_point_adds_the_options(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--help")
    result.stdout.fnmatch_lines(["*--server-version=SPEC*"])
