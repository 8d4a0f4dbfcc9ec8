"""The self-contained HTML report: inline CSS and SVG plots, no scripts, no external assets."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from html import escape
from typing import Final

from nats_conformance.records.coverage import Figure
from nats_conformance.records.mutants import WrongEquivalent
from nats_conformance.records.releases import Release
from nats_conformance.records.schema import VERDICTS
from nats_conformance.records.significance import ALPHA
from nats_conformance.records.unknowns import UnknownShare, reasons_shown
from nats_conformance.reports.bisection import probe_text
from nats_conformance.reports.coverage import INTRO as COVERAGE_INTRO
from nats_conformance.reports.coverage import first_line, headline
from nats_conformance.reports.figures import PANELS, partition_histograms, weighted_plots
from nats_conformance.reports.implementations import (
    HEADERS as IMPLEMENTATION_HEADERS,
)
from nats_conformance.reports.implementations import (
    INTRO as IMPLEMENTATIONS_INTRO,
)
from nats_conformance.reports.implementations import (
    Implementation,
    OperationRow,
    cases_text,
    judged_by,
    share_text,
    who,
)
from nats_conformance.reports.matrix import STATES, Matrix, MatrixRow
from nats_conformance.reports.mutants import INTRO as MUTANTS_INTRO
from nats_conformance.reports.mutants import WRONG, cells, columns, how_killed, unreached_text
from nats_conformance.reports.mutants import headline as mutants_headline
from nats_conformance.reports.present import (
    BANNER_COLOURS,
    CHANGES_HEADERS,
    CHANGES_INTRO,
    CHANGES_NONE,
    CHANGES_UNPAIRED,
    CONFORMS_COLOUR,
    JUDGED_INTRO,
    STATE_COLOURS,
    TABLE_ROWS,
    count,
    differ_text,
    expectation_links,
    not_drawn_text,
    p_value,
    ranked_partitions,
    ranked_weighted,
    ratio,
    share,
)
from nats_conformance.reports.report import DIAGNOSES, Divergence, Report
from nats_conformance.reports.unknowns import INTRO as UNKNOWN_INTRO
from nats_conformance.reports.unknowns import NONE as UNKNOWN_NONE
from nats_conformance.reports.unknowns import meaning, table

STYLE: Final = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px 32px; color: #1d1d1f; max-width: 1500px; }
h1 { font-size: 24px; margin-bottom: 4px; } h2 { margin-top: 36px; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 8px 0 16px; }
th, td { border: 1px solid #d0d0d0; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f0f2f5; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
table.matrix td.cell { text-align: center; min-width: 96px; font-size: 13px; }
table.matrix td.cell small { display: block; color: #333; font-size: 11px; }
table.matrix td.cell a { color: inherit; text-decoration: none; display: block; }
table.matrix td.cell a:hover { text-decoration: underline; }
.banner { color: #fff; padding: 8px 12px; font-weight: 600; font-size: 16px; }
.legend span { display: inline-block; padding: 2px 10px; margin-right: 6px; border: 1px solid #bbb; }
code, pre { font: 12px ui-monospace, monospace; } pre { background: #f6f8fa; padding: 8px; overflow-x: auto; }
.muted { color: #666; } .bad { color: #b00020; font-weight: 600; } nav a { margin-right: 14px; }
.warn { color: #8a5300; } .good { color: #1b5e20; font-weight: 600; }
svg { max-width: 100%; height: auto; }
table.verdicts th, table.verdicts td { padding: 2px 5px; font-size: 12px; }
"""


