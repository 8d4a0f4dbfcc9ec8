"""The coverage file: `coverage.json` in the run directory of `nats-conformance coverage`, which the
report reads. Both sides share the format defined here: the suites write it (`coverage_document`), the
reports read it back with the records (`read_coverage`; a file that is not such a document, with bad JSON,
another format, a newer version or a missing field, is refused with one line naming it, before any
aggregation starts).

It gives, for one nats-server release, how much of **the mapping surface** (`MAPPING_SURFACE`, the one
list of it) the run's cases reached: per file and per function, in statements, and every block no case
reached with its source lines and a link to them at the release's tag. Blocks and statements are those
of Go's coverage profile (``go tool cover``, https://go.dev/blog/cover): a block is reached when its
counter is set in any process that ran.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from nats_conformance.records.errors import fields_of, items_of, objects_of, read_document, value_of

COVERAGE_FILE: Final = "coverage.json"
FORMAT: Final = "nats-conformance-coverage"
VERSION: Final = 2
"""2: each unreached block says `why` it cannot be reached ('' when it can); version 1 files have no `why`."""
SOURCE_REPOSITORY: Final = "https://github.com/nats-io/nats-server"
SOURCE_LINES: Final = 40
"""Lines of source kept per unreached block (a longer block is cut, with its link to the rest)."""


@dataclass(frozen=True, slots=True)
class Surface:
    """Files counted whole, and functions counted wherever they are (a bare name matches a function of
    that name in any file of the server package; `FILE:NAME` only in that file). `former` are counted
    the same way where a release has them, and never listed as missing: the surface's code under the
    names older releases gave it."""

    files: tuple[str, ...]
    functions: tuple[str, ...]
    former: tuple[str, ...] = ()

    def wants(self, path: str, name: str) -> bool:
        names = (*self.functions, *self.former)
        return path in self.files or name in names or f"{path}:{name}" in names


MAPPING_SURFACE: Final = Surface(
    files=("server/subject_transform.go",),
    functions=(
        # Account mappings: install, weighted lists, removal, selection on publish, configuration.
        "AddMapping",
        "AddWeightedMappings",
        "RemoveMapping",
        "hasMappings",
        "selectMappedSubject",
        "ValidateMapping",
        "parseAccountMappings",
        "validateAccountClaimMappings",
        # Imports and exports with a mapping (`to`), and their cycle checks.
        "AddServiceImportWithClaim",
        "addServiceImport",
        "checkServiceImportsForCycles",
        "serviceImportFormsCycle",
        "AddStreamImportWithClaim",
        "addStreamImportWithClaim",
        "addMappedStreamImportWithClaim",
        "checkStreamImportsForCycles",
        "streamImportFormsCycle",
        # Streams: subject transforms, sources, mirrors and RePublish are checked here.
        "checkStreamCfg",
        # Subject matching and validity.
        "server/sublist.go:match",
        "server/sublist.go:matchLevel",
        "server/sublist.go:isValidSubject",
        "server/sublist.go:isValidLiteralSubject",
        "tokensCanMatch",
        "SubjectsCollide",
        "SubjectMatchesFilter",
        "subjectIsSubsetMatch",
        "isSubsetMatch",
        "isSubsetMatchTokenized",
        "matchLiteral",
    ),
    # Before 2.10 the transform was the type `transform` in accounts.go
    # (https://github.com/nats-io/nats-server/blob/v2.9.25/server/accounts.go).
    former=(
        "server/accounts.go:transformTokenize",
        "server/accounts.go:transformUntokenize",
        "server/accounts.go:getMappingFunctionArgs",
        "server/accounts.go:transformIndexIntArgsHelper",
        "server/accounts.go:indexPlaceHolders",
        "server/accounts.go:NewSubjectTransformer",
        "server/accounts.go:newTransform",
        "server/accounts.go:match",
        "server/accounts.go:Match",
        "server/accounts.go:transformSubject",
        "server/accounts.go:getHashPartition",
        "server/accounts.go:transform",
        "server/accounts.go:reverse",
    ),
)


@dataclass(frozen=True, slots=True)
class Block:
    """One block of a coverage profile: its file (relative to the module), its extent, its statements,
    and whether any process reached it."""

    path: str
    start: int
    start_column: int
    end: int
    end_column: int
    statements: int
    reached: bool


@dataclass(frozen=True, slots=True)
class Unreachable:
    """A block no configuration, account JWT or message can reach, known by its function and a
    fragment of its first line (line numbers move between releases), and why it cannot be reached."""

    function: str
    first_line: str
    why: str


NO_EMPTY_TOKEN: Final = "unreachable from the wire: a subject with an empty token matches no subscription"
UNREACHABLE: Final = (
    Unreachable("indexPlaceHolders", "if len(args) < 1 {", "regexp.Split returns at least one argument"),
    Unreachable("Match", "if !isValidLiteralSubject(", NO_EMPTY_TOKEN),
    Unreachable(
        "TransformTokenizedSubject", "if len(tr.dtokmftypes) == 0 {", "every destination token adds one"
    ),
    Unreachable(
        "TransformTokenizedSubject",
        "case len(tr.dtokmftokindexesargs) < i:",
        "a token's function always has its arguments",
    ),
    Unreachable(
        "TransformTokenizedSubject",
        "case len(tr.dtokmftokindexesargs[i]) < 1:",
        "a wildcard function always has an index",
    ),
    Unreachable(
        "TransformTokenizedSubject",
        "case len(tokens) <= tr.dtokmftokindexesargs[i][0]:",
        "the subject has matched the source, so the index is in range",
    ),
    Unreachable("reverse", "if len(tr.dtokmftokindexesargs) == 0 {", "every destination token adds an index"),
    Unreachable(
        "subjectInfo",
        'if subject == "" {',
        "its callers turn an empty source into > and return on an empty destination",
    ),
    Unreachable("RemoveMapping", "return false", "its callers remove only mappings the account holds"),
    Unreachable("hasMappings", "if a == nil {", "no client's account is nil"),
    Unreachable("validateAccountClaimMappings", "if claim == nil {", "its caller validates a claim it holds"),
    Unreachable(
        "validateAccountClaimMappings",
        "if weight > 100 {",
        "the JWT library's own validation refuses it first",
    ),
    Unreachable(
        "validateAccountClaimMappings",
        "if tw[m.Cluster] > 100 {",
        "the JWT library's own validation refuses it first",
    ),
    Unreachable(
        "checkServiceImportsForCycles",
        "if len(visited) >= MaxAccountCycleSearchDepth {",
        "a chain of 1,024 accounts",
    ),
    Unreachable(
        "checkStreamImportsForCycles",
        "if len(visited) >= MaxAccountCycleSearchDepth {",
        "a chain of 1,024 accounts",
    ),
)
"""The blocks of the surface known to be unreachable (read from the source of 2.14.9 and 2.15.2), each said
once: the report names why beside such a block, and counts the statements that can be reached."""


def why_unreachable(function: str, source: str) -> str:
    """Why the block of `function` whose source is `source` cannot be reached ('' when it can)."""
    first = source.split("\n", 1)[0].strip()
    return next((u.why for u in UNREACHABLE if u.function == function and first.startswith(u.first_line)), "")


BLOCK_LINE = re.compile(r"^(?P<file>\S+\.go):(\d+)\.(\d+),(\d+)\.(\d+) (\d+) (\d+)$")


def parse_profile(text: str, module: str) -> list[Block]:
    """The blocks of a text coverage profile (``mode:`` line, then ``FILE:L.C,L.C STATEMENTS COUNT``)
    of `module`'s files, a block listed more than once (several binaries) reached when any says so."""
    found: dict[tuple[str, int, int, int, int], Block] = {}
    prefix = module.rstrip("/") + "/"
    for line in text.splitlines():
        match = BLOCK_LINE.match(line.strip())
        if not match or not match["file"].startswith(prefix):
            continue
        path = match["file"][len(prefix) :]
        start, start_column, end, end_column, statements, hits = (int(match[n]) for n in range(2, 8))
        key = (path, start, start_column, end, end_column)
        known = found.get(key)
        reached = hits > 0 or (known is not None and known.reached)
        found[key] = Block(path, start, start_column, end, end_column, statements, reached)
    return sorted(found.values(), key=lambda b: (b.path, b.start, b.start_column))


