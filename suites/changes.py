"""`nats-conformance changes R1 R2 [--plan NAME] [--json FILE]`: what changed in nats-server's mapping code
from R1 to R2, whether a campaign reaches it, and what behaviour changed (codecov's diff coverage, for a
release).

- **Changed statements.** Both releases' module sources (`fixtures.cover.module_source`) are read for
  the functions of the mapping surface (`records.coverage.MAPPING_SURFACE`, the one list of it): each
  top-level ``func`` of the server package, from its ``func`` line to the next line that is ``}`` alone
  (gofmt'd source), known by receiver type and name (unique in a Go package; a per-platform variant
  keeps its first file). The lines of R2's function that difflib inserts or replaces against R1's same
  function are its changed lines (every line, for a function R1 lacks).
- **Reached.** The campaign runs on R2's -cover build as `coverage` runs it (`suites.coverage`). A
  changed line is *reached* when a block of the merged profile that spans it has a count, *not reached*
  when blocks span it and none has, else *not a statement* (so is a blank or comment line). A changed
  statement not reached is a lead.
- **New functions.** The mapping functions R2's source declares and R1's does not, and those of them the
  reference does not model (`suites.surface`).
- **Behaviour changes.** A second campaign (the same plan and seed, plain builds) runs R1 and R2, which
  pairs its one-sided divergence classes itself (`suites.pairing`); each pair whose outcome changed is
  listed with the line that replays it on both releases.

Exit status 0; 2 with one `nats-conformance: error:` line for a bad release or option, or a campaign
that recorded nothing.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import redirect_stdout
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

from nats_conformance.fixtures.cover import module_source
from nats_conformance.fixtures.options import OptionError
from nats_conformance.fixtures.provision import NATS_SERVER
from nats_conformance.records.coverage import MAPPING_SURFACE, Block, Surface, parse_profile
from nats_conformance.records.pairs import CHANGED, UNKNOWN, WITHIN, read_pairs
from nats_conformance.records.writer import new_run_id
from nats_conformance.reference.cli import Parser
from nats_conformance.reference.errors import ConformanceError
from nats_conformance.suites import surface as declared
from nats_conformance.suites.coverage import PROFILE, covered_campaign, summary_line
from nats_conformance.suites.engine.plans import PLANS
from nats_conformance.suites.families import FAMILIES

FUNC: Final = re.compile(
    r"^func (?:\((?:\w+\s+)?\*?(?P<receiver>\w+)(?:\[[^\]]*\])?\)\s*)?(?P<name>\w+)\s*[\[(]"
)
"""A top-level function's first line: ``func NAME(``, ``func (r *TYPE) NAME(``, ``func NAME[T any](``."""
REACHED, NOT_REACHED, NO_STATEMENT = "reached", "not reached", "not a statement"
FIELDS: Final = {"reached": REACHED, "not_reached": NOT_REACHED, "not_statements": NO_STATEMENT}
"""The document's list of changed lines for each mark."""
PACKAGE: Final = "server"

Key = tuple[str, str]
"""A function of a package: its receiver type ('' for none) and name."""


@dataclass(frozen=True, slots=True)
class GoFunction:
    """A top-level function: its file (relative to the module), receiver type, name, first line and
    source lines."""

    path: str
    receiver: str
    name: str
    line: int
    source: tuple[str, ...]

    @property
    def key(self) -> Key:
        return self.receiver, self.name

    @property
    def label(self) -> str:
        """``Account.AddMapping``, or the bare name of a plain function."""
        return f"{self.receiver}.{self.name}" if self.receiver else self.name


@dataclass(frozen=True, slots=True)
class ChangedFunction:
    """A function of R2's surface with changed lines: whether R1 lacks it, and each changed line's
    number in R2's file with its mark."""

    function: GoFunction
    added: bool
    marks: Mapping[int, str]


def go_functions(path: str, text: str) -> list[GoFunction]:
    """The top-level functions of gofmt'd Go source: from a ``func`` line to the next line that is ``}``
    alone, or that same line when it closes every brace it opens (``func f() bool { return false }``)."""
    lines = text.splitlines()
    found = []
    for index, line in enumerate(lines):
        match = FUNC.match(line)
        if match is None:
            continue
        end = index
        if not (line.rstrip().endswith("}") and line.count("{") == line.count("}")):
            end = next((n for n in range(index + 1, len(lines)) if lines[n].rstrip() == "}"), index)
        found.append(
            GoFunction(path, match["receiver"] or "", match["name"], index + 1, tuple(lines[index : end + 1]))
        )
    return found


