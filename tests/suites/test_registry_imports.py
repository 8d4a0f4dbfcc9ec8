"""The family registry is imported in every process: it loads neither protobuf nor the NATS Streaming
client, which the streaming family imports only when it probes channels (the `streaming` extra), nor
SciPy, which only the report's statistics import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_registry_imports_no_protobuf_no_streaming_client_and_no_scipy() -> None:
    probe = (
        "import sys, nats_conformance.suites.families\n"
        "lazy = ('google', 'nats_conformance.fixtures.clients.streaming', 'scipy')\n"
        "print(sorted(m for m in sys.modules if m.startswith(lazy)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "[]", done.stdout