def table_html(headers: list[str], rows: list[list[str]], *, numeric: set[int] | None = None) -> str:
    """An HTML table; cells are already-escaped HTML."""
    right = numeric or set()
    head = "".join(f"<th>{h}</th>" for h in headers)
    body = "".join(
        "<tr>"
        + "".join(f"<td{' class=n' if i in right else ''}>{c}</td>" for i, c in enumerate(row))
        + "</tr>"
        for row in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def _more(total: int, shown: int) -> str:
    if total <= shown:
        return ""
    return f"<p class=muted>{total - shown:,} more rows in summary.json.</p>"


CellLink = Callable[[MatrixRow, Release], tuple[str, str]]
"""A matrix cell's link: (href, title), href '' for none."""


def matrix_html(item: Matrix, link: CellLink = lambda row, release: ("", "")) -> str:
    """One implementation's matrix; each cell shows its state, counts and share of cases that differ,
    linked where `link` gives it an address."""
    head = "".join(f"<th>{escape(r.label)}</th>" for r in item.releases)
    rows = []
    for row in item.rows:
        cells = []
        for release, cell in zip(item.releases, row.cells, strict=True):
            text = f"{escape(cell.state)}<small>{escape(differ_text(cell.tally))}</small>"
            href, title = link(row, release)
            if href:
                text = f'<a href="{escape(href)}" title="{escape(title)}">{text}</a>'
            cells.append(f'<td class=cell style="background:{STATE_COLOURS[cell.state]}">{text}</td>')
        first = (
            escape(row.first_documented.label) if row.first_documented else "<span class=muted>none</span>"
        )
        name = f"<b>{escape(row.name)}</b>" if row.kind == "feature" else f"<code>{escape(row.name)}</code>"
        rows.append(
            f"<tr><td>{name}</td><td class=muted>{row.kind}</td>{''.join(cells)}<td>{first}</td></tr>"
        )
    title = f"<h3>{escape(item.implementation)}</h3>"
    return (
        f"{title}<table class=matrix><tr><th>row</th><th>kind</th>{head}"
        f"<th>behaves as documented from</th></tr>{''.join(rows)}</table>"
    )


def banner_html(report: Report) -> str:
    """The verdict banner: green when the report passed, else red (``Report.banner``)."""
    colour = CONFORMS_COLOUR if report.conforms_to else BANNER_COLOURS[report.passed]
    return f'<p class=banner style="background:{colour}">{escape(report.banner())}</p>'


def legend() -> str:
    spans = "".join(f'<span style="background:{STATE_COLOURS[s]}">{escape(s)}</span>' for s in STATES)
    return f"<p class=legend>{spans}</p>"


def runs_html(report: Report) -> list[str]:
    """The verdict counts, each run with its status, and the notes of the runs and releases: what did not
    complete, who judged by an engine, distribution builds, what ended."""
    parts = [
        table_html(
            ["verdict", "cases"],
            [[escape(v), count(report.verdicts[v])] for v in VERDICTS],
            numeric={1},
        )
    ]
    parts.append(
        table_html(
            ["run", "directory", "status", "records", "unwritten"],
            [
                [
                    escape(r.run_id),
                    f"<code>{escape(r.path)}</code>",
                    escape(r.status)
                    if r.status == "completed"
                    else f"<span class=bad>{escape(r.status)}</span>",
                    count(r.rows),
                    f"<span class=bad>{r.unwritten:,}</span>" if r.unwritten else "0",
                ]
                for r in report.runs
            ],
            numeric={3, 4},
        )
    )
    incomplete = [r for r in report.runs if r.status != "completed"]
    if incomplete:
        parts.append(
            f"<p class=bad>incomplete: {len(incomplete)} run(s) did not complete "
            f"({', '.join(escape(f'{r.run_id} {r.status}') for r in incomplete)}); their counts are those "
            "of the records on disk</p>"
        )
    parts += [f"<p class=warn>{escape(r.judged_by_text())}</p>" for r in report.runs if r.judged_by]
    parts += [f"<p class=warn>{escape(r.label)}: a {escape(r.note)}</p>" for r in report.releases if r.note]
    parts += [
        f"<p class=good>{escape(item.headline())}"
        + (f"<br><code>{escape(item.replay_line())}</code>" if item.case else "")
        + "</p>"
        for item in report.endings
    ]
    return parts


def matrices_html(report: Report) -> list[str]:
    """The compatibility matrices, each cell linked to its first divergence class in the report."""
    parts: list[str] = []
    parts.append("<h2 id=matrix>Compatibility matrix</h2>")
    parts.append(
        "<p>Each cell sums the cases of a feature, or of every mapping using a function, on one release. "
        "<i>known divergence</i>: every difference is listed in expectations.toml; <i>not supported</i>: "
        "the reference and the server both reject the function as unsupported on that release, or an "
        "adapter's hello leaves it out. "
        "The last column is the lowest release from which every later release agrees.</p>"
    )
    parts.append(legend())
    numbers = {item.case_class: n for n, item in enumerate(report.divergences[:TABLE_ROWS], 1)}

    def link(row: MatrixRow, release: Release) -> tuple[str, str]:
        classes = [item.case_class for item in report.cell_classes(row.kind, row.name, release)]
        shown = [name for name in classes if name in numbers]
        return (f"#class-{numbers[shown[0]]}", ", ".join(classes)) if shown else ("", "")

    parts += [matrix_html(item, link) for item in report.matrices]
    return parts


HEAD: Final = (
    "<!doctype html><html lang=en><head><meta charset=utf-8>",
    "<title>nats-conformance report</title>",
    f"<style>{STYLE}</style></head><body>",
    "<h1>nats-conformance report</h1>",
)
"""The document's start, up to its title."""


def render_html(report: Report) -> str:
    """The whole report as one HTML document; of mutants runs only, their section alone."""
    if not report.runs:
        return "\n".join([*HEAD, mutants_html(report), "</body></html>"]) + "\n"
    generated = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(report.generated))
    parts = [
        *HEAD,
        banner_html(report),
        f"<p class=muted>generated {generated} from {count(report.rows)} case records of "
        f"{len(report.runs)} run(s) across {len(report.releases)} release(s)</p>",
        "<nav><a href=#matrix>compatibility matrix</a>"
        + ("<a href=#implementations>implementations</a>" if report.implementations else "")
        + "<a href=#contexts>contexts</a>"
        "<a href=#verdicts>verdicts</a><a href=#unknown>unknown cases</a>"
        "<a href=#divergences>divergence classes</a><a href=#changes>changes between releases</a>"
        "<a href=#partition>partition</a>"
        "<a href=#weighted>weighted</a>"
        + ("<a href=#bisection>release bisection</a>" if report.bisections else "")
        + ("<a href=#coverage>coverage</a>" if report.coverages else "")
        + ("<a href=#mutants>mutants</a>" if report.mutants else "")
        + "</nav>",
    ]
    parts += runs_html(report)
    parts.append(judgements_html(report))
    if report.implementations:
        parts.append("<h2 id=implementations>Implementations</h2>")
        parts.append(implementations_html(report.implementations, heading="h3"))
    parts += matrices_html(report)
    if report.contexts:
        parts.append("<h2 id=contexts>Contexts</h2>")
        parts.append(
            "<p>The same functions in every place a transform applies: an account's mappings, imports, a "
            "stream's subject transform, a source's and a mirror's. A row sums the cases of that place "
            "whose destination uses the function.</p>"
        )
        parts += [matrix_html(item) for item in report.contexts]
    parts.append(verdicts_html(report))
    parts.append(unknowns_html(report.unknowns))
    parts.append(divergences_html(report))
    parts.append(changes_html(report))
    parts.append(bisections_html(report))
    parts.append(coverage_html(report))
    parts.append(mutants_html(report))
    parts.append(partitions_html(report))
    parts.append(weighted_html(report))
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def verdicts_html(report: Report) -> str:
    """Rows: features, then functions; per release the agree / diverge / expected / unknown counts."""
    releases = report.releases
    by_row: dict[tuple[str, str], dict[Release, dict[str, int]]] = {}
    for row in report.verdict_rows:
        by_row.setdefault((row.kind, row.name), {})[row.release] = row.counts
    top = "".join(f"<th colspan={len(VERDICTS)}>{escape(r.label)}</th>" for r in releases)
    sub = "".join(f"<th>{v}</th>" for _ in releases for v in VERDICTS)
    body = []
    for (kind, name), counts in by_row.items():
        label = f"<b>{escape(name)}</b>" if kind == "feature" else f"<code>{escape(name)}</code>"
        cells = []
        for release in releases:
            for verdict in VERDICTS:
                value = counts.get(release, {}).get(verdict, 0)
                alarm = verdict == "diverge" and value
                cells.append(
                    f"<td class=n>{f'<span class=bad>{value:,}</span>' if alarm else f'{value:,}'}</td>"
                )
        body.append(f"<tr><td>{label}</td>{''.join(cells)}</tr>")
    return (
        "<h2 id=verdicts>Verdicts per feature, function and release</h2>"
        f"<table class=verdicts><tr><th rowspan=2>feature / function</th>{top}</tr><tr>{sub}</tr>"
        f"{''.join(body)}</table>"
    )


