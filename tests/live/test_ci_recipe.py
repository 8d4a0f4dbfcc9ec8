"""The CI recipe (examples/ci/nats-conformance.yml) as written: its job's shell steps, in order, as GitHub
runs them (`bash -eo pipefail`, the job's and step's environment, what a step writes to $GITHUB_ENV in
the environment of the steps after it, a summary file per step), for the line 2.14: resolved to its
newest patch, that release in a container imported from the cached binary (no registry here), and
paired with a previous run of the line on an older patch (2.14.9), put where the cache step restores
it. Its expressions are only in `env:`, given here as a pull request's; the steps that need GitHub
(`uses:`, the install, a push's `if:`) are left out, and the suite is this tree's wheel in a fresh
virtualenv, run outside the checkout (tests.wheel)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from nats_conformance.fixtures.docker import DockerDaemon, ensure_image
from nats_conformance.fixtures.provision import parse_version_spec, resolve_binary
from nats_conformance.fixtures.releases import newest_of_lines
from nats_conformance.fixtures.servers.local import free_port
from nats_conformance.records.pairs import read_pairs
from nats_conformance.reference.versions import Version
from nats_conformance.suites.commands import SHOWN_CHANGES
from tests.wheel import Installed

yaml = pytest.importorskip("yaml")  # PyYAML: with mkdocs, a dev dependency

pytestmark = [pytest.mark.live, pytest.mark.container, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "examples" / "ci" / "nats-conformance.yml"
LINE = "2.14"
PREVIOUS = "2.14.9"
"""The patch of the line's previous run, older than its newest."""


def job_steps() -> tuple[dict[str, str], list[dict[str, Any]]]:
    """The conformance job's environment (the workflow's, then the job's) and its steps."""
    workflow = yaml.safe_load(RECIPE.read_text())
    job = workflow["jobs"]["conformance"]
    return {**workflow["env"], **job["env"]}, job["steps"]


def previous_run(out: Path) -> Path:
    """A quick campaign of `PREVIOUS` (process backend), as the line's previous run kept by the cache."""
    campaign = ("campaign", "--plan", "quick", "--server-version", PREVIOUS, "--out", str(out))
    subprocess.run(
        [sys.executable, "-m", "nats_conformance.suites", *campaign],
        cwd=out.parent,
        capture_output=True,
        timeout=600,
        check=True,
    )
    (run_dir,) = out.iterdir()
    return run_dir


def set_by(github_env: Path) -> dict[str, str]:
    """The variables a step wrote to $GITHUB_ENV (`NAME=value` lines), as GitHub gives the next steps."""
    if not github_env.exists():
        return {}
    return dict(line.split("=", 1) for line in github_env.read_text().splitlines() if "=" in line)


