"""A command leaves the user's working folder alone: Hypothesis's caches, which it writes into
``./.hypothesis`` by default, go to the package's cache unless the user names a folder for them
(`reference.environment.keep_hypothesis_storage`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nats_conformance.fixtures.options import RunConfig, Target
from nats_conformance.fixtures.provision import cache_root
from nats_conformance.reference.environment import HYPOTHESIS_STORAGE, keep_hypothesis_storage
from tests.live.campaigns import newest_of_session


def test_the_users_own_hypothesis_folder_is_kept(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv(HYPOTHESIS_STORAGE, raising=False)
    keep_hypothesis_storage()
    assert os.environ[HYPOTHESIS_STORAGE] == str(tmp_path / "xdg" / "nats-conformance" / "hypothesis")
    monkeypatch.setenv(HYPOTHESIS_STORAGE, str(tmp_path / "mine"))
    keep_hypothesis_storage()
    assert os.environ[HYPOTHESIS_STORAGE] == str(tmp_path / "mine")


@pytest.mark.live
def test_a_campaign_writes_nothing_into_the_folder_it_runs_in(
    target: Target, run_config: RunConfig, tmp_path: Path
) -> None:
    if target.backend != "process" or not newest_of_session(target, run_config):
        pytest.skip("the folder a command runs in depends on neither the release nor the backend")
    work = tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg"), "NATS_CONFORMANCE_CACHE": str(cache_root())}
    env.pop(HYPOTHESIS_STORAGE, None)
    command = [sys.executable, "-m", "nats_conformance", "campaign", "--server-version", target.spec.text]
    command += ["--family", "validation", "--cases", "20", "--out", str(tmp_path / "runs")]
    result = subprocess.run(
        command, cwd=work, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert list(work.iterdir()) == []
    assert (tmp_path / "xdg" / "nats-conformance" / "hypothesis").is_dir()