def unknowns_html(shares: tuple[UnknownShare, ...], heading: str = "h2") -> str:
    """Each release's unknown share and its unknown cases per reason, then what each reason shown means
    (``reports.unknowns``); the report's section, and a release page's of the site."""
    out = [f"<{heading} id=unknown>Unknown cases</{heading}>", f"<p>{escape(UNKNOWN_INTRO)}</p>"]
    if not any(item.reasons for item in shares):
        return "".join([*out, f"<p>{escape(UNKNOWN_NONE)}</p>"])
    headers, rows = table(shares)
    marked = [
        [escape(text) if i != 3 or not item.above else f"<span class=bad>{escape(text)}</span>" for i, text in
         enumerate(row)]
        for item, row in zip(shares, rows, strict=True)
    ]  # fmt: skip
    out.append(table_html([escape(h) for h in headers], marked, numeric=set(range(1, len(headers)))))
    out.append(
        "<dl>"
        + "".join(
            f"<dt><code>{escape(r)}</code></dt><dd>{escape(meaning(r))}</dd>" for r in reasons_shown(shares)
        )
        + "</dl>"
    )
    return "".join(out)


def divergences_html(report: Report) -> str:
    out = ["<h2 id=divergences>Divergence classes</h2>"]
    if not report.divergences:
        return out[0] + "<p>No case diverged from the reference.</p>"
    rows = []
    replays = []
    for number, item in enumerate(report.divergences[:TABLE_ROWS], 1):
        feature, functions, difference = item.parts
        anchor = f"class-{number}"
        rows.append(
            [
                f"<code>{escape(item.case_class)}</code>",
                escape(feature),
                escape(functions),
                escape(difference),
                f"<span class=bad>{item.diverge:,}</span>" if item.diverge else "0",
                count(item.expected),
                escape(item.first_release.label),
                escape(item.last_release.label),
                escape(", ".join(r.label for r in item.not_on)) or "<span class=muted>-</span>",
                ", ".join(
                    f'{escape(name)} (<a href="{escape(url)}">{escape(rest or url)}</a>)'
                    if url
                    else escape(name)
                    for name, url, rest in expectation_links(item.expectations, report.links)
                )
                or "<span class=muted>-</span>",
                f"<a href=#{anchor}>replay</a>",
            ]
        )
        replays.append(
            f"<h3 id={anchor}>{number}. <code>{escape(item.case_class)}</code></h3>{smallest_html(item)}"
            f"<pre>{escape(item.replay)}</pre>"
        )
    out.append(
        "<p>Cases that differ from the reference, grouped by <code>feature:functions:difference</code>; "
        "<i>expected</i> ones are listed in expectations.toml.</p>"
    )
    out.append(
        table_html(
            [
                "class",
                "feature",
                "functions",
                "difference",
                "diverge",
                "expected",
                "first release",
                "last release",
                "not on (between)",
                "expectation",
                "replay",
            ],
            rows,
            numeric={4, 5},
        )
    )
    out.append(_more(len(report.divergences), TABLE_ROWS))
    out.append(diagnoses_html(report))
    out.append("<h3>Replay commands (smallest case of each class)</h3>")
    out += replays
    return "\n".join(out)


