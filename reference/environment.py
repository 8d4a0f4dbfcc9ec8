"""Every environment variable the package reads, with what it does and the commands that read it: the one
list `nats-conformance --help` and each command's `--help` show (an "environment variables:" epilog,
`nats_conformance.parser`). tests/packaging/test_environment.py checks that every variable the code
reads is here."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

SELECTING: Final = ("campaign", "replay")
"""The commands whose options choose and reach the servers."""
CONTAINERS: Final = (*SELECTING, "bisect")
"""The commands that can run servers in containers."""
SERVERS: Final = (*CONTAINERS, "coverage")
"""The commands that start or reach servers."""
BUILDS: Final = (*SERVERS, "engine-check", "provision", "releases")
"""The commands that build servers or transform engines (into the cache), or list releases."""
SPARK: Final = ("campaign", "report", "site")
HYPOTHESIS_STORAGE: Final = "HYPOTHESIS_STORAGE_DIRECTORY"
"""Where Hypothesis keeps its caches (`keep_hypothesis_storage`)."""


@dataclass(frozen=True, slots=True)
class Variable:
    name: str
    meaning: str
    commands: tuple[str, ...]
    """The sub-commands that read it; () for none (read by the pytest plugin alone)."""


VARIABLES: Final = (
    Variable(
        "NATS_CONFORMANCE_SERVER_VERSION",
        "releases to test when no --target/--server-version is given (comma-separated)",
        SELECTING,
    ),
    Variable("NATS_CONFORMANCE_BACKEND", "the backend when no --backend is given", SELECTING),
    Variable("NATS_CONFORMANCE_PASSWORD", "the --user's password when no --password is given", SELECTING),
    Variable("NATS_CONFORMANCE_TOKEN", "the token when no --token is given", SELECTING),
    Variable(
        "NATS_CONFORMANCE_DEADLINE",
        "seconds: shortens every wait on a server (a hung one is given up on)",
        SERVERS,
    ),
    Variable(
        "NATS_CONFORMANCE_CACHE",
        "where servers are built (default $XDG_CACHE_HOME/nats-conformance/servers)",
        BUILDS,
    ),
    Variable("XDG_CACHE_HOME", "the cache's parent (default ~/.cache)", BUILDS),
    Variable("GOPROXY", "the Go module proxy that lists and serves releases (else `go env GOPROXY`)", BUILDS),
    Variable(
        "NATS_CONFORMANCE_PROGRESS_SECONDS",
        "seconds between two progress lines when stderr is not a terminal (default 30)",
        ("campaign", "coverage"),
    ),
    Variable("DOCKER_HOST", "the Docker daemon of --backend container", CONTAINERS),
    Variable("PYSPARK_PYTHON", "the Python of Spark's executors (default this one)", ("campaign",)),
    Variable("SPARK_LOCAL_IP", "the address a local Spark binds (default 127.0.0.1)", SPARK),
    Variable("CI", "the pytest plugin's default Hypothesis profile is `ci` when set, else `dev`", ()),
    Variable(
        HYPOTHESIS_STORAGE,
        "where Hypothesis keeps its caches (default $XDG_CACHE_HOME/nats-conformance/hypothesis, never "
        "./.hypothesis)",
        ("campaign", "replay", "coverage", "mutants", "bisect"),
    ),
)

COLUMN: Final = 2 + max(len(variable.name) for variable in VARIABLES) + 2
HEADING: Final = "environment variables:"


def epilog(command: str | None = None) -> str | None:
    """The "environment variables:" block of `command`'s help (every variable for the top level, None
    for a command that reads none), one variable a line."""
    chosen = [v for v in VARIABLES if command is None or command in v.commands]
    if not chosen:
        return None
    lines = [f"  {v.name.ljust(COLUMN - 4)}  {v.meaning}" for v in chosen]
    return "\n".join([HEADING, *lines])


def cache_home() -> Path:
    """The package's cache folder: $XDG_CACHE_HOME/nats-conformance, else ~/.cache/nats-conformance."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "nats-conformance"


def keep_hypothesis_storage() -> None:
    """Hypothesis keeps its caches (its Unicode tables) in ``./.hypothesis`` unless
    ``$HYPOTHESIS_STORAGE_DIRECTORY`` names another folder (hypothesis.readthedocs.io, "Settings",
    "database"): a command of this package leaves the user's working folder alone, so unless the user
    set the variable, it names ``cache_home() / "hypothesis"`` for this process and the processes it
    starts."""
    os.environ.setdefault(HYPOTHESIS_STORAGE, str(cache_home() / "hypothesis"))
