"""Release bisection (suites/bisect.py): the search with fake probes, the release list, and live, the
partition(0, i) crash bisected among six releases and shown in a report, and a case of several
differences bisected by the class its campaign gave it."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

from nats_conformance.fixtures.options import RunConfig, build_run_config
from nats_conformance.records.bisection import ABSENT, BISECTION_FILE, OCCURS, UNKNOWN, Probe
from nats_conformance.records.casefile import CaseFile
from nats_conformance.reports.build import build_report
from nats_conformance.suites.__main__ import main
from nats_conformance.suites.bisect import (
    BisectError,
    NotOccurringError,
    bisect_releases,
    judged_by_nearer,
    parse_releases,
    parse_since,
    select_releases,
)
from nats_conformance.suites.replay import replay_on_server

RELEASES = [f"2.{minor}.0" for minor in range(2, 15)]  # 2.2.0 ... 2.14.0, 13 releases


def fake_probe(
    occurs: Iterable[str], unknown: Iterable[str] = ()
) -> tuple[Callable[[str], Probe], list[str]]:
    """A probe that says `occurs` for `occurs`, `unknown` for `unknown`, `absent` otherwise, and the
    list of releases it was asked about."""
    occurring, failing = set(occurs), set(unknown)
    asked: list[str] = []

    def probe(release: str) -> Probe:
        asked.append(release)
        if release in failing:
            return Probe(release, UNKNOWN, "cannot build")
        return Probe(release, OCCURS if release in occurring else ABSENT)

    return probe, asked


def test_a_middle_range_is_found_with_its_neighbours_in_logarithmic_probes() -> None:
    probe, asked = fake_probe(["2.6.0", "2.7.0", "2.8.0", "2.9.0"])
    result = bisect_releases(RELEASES, "2.8.0", probe)
    assert (result.first, result.last) == ("2.6.0", "2.9.0")
    assert (result.absent_before, result.absent_after) == ("2.5.0", "2.10.0")
    assert asked[0] == "2.8.0"
    assert len(asked) == len(set(asked)) <= 1 + 3 + 3  # found, then log2 of each side
    assert [p.release for p in result.probes] == asked
    assert result.releases == tuple(RELEASES)
    assert result.unknown_before == result.unknown_after == ()


def test_a_case_occurring_everywhere_has_no_neighbours() -> None:
    probe, _ = fake_probe(RELEASES)
    result = bisect_releases(RELEASES, "2.10.0", probe)
    assert (result.first, result.last) == ("2.2.0", "2.14.0")
    assert result.absent_before is None
    assert result.absent_after is None


def test_a_case_occurring_only_where_found() -> None:
    probe, asked = fake_probe(["2.9.0"])
    result = bisect_releases(RELEASES, "2.9.0", probe)
    assert (result.first, result.last) == ("2.9.0", "2.9.0")
    assert (result.absent_before, result.absent_after) == ("2.8.0", "2.10.0")
    assert {"2.8.0", "2.10.0"} <= set(asked)


def test_the_oldest_and_newest_releases_as_found_on() -> None:
    probe, _ = fake_probe(["2.2.0", "2.3.0"])
    result = bisect_releases(RELEASES, "2.2.0", probe)
    assert (result.first, result.last, result.absent_before, result.absent_after) == (
        "2.2.0",
        "2.3.0",
        None,
        "2.4.0",
    )
    probe, _ = fake_probe(["2.14.0"])
    result = bisect_releases(RELEASES, "2.14.0", probe)
    assert (result.first, result.last, result.absent_before, result.absent_after) == (
        "2.14.0",
        "2.14.0",
        "2.13.0",
        None,
    )


def test_unknown_probes_are_skipped_and_their_neighbours_probed() -> None:
    unknown = ["2.5.0", "2.11.0", "2.12.0"]
    probe, asked = fake_probe(["2.6.0", "2.7.0", "2.8.0", "2.9.0", "2.10.0"], unknown)
    result = bisect_releases(RELEASES, "2.8.0", probe)
    assert (result.first, result.last) == ("2.6.0", "2.10.0")
    assert len(asked) == len(set(asked))
    outcomes = {p.release: p.outcome for p in result.probes}
    assert all(outcomes.get(release, UNKNOWN) == UNKNOWN for release in unknown)
    # the neighbours where it does not occur lie beyond the releases that could not be probed
    assert result.absent_before == "2.4.0"
    assert result.unknown_before == ("2.5.0",)
    assert result.absent_after == "2.13.0"
    assert result.unknown_after == ("2.11.0", "2.12.0")


def test_an_unknown_release_between_two_known_ones_does_not_stop_the_search() -> None:
    probe, _ = fake_probe(["2.9.0", "2.10.0", "2.11.0"], ["2.10.0"])
    result = bisect_releases(RELEASES, "2.9.0", probe)
    assert (result.first, result.last, result.absent_after) == ("2.9.0", "2.11.0", "2.12.0")
    assert result.unknown_after == ()


@pytest.mark.parametrize(("unknown", "word"), [((), "does not occur"), (("2.8.0",), "cannot be checked")])
def test_a_case_not_occurring_where_found_is_one_line(unknown: tuple[str, ...], word: str) -> None:
    probe, asked = fake_probe(["2.9.0"], unknown)
    with pytest.raises(NotOccurringError) as caught:
        bisect_releases(RELEASES, "2.8.0", probe)
    assert asked == ["2.8.0"]
    message = str(caught.value)
    assert "\n" not in message
    assert f"the case {word} on 2.8.0, where it was found" in message


def test_the_found_release_is_considered_even_when_not_listed() -> None:
    probe, _ = fake_probe(["2.9.25", "2.10.0"])
    result = bisect_releases(RELEASES, "2.9.25", probe)
    assert "2.9.25" in result.releases
    assert (result.first, result.last, result.absent_before) == ("2.9.25", "2.10.0", "2.9.0")


LISTED = ["2.1.2", "2.5.0", "2.9.25", "2.10.7", "2.10.19", "2.10.27", "2.11.0", "2.12.8", "2.14.5", "2.14.6"]


def test_releases_since_a_bound_that_the_reference_can_judge() -> None:
    kept, left_out = select_releases([*LISTED, "2.15.9", "2.16.0"], "2.2.0")
    assert kept == [*LISTED[1:], "2.15.9", "2.16.0"]
    assert left_out == []
    assert judged_by_nearer(kept) == {"2.15.9": "2.15.3", "2.16.0": "2.15.3"}  # newer than every rule set
    kept, left_out = select_releases(LISTED, "2.1.0")
    assert left_out == ["2.1.2"]  # older than every rule set
    kept, _ = select_releases(LISTED, parse_since("2.10"))
    assert kept[0] == "2.10.7"


def test_release_options() -> None:
    assert parse_releases(["2.10.27,2.8.4", "2.12"]) == ["2.10.27", "2.8.4", "2.12.15"]
    with pytest.raises(BisectError, match=r"releases such as 2\.10\.27"):
        parse_releases(["system"])
    with pytest.raises(BisectError, match="--since"):
        parse_since("latest")


def test_a_case_file_of_another_implementation_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    case = CaseFile(
        feature="streaming",
        source="x",
        destination="",
        subject="x",
        server_version="0.25.6",
        functions="x",
        difference="y",
        found_on={"implementation": "nats-streaming-server", "server_version": "0.25.6"},
    )
    path = tmp_path / "case.json"
    path.write_text(case.to_json())
    assert main(["bisect", str(path), "--releases", "2.9.25", "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        "nats-conformance: error: bisection covers nats-server releases; this case was found on "
        "nats-streaming-server\n"
    )


LIVE_RELEASES = "2.8.4,2.9.25,2.10.27,2.11.17,2.12.15,2.14.5"


@pytest.mark.live
@pytest.mark.partition
def test_the_partition_zero_crash_occurs_from_2_9_to_2_11(
    run_config: RunConfig, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if "process" not in run_config.backends:
        pytest.skip("the bisection starts its own servers; it runs with the process backend")
    replayed = replay_on_server(
        build_run_config(["2.10.27"], ["process"], None, None),
        CaseFile("validation", "a.*", "b.{{partition(0,1)}}", "", "2.10.27"),
    )
    crash = next(case for case in replayed if case.verdict in ("diverge", "expected"))
    assert crash.case_class == "validation:partition:server-crash"
    case_file = tmp_path / "case.json"
    case_file.write_text(CaseFile.of(crash).to_json())

    runs = tmp_path / "runs"
    command = ["bisect", str(case_file), "--releases", LIVE_RELEASES, "--out", str(runs)]
    assert main(command) == 0
    out = capsys.readouterr().out.splitlines()
    assert "probing 2.10.27 ... occurs" in out
    assert (
        "probing 2.8.4 ... does not occur (diverges as "
        "validation:partition:reference-reject-invalid-argument-server-accept)"
    ) in out
    result = next(line for line in out if line.startswith("result: "))
    assert "validation:partition:server-crash occurs from 2.9.25 to 2.11.17 (found on 2.10.27)" in result
    assert "assuming the releases where the case occurs are contiguous" in result

    (run_dir,) = runs.iterdir()
    written = json.loads((run_dir / BISECTION_FILE).read_text())
    assert (written["first"], written["last"]) == ("2.9.25", "2.11.17")
    assert (written["absent_before"], written["absent_after"]) == ("2.8.4", "2.12.15")
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["cases"] == len(written["probes"])
    # every probe's case is a listed finding: partition-zero-crashes or, outside, partition-count-below-one
    assert manifest["verdicts"]["expected"] == len(written["probes"])

    build_report([run_dir], tmp_path / "report", engine="duckdb")
    summary = json.loads((tmp_path / "report" / "summary.json").read_text())
    (section,) = summary["bisections"]
    assert section["case_class"] == "validation:partition:server-crash"
    assert (section["found_on"], section["first"], section["last"]) == ("2.10.27", "2.9.25", "2.11.17")
    assert (section["absent_before"], section["absent_after"]) == ("2.8.4", "2.12.15")
    assert section["releases"] == LIVE_RELEASES.split(",")
    outcomes = {probe["release"]: probe["outcome"] for probe in section["probes"]}
    assert outcomes == {
        "2.8.4": ABSENT,
        "2.9.25": OCCURS,
        "2.10.27": OCCURS,
        "2.11.17": OCCURS,
        "2.12.15": ABSENT,
    }
    html = (tmp_path / "report" / "report.html").read_text()
    assert "<h2 id=bisection>Release bisection</h2>" in html
    assert "### Release bisection" in (tmp_path / "report" / "report.md").read_text()


@pytest.mark.live
def test_a_case_with_several_differences_is_bisected_by_the_class_its_campaign_gave(
    run_config: RunConfig, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On 2.8.4 this RePublish case differs twice: the subject (listed for 2.8) and the
    Nats-Last-Sequence header. Its campaign named it by the difference the expectations do not list;
    each probe does the same, rather than calling it the listed one and finding nothing to bisect."""
    if "process" not in run_config.backends:
        pytest.skip("the bisection starts its own servers; it runs with the process backend")
    case_file = Path(__file__).parents[2] / "known-cases" / "republish-last-sequence-of-remaining-2-8.json"
    command = ["bisect", str(case_file), "--releases", "2.8.4,2.9.25", "--out", str(tmp_path)]
    assert main(command) == 0
    out = capsys.readouterr().out.splitlines()
    assert "probing 2.8.4 ... occurs" in out
    assert "probing 2.9.25 ... does not occur (agrees)" in out