def smallest_html(item: Divergence) -> str:
    """A class's smallest case: release, backend, mapping, subject, expected and observed, detail."""
    case = item.smallest
    return (
        f"<p>smallest case, {escape(case.server_version)} ({escape(case.backend)}): source "
        f"<code>{escape(case.source)}</code>, destination <code>{escape(case.destination)}</code>"
        + (f", subject <code>{escape(case.subject)}</code>" if case.subject else "")
        + f"; expected <code>{escape(case.expected)}</code>, observed "
        f"<code>{escape(case.observed or '(nothing)')}</code></p>"
        + (f"<p class=muted>{escape(case.detail)}</p>" if case.detail else "")
    )


def changes_html(report: Report) -> str:
    """The changelog between consecutive releases (``reports.changes``)."""
    out = ["<h2 id=changes>Changes between releases</h2>"]
    if not report.changelog.paired:
        return out[0] + f"<p>{escape(CHANGES_UNPAIRED)}</p>"
    not_drawn = report.changelog.not_drawn
    counted = [f"<p>{escape(not_drawn_text(not_drawn))}</p>"] if not_drawn else []
    if not report.changes:
        return "\n".join([out[0], f"<p>{escape(CHANGES_NONE)}</p>", *counted])
    out.append(f"<p>{escape(CHANGES_INTRO)}</p>")
    rows = [
        [
            escape(item.after.label),
            escape(item.before.label),
            escape(item.kind),
            escape(item.text()),
            f"<code>{escape(item.evidence)}</code>",
            f"<code>{escape(item.case_class)}</code>",
        ]
        for item in report.changes[:TABLE_ROWS]
    ]
    out.append(table_html(list(CHANGES_HEADERS), rows))
    out.append(_more(len(report.changes), TABLE_ROWS))
    return "\n".join(out + counted)


