"""`nats-conformance surface R1 R2 [--json FILE]`: the mapping surface a nats-server release declares in
its Go source, what R2 adds to it or removes from R1's, and which of its functions the reference does
not model.

A release's surface is read with regular expressions from its module source, which the Go module proxy
serves (`fixtures.cover.module_source`); no Go code is built. Its three parts:

- functions: the name in each ``<name>MappingFunctionRegEx = regexp.MustCompile(`{{\\s*NAME\\s*\\(...``
  of server/subject_transform.go (server/accounts.go before 2.10), the form of every release from 2.8
  to 2.15. A ``[sS]`` class (from 2.9 either initial is accepted) reads as its lower-case letter, and a
  name the reference knows takes its spelling (`reference.functions.canonical_name`).
- error codes: server/errors.json's JetStream API errors (from 2.3), ``constant`` -> ``error_code``.
- config keys: the JSON tags of the stream structs of mapping (`STRUCTS`) in server/stream.go, the
  `StreamConfig` fields typed by one of them, and the keys the configuration file's parsing in
  server/opts.go switches on (`BLOCKS`) for a mapping destination, an import and an export.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from nats_conformance.fixtures.cover import module_source
from nats_conformance.fixtures.options import OptionError
from nats_conformance.fixtures.provision import NATS_SERVER, parse_version_spec
from nats_conformance.reference.cli import Parser
from nats_conformance.reference.errors import ConformanceError
from nats_conformance.reference.functions import FUNCTIONS, canonical_name
from nats_conformance.reference.versions import Version

TRANSFORM_FILES: Final = ("server/subject_transform.go", "server/accounts.go")
FUNCTION: Final = re.compile(
    r"MappingFunctionRegEx\s*=\s*regexp\.MustCompile\(`\{\{\\s\*(?P<name>[^`\\]+)\\s\*\\\("
)
"""A mapping function's regular expression in Go: ``fooMappingFunctionRegEx = regexp.MustCompile(...``."""
LETTER_CLASS: Final = re.compile(r"\[(\w)\w\]")
STRUCTS: Final = (
    "SubjectTransformConfig",
    "RePublish",
    "StreamSource",
    "StreamConsumerSource",
    "ExternalStream",
)
"""The structs whose every JSON tag counts: stream subject transforms, sources and mirrors, RePublish."""
CONTAINER: Final = "StreamConfig"
"""The struct whose fields count only when typed by one of `STRUCTS` (`mirror`, `sources`...)."""
STRUCT: Final = re.compile(r"^type (?P<name>\w+) struct \{\n(?P<body>.*?)^\}", re.M | re.S)
FIELD: Final = re.compile(r"^\t\w+\s+(?P<type>[^`\n]+?)\s+`[^`\n]*json:\"(?P<key>[^,\"]+)", re.M)
BLOCKS: Final = {
    "mappings": "parseAccountMapDest",
    "imports": "parseImportStreamOrService",
    "exports": "parseExportStreamOrService",
}
"""The configuration file's blocks, and the function of server/opts.go that parses one entry of each."""
KEY_SWITCH: Final = re.compile(r"^(?P<indent>\t+)switch strings\.ToLower\(\w+\) \{$", re.M)
PARTS: Final = ("functions", "error codes", "config keys")


@dataclass(frozen=True, slots=True)
class Surface:
    """The mapping surface a release's source declares (module docstring)."""

    release: str
    functions: frozenset[str]
    error_codes: dict[str, int]
    config_keys: dict[str, frozenset[str]]

    def items(self) -> dict[str, frozenset[str]]:
        """Each part as the items a diff compares: names, ``CONSTANT (code)``, ``BLOCK.key``."""
        return {
            "functions": self.functions,
            "error codes": frozenset(f"{name} ({code})" for name, code in self.error_codes.items()),
            "config keys": frozenset(
                f"{block}.{key}" for block, keys in self.config_keys.items() for key in keys
            ),
        }


@dataclass(frozen=True, slots=True)
class SurfaceDiff:
    """What `new` has that `old` has not (`added`) and the reverse (`removed`), per part (`PARTS`)."""

    old: str
    new: str
    added: dict[str, frozenset[str]]
    removed: dict[str, frozenset[str]]


def functions_in(go: str) -> frozenset[str]:
    """The mapping function names of a transform parser's Go source (module docstring)."""
    names = (LETTER_CLASS.sub(lambda m: m[1].lower(), found["name"]) for found in FUNCTION.finditer(go))
    return frozenset(canonical_name(name) or name for name in names)


def error_codes_in(text: str) -> dict[str, int]:
    """``constant`` -> ``error_code`` of an errors.json."""
    return {entry["constant"]: int(entry["error_code"]) for entry in json.loads(text)}


def struct_keys_in(go: str) -> dict[str, frozenset[str]]:
    """The JSON tags of `STRUCTS` in Go source, and of `CONTAINER`'s fields typed by one of them."""
    typed = re.compile(rf"\b(?:{'|'.join(STRUCTS)})\b")
    keys = {}
    for struct in STRUCT.finditer(go):
        fields = FIELD.finditer(struct["body"])
        if struct["name"] in STRUCTS:
            keys[struct["name"]] = frozenset(field["key"] for field in fields if field["key"] != "-")
        elif struct["name"] == CONTAINER:
            keys[CONTAINER] = frozenset(field["key"] for field in fields if typed.search(field["type"]))
    return keys


