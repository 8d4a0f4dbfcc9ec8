"""`expectations export DIR`: a copy of an expectations file with the known cases it keeps.

    nats-conformance expectations export ci/expectations
    nats-conformance campaign --expectations ci/expectations/expectations.toml ...

Writes DIR/expectations.toml and, beside it, every case file its entries name (`known-cases/...`), so
that the copy loads, and runs its known cases, wherever it is moved. DIR may exist but must not already
hold an expectations.toml.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from nats_conformance.records.expectations import DEFAULT_PATH, load_expectations
from nats_conformance.reference.cli import Parser
from nats_conformance.reference.errors import UsageError

NAME = "expectations.toml"


def export_expectations(source: Path, directory: Path) -> Path:
    """Copy `source` and the case files of its entries into `directory`; the new file's path."""
    expectations = load_expectations(source)
    target = directory / NAME
    if target.exists():
        raise UsageError(f"{target} exists: export into a directory without an {NAME}")
    cases = sorted({entry.case for entry in expectations.entries if entry.case})
    for case in cases:
        if Path(case).is_absolute() or ".." in Path(case).parts:
            raise UsageError(f"{source}: case {case!r} is not inside the file's directory; cannot export it")
    directory.mkdir(parents=True, exist_ok=True)
    for case in cases:
        (directory / case).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source.parent / case, directory / case)
    shutil.copyfile(source, target)
    load_expectations(target)  # the copy is complete: it loads with every case it names
    return target


def expectations_export(arguments: argparse.Namespace) -> int:
    source = Path(arguments.expectations or DEFAULT_PATH)
    target = export_expectations(source, Path(arguments.directory))
    count = len(load_expectations(target).known_cases)
    print(f"{target}: {count} known case(s); use it with --expectations {target}")
    return 0


def add_export_action(actions: argparse._SubParsersAction[Parser]) -> None:
    """Register `export` in the `expectations` command group."""
    export = actions.add_parser(
        "export",
        help="copy the expectations file and its known cases into a directory",
        description="Exit status: 0 exported, 2 usage error or an unreadable expectations file.",
    )
    export.add_argument("directory", metavar="DIR", help="where expectations.toml and known-cases/ go")
    export.add_argument("--expectations", help="the file to export (default the shipped expectations.toml)")
    export.set_defaults(handler=expectations_export)