def judgements_html(report: Report) -> str:
    """Each adapter target judged by a release's engine: its verdict and where the release and the
    documents differ (none: nothing)."""
    if not report.judgements:
        return ""
    out = [f"<h2 id=judged>Judged by a nats-server release</h2><p>{escape(JUDGED_INTRO)}</p>"]
    for item in report.judgements:
        out.append(f"<p><b>{escape(item.target)}</b>: {escape(item.verdict)}</p>")
        rows = [[f"<code>{escape(name)}</code>", count(cases)] for name, cases in sorted(item.shared.items())]
        if rows:
            header = f"where nats-server {escape(item.release)} and the documents differ"
            out.append(table_html([header, "cases"], rows, numeric={1}))
    return "".join(out)


def diagnoses_html(report: Report) -> str:
    """The three-way table of the classes asked of an engine oracle (none: nothing)."""
    asked = [item for item in report.divergences if item.oracles][:TABLE_ROWS]
    if not asked:
        return ""
    rows = [
        [
            f"<code>{escape(item.case_class)}</code>",
            *(count(item.oracle_count(value)) for value, _ in DIAGNOSES),
        ]
        for item in asked
    ]
    return (
        "<h3 id=diagnosis>Three-way diagnosis</h3><p>Diverging cases of runs with <code>--oracle "
        "engine</code>, by which of the reference, the server and the transform engine of the server's "
        "release agree.</p>"
        + table_html(["class", *(label for _, label in DIAGNOSES)], rows, numeric=set(range(1, 5)))
    )


