"""The CI recipe's set-up (examples/ci/nats-conformance.yml) without Docker: a server somebody else
started, named by `--target nats://...`, whose mappings the campaign applies through a user command that
tests the new config file with the server's binary, installs it and sends SIGHUP. Every case must be
judged (none unknown) and agree or be a known divergence."""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from fixtures.clients.wire import WireError, read_info
from fixtures.provision import parse_version_spec, resolve_binary
from fixtures.servers.local import HOST, free_port
from fixtures.servers.process import spawn_child, terminate_child
from records.writer import CASES
from suites.__main__ import main

pytestmark = pytest.mark.live


def test_a_campaign_on_a_running_server_through_an_apply_command(tmp_path: Path) -> None:
    binary = resolve_binary(parse_version_spec("2.14.5"))
    port = free_port()
    config = tmp_path / "server.conf"
    config.write_text(f'listen: "{HOST}:{port}"\n')
    server = spawn_child([str(binary), "-c", str(config)], tmp_path / "server.log", tmp_path)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                read_info(HOST, port)
                break
            except (WireError, OSError):
                assert time.monotonic() < deadline, (tmp_path / "server.log").read_text()
                time.sleep(0.05)
        # As in the recipe: the server's own binary tests the file first (`-t`), so that a refused
        # configuration is a clear rejection instead of a reload that never takes effect.
        check = f"{shlex.quote(str(binary))} -t -c {{config}}"
        apply = f"{check} && cp {{config}} {shlex.quote(str(config))} && kill -HUP {server.pid}"
        out = tmp_path / "runs"
        status = main(
            [
                *("campaign", "--target", f"nats://{HOST}:{port}", "--apply-command", apply),
                *("--family", "mapping", "--family", "validation", "--family", "matching"),
                *("--family", "partition", "--cases", "2000", "--budget", "validation=10"),
                *("--budget", "matching=1000", "--budget", "partition=1000", "--out", str(out)),
            ]
        )
        assert server.poll() is None, "the server under test must still run"
    finally:
        terminate_child(server)
    (run_dir,) = out.iterdir()
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert status == 0, manifest
    assert manifest["settings"]["targets"] == [f"external-nats://{HOST}:{port}"]
    assert manifest["cases"] == sum(manifest["verdicts"].values()) >= 2000
    assert manifest["verdicts"]["diverge"] == 0
    # The only cases left unknown are the subjects of a mapping the server refused (left/right, a
    # listed divergence): its validation case is recorded, its subjects cannot be published.
    unknown = pq.read_table(run_dir / CASES, filters=[("verdict", "=", "unknown")]).column("detail")
    assert all(detail.startswith("mapping rejected by the server") for detail in unknown.to_pylist())
