"""The report as Markdown for a pull-request comment: the HTML report's tables, without the plots.

Long tables are cut at ``MARKDOWN_ROWS`` rows (GitHub comments hold 65,536 characters); summary.json has
everything.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Final

from nats_conformance.records.schema import VERDICTS
from nats_conformance.records.unknowns import reasons_shown
from nats_conformance.reports import present
from nats_conformance.reports.bisection import probe_text
from nats_conformance.reports.coverage import INTRO as COVERAGE_INTRO
from nats_conformance.reports.coverage import first_line, headline
from nats_conformance.reports.implementations import (
    HEADERS,
    INTRO,
    Implementation,
    cases_text,
    share_text,
    who,
)
from nats_conformance.reports.matrix import STATES, Matrix
from nats_conformance.reports.mutants import INTRO as MUTANTS_INTRO
from nats_conformance.reports.mutants import WRONG, cells, columns, how_killed, unreached_text
from nats_conformance.reports.mutants import headline as mutants_headline
from nats_conformance.reports.report import DIAGNOSES, Report
from nats_conformance.reports.unknowns import INTRO as UNKNOWN_INTRO
from nats_conformance.reports.unknowns import NONE as UNKNOWN_NONE
from nats_conformance.reports.unknowns import meaning
from nats_conformance.reports.unknowns import table as unknown_table

MARKDOWN_ROWS: Final = 40


def cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def code(text: str) -> str:
    """Inline code that survives backticks and pipes inside a table."""
    fence = "``" if "`" in text else "`"
    return f"{fence}{cell(text)}{fence}" if text else ""


def table(headers: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return [*lines, ""]


def more(total: int, shown: int) -> list[str]:
    return [f"_{total - shown:,} more rows in summary.json._", ""] if total > shown else []


def render_markdown(report: Report) -> str:
    """The whole report; of mutants runs only, their section alone."""
    if not report.runs:
        return "\n".join(["## nats-conformance report", "", *mutants_markdown(report)])
    generated = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(report.generated))
    lines = [
        "## nats-conformance report",
        "",
        f"**{'✅' if report.passed else '🟦' if report.conforms_to else '❌'} {report.banner()}**",
        "",
        f"{present.count(report.rows)} case records of {len(report.runs)} run(s) across "
        f"{len(report.releases)} release(s), generated {generated}: "
        + ", ".join(f"{present.count(report.verdicts[v])} {v}" for v in VERDICTS)
        + ".",
        "",
    ]
    incomplete = [f"{run.run_id} {run.status}" for run in report.runs if run.status != "completed"]
    if incomplete:
        lines += [
            f"**Incomplete:** {len(incomplete)} run(s) did not complete ({', '.join(incomplete)}); their "
            "counts are those of the records on disk.",
            "",
        ]
    lines += [
        line for run in report.runs if run.judged_by for line in (f"**Rules:** {run.judged_by_text()}.", "")
    ]
    lines += [line for r in report.releases if r.note for line in (f"**{r.label}:** a {r.note}.", "")]
    for item in report.endings:  # first: what a release fixed is the news
        replay = f" (`{item.replay_line()}`)" if item.case else ""
        lines += [f"**Ended:** {item.headline()}{replay}", ""]
    lines += judgements_markdown(report)
    lines += implementations_markdown(report.implementations)
    lines += matrix_markdown(report)
    lines += divergences_markdown(report)
    lines += changes_markdown(report)
    lines += diagnoses_markdown(report)
    lines += bisections_markdown(report)
    lines += coverage_markdown(report)
    lines += mutants_markdown(report)
    lines += unknowns_markdown(report)
    lines += verdicts_markdown(report)
    lines += partitions_markdown(report)
    lines += weighted_markdown(report)
    return "\n".join(lines)


def matrix_markdown(report: Report) -> list[str]:
    lines = ["### Compatibility matrix", ""]
    lines.append(" ".join(f"{present.STATE_SYMBOLS[state]} {state}" for state in STATES))
    lines.append("")
    lines += matrices_markdown(report.matrices)
    if report.contexts:
        lines += ["### Contexts", "", "The same functions in every place a transform applies.", ""]
        lines += matrices_markdown(report.contexts)
    return lines


def matrices_markdown(matrices: Sequence[Matrix]) -> list[str]:
    lines = []
    for item in matrices:
        lines.append(f"**{item.implementation}**")
        lines.append("")
        rows = [
            [
                f"**{cell(row.name)}**" if row.kind == "feature" else code(row.name),
                *(f"{present.STATE_SYMBOLS[c.state]} {c.state}" for c in row.cells),
                row.first_documented.label if row.first_documented else "none",
            ]
            for row in item.rows
        ]
        lines += table(["row", *(r.label for r in item.releases), "as documented from"], rows)
    return lines


def divergences_markdown(report: Report) -> list[str]:
    lines = ["### Divergence classes", ""]
    if not report.divergences:
        return [*lines, "No case diverged from the reference.", ""]
    shown = report.divergences[:MARKDOWN_ROWS]
    rows = [
        [
            code(item.case_class),
            f"**{item.diverge:,}**" if item.diverge else "0",
            present.count(item.expected),
            item.first_release.label,
            item.last_release.label,
            cell(", ".join(r.label for r in item.not_on)) or "-",
            cell(
                ", ".join(
                    f"{name} ([{rest or url}]({url}))" if url else name
                    for name, url, rest in present.expectation_links(item.expectations, report.links)
                )
            )
            or "-",
            f"[replay](#replay-{number})",
        ]
        for number, item in enumerate(shown, 1)
    ]
    lines += table(
        ["class", "diverge", "expected", "first", "last", "not on (between)", "expectation", "replay"], rows
    )
    lines += more(len(report.divergences), len(shown))
    lines += ["#### Replay commands", ""]
    for number, item in enumerate(shown, 1):
        lines += [
            f'<a id="replay-{number}"></a>{number}. `{item.case_class}` (smallest case, '
            f"{item.smallest.server_version}):",
            "",
            "```",
            item.replay,
            "```",
            "",
        ]
    return lines


def changes_markdown(report: Report) -> list[str]:
    """The changelog between consecutive releases (``reports.changes``)."""
    lines = ["### Changes between releases", ""]
    if not report.changelog.paired:
        return [*lines, present.CHANGES_UNPAIRED, ""]
    counted = [present.not_drawn_text(report.changelog.not_drawn), ""] if report.changelog.not_drawn else []
    if not report.changes:
        return [*lines, present.CHANGES_NONE, "", *counted]
    shown = report.changes[:MARKDOWN_ROWS]
    rows = [
        [
            item.after.label,
            item.before.label,
            item.kind,
            cell(item.text()),
            cell(item.evidence),
            code(item.case_class),
        ]
        for item in shown
    ]
    lines += [present.CHANGES_INTRO, ""]
    lines += table(list(present.CHANGES_HEADERS), rows)
    return lines + more(len(report.changes), len(shown)) + counted


def judgements_markdown(report: Report) -> list[str]:
    """Each adapter target judged by a release's engine: its verdict and where the release and the
    documents differ (none: no section)."""
    if not report.judgements:
        return []
    lines = ["### Judged by a nats-server release", "", present.JUDGED_INTRO, ""]
    for item in report.judgements:
        lines += [f"**{cell(item.target)}**: {item.verdict}", ""]
        rows = [[code(name), present.count(cases)] for name, cases in sorted(item.shared.items())]
        lines += (
            table([f"where nats-server {item.release} and the documents differ", "cases"], rows)
            if rows
            else []
        )
    return lines


def diagnoses_markdown(report: Report) -> list[str]:
    """The three-way table of the classes asked of an engine oracle (none: no section)."""
    asked = [item for item in report.divergences if item.oracles][:MARKDOWN_ROWS]
    if not asked:
        return []
    lines = [
        "### Three-way diagnosis",
        "",
        "Diverging cases of runs with `--oracle engine`, by which of the reference, the server and the "
        "transform engine of the server's release agree.",
        "",
    ]
    rows = [
        [code(item.case_class), *(present.count(item.oracle_count(value)) for value, _ in DIAGNOSES)]
        for item in asked
    ]
    lines += table(["class", *(label for _, label in DIAGNOSES)], rows)
    return [*lines, ""]


def bisections_markdown(report: Report) -> list[str]:
    """The release bisections of the runs (none: no section)."""
    if not report.bisections:
        return []
    lines = [
        "### Release bisection",
        "",
        "First and last release where a case file's divergence occurs, by binary search from the release "
        "it was found on, assuming the releases where it occurs are contiguous.",
        "",
    ]
    rows = [
        [
            code(item.case_class),
            item.result.found_on,
            f"**{item.result.first}**",
            f"**{item.result.last}**",
            cell(item.before_text),
            cell(item.after_text),
            f"{len(item.result.releases)} ({item.result.releases[0]} to {item.result.releases[-1]})",
        ]
        for item in report.bisections
    ]
    lines += table(
        ["class", "found on", "first", "last", "not on (before)", "not on (after)", "releases considered"],
        rows,
    )
    for item in report.bisections:
        probes = ", ".join(probe_text(probe) for probe in item.result.probes)
        lines += [
            f"Probes of {code(item.case_class)}: {cell(probes)}."
            + (f" {item.gaps_text}." if item.gaps_text else ""),
            "",
        ]
    return lines


def unknowns_markdown(report: Report) -> list[str]:
    """Each release's unknown present.share and its unknown cases per reason (``reports.unknowns``)."""
    lines = ["### Unknown cases", "", UNKNOWN_INTRO, ""]
    if not any(item.reasons for item in report.unknowns):
        return [*lines, UNKNOWN_NONE, ""]
    headers, rows = unknown_table(report.unknowns)
    lines += table(
        [code(h) if i > 3 else h for i, h in enumerate(headers)], [[cell(c) for c in r] for r in rows]
    )
    lines += [f"- {code(reason)}: {cell(meaning(reason))}" for reason in reasons_shown(report.unknowns)]
    return [*lines, ""]


