"""The installed pytest plugin is a good guest: in a session that does not ask for it, it changes nothing
(Hypothesis settings, fixtures, options, markers); a session that passes a `--nats-...` option gets its
fixtures and profiles, by any loading route; the old spellings work only where a conftest keeps them.

Every run is a subprocess (loading a Hypothesis profile changes the whole process), with this tree first
on PYTHONPATH, so the entry point loads the plugin under test."""

from __future__ import annotations

from pathlib import Path

import pytest

from nats_conformance.fixtures.provision import CACHE_ENV, cache_root

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")
ROOT = Path(__file__).resolve().parents[2]
SERVERS = cache_root()
"""The server cache, read before pytester gives each run a HOME of its own (where nothing is built)."""


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv(CACHE_ENV, str(SERVERS))
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    return pytester


UNRELATED_CONFTEST = """
import pytest
from hypothesis import settings

settings.register_profile("ci", max_examples=500)


def pytest_addoption(parser):
    parser.addoption("--backend", default="sqlite")


@pytest.fixture
def target(request):
    return "mine:" + request.config.getoption("--backend")
"""

UNRELATED_TESTS = """
import pytest
from hypothesis import given, settings, strategies as st

SEEN = []


@given(st.integers())
def test_default_settings(number):
    SEEN.append(number)


def test_examples_seen():
    assert len(SEEN) == {examples}
    assert settings().max_examples == {examples}
    assert settings.get_current_profile_name() == "{profile}"


def test_own_target(target):
    assert target == "mine:sqlite"
"""

UNREGISTERED_MARKER = """
import pytest


@pytest.mark.slow
def test_unregistered_marker():
    pass
"""


@pytest.mark.parametrize(
    ("arguments", "profile", "examples"),
    [([], "default", 100), (["--hypothesis-profile", "ci"], "ci", 500)],
    ids=["default", "own-ci-profile"],
)
def test_an_unrelated_project_keeps_its_settings_fixtures_options_and_markers(
    pytester: pytest.Pytester, arguments: list[str], profile: str, examples: int
) -> None:
    pytester.makeconftest(UNRELATED_CONFTEST)
    pytester.makepyfile(
        test_unrelated=UNRELATED_TESTS.format(profile=profile, examples=examples),
        test_markers=UNREGISTERED_MARKER,
    )
    result = pytester.runpytest_subprocess(
        *arguments, "--strict-markers", "--continue-on-collection-errors", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=3, errors=1)
    result.stdout.fnmatch_lines(
        ["*plugins: *nats-conformance-*", "*'slow' not found in `markers` configuration option*"]
    )
    assert "nats-conformance:" not in result.stdout.str()


NATS_TESTS = """
def test_a_server_is_started_for_the_target(nats_server, nats_target, target):
    assert target == "mine"
    assert nats_target.backend == "process"
    assert nats_server.version == "2.14.5"
"""


def test_a_project_passing_nats_server_version_gets_the_fixtures(pytester: pytest.Pytester) -> None:
    pytester.makeconftest('import pytest\n\n@pytest.fixture\ndef target():\n    return "mine"\n')
    pytester.makepyfile(test_nats=NATS_TESTS)
    result = pytester.runpytest_subprocess("--nats-server-version", "2.14.5", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["nats-conformance: target process-2.14.5", "process-2.14.5: v2.14.5"])


KEEPS_OLD_SPELLINGS = """
from nats_conformance.fixtures.plugin import add_deprecated_options


def pytest_addoption(parser):
    add_deprecated_options(parser)
"""


def test_the_old_spelling_works_with_a_warning_where_a_conftest_keeps_it(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_fanout="def test_uses_server(nats_target):\n    pass\n")
    unknown = pytester.runpytest_subprocess("--server-version", "2.14.5", "--collect-only")
    assert unknown.ret == pytest.ExitCode.USAGE_ERROR
    unknown.stderr.fnmatch_lines(["*unrecognized arguments: --server-version*"])
    pytester.makeconftest(KEEPS_OLD_SPELLINGS)
    result = pytester.runpytest_subprocess("--server-version", "2.14.5", "--collect-only", "-q")
    result.stdout.fnmatch_lines(
        [
            "test_fanout.py::test_uses_server[process-2.14.5]",
            "*PytestDeprecationWarning: --server-version is deprecated: use --nats-server-version*",
        ]
    )


PROFILE_TEST = """
from hypothesis import settings

def test_profile():
    assert settings.get_current_profile_name() == "nats-nightly"
    assert settings.default.max_examples == 2000
"""


@pytest.mark.parametrize(
    ("conftest", "arguments"),
    [
        (False, ["--nats-hypothesis-profile", "nightly"]),
        (False, ["-p", "nats_conformance.fixtures.plugin", "--nats-hypothesis-profile", "nightly"]),
        (True, ["--nats-hypothesis-profile", "nightly"]),
        (False, ["--nats-server-version", "2.14.5", "--hypothesis-profile", "nats-nightly"]),
    ],
    ids=["entry-point", "dash-p", "conftest", "hypothesis-option"],
)
def test_hypothesis_profile_is_honoured_however_the_plugin_is_loaded(
    pytester: pytest.Pytester, conftest: bool, arguments: list[str]
) -> None:
    if conftest:
        pytester.makeconftest('pytest_plugins = ["nats_conformance.fixtures.plugin"]')
    pytester.makepyfile(test_profile=PROFILE_TEST)
    result = pytester.runpytest_subprocess(*arguments, "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_the_entry_point_adds_only_namespaced_options(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--help")
    result.stdout.fnmatch_lines(["*--nats-server-version=SPEC*", "*--nats-backend=KIND*"])
    assert "--server-version" not in result.stdout.str()