@dataclass(frozen=True, slots=True, order=True)
class Function:
    """A function of the profile: its file (relative to the module), first line and name."""

    path: str
    line: int
    name: str


def functions_of(lines: Iterable[tuple[str, int, str]], module: str) -> list[Function]:
    """`fixtures.cover.function_lines` relative to the module."""
    prefix = module.rstrip("/") + "/"
    return sorted(
        Function(file[len(prefix) :], line, name) for file, line, name in lines if file.startswith(prefix)
    )


def blocks_by_function(blocks: Sequence[Block], functions: Sequence[Function]) -> dict[Function, list[Block]]:
    """Each block under the function it starts in: the last function of its file starting at or before
    it (a closure's blocks are its enclosing function's)."""
    owned: dict[Function, list[Block]] = {function: [] for function in functions}
    by_file: dict[str, list[Function]] = {}
    for function in sorted(functions):
        by_file.setdefault(function.path, []).append(function)
    starts = {path: [function.line for function in listed] for path, listed in by_file.items()}
    for block in blocks:
        index = bisect_right(starts.get(block.path, []), block.start) - 1
        if index >= 0:
            owned[by_file[block.path][index]].append(block)
    return owned


def source_url(tag: str, path: str, start: int, end: int) -> str:
    """The lines `start` to `end` of `path` at `tag` on GitHub."""
    return f"{SOURCE_REPOSITORY}/blob/{tag}/{path}#L{start}-L{end}"