def bisections_html(report: Report) -> str:
    """The release bisections of the runs (none: no section)."""
    if not report.bisections:
        return ""
    out = [
        "<h2 id=bisection>Release bisection</h2>",
        "<p>For a case file, the first and last release where its divergence occurs (a replay there gives "
        "a case of its class), found by binary search from the release it was found on; it assumes the "
        "releases where it occurs are contiguous. <i>not on</i>: the neighbouring releases probed where "
        "it does not occur.</p>",
    ]
    rows = []
    for item in report.bisections:
        result = item.result
        rows.append(
            [
                f"<code>{escape(item.case_class)}</code>",
                f"<code>{escape(item.source)}</code> &rarr; <code>{escape(item.destination)}</code>"
                + (f", <code>{escape(item.subject)}</code>" if item.subject else ""),
                escape(result.found_on),
                f"<b>{escape(result.first)}</b>",
                f"<b>{escape(result.last)}</b>",
                escape(item.before_text),
                escape(item.after_text),
                count(len(result.probes)),
                f"{len(result.releases):,} ({escape(result.releases[0])} to {escape(result.releases[-1])})",
            ]
        )
    out.append(
        table_html(
            [
                "class",
                "case",
                "found on",
                "first",
                "last",
                "not on (before)",
                "not on (after)",
                "probes",
                "releases considered",
            ],
            rows,
            numeric={7},
        )
    )
    for number, item in enumerate(report.bisections, 1):
        probes = "".join(f"<li>{escape(probe_text(probe))}</li>" for probe in item.result.probes)
        gaps = f"<p class=muted>{escape(item.gaps_text)}</p>" if item.gaps_text else ""
        out.append(
            f"<h3>{number}. <code>{escape(item.case_class)}</code> ({escape(item.backend)}, run "
            f"{escape(item.run_id)})</h3>{gaps}<p>Probes in order:</p><ol>{probes}</ol>"
        )
    return "\n".join(out)


def partitions_html(report: Report) -> str:
    out = ["<h2 id=partition>Partition distributions</h2>"]
    if not report.partitions:
        return out[0] + "<p>No partition cases in these records.</p>"
    ranked = ranked_partitions(report.partitions)
    drawn = min(PANELS, len(ranked))
    out.append(
        f"<p>Distinct keys per partition for each mapping and release. Histograms: the {drawn} "
        "least uniform (lowest chi-square p-value first); dashed line: equal shares; orange bars: p below "
        f"the suites' alpha ({ALPHA:g}).</p>"
    )
    out.append(partition_histograms(ranked))
    rows = [
        [
            f"<b>{number}</b>",
            escape(d.release.label),
            f"<code>{escape(d.source)}</code>",
            f"<code>{escape(d.destination)}</code>",
            count(d.partitions),
            count(d.keys),
            count(d.outside),
            "-" if d.fit is None else f"{d.fit.statistic:.2f}",
            "-" if d.fit is None else str(d.fit.dof),
            (
                f"<span class=bad>{p_value(d.fit.p_value)}</span>"
                if d.fit and d.fit.rejected
                else p_value(d.fit.p_value if d.fit else None)
            ),
            ratio(d.ratio),
        ]
        for number, d in enumerate(ranked[:TABLE_ROWS], 1)
    ]
    out.append(
        table_html(
            [
                "#",
                "release",
                "source",
                "destination",
                "partitions",
                "keys",
                "not partitioned",
                "chi-square",
                "dof",
                "p-value",
                "max/min",
            ],
            rows,
            numeric={4, 5, 6, 7, 8, 9, 10},
        )
    )
    out.append(_more(len(ranked), TABLE_ROWS))
    return "\n".join(out)


def weighted_html(report: Report) -> str:
    out = ["<h2 id=weighted>Weighted mappings</h2>"]
    if not report.weighted:
        return out[0] + "<p>No weighted-mapping cases in these records.</p>"
    ranked = ranked_weighted(report.weighted)
    out.append(
        "<p>Observed share of every outcome against its exact expected share (weight / 100; the remainder "
        "goes to the unchanged subject, or is lost when the source is listed), with 99.9 % Wilson "
        "intervals. Plots: observed minus expected share in percentage points; an interval crossing the "
        "dashed zero line agrees; orange: it does not.</p>"
    )
    out.append(weighted_plots(ranked))
    rows = []
    for number, item in enumerate(ranked[:TABLE_ROWS], 1):
        for position, s in enumerate(item.shares):
            first = position == 0
            rows.append(
                [
                    f"<b>{number}</b>" if first else "",
                    escape(item.release.label) if first else "",
                    f"<code>{escape(item.source)}</code>" if first else "",
                    count(item.messages) if first else "",
                    share(item.loss_rate) if first else "",
                    f"<code>{escape(s.label)}</code>",
                    share(s.expected),
                    count(s.count),
                    share(s.observed),
                    f"{share(s.low)} &ndash; {share(s.high)}",
                    "yes" if s.consistent else "<span class=bad>no</span>",
                ]
            )
        if item.problem:
            rows.append(
                ["", "", "", "", f"<span class=bad>{escape(item.problem)}</span>", "", "", "", "", ""]
            )
    out.append(
        table_html(
            [
                "list",
                "release",
                "source",
                "messages",
                "loss rate",
                "outcome",
                "expected",
                "count",
                "observed",
                "99.9 % interval",
                "within",
            ],
            rows,
            numeric={3, 4, 6, 7, 8},
        )
    )
    out.append(_more(len(ranked), TABLE_ROWS))
    return "\n".join(out)


