"""The HTML report and the compatibility site in a real browser: a headless Chromium screenshot shows the
plots and the matrix; Selenium walks the served site from the index to a finding.

Skipped only when no ``chromium`` is installed (Debian: ``apt-get install chromium chromium-driver``;
``./dev setup`` installs both), or, for the site, no ``chromedriver`` or ``selenium``.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from handmade import SPLIT, case, serve_site

from nats_conformance.records.schema import DELIVERED, UNCHANGED, Case
from nats_conformance.reports.build import build_report
from nats_conformance.reports.figures import OBSERVED_COLOUR
from nats_conformance.reports.matrix import AGREES, DIVERGES, KNOWN, NOT_SUPPORTED
from nats_conformance.reports.present import STATE_COLOURS
from nats_conformance.reports.site_content import finding_id

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
WIDTH, HEIGHT = 1400, 3000


def four_releases() -> list[Case]:
    """Cases on 2.9, 2.10, 2.12 and 2.14 giving every matrix state, a partition and a weighted list."""
    cases: list[Case] = []
    for version in ("2.9.25", "2.10.27", "2.12.15", "2.14.5"):
        cases += [case(server_version=version, subject=f"m.{i}") for i in range(5)]
        random_supported = version in ("2.12.15", "2.14.5")
        cases.append(
            case(server_version=version, functions="random", destination="n.{{random(3)}}")
            if random_supported
            else case(
                server_version=version,
                feature="validation",
                functions="random",
                destination="n.{{random(3)}}",
                subject="",
                expected="reject:unsupported-function",
                observed="reject",
            )
        )
        partition = {"feature": "partition", "functions": "wildcard+partition", "partitions": 4}
        cases += [
            case(server_version=version, **partition, subject=f"p.{key}", bucket=key % 4, outcome=DELIVERED)
            for key in range(400)
        ]
        listed = json.dumps([{"destination": "w.a", "weight": 70}, {"destination": "w.b", "weight": 20}])
        weighted = {"feature": "weighted", "functions": "", "source": "w.s", "destination": listed}
        for bucket, outcome, share in ((0, DELIVERED, 68), (1, DELIVERED, 21), (None, UNCHANGED, 11)):
            cases += [
                case(server_version=version, **weighted, subject="w.s", bucket=bucket, outcome=outcome)
                for _ in range(share)
            ]
    cases.append(
        case(
            server_version="2.10.27",
            feature="validation",
            functions="left",
            destination="{{left(1,2)}}",
            subject="",
            expected="accept",
            observed="reject",
            verdict="expected",
            expectation="left-right-rejected-in-mappings",
            difference="reference-accept-server-reject",
        )
    )
    cases.append(
        case(
            server_version="2.12.15",
            functions="split",
            destination="n.{{split(1,-)}}",
            subject="m.a-b",
            expected="n.a.b",
            observed="n.a-b",
            verdict="diverge",
            difference="wrong-subject",
        )
    )
    return cases


def rgb(colour: str) -> tuple[int, int, int]:
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_screenshot_shows_plots_and_a_coloured_matrix(
    run_of: Callable[[list[Case]], Path], tmp_path: Path
) -> None:
    from PIL import Image

    built = build_report([run_of(four_releases())], tmp_path / "report", engine="duckdb")
    shot = tmp_path / "shot.png"
    subprocess.run(
        [
            str(CHROMIUM),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--user-data-dir={tmp_path / 'profile'}",
            f"--screenshot={shot}",
            f"--window-size={WIDTH},{HEIGHT}",
            built.html.as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    image = Image.open(shot).convert("RGB")
    assert image.size == (WIDTH, HEIGHT)
    colours = Counter({colour: n for n, colour in image.getcolors(WIDTH * HEIGHT)})
    assert len(colours) > 500, "a page of text and plots has many colours (anti-aliasing)"
    for state in (AGREES, KNOWN, DIVERGES, NOT_SUPPORTED):
        assert colours[rgb(STATE_COLOURS[state])] > 1_000, f"no '{state}' cells in the screenshot"
    assert colours[rgb(OBSERVED_COLOUR)] > 2_000, "no histogram bars in the screenshot"


@pytest.mark.skipif(
    CHROMIUM is None or CHROMEDRIVER is None,
    reason="chromium or chromedriver is not installed (apt-get install chromium chromium-driver)",
)
def test_the_served_site_leads_from_the_index_through_the_matrix_to_a_finding(
    hand_site: Path, tmp_path: Path
) -> None:
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
    from selenium.webdriver.common.by import By

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--window-size=1300,1000",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    server, url = serve_site(hand_site)
    try:
        driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(str(CHROMEDRIVER)))
        try:
            driver.get(f"{url}index.html")
            assert "2 unexpected divergences" in driver.find_element(By.CLASS_NAME, "banner").text
            driver.find_element(By.LINK_TEXT, "matrix").click()
            assert driver.current_url == f"{url}matrix.html"
            driver.find_element(By.CSS_SELECTOR, f'td.cell a[title="{SPLIT}"]').click()
            assert driver.current_url == f"{url}findings/{finding_id(SPLIT)}.html"
            assert driver.find_element(By.TAG_NAME, "h1").text == SPLIT
            assert driver.find_element(By.CLASS_NAME, "replay").text == (
                "nats-conformance replay --server-version 2.10.27 --backend process --feature mapping "
                "--source 'm.*' --destination 'n.{{splitFromLeft(1,1)}}' --subject m.ab"
            )
            shot = tmp_path / "finding.png"
            assert driver.save_screenshot(str(shot))
            assert shot.stat().st_size > 0
            assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
            errors = [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
            assert errors == []
        finally:
            driver.quit()
    finally:
        server.send_signal(signal.SIGINT)
        server.communicate(timeout=10)
    assert server.returncode == 130
