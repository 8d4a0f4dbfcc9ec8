"""The compatibility site's pages (``reports.site``): plain HTML, relative links only, no scripts.

``index.html`` (runs newest first, releases, findings), ``matrix.html`` (release x feature per
implementation, each cell linked to its classes), ``findings/<id>.html`` (one per divergence class) and
``releases/<label>.html`` (one per release or other implementation's version).
"""

from __future__ import annotations

import time
from html import escape
from typing import Final

from nats_conformance.records.releases import Release
from nats_conformance.records.replay import nats_cli_command, server_config
from nats_conformance.records.schema import VERDICTS
from nats_conformance.records.unknowns import UnknownShare
from nats_conformance.reports.matrix import MatrixRow
from nats_conformance.reports.present import (
    CHANGES_HEADERS,
    CHANGES_UNPAIRED,
    STATE_COLOURS,
    count,
    differ_text,
    expectation_links,
)
from nats_conformance.reports.render_html import (
    STYLE,
    banner_html,
    implementations_html,
    legend,
    matrix_html,
    smallest_html,
    table_html,
    unknowns_html,
)
from nats_conformance.reports.report import Divergence
from nats_conformance.reports.site_content import TITLE_END, Site, SiteRun, finding_id, release_id, slug

SITE_STYLE: Final = STYLE + ".moves li { font: 12px ui-monospace, monospace; }\n"
MOVE_KINDS: Final = ("regression", "new", "fixed", "changed", "missing")


def date(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(seconds)) if seconds else "unknown"


def page(title: str, body: list[str], *, depth: int = 0) -> str:
    """One page: `depth` directories below the site's root (its links climb as many)."""
    up = "../" * depth
    nav = (
        f"<nav><a href={up}index.html>runs</a><a href={up}matrix.html>matrix</a>"
        f"<a href={up}implementations.html>implementations</a>"
        f"<a href={up}index.html#releases>releases</a><a href={up}index.html#findings>findings</a></nav>"
    )
    return (
        "\n".join(
            [
                "<!doctype html><html lang=en><head><meta charset=utf-8>",
                '<link rel=icon href="data:,">',
                f"<title>{escape(title)}{TITLE_END}",
                f"<style>{SITE_STYLE}</style></head><body>",
                nav,
                f"<h1>{escape(title)}</h1>",
                *body,
                "</body></html>",
            ]
        )
        + "\n"
    )


def finding_href(item: Divergence, up: str) -> str:
    return f"{up}findings/{finding_id(item.case_class)}.html"


def release_href(release: Release, up: str) -> str:
    return f"{up}releases/{release_id(release)}.html"


def row_anchor(row: MatrixRow) -> str:
    return f"{row.kind}-{slug(row.name)}"


def run_anchor(run: SiteRun) -> str:
    return f"run-{slug(run.run_id)}"


def verdict_cells(verdicts: dict[str, int]) -> list[str]:
    return [
        f"<span class=bad>{verdicts[v]:,}</span>" if v == "diverge" and verdicts[v] else count(verdicts[v])
        for v in VERDICTS
    ]


def moves_html(run: SiteRun) -> str:
    """How a run moved against the previous run of the same targets, counts first, then every move."""
    if run.moves is None:
        return "<span class=muted>first run of these targets</span>"
    moves = (*run.moves.regressions, *run.moves.improvements, *run.moves.others)
    counted = ", ".join(
        f"{sum(move.kind == kind for move in moves)} {kind}"
        for kind in MOVE_KINDS
        if any(move.kind == kind for move in moves)
    )
    against = f'against <a href="#run-{slug(run.previous or "")}">{escape(run.previous or "")}</a>'
    verdict = "<span class=bad>gate failed</span>" if run.moves.failed else "gate passed"
    if not moves:
        return f"{verdict}: no class moved ({against})"
    items = "".join(f"<li>{escape(move.line())}</li>" for move in moves)
    summary = f"{verdict}: {escape(counted)} ({against})"
    return f"<details><summary>{summary}</summary><ul class=moves>{items}</ul></details>"


