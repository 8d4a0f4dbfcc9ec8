"""Root conftest: this repository's own tests opt in to the nats-conformance pytest plugin (with
`nats_conformance = true` in pyproject.toml), keep the old option spellings (`--server-version` ...) as
deprecated aliases, and use the plugin's `nats_*` fixtures under the short names they were written with."""

from __future__ import annotations

import inspect
import shutil
import tempfile
from typing import Literal

import pytest

from nats_conformance.fixtures.options import Target
from nats_conformance.fixtures.plugin import active, add_deprecated_options
from nats_conformance.fixtures.stash_keys import RUN_CONFIG
from tests.checkout import checkout_status
from tests.live.campaigns import newest_of_session

pytest_plugins = ["nats_conformance.fixtures.plugin", "pytester"]


def pytest_addoption(parser: pytest.Parser) -> None:
    add_deprecated_options(parser)


RECORDS_OPTIONS = ("--nats-records-dir", "--records-dir")


def pytest_configure(config: pytest.Config) -> None:
    """This repository's own sessions write their case records into a temporary folder removed at the
    session's end, never into the checkout's runs/ (a --nats-records-dir on the command line wins)."""
    given = any(str(arg).startswith(RECORDS_OPTIONS) for arg in config.invocation_params.args)
    if not active(config) or given:
        return
    folder = tempfile.mkdtemp(prefix="nats-conformance-test-runs-")
    config.option.nc_records_dir = folder
    config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))


CHECKOUT_STATUS = pytest.StashKey[frozenset[str]]()


def pytest_sessionstart(session: pytest.Session) -> None:
    """Note the checkout's state before the tests (the controller's, with pytest-xdist)."""
    if not hasattr(session.config, "workerinput") and (status := checkout_status()) is not None:
        session.config.stash[CHECKOUT_STATUS] = status


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The tests leave the checkout as they found it: a file they wrote or changed in it (outside the
    ignored runs/, out/ and caches) fails the session, named on the terminal."""
    before = session.config.stash.get(CHECKOUT_STATUS, None)
    after = checkout_status() if before is not None else None
    if before is None or after is None or not (left := sorted(after - before)):
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        changes = "; ".join(left)
        reporter.write_line(f"the tests left {len(left)} change(s) in the checkout: {changes}", red=True)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """With both backends in the session, the container backend runs on the session's newest release
    only: it runs the same binaries as the process backend, which runs every release, and what it adds
    (a server's life in a container) does not depend on the release. This keeps CI short."""
    if not active(config):
        return
    run = config.stash[RUN_CONFIG]
    if not {"process", "container"} <= set(run.backends):
        return
    skip = pytest.mark.skip(reason="the container backend runs on the session's newest release")
    for item in items:
        callspec = getattr(item, "callspec", None)
        target = callspec.params.get("nats_target") if callspec is not None else None
        if not isinstance(target, Target) or target.backend != "container":
            continue
        if not newest_of_session(target, run):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def target(nats_target: Target) -> Target:
    return nats_target


def _alias(name: str, scope: Literal["session", "function"] = "session") -> object:
    """A fixture `name` that is the plugin's `nats_<name>`, depending on it by name (so that a
    parametrized server's parameters reach the tests that use the alias)."""
    source = f"nats_{name}"

    def alias(**fixtures: object) -> object:
        return fixtures[source]

    alias.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(source, inspect.Parameter.KEYWORD_ONLY)]
    )
    return pytest.fixture(name=name, scope=scope)(alias)


run_config = _alias("run_config")
recorder = _alias("recorder")
expectations = _alias("expectations")
server = _alias("server")
context = _alias("context")
operator_server = _alias("operator_server")
jetstream_server = _alias("jetstream_server")
operator_context = _alias("operator_context")
server_factory = _alias("server_factory", scope="function")