PSEUDO_VERSION = re.compile(r"\d{14}-(?P<commit>[0-9a-f]{12})$")


def release_tag(release: str) -> str:
    """The git reference of a release on GitHub: `v2.14.9`, or the commit of a pseudo-version."""
    pseudo = PSEUDO_VERSION.search(release)
    return pseudo["commit"] if pseudo else f"v{release}"


def _figures(blocks: Iterable[Block]) -> tuple[int, int]:
    listed = list(blocks)
    return sum(b.statements for b in listed), sum(b.statements for b in listed if b.reached)


def coverage_document(
    *,
    run_id: str,
    release: str,
    module: str,
    blocks: Sequence[Block],
    functions: Sequence[Function],
    read_source: Callable[[str], list[str]],
    counter_files: int,
    engine: bool = False,
    restarts: int = 0,
    surface: Surface = MAPPING_SURFACE,
) -> dict[str, Any]:
    """The coverage file's content: the surface's figures in total, per file and per function, the
    surface's functions missing at this release, and every unreached block of the surface with its
    source (`read_source(path)`: the file's lines) and link. `counter_files`: the processes that wrote
    counters; `engine`: whether the release's engine (`--oracle engine`) was one of them; `restarts`:
    servers restarted after a fault (the run's journal), whose counters are lost."""
    tag = release_tag(release)
    owned = blocks_by_function(blocks, functions)
    chosen = [function for function in functions if surface.wants(function.path, function.name)]
    surface_blocks = [block for function in chosen for block in owned[function]]
    present = {function.name for function in functions} | {f"{f.path}:{f.name}" for f in functions}
    files = []
    for path in sorted({function.path for function in chosen}):
        statements, covered = _figures(b for b in surface_blocks if b.path == path)
        whole_statements, whole_covered = _figures(b for b in blocks if b.path == path)
        files.append(
            {
                "path": path,
                "whole": path in surface.files,
                "statements": statements,
                "covered": covered,
                "file_statements": whole_statements,
                "file_covered": whole_covered,
            }
        )
    rows = []
    unreached: list[dict[str, Any]] = []
    for function in chosen:
        statements, covered = _figures(owned[function])
        rows.append(
            {
                "path": function.path,
                "name": function.name,
                "line": function.line,
                "statements": statements,
                "covered": covered,
            }
        )
        unreached += _unreached(function.name, owned[function], read_source, tag)
    statements, covered = _figures(surface_blocks)
    return {
        "format": FORMAT,
        "version": VERSION,
        "run_id": run_id,
        "release": release,
        "tag": tag,
        "module": module,
        "counter_files": counter_files,
        "engine": engine,
        "restarts": restarts,
        "surface": {
            "files": list(surface.files),
            "functions": list(surface.functions),
            "former": list(surface.former),
        },
        "statements": statements,
        "covered": covered,
        "files": files,
        "functions": rows,
        "missing": [name for name in (*surface.files, *surface.functions) if not _has(name, present, files)],
        "unreached": unreached,
    }