def index_page(site: Site) -> str:
    report = site.report
    body = [
        banner_html(report),
        f"<p class=muted>{count(report.rows)} case records of {len(site.runs)} run(s) across "
        f"{len(report.releases)} release(s); built {date(report.generated)}</p>",
        "<h2 id=runs>Runs, newest first</h2>",
        "<p>Each run against the run before it of the same targets, class by class "
        "(<code>feature:functions</code> per target, as the gate compares them).</p>",
    ]
    rows = [
        [
            f"<b id={run_anchor(run)}>{escape(run.run_id)}</b>",
            ", ".join(f'<a href="{release_href(r, "")}">{escape(r.label)}</a>' for r in run.report.releases),
            escape(date(run.started)),
            *verdict_cells(run.report.verdicts),
            "complete" if run.report.complete else f"<span class=bad>{escape(run.run.status)}</span>",
            moves_html(run),
        ]
        for run in site.runs
    ]
    body.append(
        table_html(
            ["run", "targets", "started", *VERDICTS, "complete", "against the previous run"],
            rows,
            numeric={3, 4, 5, 6},
        )
    )
    body.append("<h2 id=releases>Releases</h2>")
    shares = {item.release: item for item in report.unknowns}
    body.append(
        table_html(
            ["release", *VERDICTS, "unknown share", "runs"],
            [
                [
                    f'<a href="{release_href(release, "")}">{escape(release.label)}</a>'
                    + (f"<br><small class=muted>{escape(release.note)}</small>" if release.note else ""),
                    *verdict_cells(release_verdicts(site, release)),
                    unknown_share(shares[release]) if release in shares else "-",
                    count(len(site.runs_of(release))),
                ]
                for release in report.releases
            ],
            numeric={1, 2, 3, 4, 5, 6},
        )
    )
    body.append(unknowns_html(report.unknowns))
    body.append("<h2 id=findings>Findings</h2>")
    if not report.divergences:
        body.append("<p>No case diverged from the reference.</p>")
    body.append(findings_table(report.divergences, ""))
    return page("nats-conformance compatibility", body)


def release_verdicts(site: Site, release: Release) -> dict[str, int]:
    """Cases per verdict on one release (the aggregated verdict counts)."""
    totals = dict.fromkeys(VERDICTS, 0)
    for item in site.report.verdict_counts:
        if item.release == release:
            totals[item.verdict] += item.count
    return totals


def unknown_share(item: UnknownShare) -> str:
    """A release's unknown share, marked when above the limit (``reports.unknowns.LIMIT``)."""
    text = escape(item.share_text)
    return f"<span class=bad>{text}</span>" if item.above else text


def findings_table(items: tuple[Divergence, ...] | list[Divergence], up: str) -> str:
    if not items:
        return ""
    rows = [
        [
            f'<a href="{finding_href(item, up)}"><code>{escape(item.case_class)}</code></a>',
            f"<span class=bad>{item.diverge:,}</span>" if item.diverge else "0",
            count(item.expected),
            escape(item.first_release.label),
            escape(item.last_release.label),
            escape(", ".join(item.expectations)) or "<span class=muted>-</span>",
        ]
        for item in items
    ]
    return table_html(
        ["class", "diverge", "expected", "first release", "last release", "expectation"], rows, numeric={1, 2}
    )


def matrix_page(site: Site) -> str:
    report = site.report

    def link(row: MatrixRow, release: Release) -> tuple[str, str]:
        classes = report.cell_classes(row.kind, row.name, release)
        names = ", ".join(item.case_class for item in classes)
        if len(classes) == 1:
            return finding_href(classes[0], ""), names
        return f"{release_href(release, '')}#{row_anchor(row)}", names or "no divergence class"

    body = [
        "<p>Each cell sums the cases of a feature, or of every mapping using a function, on one release, "
        "with the share of them that differs from the reference; a cell links to its divergence class, "
        "or to the release's list of the cell's classes.</p>",
        legend(),
        *(matrix_html(item, link) for item in report.matrices),
    ]
    return page("Compatibility matrix", body)


def implementations_page(site: Site) -> str:
    """Implementation and version x operation, for every implementation judged through an adapter."""
    found = implementations_html(site.report.implementations)
    return page("Implementations", [found or "<p>No implementation was judged through an adapter.</p>"])


def finding_page(site: Site, item: Divergence) -> str:
    up = "../"
    feature, functions, difference = item.parts
    facts = [
        ["class", f"<code>{escape(item.case_class)}</code>"],
        ["feature / functions / difference", escape(f"{feature} / {functions or '-'} / {difference}")],
        ["cases", f"{item.diverge:,} unexpected, {item.expected:,} listed"],
        [
            "first release",
            f'<a href="{release_href(item.first_release, up)}">{escape(item.first_release.label)}</a>',
        ],
        [
            "last release",
            f'<a href="{release_href(item.last_release, up)}">{escape(item.last_release.label)}</a>',
        ],
        ["not on (between)", escape(", ".join(r.label for r in item.not_on)) or "-"],
    ]
    body = [table_html(["finding", ""], facts)]
    for name, url, rest in expectation_links(item.expectations, site.report.links):
        link = f' (<a href="{escape(url)}">{escape(rest or url)}</a>)' if url else ""
        note = site.notes.get(name, "")
        body.append(f"<h2>Expectation {escape(name)}</h2><p>{escape(note) or 'no note'}{link}</p>")
    body += ["<h2>Smallest case</h2>", smallest_html(item), f"<pre class=replay>{escape(item.replay)}</pre>"]
    cli = nats_cli_command(item.smallest)
    if cli:
        body.append(f"<p>With the nats CLI:</p><pre class=natscli>{escape(cli)}</pre>")
    config = server_config(item.smallest)
    if config:
        body.append(f"<p>The server configuration:</p><pre class=natscli>{escape(config)}</pre>")
    body.append("<h2>Releases</h2>")
    body.append(
        table_html(
            ["release", "cases", "state"],
            [
                [f'<a href="{release_href(r, up)}">{escape(r.label)}</a>', escape(s.cases), escape(s.state)]
                for r, s in item.shown.items()
            ],
        )
    )
    body.append("<h2>History</h2>")
    body.append(table_html(["run", "started", "diverge", "expected", "releases"], history(site, item)))
    return page(item.case_class, body, depth=1)