@pytest.mark.live
def test_an_engine_bisection_needs_no_server(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before 2.10 the engine does not parse the destination of a source without wildcards (the finding
    literal-source-destination-not-parsed); each probe asks the engine of a release, no server starts."""
    case = CaseFile(
        "validation",
        "b5",
        "y5.{{wildcard(1)}}",
        "",
        "2.9.25",
        functions="wildcard",
        difference="reference-reject-wildcard-index-out-of-range-server-accept-literal-source",
        found_on={"implementation": "nats-server", "server_version": "2.9.25"},
    )
    case_file = tmp_path / "case.json"
    case_file.write_text(case.to_json())
    runs = tmp_path / "runs"
    releases = "2.9.0,2.9.25,2.10.27,2.14.5"
    assert main(["bisect", str(case_file), "--engine", "--releases", releases, "--out", str(runs)]) == 0
    out = capsys.readouterr().out.splitlines()
    result = next(line for line in out if line.startswith("result: "))
    assert "occurs from 2.9.0 to 2.9.25 (found on 2.9.25)" in result
    assert "not on 2.10.27, the release after" in result
    (run_dir,) = runs.iterdir()
    written = json.loads((run_dir / BISECTION_FILE).read_text())
    assert written["backend"] == "engine"
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["cases"] == len(written["probes"])
    # the engine's acceptance is the listed finding, for the engine as for the server
    assert manifest["verdicts"]["expected"] == sum(p["outcome"] == OCCURS for p in written["probes"])