def verdicts_markdown(report: Report) -> list[str]:
    rows = [
        [
            f"**{cell(r.name)}**" if r.kind == "feature" else code(r.name),
            r.release.label,
            *(present.count(r.counts[v]) for v in VERDICTS),
        ]
        for r in report.verdict_rows
    ]
    return [
        "<details><summary>Verdicts per feature, function and release</summary>",
        "",
        *table(["feature / function", "release", *VERDICTS], rows),
        "</details>",
        "",
    ]


def partitions_markdown(report: Report) -> list[str]:
    lines = ["### Partition distributions", ""]
    if not report.partitions:
        return [*lines, "No partition cases in these records.", ""]
    ranked = present.ranked_partitions(report.partitions)
    shown = ranked[:MARKDOWN_ROWS]
    rows = [
        [
            d.release.label,
            code(d.destination),
            present.count(d.partitions),
            present.count(d.keys),
            "-" if d.fit is None else f"{d.fit.statistic:.2f}",
            (
                f"**{present.p_value(d.fit.p_value)}**"
                if d.fit and d.fit.rejected
                else present.p_value(d.fit.p_value if d.fit else None)
            ),
            present.ratio(d.ratio),
        ]
        for d in shown
    ]
    lines.append("Distinct keys per partition, least uniform first (bold: p below the suites' alpha).")
    lines.append("")
    lines += table(["release", "destination", "n", "keys", "chi-square", "p-value", "max/min"], rows)
    return lines + more(len(ranked), len(shown))


