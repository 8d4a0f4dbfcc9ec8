"""Real third parties, judged (issue 58): each packaged adapter (adapters/) is built as
`nats-conformance provision adapter:NAME` builds it, asked a small budget of questions, and shows its
known divergence classes (listed in expectations.toml) and agreement elsewhere; every message of the
run validates against the protocol's JSON Schema. An adapter whose build takes over two minutes from
empty registry caches (`ci = false` in its adapter.toml) runs only nightly."""

from __future__ import annotations

import contextlib
import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nats_conformance.fixtures.adapters import adapter_command, packaged, packaged_adapters
from nats_conformance.fixtures.clients.adapter import SERVER_URL_ENV, adapter_server
from nats_conformance.suites.__main__ import main
from tests.adapters.test_protocol_schema import RECORDING, check_run

PYTHON = shlex.quote(sys.executable)
EXPECTED: dict[str, set[str]] = {
    "nats-jwt": {
        "containment:contains-op:false-containment",
        "subjects:subject-rule:value",
        "weighted:valid-mapping-op:reference-reject-duplicate-destination-server-accept",
    },
    "mock-node-nats": {"matching:full:not-delivered"},
    "mock-nats-client": set(),
    "jnats": set(),
    "async-nats": {"subjects:subject-rule:value"},
    "faststream": set(),
    "nats-js": {"subjects:subject-rule:value", "subjects:publish-rule:value"},
    "libnats": {"subjects:publish-rule:value"},
}
"""Divergence classes each adapter shows at this budget and seed (measured), all listed in
expectations.toml; the others agree with the documents on every question asked."""


def unlisted_packages(build: tuple[tuple[str, ...], ...]) -> list[str]:
    """The packages an `apt-get download` step of a build names that apt's lists do not hold."""
    wanted = [
        word for step in build if step[:2] == ("apt-get", "download") for word in step[2:] if word[0] != "-"
    ]
    return [package for package in wanted if not _listed(package)]


def _listed(package: str) -> bool:
    shown = subprocess.run(["apt-cache", "show", package], capture_output=True, check=False)
    return shown.returncode == 0 and bool(shown.stdout)


def run(name: str, tmp_path: Path) -> tuple[int, dict[str, Any], set[str], Path]:
    adapter = packaged(name)
    assert adapter is not None
    missing = [tool for tool in adapter.tools if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"adapter {name} needs {', '.join(missing)}")
    if unlisted := unlisted_packages(adapter.build):
        pytest.skip(f"apt's lists hold no {', '.join(unlisted)} (apt-get update)")
    command = adapter_command(name)
    log = tmp_path / "messages.log"
    (tmp_path / "none.toml").write_text("")
    target = f"adapter:{PYTHON} {RECORDING} {log} {command}"
    argv = ["campaign", "--target", target, "--cases", "1500", "--out", str(tmp_path / "runs")]
    with contextlib.ExitStack() as stack:
        if adapter.server:  # recording.py's command is no packaged name: given a server as a user gives it
            server = adapter_server(adapter.server)
            stack.callback(server.cleanup)
            stack.enter_context(pytest.MonkeyPatch.context()).setenv(SERVER_URL_ENV, server.url)
        status = main([*argv, "--expectations", str(tmp_path / "none.toml")])
    (run_dir,) = (tmp_path / "runs").iterdir()
    manifest = json.loads((run_dir / "manifest.json").read_text())
    folder = run_dir / "divergences"
    classes = (
        {json.loads(p.read_text())["case_class"] for p in folder.glob("*.json")} if folder.exists() else set()
    )
    return status, manifest, classes, log


def judged(name: str, tmp_path: Path) -> None:
    status, manifest, classes, log = run(name, tmp_path)
    assert EXPECTED[name] <= classes, classes
    assert status == (1 if classes else 0)
    verdicts = manifest["verdicts"]
    assert verdicts["agree"] >= 0.8 * (verdicts["agree"] + verdicts["diverge"]), verdicts
    check_run(log)
    # Listed: with the repository's expectations nothing of it is unexpected.
    out = tmp_path / "listed"
    target = f"adapter:{name}"
    assert main(["campaign", "--target", target, "--cases", "1500", "--out", str(out)]) == 0


def test_the_packaged_adapters_are_listed(capsys: pytest.CaptureFixture[str]) -> None:
    from nats_conformance import main as command

    assert set(packaged_adapters()) == set(EXPECTED)
    assert command(["adapters", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {(row["name"], row["language"]) for row in rows} >= {("nats-jwt", "Go"), ("jnats", "Java")}
    assert all(row["version"] and row["implementation"] for row in rows)
    assert command(["provision", "adapter:no-such-adapter"]) == 2


@pytest.mark.parametrize("name", [n for n, a in packaged_adapters().items() if a.ci])
def test_a_packaged_adapter_is_judged(name: str, tmp_path: Path) -> None:
    judged(name, tmp_path)


@pytest.mark.nightly
@pytest.mark.parametrize("name", [n for n, a in packaged_adapters().items() if not a.ci])
def test_a_slow_packaged_adapter_is_judged(name: str, tmp_path: Path) -> None:
    judged(name, tmp_path)