def figures_html(
    names: tuple[str, str], figures: Sequence[Figure], named: Callable[[Figure], tuple[str, str]]
) -> str:
    """A table of coverage figures: the two columns `named` gives each, then its statements, covered
    and percent."""
    return table_html(
        [*names, "statements", "covered", "%"],
        [[*named(f), count(f.statements), count(f.covered), escape(f.percent)] for f in figures],
        numeric={2, 3, 4},
    )


def coverage_html(report: Report) -> str:
    """The runs' coverage of nats-server's mapping code (none: no section); every unreached block with
    its link and, unfolded, its source."""
    if not report.coverages:
        return ""
    out = ["<h2 id=coverage>Coverage of nats-server's mapping code</h2>", f"<p>{escape(COVERAGE_INTRO)}</p>"]
    for item in report.coverages:
        out.append(f"<h3>{escape(headline(item))}</h3>")
        if item.missing:
            names = ", ".join(f"<code>{escape(name)}</code>" for name in item.missing)
            out.append(f"<p class=muted>Not in this release: {names}.</p>")
        out.append(
            figures_html(
                ("file", "counted"),
                item.files,
                lambda f: (
                    f"<code>{escape(f.path)}</code>",
                    "whole file" if f.whole else "surface functions",
                ),
            )
        )
        out.append(
            figures_html(
                ("function", "file"),
                item.functions,
                lambda f: (f"<code>{escape(f.name)}</code>", f"<code>{escape(f.path)}:{f.line}</code>"),
            )
        )
        out.append(
            table_html(
                ["unreached block", "function", "statements", "source", "unreachable because"],
                [
                    [
                        f'<a href="{escape(b.url)}">{escape(b.path)}:{b.start}-{b.end}</a>',
                        f"<code>{escape(b.function)}</code>",
                        count(b.statements),
                        f"<details><summary><code>{escape(first_line(b))}</code></summary>"
                        f"<pre>{escape(b.source)}</pre></details>",
                        escape(b.why),
                    ]
                    for b in item.unreached
                ],
                numeric={2},
            )
        )
    return "\n".join(out)


def mutants_html(report: Report) -> str:
    """The runs of `nats-conformance mutants` (none: no section): scores per file and per function, every
    survivor with its diff, unreached mutants and wrong equivalence entries."""
    if not report.mutants:
        return ""
    out = ["<h2 id=mutants>Mutants of nats-server's code</h2>", f"<p>{escape(MUTANTS_INTRO)}</p>"]
    for run in report.mutants:
        figures = set(range(1, len(columns(run)) + 1))
        out.append(f"<h3>{escape(mutants_headline(run))}</h3>")
        out.append(
            table_html(
                ["file", *columns(run)],
                [[f"<code>{escape(f.file)}</code>", *map(escape, cells(f))] for f in run.by_file],
                numeric=figures,
            )
        )
        out.append(
            table_html(
                ["function", "file", *columns(run)],
                [
                    [
                        f"<code>{escape(f.function)}</code>",
                        f"<code>{escape(f.file)}</code>",
                        *map(escape, cells(f)),
                    ]
                    for f in run.by_function
                ],
                numeric={n + 1 for n in figures},
            )
        )
        if run.survivors:
            out.append(
                table_html(
                    ["survivor", "line", "function", "operator", "diff", "reached by"],
                    [
                        [
                            str(item.id),
                            f"<code>{escape(item.file)}:{item.line}</code>",
                            f"<code>{escape(item.function)}</code>",
                            escape(item.operator),
                            f"<pre>{escape(item.diff)}</pre>"
                            + (
                                f"<p class=bad>its run failed: {escape(item.error)}</p>" if item.error else ""
                            ),
                            escape(", ".join(item.families)),
                        ]
                        for item in run.survivors
                    ],
                    numeric={0},
                )
            )
        out += [f"<p>{unreached_text(run)}</p>"] if run.unreached else []
        out += [_wrong_html(wrong) for wrong in run.equivalent_killed]
    return "\n".join(out)


