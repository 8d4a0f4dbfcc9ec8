"""MkDocs hook (mkdocs.yml `hooks:`): generates the CLI reference page, `cli.md`, from the
`nats-conformance` argument parser at build time, so it never goes stale. Nothing is run: the parser is
built (`nats_conformance.parser()`) and each sub-command's `--help` text is written into the page. The
campaigns guide's table of families is generated the same way, from the family registry."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

WIDTH = 100
PAGE = "cli.md"


def _commands(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    """`parser` and every sub-command's parser under it, depth first, in registration order."""
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            seen: set[int] = set()
            for sub in action.choices.values():
                if id(sub) not in seen:  # aliases name the same parser
                    seen.add(id(sub))
                    yield from _commands(sub)


FAMILIES_MARKER = "<!-- families:"
FAMILIES_PAGE = "guide/campaigns.md"


def _importable() -> None:
    root = Path(__file__).resolve().parent.parent
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))


def families_table() -> str:
    """The table of families: each registered family's name, `summary` and default budget."""
    _importable()
    from nats_conformance.suites.families import FAMILIES

    rows = [f"| {f.name} | {f.description.summary} | {f.description.budget:,} |" for f in FAMILIES.values()]
    return "\n".join(["| family | unit | default budget per release |", "|---|---|---|", *rows])


FINDINGS_MARKER = "<!-- findings:"
FINDINGS_PAGE = "findings.md"


def findings_table() -> str:
    """The table of findings, from expectations.toml: each entry's id, its releases (its range, closed
    per line where it ended) and the first sentence of its note."""
    _importable()
    from nats_conformance.records.expectations import load_expectations

    def first_sentence(note: str) -> str:
        text = " ".join(note.split())
        return text.split(". ", 1)[0].rstrip(".").replace("|", "\\|")

    rows = [
        f"| `{e.id}` | {e.implementation} {e.releases_text()} | {first_sentence(e.note)} |"
        for e in load_expectations().entries
    ]
    return "\n".join(["| id | releases | what differs |", "|---|---|---|", *rows])


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    """Put the table of families in place of its marker line in the campaigns guide, and the table of
    findings in place of its marker in the findings page."""
    tables = {
        FAMILIES_PAGE: (FAMILIES_MARKER, families_table),
        FINDINGS_PAGE: (FINDINGS_MARKER, findings_table),
    }
    if page.file.src_path not in tables:
        return markdown
    marker, table = tables[page.file.src_path]
    return "\n".join(table() if line.startswith(marker) else line for line in markdown.split("\n"))


def render() -> str:
    """The page: the top-level help, then one section per sub-command with its `--help` text."""
    _importable()
    import nats_conformance

    columns = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(WIDTH)  # argparse wraps sub-commands' help at the terminal's width
    try:
        lines = [
            "# Command-line reference",
            "",
            "Generated from the `nats-conformance` argument parser when the documentation is built "
            "(`docs/hooks.py`); `nats-conformance COMMAND --help` prints the same text. The commands are "
            "also `python -m nats_conformance.suites`, `python -m nats_conformance.reports` (`report` is "
            "`reports build`), `python -m nats_conformance.fixtures` and `python -m "
            "nats_conformance.reference`. Exit statuses: [Reliability](guide/reliability.md#exit-statuses).",
            "",
        ]
        for command in _commands(nats_conformance.parser(width=WIDTH)):
            lines += [f"## `{command.prog}`", "", "```text", command.format_help().rstrip(), "```", ""]
    finally:
        if columns is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = columns
    return "\n".join(lines)


def on_files(files: Files, config: Any, **kwargs: Any) -> Files:
    """Add the generated `cli.md` to the documentation files."""
    files.append(File.generated(config, PAGE, content=render()))
    return files
