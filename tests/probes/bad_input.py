"""Bad input to each command, as a user types or feeds it: each ends with one `nats-conformance: error:
...` line, exit 2, no traceback, and leaves no run directory behind (README, Exit statuses). None starts
a server: the whole kind runs in well under a minute (tests/packaging/test_probes.py runs it in CI)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.probes.harness import ROOT, Context, check, probe
from tests.probes.tools import command, module, one_line_error, run, run_dirs

KNOWN_CASE = ROOT / "known-cases" / "literal-source-mapping-not-applied.json"
"""A case file the repository ships (a mapping case), edited by the probes."""
GARBLED_TOML = 'version = 1\n[[divergence]\nid = "x"\n'
RELEASE_OPTION = ("--server-version", "2.14.5", "--backend", "process")


def _written(context: Context, name: str, text: str) -> Path:
    path = context.work() / name
    path.write_text(text)
    return path


def _no_run_left(out: Path, line: str) -> str:
    check(not run_dirs(out), f"{line}; but a run directory was left in {out}")
    return line


def _bad_campaign(context: Context, *argv: str, says: str) -> str:
    out = context.work("out")
    done = run(command("campaign", *argv, "--out", str(out)))
    return _no_run_left(out, one_line_error(done, says=says))


@probe(
    "campaign-unknown-family",
    "bad-input",
    "campaign --family nosuch",
    "one error line naming --family and the families, exit 2, no run directory",
)
def campaign_unknown_family(context: Context) -> str:
    return _bad_campaign(context, "--family", "nosuch", says="--family")


@probe(
    "campaign-bad-release-spec",
    "bad-input",
    "campaign --server-version 2.x.y",
    "one error line saying what a release spec is, exit 2, no run directory",
)
def campaign_bad_release_spec(context: Context) -> str:
    return _bad_campaign(context, "--server-version", "2.x.y", "--family", "mapping", says="2.x.y")


@probe(
    "campaign-bad-budget",
    "bad-input",
    "campaign --budget mapping=lots",
    "one error line naming --budget, exit 2, no run directory",
)
def campaign_bad_budget(context: Context) -> str:
    return _bad_campaign(context, "--budget", "mapping=lots", says="--budget")


@probe(
    "campaign-garbled-expectations",
    "bad-input",
    "campaign --expectations FILE with a garbled expectations.toml",
    "one error line naming the file, exit 2, before any server starts, no run directory",
)
def campaign_garbled_expectations(context: Context) -> str:
    garbled = _written(context, "expectations.toml", GARBLED_TOML)
    return _bad_campaign(
        context, *RELEASE_OPTION, "--family", "mapping", "--expectations", str(garbled), says=str(garbled)
    )


@probe(
    "campaign-garbled-config",
    "bad-input",
    "campaign --config FILE with a file that is not TOML",
    "one error line naming the file, exit 2, no run directory",
)
def campaign_garbled_config(context: Context) -> str:
    garbled = _written(context, "nats-conformance.toml", "[campaign\nbudget = 3\n")
    return _bad_campaign(context, "--config", str(garbled), "--family", "mapping", says=str(garbled))


@probe(
    "campaign-resume-not-a-run",
    "bad-input",
    "campaign --resume DIR with a directory that holds no run",
    "one error line naming --resume, exit 2, nothing written into DIR",
)
def campaign_resume_not_a_run(context: Context) -> str:
    empty = context.work("empty")
    line = one_line_error(run(command("campaign", "--resume", str(empty))), says="--resume")
    check(not list(empty.iterdir()), f"{line}; but {empty} is no longer empty")
    return line


@probe(
    "sweep-bad-since",
    "bad-input",
    "campaign --since banana (a sweep from a release that is no version)",
    "one error line naming --since, exit 2, no run directory",
)
def sweep_bad_since(context: Context) -> str:
    return _bad_campaign(context, "--since", "banana", "--family", "mapping", says="--since")


@probe(
    "sweep-unknown-line",
    "bad-input",
    "campaign --releases 9.99 (a sweep of a release line that does not exist)",
    "one error line saying no release is selected, exit 2, no run directory",
)
def sweep_unknown_line(context: Context) -> str:
    return _bad_campaign(context, "--releases", "9.99", "--family", "mapping", says="no release")


@probe(
    "replay-missing-file",
    "bad-input",
    "replay runs/x/divergences/nosuch.json (a case file that is not there)",
    "one error line naming the file, exit 2",
)
def replay_missing_file(context: Context) -> str:
    missing = context.work() / "nosuch.json"
    return one_line_error(run(command("replay", str(missing), *RELEASE_OPTION)), says=str(missing))


@probe(
    "replay-garbled-file",
    "bad-input",
    "replay FILE with a case file cut short (not JSON)",
    "one error line naming the file, exit 2",
)
def replay_garbled_file(context: Context) -> str:
    garbled = _written(context, "case.json", KNOWN_CASE.read_text()[:200])
    return one_line_error(run(command("replay", str(garbled), *RELEASE_OPTION)), says=str(garbled))


def _edited(**fields: Any) -> str:
    document = json.loads(KNOWN_CASE.read_text())
    document.update(fields)
    return json.dumps(document, indent=2)


@probe(
    "replay-null-source",
    "bad-input",
    'replay FILE with "source": null in the case file',
    "one error line naming the field source, exit 2 (it replayed the source None and exited 0)",
)
def replay_null_source(context: Context) -> str:
    edited = _written(context, "case.json", _edited(source=None))
    return one_line_error(run(command("replay", str(edited), *RELEASE_OPTION)), says="source")


WRONG_TYPES: dict[str, Any] = {
    "destination": ["m.>"],
    "subject": 7,
    "feature": 5,
    "partitions": "3",
    "headers_only": "yes",
    "stream_subjects": "a.>",
    "weights": {"a": 1},
    "steps": "publish",
    "layout": 5,
    "server_version": 2.14,
}
"""A field of the case file and a value of the wrong type for it."""


@probe(
    "replay-wrong-field-types",
    "bad-input",
    f"replay FILE with one field of the wrong type, each of {len(WRONG_TYPES)} fields in turn",
    "each edit: one error line naming the field, exit 2",
)
def replay_wrong_field_types(context: Context) -> str:
    for name, value in WRONG_TYPES.items():
        edited = _written(context, f"case-{name}.json", _edited(**{name: value}))
        one_line_error(run(command("replay", str(edited), *RELEASE_OPTION)), says=name)
    return f"{len(WRONG_TYPES)} edits ({', '.join(WRONG_TYPES)}): each one line naming its field, exit 2"


@probe(
    "report-not-a-run",
    "bad-input",
    "python -m nats_conformance.reports build DIR --out OUT with an empty directory for DIR",
    "one error line saying DIR holds no case records, exit 2, no report written",
)
def report_not_a_run(context: Context) -> str:
    empty, out = context.work("empty"), context.work("out")
    done = run(module("reports", "build", str(empty), "--out", str(out), "--engine", "duckdb"))
    line = one_line_error(done, says="no case records")
    check(not list(out.iterdir()), f"{line}; but {out} holds files")
    return line


def _hand_run(context: Context) -> Path:
    from tests.reports.handmade import hand_cases, write_run

    return Path(context.once("hand-run", lambda directory: write_run(directory / "run-1", hand_cases())))


@probe(
    "gate-missing-baseline",
    "bad-input",
    "gate RUN --baseline FILE with a baseline file that does not exist",
    "one error line naming the file and how to create it, exit 2",
)
def gate_missing_baseline(context: Context) -> str:
    missing = context.work() / "baseline.json"
    done = run(command("gate", str(_hand_run(context)), "--baseline", str(missing)))
    return one_line_error(done, says="baseline")


@probe(
    "gate-garbled-baseline",
    "bad-input",
    "gate RUN --baseline FILE with a baseline file cut short",
    "one error line saying FILE is not a baseline file, exit 2",
)
def gate_garbled_baseline(context: Context) -> str:
    garbled = _written(context, "baseline.json", '{"classes": {"mapping:x": "agr')
    done = run(command("gate", str(_hand_run(context)), "--baseline", str(garbled)))
    return one_line_error(done, says="not a baseline file")


@probe(
    "baseline-not-a-run",
    "bad-input",
    "baseline DIR --out FILE with a records directory whose part file is not Parquet",
    "one error line naming the corrupt part, exit 2, no baseline file written",
)
def baseline_not_a_run(context: Context) -> str:
    records = context.work("records")
    (records / "cases").mkdir()
    (records / "cases" / "part-00000.parquet").write_text("not parquet\n")
    written = context.work() / "baseline.json"
    line = one_line_error(run(command("baseline", str(records), "--out", str(written))), says="part-00000")
    check(not written.exists(), f"{line}; but {written} was written")
    return line


@probe(
    "bisect-garbled-case-file",
    "bad-input",
    "bisect FILE --releases 2.9.25,2.14.5 with a case file that is not JSON",
    "one error line naming the file, exit 2, no run directory",
)
def bisect_garbled_case_file(context: Context) -> str:
    garbled = _written(context, "case.json", "{ not json")
    out = context.work("out")
    done = run(command("bisect", str(garbled), "--releases", "2.9.25,2.14.5", "--out", str(out)))
    return _no_run_left(out, one_line_error(done, says=str(garbled)))


@probe(
    "coverage-adapter-target",
    "bad-input",
    "coverage --target adapter:CMD (coverage measures nats-server's own code)",
    "one error line saying what coverage runs, exit 2, no run directory",
)
def coverage_adapter_target(context: Context) -> str:
    out = context.work("out")
    adapter = f"adapter:python {ROOT / 'examples/adapters/planted_bugs.py'}"
    done = run(command("coverage", "--target", adapter, "--out", str(out)))
    return _no_run_left(out, one_line_error(done, says="coverage"))


@probe(
    "expectations-garbled-toml",
    "bad-input",
    "expectations check RUN --expectations FILE with a garbled expectations.toml",
    "one error line naming the file, exit 2",
)
def expectations_garbled_toml(context: Context) -> str:
    garbled = _written(context, "expectations.toml", GARBLED_TOML)
    done = run(command("expectations", "check", str(_hand_run(context)), "--expectations", str(garbled)))
    return one_line_error(done, says=str(garbled))


def _damaged_run(context: Context, damage: str) -> Path:
    """A copy of the hand-made run with its first part deleted (`deleted`) or garbled inside, its
    footer intact (`garbled`)."""
    from tests.reports.handmade import hand_cases, write_run

    run_dir = write_run(context.work("run"), hand_cases(), part_rows=10)  # several parts
    part = sorted((run_dir / "cases").glob("*.parquet"))[0]
    if damage == "deleted":
        part.unlink()
    else:
        data = bytearray(part.read_bytes())
        for index in range(100, min(len(data) - 1500, 3000)):
            data[index] ^= 0x5A
        part.write_bytes(bytes(data))
    return run_dir


@probe(
    "report-part-deleted",
    "bad-input",
    "report and gate on a completed run whose part file was deleted afterwards",
    "the report says the run is incomplete (damaged, rows against the manifest); the gate refuses it in "
    "one line, exit 2",
)
def report_part_deleted(context: Context) -> str:
    run_dir, out = _damaged_run(context, "deleted"), context.work("out")
    done = run(command("report", str(run_dir), "--out", str(out), "--engine", "duckdb"))
    check(done.status == 0, f"report exit {done.status}: {done.stderr[-300:]!r}")
    markdown = (out / "report.md").read_text()
    check("damaged:" in markdown and "incomplete" in markdown, "report.md does not say the run is damaged")
    baseline = context.work() / "baseline.json"
    return one_line_error(run(command("gate", str(run_dir), "--baseline", str(baseline))), says="damaged")


@probe(
    "readers-part-garbled",
    "bad-input",
    "report, site, baseline and gate on a run whose part file is garbled inside (footer intact)",
    "each: one error line naming the corrupt part, exit 2 (never 1, a divergence or a regression)",
)
def readers_part_garbled(context: Context) -> str:
    run_dir = _damaged_run(context, "garbled")
    part = sorted((run_dir / "cases").glob("*.parquet"))[0].name
    lines = [
        one_line_error(run(command(*argv)), says=part)
        for argv in (
            ("report", str(run_dir), "--out", str(context.work("report")), "--engine", "duckdb"),
            ("site", str(run_dir), "--out", str(context.work("site")), "--engine", "duckdb"),
            ("baseline", str(run_dir), "--out", str(context.work() / "b.json")),
            ("gate", str(run_dir), "--baseline", str(ROOT / "baselines" / "campaign.json")),
        )
    ]
    return lines[-1]


@probe(
    "campaign-junit-unwritable",
    "bad-input",
    "campaign --junit-xml DIR/x.xml where DIR does not exist",
    "one error line naming --junit-xml, exit 2, before any case runs: no run directory",
)
def campaign_junit_unwritable(context: Context) -> str:
    missing = context.work() / "no-such-dir" / "junit.xml"
    return _bad_campaign(context, "--family", "validation", "--junit-xml", str(missing), says="--junit-xml")


@probe(
    "site-serve-bad-port",
    "bad-input",
    "site serve DIR --port 99999",
    "one error line saying what a port is, exit 2",
)
def site_serve_bad_port(context: Context) -> str:
    return one_line_error(run(command("site", "serve", str(context.work()), "--port", "99999")), says="port")