def package_functions(source: Path, package: str = PACKAGE) -> dict[Key, GoFunction]:
    """Every top-level function of a package of a module source (its tests left out), by `Key`; a key
    several files define (per-platform variants) keeps its first file in name order."""
    functions: dict[Key, GoFunction] = {}
    for file in sorted((source / package).glob("*.go")):
        if not file.name.endswith("_test.go"):
            for function in go_functions(f"{package}/{file.name}", file.read_text(errors="replace")):
                functions.setdefault(function.key, function)
    return functions


def on_surface(
    functions: Mapping[Key, GoFunction], surface: Surface = MAPPING_SURFACE
) -> dict[Key, GoFunction]:
    """The functions the surface counts (`records.coverage.Surface.wants`)."""
    return {key: f for key, f in functions.items() if surface.wants(f.path, f.name)}


def changed_lines(old: Sequence[str], new: Sequence[str]) -> list[int]:
    """The indexes of `new`'s lines that difflib inserts or replaces against `old` (trailing blanks
    ignored)."""
    matcher = difflib.SequenceMatcher(
        None, [line.rstrip() for line in old], [line.rstrip() for line in new], autojunk=False
    )
    return [
        index
        for tag, _, _, start, end in matcher.get_opcodes()
        if tag in ("replace", "insert")
        for index in range(start, end)
    ]


def mark(line: int, text: str, blocks: Iterable[Block]) -> str:
    """`REACHED` when a block of the file that spans line `line` has a count, `NOT_REACHED` when blocks
    span it and none has, `NO_STATEMENT` when none does or the line is blank or a comment."""
    stripped = text.strip()
    if not stripped or stripped.startswith("//"):
        return NO_STATEMENT
    spanning = [block.reached for block in blocks if block.start <= line <= block.end]
    if not spanning:
        return NO_STATEMENT
    return REACHED if any(spanning) else NOT_REACHED


def changed_functions(
    old: Mapping[Key, GoFunction], new: Mapping[Key, GoFunction], blocks: Iterable[Block]
) -> list[ChangedFunction]:
    """The functions of `new` (R2's surface) whose lines changed against the same function of `old`
    (every function of R1's package, so that one that moved file or joined the surface compares with
    its former body), in file and line order, each changed line marked against R2's profile `blocks`."""
    by_path: dict[str, list[Block]] = {}
    for block in blocks:
        by_path.setdefault(block.path, []).append(block)
    found = []
    for function in sorted(new.values(), key=lambda f: (f.path, f.line)):
        before = old.get(function.key)
        indexes = changed_lines(before.source if before else (), function.source)
        spans = by_path.get(function.path, [])
        marks = {function.line + i: mark(function.line + i, function.source[i], spans) for i in indexes}
        if marks:
            found.append(ChangedFunction(function, before is None, marks))
    return found


def ranges(marks: Mapping[int, str], wanted: str) -> list[tuple[int, int]]:
    """The lines marked `wanted` as (first, last) ranges; a range runs on over changed lines between
    that are no statement."""
    found: list[tuple[int, int]] = []
    for line in sorted(marks):
        if marks[line] != wanted:
            continue
        if found and all(marks.get(n) == NO_STATEMENT for n in range(found[-1][1] + 1, line)):
            found[-1] = (found[-1][0], line)
        else:
            found.append((line, line))
    return found


def shown_ranges(found: Iterable[tuple[int, int]]) -> str:
    return ", ".join(f"{first}-{last}" if last > first else str(first) for first, last in found)


def where(function: GoFunction) -> dict[str, Any]:
    """A function's file, receiver type, name and first line, as the document names it."""
    return {key: getattr(function, key) for key in ("path", "receiver", "name", "line")}


def statements_document(
    old: str, new: str, old_source: Path, new_source: Path, blocks: Iterable[Block]
) -> dict[str, Any]:
    """The source part of the document: R2's changed functions with their lines by mark, the leads
    (ranges of changed statements not reached, with their first line), the surface's functions R2 adds
    and removes, and the mapping functions it adds and removes (`suites.surface`)."""
    before, after = package_functions(old_source), package_functions(new_source)
    changed = changed_functions(before, on_surface(after), blocks)
    functions, leads = [], []
    for item in changed:
        function = item.function
        functions.append(
            {
                **where(function),
                "added": item.added,
                **{
                    key: sorted(line for line, value in item.marks.items() if value == wanted)
                    for key, wanted in FIELDS.items()
                },
            }
        )
        for first, last in ranges(item.marks, NOT_REACHED):
            source = function.source[first - function.line].strip()
            leads.append(
                {
                    "path": function.path,
                    "function": function.label,
                    "start": first,
                    "end": last,
                    "source": source,
                }
            )
    old_surface, new_surface = declared.surface_in(old_source, old), declared.surface_in(new_source, new)
    mapping = declared.diff(old_surface, new_surface)
    added = mapping.added["functions"]
    return {
        "functions": functions,
        "leads": leads,
        "functions_added": [where(item.function) for item in changed if item.added],
        "functions_removed": [
            where(function) for key, function in sorted(on_surface(before).items()) if key not in after
        ],
        "mapping_functions": {
            "added": sorted(added),
            "removed": sorted(mapping.removed["functions"]),
            "unmodelled": sorted(declared.unmodelled(new_surface, new) & added),
        },
        "statements": sum(len(row["reached"]) + len(row["not_reached"]) for row in functions),
        "reached": sum(len(row["reached"]) for row in functions),
        "not_reached": sum(len(row["not_reached"]) for row in functions),
    }