def _unreached(
    function: str, blocks: Sequence[Block], read_source: Callable[[str], list[str]], tag: str
) -> list[dict[str, Any]]:
    """The blocks of `function` no process reached, each with its first source lines, its link at the
    release's tag and why it may be unreachable (`why_unreachable`)."""
    entries = []
    for block in blocks:
        if block.reached:
            continue
        lines = read_source(block.path)[block.start - 1 : block.end]
        source = "\n".join(lines[:SOURCE_LINES])
        entries.append(
            {
                "path": block.path,
                "function": function,
                "start": block.start,
                "end": block.end,
                "statements": block.statements,
                "url": source_url(tag, block.path, block.start, block.end),
                "source": source,
                "why": why_unreachable(function, source),
            }
        )
    return entries


def _has(name: str, present: set[str], files: list[dict[str, Any]]) -> bool:
    return name in present or any(item["path"] == name for item in files)


def percent(covered: int, statements: int) -> str:
    """`92.8 %`, or `-` for no statements."""
    return f"{100 * covered / statements:.1f} %" if statements else "-"


@dataclass(frozen=True, slots=True)
class Figure:
    """Statements of one file or function of the surface, and how many a case reached."""

    path: str
    name: str
    """The function's name, '' for a file."""
    statements: int
    covered: int
    line: int = 0
    whole: bool = False
    """A file counted whole (else only the surface's functions in it)."""

    @property
    def percent(self) -> str:
        return percent(self.covered, self.statements)


@dataclass(frozen=True, slots=True)
class Unreached:
    """A block of the surface no case reached: where, in which function, its source and its link."""

    path: str
    function: str
    start: int
    end: int
    statements: int
    url: str
    source: str
    why: str = ""
    """Why no configuration or message can reach it ('' when one can), `records.coverage.UNREACHABLE`."""


@dataclass(frozen=True, slots=True)
class ReleaseCoverage:
    """One run's coverage of the mapping surface of its release."""

    run_id: str
    release: str
    counter_files: int
    engine: bool
    restarts: int
    """Servers restarted after a fault: their counters are lost."""
    statements: int
    covered: int
    files: tuple[Figure, ...]
    functions: tuple[Figure, ...]
    missing: tuple[str, ...]
    unreached: tuple[Unreached, ...]

    @property
    def percent(self) -> str:
        return percent(self.covered, self.statements)

    @property
    def unreachable(self) -> int:
        """Statements of unreached blocks that no configuration or message can reach (`Unreached.why`)."""
        return sum(block.statements for block in self.unreached if block.why)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ReleaseCoverage:
        """The coverage of a `coverage.json` object; ValueError on a missing or malformed field."""
        return cls(
            **fields_of(data, str, "run_id", "release"),
            **fields_of(data, int, "counter_files", "restarts", "statements", "covered"),
            engine=value_of(data, "engine", bool),
            files=tuple(_figure(item, function=False) for item in objects_of(data, "files")),
            functions=tuple(_figure(item, function=True) for item in objects_of(data, "functions")),
            missing=items_of(data, "missing", str),
            unreached=tuple(
                Unreached(
                    **fields_of(item, str, "path", "function", "url", "source"),
                    **fields_of(item, int, "start", "end", "statements"),
                    why=value_of({"why": "", **item}, "why", str),
                )
                for item in objects_of(data, "unreached")
            ),
        )


def read_coverage(run_dir: Path) -> ReleaseCoverage | None:
    """The run's coverage, or None when it has no `coverage.json`; `ReportError` when the file is not a
    coverage document this builder reads."""
    return read_document(run_dir / COVERAGE_FILE, "coverage", FORMAT, VERSION, ReleaseCoverage.from_json)


def _figure(item: dict[str, Any], *, function: bool) -> Figure:
    """A file's figure (no name, and whether it was counted whole) or a `function`'s (its name and
    line); its fields are checked in the order they are written."""
    path = value_of(item, "path", str)
    name = value_of(item, "name", str) if function else ""
    statements, covered = value_of(item, "statements", int), value_of(item, "covered", int)
    if function:
        return Figure(path, name, statements, covered, line=value_of(item, "line", int))
    return Figure(path, name, statements, covered, whole=value_of(item, "whole", bool))
