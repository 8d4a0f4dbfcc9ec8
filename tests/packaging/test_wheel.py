"""The wheel is a complete install: built from the work tree, installed with its core dependencies alone
into a fresh virtualenv (tests.wheel), outside the repository it runs a short campaign and its report,
pytest finds the plugin by its entry point and an unrelated project keeps its own settings, exported
expectations serve a campaign, and a server that wants TLS and creds is tested. The CI recipe runs on
the same install (tests/live/test_ci_recipe.py)."""

from __future__ import annotations

import json
import os
import subprocess
import zipfile
from pathlib import Path

import pytest

from nats_conformance.fixtures.provision import resolve_binary
from nats_conformance.records.expectations import load_expectations
from nats_conformance.records.writer import MANIFEST
from tests.live.test_secured_target import secured_server
from tests.packaging.test_plugin_loading import UNRELATED_CONFTEST, UNRELATED_TESTS
from tests.wheel import Installed, run

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("reference", "fixtures", "suites", "records", "reports")


def test_the_wheel_holds_every_module_and_the_data_it_reads(installed: Installed) -> None:
    wheel = installed.wheel
    names = set(zipfile.ZipFile(wheel).namelist())
    modules = {
        f"nats_conformance/{path.relative_to(ROOT).as_posix()}"
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if "__pycache__" not in path.parts
    }
    assert modules - names == set()
    assert {"suites/streaming/__init__.py", "fixtures/servers/__init__.py", "__init__.py"} <= {
        name.removeprefix("nats_conformance/") for name in names
    }
    assert "nats_conformance/records/expectations.toml" in names
    assert {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")} == {
        "nats_conformance"
    }
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names)
    assert {
        f"nats_conformance/records/known-cases/{path.name}" for path in (ROOT / "known-cases").glob("*.json")
    } <= names
    assert {
        f"nats_conformance/fixtures/engine-source/{path.name}" for path in (ROOT / "engine").glob("*.go")
    } <= names
    mutator = [*(ROOT / "mutator").glob("*.go"), ROOT / "mutator" / "go.mod"]
    assert {f"nats_conformance/fixtures/mutator-source/{path.name}" for path in mutator} <= names
    assert "nats_conformance/records/mutants-equivalent.toml" in names


def test_an_installed_copy_runs_a_campaign_and_its_report(installed: Installed, tmp_path: Path) -> None:
    scripts = installed.scripts
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


def test_pytest_finds_the_plugin_by_its_entry_point(installed: Installed, tmp_path: Path) -> None:
    scripts = installed.scripts
    assert "--nats-server-version" in run(scripts / "pytest", "--help", cwd=tmp_path).stdout
    (tmp_path / "test_user.py").write_text(USER_TEST)
    result = run(
        *(scripts / "pytest", "-p", "no:cacheprovider", "--strict-markers"),
        *("--nats-server-version", resolve_binary("2.14.5"), "test_user.py"),
        cwd=tmp_path,
    )
    assert "1 passed" in result.stdout


def test_an_installed_copy_reads_its_shipped_expectations(installed: Installed, tmp_path: Path) -> None:
    scripts = installed.scripts
    shown = run(
        scripts / "python",
        "-c",
        "from nats_conformance.records.expectations import DEFAULT_PATH, load_expectations; "
        "known = load_expectations(); print(DEFAULT_PATH); print(len(known.entries), len(known.known_cases))",
        cwd=tmp_path,
        timeout=60,
    ).stdout.split()
    assert Path(shown[0]).is_relative_to(scripts.parent)
    shipped = load_expectations()
    assert int(shown[1]) == len(shipped.entries) > 0
    assert int(shown[2]) == len(shipped.known_cases) > 0


def test_an_unrelated_project_keeps_its_settings_and_fixtures(installed: Installed, tmp_path: Path) -> None:
    """Installed beside another project's tests, the plugin changes nothing of its session."""
    (tmp_path / "conftest.py").write_text(UNRELATED_CONFTEST)
    (tmp_path / "test_unrelated.py").write_text(UNRELATED_TESTS.format(profile="default", examples=100))
    # Without CI: Hypothesis loads a profile named "ci" by itself under CI, which the project registers.
    environment = {name: value for name, value in os.environ.items() if name != "CI"}
    result = subprocess.run(
        [installed.scripts / "pytest", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert "3 passed" in result.stdout, result.stdout[-3000:]
    assert "nats-conformance:" not in result.stdout


def test_exported_expectations_serve_a_campaign(installed: Installed, tmp_path: Path) -> None:
    """`expectations export DIR` gives a project its own copy, known cases included, that a campaign
    then reads with `--expectations`."""
    command = installed.scripts / "nats-conformance"
    run(command, "expectations", "export", "conformance", cwd=tmp_path)
    copy = load_expectations(tmp_path / "conformance" / "expectations.toml")
    assert len(copy.entries) == len(load_expectations().entries)
    assert len(copy.known_cases) == len(load_expectations().known_cases) > 0
    campaign = run(
        *(command, "campaign", "--server-version", resolve_binary("2.14.5"), "--family", "validation"),
        *("--budget", "validation=20", "--expectations", "conformance/expectations.toml", "--out", "runs"),
        cwd=tmp_path,
    )
    assert "known cases confirmed" in campaign.stdout + campaign.stderr
    (run_dir,) = (tmp_path / "runs").iterdir()
    manifest = json.loads((run_dir / MANIFEST).read_text())
    assert manifest["verdicts"]["diverge"] == 0
    assert manifest["verdicts"]["expected"] > 0


def test_a_server_that_wants_tls_and_creds_is_tested(installed: Installed, tmp_path: Path) -> None:
    """From the installed command: a server requiring TLS and a user's `.creds` (operator mode)."""
    with secured_server("tls+creds", tmp_path) as (url, options):
        campaign = subprocess.run(
            [
                *(installed.scripts / "nats-conformance", "campaign", "--target", url, *options),
                *("--family", "matching", "--budget", "matching=50", "--out", "runs"),
            ],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    assert campaign.returncode == 0, campaign.stderr[-2000:]
    (run_dir,) = (tmp_path / "runs").iterdir()
    manifest = json.loads((run_dir / MANIFEST).read_text())
    assert manifest["verdicts"]["agree"] >= 50
    assert manifest["verdicts"]["unknown"] == 0


OWN_PACKAGES_TEST = """
import fixtures, reference, reports

def test_the_project_imports_its_own_packages():
    assert (fixtures.OWNER, reference.OWNER, reports.OWNER) == ("project",) * 3
"""


def test_a_project_with_its_own_generic_packages_keeps_them(installed: Installed, tmp_path: Path) -> None:
    """The wheel installs one name, `nats_conformance`: a project's own `fixtures`, `reports` and
    `reference` packages are the ones it imports, and the plugin acts when the session opts in."""
    for name in ("fixtures", "reference", "reports"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text('OWNER = "project"\n')
    (tmp_path / "test_own.py").write_text(OWN_PACKAGES_TEST)
    (tmp_path / "test_user.py").write_text(USER_TEST)
    result = run(
        *(installed.scripts / "pytest", "-p", "no:cacheprovider", "--strict-markers", "--rootdir", tmp_path),
        *("--nats-server-version", resolve_binary("2.14.5"), "test_own.py", "test_user.py"),
        cwd=tmp_path,
    )
    assert "2 passed" in result.stdout, result.stdout[-3000:]