def history(site: Site, item: Divergence) -> list[list[str]]:
    """One row per run, newest first: its cases of the class, or whether it ran the class's feature."""
    rows = []
    for run in site.runs:
        own = next((d for d in run.report.divergences if d.case_class == item.case_class), None)
        name = f'<a href="../index.html#{run_anchor(run)}">{escape(run.run_id)}</a>'
        if own is None:
            ran = run.ran(item.parts[0])
            rows.append(
                [name, escape(date(run.started)), "-", "-", "not shown" if ran else "feature not run"]
            )
        else:
            shown = ", ".join(r.label for r in own.shown)
            rows.append(
                [name, escape(date(run.started)), f"{own.diverge:,}", f"{own.expected:,}", escape(shown)]
            )
    return rows


def release_page(site: Site, release: Release) -> str:
    up = "../"
    report = site.report
    body = [f"<p class=warn>{escape(release.note)}</p>"] if release.note else []
    body.append("<h2>Conformance per feature and function</h2>")
    for matrix in report.matrices:
        if release not in matrix.releases:
            continue
        column = matrix.releases.index(release)
        for row in matrix.rows:
            cell = row.cells[column]
            classes = report.cell_classes(row.kind, row.name, release)
            listed = "".join(
                f'<li><a href="{finding_href(d, up)}"><code>{escape(d.case_class)}</code></a> '
                f"{escape(d.shown[release].cases)}, {escape(d.shown[release].state)}</li>"
                for d in classes
            )
            body.append(
                f"<h3 id={row_anchor(row)}>{escape(row.kind)} <code>{escape(row.name)}</code>: "
                f'<span style="background:{STATE_COLOURS[cell.state]}">{escape(cell.state)}</span></h3>'
                f"<p>{escape(differ_text(cell.tally)) or 'no judged case'}</p>"
                + (f"<ul>{listed}</ul>" if listed else "")
            )
    changes = [change for change in report.changes if change.after == release]
    body.append("<h2>Changes since the previous release</h2>")
    if changes:
        body.append(
            table_html(
                list(CHANGES_HEADERS),
                [
                    [
                        escape(c.after.label),
                        f'<a href="{release_href(c.before, up)}">{escape(c.before.label)}</a>',
                        escape(c.kind),
                        escape(c.text()),
                        f"<code>{escape(c.evidence)}</code>",
                        f'<a href="{up}findings/{finding_id(c.case_class)}.html"><code>'
                        f"{escape(c.case_class)}</code></a>",
                    ]
                    for c in changes
                ],
            )
        )
    else:
        body.append(
            f"<p>{escape(CHANGES_UNPAIRED)}</p>"
            if not report.changelog.paired
            else "<p>No divergence class appeared or disappeared since the previous release.</p>"
        )
    body.append(unknowns_html(tuple(item for item in report.unknowns if item.release == release)))
    body.append("<h2>Runs</h2><ul>")
    body += [
        f'<li><a href="../index.html#{run_anchor(run)}">{escape(run.run_id)}</a> '
        f"({escape(date(run.started))})</li>"
        for run in site.runs_of(release)
    ]
    body.append("</ul>")
    return page(f"{release.implementation} {release.version}", body, depth=1)


def site_pages(site: Site) -> dict[str, str]:
    """Every page of the site by its path under the site's root."""
    pages = {
        "index.html": index_page(site),
        "matrix.html": matrix_page(site),
        "implementations.html": implementations_page(site),
    }
    for item in site.report.divergences:
        pages[f"findings/{finding_id(item.case_class)}.html"] = finding_page(site, item)
    for release in site.report.releases:
        pages[f"releases/{release_id(release)}.html"] = release_page(site, release)
    return pages