def weighted_markdown(report: Report) -> list[str]:
    lines = ["### Weighted mappings", ""]
    if not report.weighted:
        return [*lines, "No weighted-mapping cases in these records.", ""]
    ranked = present.ranked_weighted(report.weighted)
    shown = ranked[:MARKDOWN_ROWS]
    rows = []
    for number, item in enumerate(shown, 1):
        for position, s in enumerate(item.shares):
            first = position == 0
            rows.append(
                [
                    str(number) if first else "",
                    item.release.label if first else "",
                    code(item.source) if first else "",
                    present.count(item.messages) if first else "",
                    present.share(item.loss_rate) if first else "",
                    code(s.label),
                    present.share(s.expected),
                    f"{present.share(s.observed)} ({present.share(s.low)} - {present.share(s.high)})",
                    "yes" if s.consistent else "**no**",
                ]
            )
    lines.append("Observed shares with 99.9 % Wilson intervals against the exact expected shares.")
    lines.append("")
    lines += table(
        [
            "list",
            "release",
            "source",
            "messages",
            "loss",
            "outcome",
            "expected",
            "observed (interval)",
            "within",
        ],
        rows,
    )
    return lines + more(len(ranked), len(shown))


def coverage_markdown(report: Report) -> list[str]:
    """The runs' coverage of nats-server's mapping code (none: no section)."""
    if not report.coverages:
        return []
    lines = ["### Coverage of nats-server's mapping code", "", COVERAGE_INTRO, ""]
    for item in report.coverages:
        lines += [f"**{headline(item)}.**", ""]
        if item.missing:
            lines += [f"Not in this release: {', '.join(code(name) for name in item.missing)}.", ""]
        lines += table(
            ["file", "counted", "statements", "covered", "%"],
            [
                [
                    code(f.path),
                    "whole file" if f.whole else "surface functions",
                    present.count(f.statements),
                    present.count(f.covered),
                    f.percent,
                ]
                for f in item.files
            ],
        )
        lines += table(
            ["function", "file", "statements", "covered", "%"],
            [
                [
                    code(f.name),
                    code(f"{f.path}:{f.line}"),
                    present.count(f.statements),
                    present.count(f.covered),
                    f.percent,
                ]
                for f in item.functions
            ],
        )
        shown = item.unreached[:MARKDOWN_ROWS]
        lines += table(
            ["unreached block", "function", "statements", "first line", "unreachable because"],
            [
                [
                    f"[{b.path}:{b.start}-{b.end}]({b.url})",
                    code(b.function),
                    present.count(b.statements),
                    code(first_line(b)),
                    b.why,
                ]
                for b in shown
            ],
        )
        lines += more(len(item.unreached), len(shown))
    return lines