def summary(document: Mapping[str, Any]) -> str:
    """The last line: statements changed and reached, new mapping functions, behaviour changes."""
    mapping = document["mapping_functions"]
    return (
        f"{document['new']} changes {document['statements']} statements of the mapping surface: "
        f"{document['reached']} reached, {document['not_reached']} not; {len(mapping['added'])} new "
        f"functions ({len(mapping['unmodelled'])} not modelled); "
        f"{len(document['behaviour_changes'])} behaviour changes"
    )


def listing(document: Mapping[str, Any]) -> list[str]:
    """The document as plain text, in sections."""
    old, new, mapping = document["old"], document["new"], document["mapping_functions"]
    lines = [
        f"nats-server {old} -> {new}: the mapping surface's changes, reached by the {document['plan']} "
        f"campaign on {new}'s -cover build",
        f"  coverage run {document['coverage_run']} (exit status {document['coverage_status']}): "
        f"{document['coverage']}",
        f"  paired run {document['paired_run']} (exit status {document['paired_status']})",
        "",
        f"changed statements by function (lines of {new}'s files):",
    ]
    shown_path = ""
    for row in document["functions"]:
        if row["path"] != shown_path:
            shown_path = row["path"]
            lines.append(f"  {shown_path}")
        name = f"{row['receiver']}.{row['name']}" if row["receiver"] else row["name"]
        marks = {line: wanted for key, wanted in FIELDS.items() for line in row[key]}
        parts = [
            f"{len(row[key])} {wanted} {shown_ranges(ranges(marks, wanted))}"
            for key, wanted in FIELDS.items()
            if row[key] and wanted != NO_STATEMENT
        ]
        counted = "; ".join(parts) or "no statements (comments, blank lines)"
        lines.append(f"    {name}:{row['line']}{' (new)' if row['added'] else ''}  {counted}")
    if not document["functions"]:
        lines.append("  none")
    lines += ["", f"leads: changed statements no case reached ({len(document['leads'])} ranges):"]
    lines += [
        f"  {lead['path']}:{shown_ranges([(lead['start'], lead['end'])])} {lead['function']}: "
        + lead["source"]
        for lead in document["leads"]
    ] or ["  none"]
    lines.append("")
    for verb, key, release in (("added in", "added", new), ("removed since", "removed", old)):
        names = [f"{item['name']}:{item['line']}" for item in document[f"functions_{key}"]]
        lines.append(f"functions of the surface {verb} {release}: {', '.join(names) or 'none'}")
    lines += [
        "",
        f"mapping functions added in {new}: {', '.join(mapping['added']) or 'none'}",
        f"  not modelled by the reference: {', '.join(mapping['unmodelled']) or 'none'}",
        f"mapping functions removed since {old}: {', '.join(mapping['removed']) or 'none'}",
        "",
    ]
    paired = document["paired"]
    if paired is None:
        lines.append(f"behaviour changes: not paired (the campaign of {old} and {new} did not complete)")
    else:
        lines.append(
            f"behaviour changes (paired between {old} and {new}: {paired['replayed']} one-sided classes "
            f"replayed, {paired['changed']} changed, {paired['unknown']} unknown):"
        )
    for change in document["behaviour_changes"]:
        lines += [f"  {change['text']}", f"    replay: {change['replay']}"]
    if paired is not None and not document["behaviour_changes"]:
        lines.append("  none")
    return [*lines, "", document["summary"]]


def campaign_parser(options: Callable[[argparse.ArgumentParser], None]) -> Parser:
    """A parser of the campaign's options (`options`, `suites.commands.add_campaign_options`)."""
    parser = Parser(prog="nats-conformance changes", add_help=False)
    options(parser)
    return parser


