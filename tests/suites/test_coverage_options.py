"""`nats-conformance coverage` refuses what it cannot measure in one line with exit status 2, before
building anything: it runs one release it builds with -cover, on the process backend, or one release's
transform engine (`--target engine:R`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nats_conformance import main


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ((), "coverage takes one release: --server-version R"),
        (("--server-version", "2.14.5", "--server-version", "2.14.9"), "coverage takes one release"),
        (("--server-version", "system"), "coverage builds a nats-server release with -cover"),
        (("--server-version", "/bin/true"), "coverage builds a nats-server release with -cover"),
        (("--server-version", "2.14.5", "--backend", "container"), "drop --backend other than process"),
        (("--target", "adapter:cat"), "drop --target adapter:"),
        (("--target", "engine:2.14.5", "--server-version", "2.14.5"), "coverage takes one target"),
        (("--target", "engine:2.14.5", "--target", "engine:2.14.9"), "coverage takes one target"),
        (("--target", "nats://127.0.0.1:4222"), "drop a server at a URL"),
        (("--releases", "2.9"), "drop --releases/--since"),
        (("--server-version", "2.14.5", "--cases", "-1"), "--cases"),
    ],
)
def test_what_coverage_cannot_run_is_one_line(
    options: tuple[str, ...], says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["coverage", *options, "--out", str(tmp_path)]) == 2
    error = capsys.readouterr().err
    assert error.startswith("nats-conformance: error: ")
    assert says in error
    assert error.count("\n") == 1
    assert not list(tmp_path.iterdir())