def switch_keys_in(go: str) -> dict[str, frozenset[str]]:
    """Per block of `BLOCKS`, the ``case "..."`` strings of the first ``switch strings.ToLower(k)`` of
    its parsing function, at that switch's own depth (a nested switch on a value is left out)."""
    keys = {}
    for block, function in BLOCKS.items():
        body = re.search(rf"^func {function}\(.*?^\}}", go, re.M | re.S)
        switch = KEY_SWITCH.search(body[0]) if body else None
        if body is None or switch is None:
            continue
        indent = switch["indent"]
        rest = body[0][switch.end() :]
        end = re.search(rf"^{indent}\}}", rest, re.M)
        cases = re.findall(rf"^{indent}case (.*):$", rest[: end.start() if end else None], re.M)
        keys[block] = frozenset(key for case in cases for key in re.findall(r'"([^"]*)"', case))
    return keys


def surface_in(source: Path, release: str) -> Surface:
    """The surface of the module source `source` of `release` (files it lacks add nothing)."""

    def read(path: str) -> str:
        file = source / path
        return file.read_text(errors="replace") if file.is_file() else ""

    errors = read("server/errors.json")
    return Surface(
        release,
        frozenset().union(*(functions_in(read(path)) for path in TRANSFORM_FILES)),
        error_codes_in(errors) if errors else {},
        {**struct_keys_in(read("server/stream.go")), **switch_keys_in(read("server/opts.go"))},
    )


def module_release(text: str) -> str:
    """The release (or, for ``@REF``, the pseudo-version) whose module source a spec names."""
    spec = parse_version_spec(text)
    if spec.ref is not None:
        from nats_conformance.fixtures.goproxy import pseudo_version

        return pseudo_version(NATS_SERVER.module, spec.ref)
    if spec.release is None:
        raise OptionError(f"surface reads a release's source: give a release such as 2.14.10, not {text!r}")
    return spec.release


def surface_of(release: str) -> Surface:
    """The surface of a nats-server release (a line such as 2.14 is its pinned patch)."""
    resolved = module_release(release)
    return surface_in(module_source(resolved), resolved)


def diff(old: Surface, new: Surface) -> SurfaceDiff:
    """`new`'s items against `old`'s, part by part (a changed error code is removed and added)."""
    before, after = old.items(), new.items()
    return SurfaceDiff(
        old.release,
        new.release,
        {part: after[part] - before[part] for part in PARTS},
        {part: before[part] - after[part] for part in PARTS},
    )


def unmodelled(surface: Surface, release: str) -> frozenset[str]:
    """The functions of `surface` that `reference.functions` does not model for `release`: unknown
    names, and those it dates after `release`."""
    version = Version.parse(release)
    return frozenset(
        name for name in surface.functions if name not in FUNCTIONS or not FUNCTIONS[name].in_release(version)
    )


def unmodelled_lines(releases: Iterable[str]) -> list[str]:
    """A campaign's line for each release whose source accepts functions the reference does not model
    for it, so that it is never judged silently by an older release's rules; a release whose source
    cannot be read says so in its line (the campaign goes on)."""
    lines = []
    for release in releases:
        try:
            unknown = unmodelled(surface_of(release), module_release(release))
        except ConformanceError as error:
            lines.append(f"surface of {release} not read: {error}")
            continue
        if unknown:
            lines.append(f"{release} adds functions the reference does not model: {shown(unknown)}")
    return lines


def shown(items: frozenset[str]) -> str:
    return ", ".join(sorted(items)) or "none"


def surface_lines(changes: SurfaceDiff, unknown: frozenset[str]) -> list[str]:
    """One line per part and direction, after those naming the functions in `unknown` (those R2's
    reference does not model) that R2 adds, and that it already had."""
    added = changes.added["functions"]
    lines = [
        f"{changes.new} {verb} functions the reference does not model: {shown(names)}"
        for verb, names in (("adds", unknown & added), ("has", unknown - added))
        if names
    ]
    for part in PARTS:
        lines.append(f"{part} added in {changes.new}: {shown(changes.added[part])}")
        lines.append(f"{part} removed since {changes.old}: {shown(changes.removed[part])}")
    return lines


def surface_command(arguments: argparse.Namespace) -> int:
    """Print (and with --json write) the diff of two releases' surfaces; exit 0."""
    old, new = surface_of(arguments.old), surface_of(arguments.new)
    changes, missing = diff(old, new), unmodelled(new, new.release)
    print("\n".join(surface_lines(changes, missing)))
    if arguments.json:
        document = {
            "old": changes.old,
            "new": changes.new,
            "added": {part.replace(" ", "_"): sorted(items) for part, items in changes.added.items()},
            "removed": {part.replace(" ", "_"): sorted(items) for part, items in changes.removed.items()},
            "unmodelled": sorted(missing),
        }
        Path(arguments.json).write_text(json.dumps(document, indent=1) + "\n")
    return 0


def add_surface_command(commands: argparse._SubParsersAction[Parser]) -> None:
    """Register `surface` on a sub-command parser."""
    parser = commands.add_parser(
        "surface",
        help="functions, error codes and config keys a release's source adds",
        description="Reads both releases' module sources (the Go module proxy) and prints what R2 adds and "
        "removes against R1, and the functions the reference does not model. Exit status: 0, or 2 for a "
        "bad release or an unreachable module proxy.",
    )
    parser.add_argument("old", metavar="R1", help="the release compared with (2.14.9, or a line: 2.14)")
    parser.add_argument("new", metavar="R2", help="the release whose additions are listed (2.14.10)")
    parser.add_argument("--json", metavar="FILE", help="also write the differences as JSON")
    parser.set_defaults(handler=surface_command)