def changes_command(
    arguments: argparse.Namespace,
    *,
    options: Callable[[argparse.ArgumentParser], None],
    run: Callable[..., int],
) -> int:
    """Diff both sources, run the campaign on R2's -cover build and the paired one on R1 and R2 (their
    output on stderr), then print the listing (and write --json); exit 0."""
    old, new = declared.module_release(arguments.old), declared.module_release(arguments.new)
    if old == new:
        raise OptionError(f"changes compares two releases; R1 and R2 are both {old}")
    if arguments.json and not Path(arguments.json).absolute().parent.is_dir():
        raise OptionError(f"--json: the folder of {arguments.json} does not exist")
    old_source, new_source = module_source(old), module_source(new)
    campaign = campaign_parser(options)
    common = ["--plan", arguments.plan, "--seed", str(arguments.seed), "--out", arguments.out]
    common += [part for family in arguments.family for part in ("--family", family)]
    with redirect_stdout(sys.stderr):
        status, cover_dir, coverage = covered_campaign(
            campaign.parse_args(["--server-version", arguments.new, *common]), run
        )
        if coverage is None:
            raise ConformanceError(f"changes: the campaign on {new}'s -cover build recorded nothing")
        paired_dir = Path(arguments.out) / new_run_id()
        versions = ["--server-version", arguments.old, "--server-version", arguments.new]
        paired_status = run(campaign.parse_args([*versions, *common]), run_dir=paired_dir)
    blocks = parse_profile((cover_dir / PROFILE).read_text(), NATS_SERVER.module)
    pairs = read_pairs(paired_dir).of(WITHIN) if paired_dir.is_dir() else None
    changed = [pair for pair in pairs or () if pair.outcome == CHANGED]
    document: dict[str, Any] = {
        "old": old,
        "new": new,
        "plan": arguments.plan,
        "seed": arguments.seed,
        "coverage_run": str(cover_dir),
        "coverage_status": status,
        "coverage": summary_line(coverage),
        "paired_run": str(paired_dir),
        "paired_status": paired_status,
        **statements_document(old, new, old_source, new_source, blocks),
        "paired": None
        if pairs is None
        else {
            "replayed": len(pairs),
            "changed": len(changed),
            "unknown": sum(pair.outcome == UNKNOWN for pair in pairs),
        },
        "behaviour_changes": [
            {"text": pair.text(), "replay": pair.replay_line(paired_dir), **asdict(pair)} for pair in changed
        ],
    }
    document["summary"] = summary(document)
    print("\n".join(listing(document)))
    if arguments.json:
        try:
            Path(arguments.json).write_text(json.dumps(document, indent=1) + "\n")
        except OSError as error:
            raise ConformanceError(f"cannot write {arguments.json}: {error.strerror or error}") from error
    return 0


def add_changes_command(
    commands: argparse._SubParsersAction[Parser],
    *,
    options: Callable[[argparse.ArgumentParser], None],
    run: Callable[..., int],
) -> None:
    """Register `changes`; its campaigns take the campaign's `options` and run with `run`."""
    defaults = campaign_parser(options)
    parser = commands.add_parser(
        "changes",
        help="the mapping code a release changes: reached by a campaign? what behaviour changed?",
        description="Diffs the mapping surface's functions between R1's and R2's sources, runs the campaign "
        "on R2's -cover build (as `coverage`) and marks each changed line reached or not, lists the mapping "
        "functions R2 adds (and those the reference does not model), and runs a campaign of R1 and R2 whose "
        "paired changes of behaviour it lists with their replay lines. Exit status: 0, or 2 for a bad "
        "release or option or a campaign that recorded nothing.",
    )
    parser.add_argument("old", metavar="R1", help="the release compared with (2.14.9, or a line: 2.14)")
    parser.add_argument("new", metavar="R2", help="the release whose changes are listed (2.14.10)")
    parser.add_argument(
        "--plan",
        choices=tuple(PLANS),
        default=defaults.get_default("plan"),
        help=f"both campaigns' plan (default {defaults.get_default('plan')}; quick for a first look)",
    )
    parser.add_argument(
        "--family",
        action="append",
        default=[],
        choices=tuple(FAMILIES),
        metavar="FAMILY",
        help="run only this family in both campaigns (repeatable; default every family)",
    )
    parser.add_argument("--seed", type=int, default=0, help="both campaigns' seed (default 0)")
    parser.add_argument(
        "--out",
        default=defaults.get_default("out"),
        help=f"parent of both run directories (default {defaults.get_default('out')})",
    )
    parser.add_argument("--json", metavar="FILE", help="also write the listing's data as JSON")
    parser.set_defaults(handler=lambda arguments: changes_command(arguments, options=options, run=run))
