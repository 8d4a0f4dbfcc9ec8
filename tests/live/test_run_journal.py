"""A campaign that ends badly is accounted for: SIGINT and SIGTERM exit 130 and 143 with one line, a
journal marked interrupted and no server left running; after SIGKILL the journal still counts exactly the
rows on disk, and the report marks the run incomplete, which the gate refuses unless told otherwise."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from fixtures.options import Target
from records.writer import CASES, MANIFEST, run_status
from reports.__main__ import main as reports_main

pytestmark = pytest.mark.live
ROOT = Path(__file__).resolve().parents[2]


def servers_of(parent: int) -> set[int]:
    """The nats-server processes `parent` started."""
    found = subprocess.run(
        ["pgrep", "-x", "-P", str(parent), "nats-server"], capture_output=True, text=True, check=False
    )
    return {int(pid) for pid in found.stdout.split()}


def running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def started_campaign(target: Target, out: Path) -> tuple[subprocess.Popen[str], Path]:
    """A campaign far longer than the test, once its journal holds recorded cases."""
    command = [
        *(sys.executable, "-m", "suites", "campaign", "--server-version", target.spec.text),
        *("--backend", target.backend, "--family", "matching", "--budget", "matching=100000000"),
        *("--out", str(out)),
    ]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        manifests = list(out.glob(f"*/{MANIFEST}"))
        if manifests and json.loads(manifests[0].read_text() or "{}").get("cases", 0) > 0:
            return process, manifests[0].parent
        time.sleep(0.2)
    process.kill()
    pytest.fail(f"the campaign recorded nothing in 90 s: {process.communicate()[1][-2000:]}")


def rows_on_disk(run_dir: Path) -> int:
    return sum(pq.read_metadata(part).num_rows for part in (run_dir / CASES).glob("*.parquet"))


@pytest.mark.parametrize(
    ("sent", "status", "line"), [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")]
)
def test_an_interrupted_campaign_says_so_and_leaves_nothing_running(
    target: Target, tmp_path: Path, sent: signal.Signals, status: int, line: str
) -> None:
    if target.backend != "process":
        pytest.skip("signals are sent to a campaign on the process backend")
    process, run_dir = started_campaign(target, tmp_path)
    servers = servers_of(process.pid)
    assert servers, "the campaign's server was not found"
    process.send_signal(sent)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == status, stderr[-2000:]
    assert stderr.rstrip().endswith(f"nats-conformance: {line}")
    assert "Traceback" not in stderr
    manifest = json.loads((run_dir / MANIFEST).read_text())
    assert (manifest["status"], manifest["signal"]) == ("interrupted", sent.name)
    assert manifest["cases"] == rows_on_disk(run_dir) > 0
    assert not [pid for pid in servers if running(pid)]


def test_a_killed_campaign_is_counted_and_refused_by_the_gate(
    target: Target, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if target.backend != "process":
        pytest.skip("signals are sent to a campaign on the process backend")
    process, run_dir = started_campaign(target, tmp_path)
    time.sleep(3)
    os.kill(process.pid, signal.SIGKILL)
    process.communicate(timeout=30)
    manifest = json.loads((run_dir / MANIFEST).read_text())
    assert run_status(manifest) == "killed"
    assert manifest["cases"] == rows_on_disk(run_dir) > 0
    baseline = tmp_path / "baseline.json"
    assert reports_main(["baseline", str(run_dir), "--out", str(baseline)]) == 0
    assert reports_main(["gate", str(run_dir), "--baseline", str(baseline)]) == 2
    assert "incomplete (killed)" in capsys.readouterr().err
    assert reports_main(["gate", str(run_dir), "--baseline", str(baseline), "--allow-incomplete"]) == 0
    out = tmp_path / "report"
    assert reports_main(["build", str(run_dir), "--out", str(out), "--engine", "duckdb"]) == 0
    assert json.loads((out / "summary.json").read_text())["complete"] is False
    assert "Incomplete" in (out / "report.md").read_text()
