"""A wheel of this tree installed into a fresh virtualenv with its core dependencies alone: what a user
outside the checkout has (tests/packaging/test_wheel.py, and the live tests of what it must do there).

Dependencies come from a wheelhouse in the server cache (`<cache>/wheels`), filled from the package
index the first time (or when pyproject.toml asks for more), so later runs install offline."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
import venv
from dataclasses import dataclass
from pathlib import Path

from nats_conformance.fixtures.provision import cache_root

ROOT = Path(__file__).resolve().parents[1]
NOT_SOURCES = shutil.ignore_patterns(
    ".git", ".venv", ".tox", "runs", "out", "build", "dist", "*.egg-info", "__pycache__", ".*_cache"
)


def run(*command: str | Path, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [str(part) for part in command], cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert result.returncode == 0, f"{command}: {result.stdout[-2000:]}{result.stderr[-2000:]}"
    return result


def pip_offline(*arguments: str | Path, cwd: Path, wheelhouse: Path) -> bool:
    """Run this environment's pip with the wheelhouse as its only index; False when it misses a wheel."""
    command = [sys.executable, "-m", "pip", *arguments, "-q", "--no-index", "--find-links", wheelhouse]
    return subprocess.run([str(part) for part in command], cwd=cwd, check=False, timeout=300).returncode == 0


@dataclass(frozen=True)
class Installed:
    """The wheel, and the scripts folder of the virtualenv it is installed in."""

    scripts: Path
    wheel: Path


def install_wheel(work: Path) -> Installed:
    """Build the wheel of this tree under `work` and install it into a fresh virtualenv there."""
    source = work / "source"
    shutil.copytree(ROOT, source, symlinks=True, ignore=NOT_SOURCES)
    wheelhouse = cache_root() / "wheels"
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    needed = [*project["build-system"]["requires"], *project["project"]["dependencies"]]
    if not pip_offline("download", "--dest", wheelhouse, *needed, cwd=work, wheelhouse=wheelhouse):
        run(sys.executable, "-m", "pip", "download", "-q", "--dest", wheelhouse, *needed, cwd=work)
    dist = work / "dist"
    assert pip_offline("wheel", "--no-deps", "-w", dist, source, cwd=work, wheelhouse=wheelhouse)
    (wheel,) = dist.glob("nats_conformance-*.whl")
    environment = work / "venv"
    venv.create(environment)
    # pip of this environment installs into the new one; --no-compile saves most of the time.
    python = environment / "bin" / "python"
    assert pip_offline("--python", python, "install", "--no-compile", wheel, cwd=work, wheelhouse=wheelhouse)
    return Installed(environment / "bin", wheel)
