"""The wheel is a complete install: built from the work tree, installed with its core dependencies alone
into a fresh virtualenv, it runs a short campaign and its report outside the repository, and pytest
finds the plugin by its entry point.

Dependencies come from a wheelhouse in the server cache (`<cache>/wheels`), filled from the package
index the first time (or when pyproject.toml asks for more), so later runs install offline."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest

from fixtures.provision import cache_root, resolve_binary
from records.expectations import load_expectations
from records.writer import MANIFEST

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("reference", "fixtures", "suites", "records", "reports")
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


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A fresh virtualenv with the wheel and its core dependencies installed, and the wheel."""
    work = tmp_path_factory.mktemp("wheel")
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
    return environment / "bin", wheel


def test_the_wheel_holds_every_module_and_the_data_it_reads(installed: tuple[Path, Path]) -> None:
    _, wheel = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    modules = {
        path.relative_to(ROOT).as_posix()
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if "__pycache__" not in path.parts
    }
    assert modules - names == set()
    assert {"suites/streaming/__init__.py", "fixtures/servers/__init__.py", "nats_conformance.py"} <= names
    assert "records/expectations.toml" in names
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names)
    assert {f"records/known-cases/{path.name}" for path in (ROOT / "known-cases").glob("*.json")} <= names
    assert {f"fixtures/engine-source/{path.name}" for path in (ROOT / "engine").glob("*.go")} <= names


def test_an_installed_copy_runs_a_campaign_and_its_report(
    installed: tuple[Path, Path], tmp_path: Path
) -> None:
    scripts, _ = installed
    server = resolve_binary("2.14")
    campaign = run(
        *(scripts / "nats-conformance", "campaign", "--server-version", server),
        *("--family", "mapping", "--cases", "300", "--out", "runs"),
        cwd=tmp_path,
    )
    (run_dir,) = (tmp_path / "runs").iterdir()
    manifest = json.loads((run_dir / MANIFEST).read_text())
    assert manifest["cases"] >= 300
    assert f"{manifest['cases']} cases: " in campaign.stdout
    # Without pyspark (a core install) the report's default engine is DuckDB, and a line says so.
    report = run(*(scripts / "nats-conformance", "report", run_dir, "--out", "report"), cwd=tmp_path)
    assert "reports: engine duckdb (pyspark is not importable; choose with --engine)" in report.stderr
    # matplotlib is the `figures` extra: a core install's report says how to get the plots
    assert "reports: no plots: matplotlib is not installed (pip install 'nats-conformance[figures]')" in (
        report.stderr
    )
    without_spark = subprocess.run(
        [scripts / "nats-conformance", "report", run_dir, "--out", "spark-report", "--engine", "spark"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert without_spark.returncode == 2, without_spark.stderr
    assert without_spark.stderr.splitlines()[-1] == (
        "nats-conformance: error: the spark engine needs pyspark: pip install 'nats-conformance[spark]', "
        "or use --engine duckdb"
    )
    summary = json.loads((tmp_path / "report" / "summary.json").read_text())
    assert (tmp_path / "report" / "report.html").stat().st_size > 0
    assert summary["rows"] == manifest["cases"]
    assert {k: n for k, n in summary["verdicts"].items() if n} == {
        k: n for k, n in manifest["verdicts"].items() if n
    }


USER_TEST = """
import pytest

@pytest.mark.mapping
def test_a_server_is_started_for_the_target(nats_server, nats_target):
    assert nats_target.backend == "process"
    assert nats_server.version == "2.14.5"
"""


def test_pytest_finds_the_plugin_by_its_entry_point(installed: tuple[Path, Path], tmp_path: Path) -> None:
    scripts, _ = installed
    assert "--nats-server-version" in run(scripts / "pytest", "--help", cwd=tmp_path).stdout
    (tmp_path / "test_user.py").write_text(USER_TEST)
    result = run(
        *(scripts / "pytest", "-p", "no:cacheprovider", "--strict-markers"),
        *("--nats-server-version", resolve_binary("2.14.5"), "test_user.py"),
        cwd=tmp_path,
    )
    assert "1 passed" in result.stdout


def test_an_installed_copy_reads_its_shipped_expectations(
    installed: tuple[Path, Path], tmp_path: Path
) -> None:
    scripts, _ = installed
    shown = run(
        scripts / "python",
        "-c",
        "from records.expectations import DEFAULT_PATH, load_expectations; "
        "known = load_expectations(); print(DEFAULT_PATH); print(len(known.entries), len(known.known_cases))",
        cwd=tmp_path,
        timeout=60,
    ).stdout.split()
    assert Path(shown[0]).is_relative_to(scripts.parent)
    shipped = load_expectations()
    assert int(shown[1]) == len(shipped.entries) > 0
    assert int(shown[2]) == len(shipped.known_cases) > 0