def implementations_html(items: Sequence[Implementation], *, heading: str = "h2") -> str:
    """The matrix, then each implementation's divergence classes ('' when there is no implementation)."""
    if not items:
        return ""
    rows = []
    for item in items:
        for index, row in enumerate(item.rows):
            first = index == 0
            rows.append(
                [
                    f"<b>{escape(item.name)}</b><br><small class=muted>{escape(judged_by(item))}</small>"
                    if first
                    else "",
                    escape(item.language) if first else "",
                    f"<code>{escape(row.label)}</code>",
                    f"<code>{escape(row.function)}</code>" if row.function else "<span class=muted>-</span>",
                    f"{row.agree:,}",
                    f"<span class=bad>{row.diverge:,}</span>" if row.diverge else "0",
                    f"{row.expected:,}",
                    share_cell(row),
                    str(len(row.classes)) if row.classes else "0",
                ]
            )
    parts = [
        f"<p>{escape(IMPLEMENTATIONS_INTRO)}</p>",
        table_html([*IMPLEMENTATION_HEADERS, "agree share", "classes"], rows, numeric={4, 5, 6, 7, 8}),
    ]
    for item in items:
        title = escape(who(item))
        docs = f' <a href="{escape(item.docs)}">documentation</a>' if item.docs else ""
        asked = (
            f"<p class=muted>not asked (its hello leaves them out): {escape(', '.join(item.not_asked))}</p>"
            if item.not_asked
            else ""
        )
        classes = [(row, found) for row in item.rows for found in row.classes]
        parts.append(f"<{heading} id=impl-{slug(item)}>{title}</{heading}><p>{docs}</p>{asked}")
        if not classes:
            parts.append("<p class=good>No divergence class: every judged case agrees.</p>")
            continue
        parts.append(
            table_html(
                ["operation", "class", "cases", "smallest case", "documents", "library", "replay"],
                [
                    [
                        f"<code>{escape(row.label)}</code>",
                        f"<code>{escape(found.case_class)}</code>",
                        escape(cases_text(found)),
                        f"<code>{escape(found.question)}</code>",
                        f"<code>{escape(found.expected_answer)}</code>",
                        f"<code>{escape(found.observed_answer)}</code>",
                        f"<code class=replay>{escape(found.replay)}</code>",
                    ]
                    for row, found in classes
                ],
            )
        )
    return "\n".join(parts)


def share_cell(row: OperationRow) -> str:
    text = escape(share_text(row))
    return f"<span class=bad>{text}</span>" if row.diverge else text


def slug(item: Implementation) -> str:
    return "".join(c if c.isalnum() else "-" for c in item.release.label).strip("-")


def _wrong_html(wrong: WrongEquivalent) -> str:
    """A paragraph on a mutant the equivalence file lists, yet killed."""
    mutant = wrong.mutant
    return (
        f"<p class=bad>{escape(WRONG)}: mutant {mutant.id}, <code>{escape(mutant.file)}:{mutant.line}</code> "
        f"in <code>{escape(mutant.function)}</code> ({escape(mutant.operator)}, "
        f"<code>{escape(mutant.original)}</code> &rarr; <code>{escape(mutant.mutated or '(dropped)')}"
        f"</code>), was {escape(how_killed(wrong))}"
        + (f"<br><code>{escape(wrong.replay)}</code>" if wrong.replay else "")
        + "</p>"
    )
