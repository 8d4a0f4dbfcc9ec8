"""The report shows each expectation with the public page its entry links to."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from handmade import case

from nats_conformance.records.schema import Case
from nats_conformance.reports.__main__ import main

URL = "https://docs.nats.io/nats-concepts/subject_mapping#subject-token-reordering"
ENTRY = f'''[[divergence]]
id = "wildcard-index-below-one"
feature = "*"
difference = "*"
link = "{URL}, 'Subject Token Reordering'"
note = "n"
'''


def test_each_expectation_is_shown_with_its_link(
    run_of: Callable[[list[Case]], Path], tmp_path: Path
) -> None:
    expected = case(verdict="expected", expectation="wildcard-index-below-one", difference="wrong-subject")
    run = run_of([expected, case(verdict="expected", expectation="unlinked", difference="other")])
    (tmp_path / "expectations.toml").write_text(ENTRY)
    out = tmp_path / "report"
    argv = ["build", str(run), "--out", str(out), "--engine", "duckdb"]
    assert main([*argv, "--expectations", str(tmp_path / "expectations.toml")]) == 0
    html = (out / "report.html").read_text()
    assert f'wildcard-index-below-one (<a href="{URL}">&#x27;Subject Token Reordering&#x27;</a>)' in html
    markdown = (out / "report.md").read_text()
    assert f"wildcard-index-below-one (['Subject Token Reordering']({URL}))" in markdown
    assert "| unlinked |" in markdown