def test_the_recipe_resolves_its_line_and_pairs_with_the_previous_run(
    tmp_path: Path, docker_daemon: DockerDaemon, installed: Installed
) -> None:
    (release,) = newest_of_lines([LINE], progress=lambda line: None)
    if Version.parse(release) <= Version.parse(PREVIOUS):
        # offline with no list cached, the line's pinned patch stands in for its newest
        pytest.skip(f"the newest {LINE} patch known here is {release}: none newer than {PREVIOUS} to pair")
    binary = resolve_binary(parse_version_spec(release))
    image = ensure_image(release, binary, docker_host=docker_daemon.docker_host, try_pull=False)
    workspace, runner_temp = tmp_path / "workspace", tmp_path / "runner"
    workspace.mkdir()
    runner_temp.mkdir()
    shutil.copytree(previous_run(tmp_path / "previous"), workspace / "previous-run")
    job_env, steps = job_steps()
    assert any(
        step.get("uses", "").startswith("actions/setup-go@") and step["with"]["go-version"] == "stable"
        for step in steps[: [step.get("name") for step in steps].index("Campaign")]
    ), "no Go before the campaign: its paired replays build the releases they start"
    env = {
        **os.environ,
        **job_env,
        "NATS_LINE": LINE,
        "PLAN": "quick",  # a pull request's
        "NATS_IMAGE": image.rpartition(":")[0],
        "NATS_CONTAINER": f"nats-conformance-ci-recipe-{os.getpid()}",
        "NATS_PORT": str(free_port()),
        "GITHUB_WORKSPACE": str(workspace),
        "RUNNER_TEMP": str(runner_temp),
        "DOCKER_HOST": docker_daemon.docker_host,
        "PATH": f"{installed.scripts}{os.pathsep}{os.environ['PATH']}",
    }
    env.pop("NATS_VERSION", None)  # the recipe's first step sets it
    ran: dict[str, int] = {}
    summaries: list[Path] = []
    try:
        for number, step in enumerate(steps):
            name, condition = step.get("name", ""), step.get("if", "")
            if "run" not in step or name == "Install the suite" or condition not in ("", "always()"):
                continue
            if any(status for status in ran.values()) and condition != "always()":
                continue  # as GitHub does: after a failed step only `always()` ones run
            assert "${{" not in step["run"], f"{name}: an expression in a shell step"
            github_env, summary = runner_temp / f"env-{number}", runner_temp / f"summary-{number}"
            files = {"GITHUB_ENV": str(github_env), "GITHUB_STEP_SUMMARY": str(summary)}
            result = subprocess.run(
                ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
                env={**env, **step.get("env", {}), **files},
                cwd=workspace,
                timeout=900,
                check=False,
            )
            ran[name] = result.returncode
            env |= set_by(github_env)
            summaries.append(summary)
    finally:
        subprocess.run(
            ["docker", "rm", "-f", env["NATS_CONTAINER"]], env=env, capture_output=True, check=False
        )
    assert ran == {
        "Resolve the line to its newest patch": 0,
        "Start nats-server (official image)": 0,
        "Campaign": 0,
        "Gate against the baseline or the previous run": 0,
        "Divergences, for replay (nats-conformance replay FILE --target ...)": 0,
        "Stop the server": 0,
    }, (runner_temp / "campaign.err").read_text()[-3000:]
    assert env["NATS_VERSION"] == release
    # The job's summary names the release and what it was paired with, and counts the paired replays:
    # the classes one side showed and the other did not, each replayed on the other side's release.
    summary = "".join(path.read_text() for path in summaries if path.exists())
    heading = f"### nats-server {release}, the newest of {LINE} (paired with the previous run of {LINE}, on "
    assert f"{heading}nats-server {PREVIOUS})\n" in summary, summary
    previous = workspace / "previous-run"
    counts = re.search(
        rf"^paired with {re.escape(str(previous))}: (\d+) one-sided classes replayed in [\d.]+ s, (\d+) "
        r"changed, \d+ unstable \(not claimed\), (\d+) unknown$",
        summary,
        re.MULTILINE,
    )
    assert counts, summary
    replayed, changed, unknown = (int(group) for group in counts.groups())
    assert replayed > 0, summary
    assert unknown == 0, summary  # every replay ran, on a release built with Go
    (run_dir,) = (path for path in (workspace / "runs").iterdir() if path.is_dir())
    pairs = read_pairs(run_dir).of(str(previous.resolve()))
    assert pairs is not None
    assert len(pairs) == replayed
    assert {(pair.seen_on, pair.replayed_on) for pair in pairs} <= {(PREVIOUS, release), (release, PREVIOUS)}
    # each change the pairs confirm is named, its two sides with it
    named = [line for line in summary.splitlines() if line.startswith("changed: ")]
    assert len(named) == min(changed, SHOWN_CHANGES), summary
    assert all(f" on {PREVIOUS}, " in line and line.endswith(f" on {release}") for line in named), named
    assert "gate passed: " in summary, summary
    # the gate met each class of the previous patch with the same class of the new one, by their line
    assert f"nats-server {PREVIOUS}..{release} " in (workspace / "runs" / "gate-details.txt").read_text()
    root = ET.parse(workspace / "junit.xml").getroot()
    assert root.tag == "testsuites"
    families = {case.get("name") for suite in root.findall("testsuite") for case in suite.findall("testcase")}
    assert {"mapping", "validation", "matching"} <= families
    assert '"status": "completed"' in (run_dir / "manifest.json").read_text()
