"""Fixtures shared by the tests under tests/."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from nats_conformance.fixtures.docker import DockerDaemon, DockerUnavailableError, ensure_docker
from tests.wheel import Installed, install_wheel


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs: a real file system that fills up (needs root to mount)."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs to fill needs root")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], check=False)
    if mounted.returncode:
        pytest.skip("this machine does not allow mounting a tmpfs")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.fixture(scope="session")
def docker_daemon() -> Iterator[DockerDaemon]:
    """A Docker daemon for the session; one started here is stopped at the end."""
    try:
        daemon = ensure_docker()
    except DockerUnavailableError as error:
        pytest.fail(str(error), pytrace=False)
    with daemon:
        yield daemon


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """This tree's wheel in a fresh virtualenv with its core dependencies alone (tests.wheel)."""
    return install_wheel(tmp_path_factory.mktemp("wheel"))
