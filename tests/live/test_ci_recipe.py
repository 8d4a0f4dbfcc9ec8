"""The CI recipe (examples/ci/nats-conformance.yml) as written: its job's shell steps, in order, as GitHub
runs them (`bash -eo pipefail`, the job's and step's environment), against nats-server 2.14.5 in a
container imported from the cached binary (no registry here). Its expressions are only in `env:`, given
here as a pull request's; the steps that need GitHub (`uses:`, the install, a push's `if:`) are left out,
and the suite is this tree's wheel in a fresh virtualenv, run outside the checkout (tests.wheel)."""

from __future__ import annotations

import os
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from nats_conformance.fixtures.docker import DockerDaemon, ensure_image
from nats_conformance.fixtures.provision import parse_version_spec, resolve_binary
from nats_conformance.fixtures.servers.local import free_port
from tests.wheel import Installed

yaml = pytest.importorskip("yaml")  # PyYAML: with mkdocs, a dev dependency

pytestmark = [pytest.mark.live, pytest.mark.container, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "examples" / "ci" / "nats-conformance.yml"
RELEASE = "2.14.5"


def job_steps() -> tuple[dict[str, str], list[dict[str, Any]]]:
    """The conformance job's environment (the workflow's, then the job's) and its steps."""
    workflow = yaml.safe_load(RECIPE.read_text())
    job = workflow["jobs"]["conformance"]
    return {**workflow["env"], **job["env"]}, job["steps"]


def test_the_recipe_steps_pass_against_a_container_and_write_junit_xml(
    tmp_path: Path, docker_daemon: DockerDaemon, installed: Installed
) -> None:
    binary = resolve_binary(parse_version_spec(RELEASE))
    image = ensure_image(RELEASE, binary, docker_host=docker_daemon.docker_host, try_pull=False)
    workspace, runner_temp = tmp_path / "workspace", tmp_path / "runner"
    workspace.mkdir()
    runner_temp.mkdir()
    job_env, steps = job_steps()
    env = {
        **os.environ,
        **job_env,
        "NATS_VERSION": RELEASE,
        "PLAN": "quick",  # a pull request's
        "NATS_IMAGE": image.rpartition(":")[0],
        "NATS_CONTAINER": f"nats-conformance-ci-recipe-{os.getpid()}",
        "NATS_PORT": str(free_port()),
        "GITHUB_WORKSPACE": str(workspace),
        "RUNNER_TEMP": str(runner_temp),
        "DOCKER_HOST": docker_daemon.docker_host,
        "PATH": f"{installed.scripts}{os.pathsep}{os.environ['PATH']}",
    }
    ran: dict[str, int] = {}
    try:
        for step in steps:
            name, condition = step.get("name", ""), step.get("if", "")
            if "run" not in step or name == "Install the suite" or condition not in ("", "always()"):
                continue
            if any(status for status in ran.values()) and condition != "always()":
                continue  # as GitHub does: after a failed step only `always()` ones run
            assert "${{" not in step["run"], f"{name}: an expression in a shell step"
            result = subprocess.run(
                ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
                env={**env, **step.get("env", {})},
                cwd=workspace,
                timeout=900,
                check=False,
            )
            ran[name] = result.returncode
    finally:
        subprocess.run(
            ["docker", "rm", "-f", env["NATS_CONTAINER"]], env=env, capture_output=True, check=False
        )
    assert ran == {
        "Start nats-server (official image)": 0,
        "Campaign": 0,
        "Gate against the baseline or the previous run": 0,
        "Divergences, for replay (nats-conformance replay FILE --target ...)": 0,
        "Stop the server": 0,
    }, (runner_temp / "campaign.err").read_text()[-3000:]
    root = ET.parse(workspace / "junit.xml").getroot()
    assert root.tag == "testsuites"
    families = {case.get("name") for suite in root.findall("testsuite") for case in suite.findall("testcase")}
    assert {"mapping", "validation", "matching"} <= families
    (run_dir,) = (workspace / "runs").iterdir()
    assert '"status": "completed"' in (run_dir / "manifest.json").read_text()