def mutants_markdown(report: Report) -> list[str]:
    """The runs of `nats-conformance mutants` (none: no section): scores per file and per function, each
    survivor with its diff, unreached mutants and wrong equivalence entries."""
    if not report.mutants:
        return []
    lines = ["### Mutants of nats-server's code", "", MUTANTS_INTRO, ""]
    for run in report.mutants:
        lines += [f"**{mutants_headline(run)}.**", ""]
        lines += table(["file", *columns(run)], [[code(f.file), *cells(f)] for f in run.by_file])
        shown = run.by_function[:MARKDOWN_ROWS]
        lines += table(
            ["function", "file", *columns(run)], [[code(f.function), code(f.file), *cells(f)] for f in shown]
        )
        lines += more(len(run.by_function), len(shown))
        lines += [f"{len(run.survivors):,} survivor(s):", ""] if run.survivors else []
        for item in run.survivors[:MARKDOWN_ROWS]:
            failed = f"; its run failed: {cell(item.error)}" if item.error else ""
            lines += [
                f"**Survivor {item.id}**, line {item.line} of {code(item.file)} in {code(item.function)} "
                f"({item.operator}), reached by {', '.join(item.families) or 'no family'}{failed}:",
                "",
                "```diff",
                item.diff,
                "```",
                "",
            ]
        lines += more(len(run.survivors), min(len(run.survivors), MARKDOWN_ROWS))
        lines += [unreached_text(run), ""] if run.unreached else []
        for wrong in run.equivalent_killed:
            mutant = wrong.mutant
            lines += [
                f"**{WRONG}:** mutant {mutant.id}, line {mutant.line} of {code(mutant.file)} in "
                f"{code(mutant.function)} ({mutant.operator}, {code(mutant.original)} → "
                f"{code(mutant.mutated or '(dropped)')}), was {cell(how_killed(wrong))}"
                + (f", {code(wrong.replay)}" if wrong.replay else "")
                + ".",
                "",
            ]
    return lines


def implementations_markdown(items: Sequence[Implementation]) -> list[str]:
    if not items:
        return []

    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    lines = [
        "### Implementations",
        "",
        INTRO,
        "",
        "| " + " | ".join([*HEADERS, "agree present.share", "classes"]) + " |",
        "|" + "---|" * (len(HEADERS) + 2),
    ]
    for item in items:
        for row in item.rows:
            values = [
                who(item),
                item.language or "-",
                f"`{row.label}`",
                f"`{row.function}`" if row.function else "-",
                f"{row.agree:,}",
                f"{row.diverge:,}",
                f"{row.expected:,}",
                share_text(row),
                str(len(row.classes)),
            ]
            lines.append("| " + " | ".join(cell(v) for v in values) + " |")
    lines.append("")
    for item in items:
        for row in item.rows:
            for found in row.classes:
                lines += [
                    f"- **{cell(item.name)}** `{row.label}` `{found.case_class}` ({cases_text(found)}): "
                    f"`{cell(found.question)}` documents `{found.expected_answer}`, library "
                    f"`{found.observed_answer}`; replay: `{cell(found.replay)}`",
                ]
    return [*lines, ""]
