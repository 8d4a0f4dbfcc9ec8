"""The places a subject transform applies, and which rules validate it in each.

docs.nats.io, "Subject Mapping and Partitioning" (nats-concepts/subject_mapping), introduction: "There are
two places where you can apply subject mappings: each account has its own set of subject mappings [...]
and you can also use subject mappings as part of the imports and exports between accounts". The same
transform engine also runs in JetStream from 2.10: a stream's ``subject_transform``, the transforms of its
sources and of its mirror (docs.nats.io, "Streams", "Subject Transforms"), and RePublish. The documents
state each function once, for all places, and the subjects document rules whitespace out of every
subject: so every place takes what an account mapping takes, from the release that has the place. A place
that refuses a documented function or takes a destination no subject can come from is a divergence of
that place (observed: 2.10 streams and mirrors take whitespace that sources refuse; 2.11 and later refuse
left and right in all three; see expectations.toml).

An import's transform maps the exporter's subject (the import's ``subject``, the source) to the
importer's (its ``to``, the destination): a stream import delivers a message published on the source in
the exporting account on the mapped subject in the importing one. Where the documents are silent,
observed (2.2.0 to 2.14.5, nats-server ``Account.addServiceImport``): a service import's request travels
that transform backwards, from a subject of the ``to`` pattern (each wildcard token written as ``*``) to
the one exporter subject the transform maps to it; so a service import takes only a destination that can
be read backwards, wildcard tokens and literals with every source ``*`` used exactly once.

Where the documents are silent, observed: in the JetStream places an empty destination is a transform
that keeps the subject (a source's or mirror's entry then only filters): 2.10.27 and 2.14.5 accept
``{"src": "t.*", "dest": ""}`` in all three and store ``t.a`` as ``t.a``. So is an import without a
``to`` (observed, nats-server ``addMappedStreamImportWithClaim`` and ``addServiceImport``: a missing
``to`` is the import's subject): its subjects arrive as they were published. An empty source in the
JetStream places is ``>``, every subject the stream takes: the one document that names a default source,
the RePublish ADR (https://github.com/nats-io/nats-architecture-and-design/blob/main/adr/ADR-28.md, "RePublish
Configuration Option": Source "N[ot required]", default ``>``), gives that; observed, 2.10.27 and 2.14.9
store ``t.a`` of a stream whose ``subject_transform`` is ``{"src": "", "dest": "u.>"}`` as ``u.t.a``
(sources and mirrors differ by release: expectations.toml).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from nats_conformance.reference.errors import MappingError
from nats_conformance.reference.profiles import ReleaseProfile
from nats_conformance.reference.subjects import is_message_subject
from nats_conformance.reference.templates import FunctionNode, LiteralNode, parse_token
from nats_conformance.reference.transform import Transform, compile_transform
from nats_conformance.reference.versions import Version

__all__ = [
    "CONTEXTS",
    "Context",
    "IrreversibleImportError",
    "UnsupportedContextError",
    "compile_in",
    "context_named",
    "jetstream_applies",
    "local_pattern",
    "requested",
]


class UnsupportedContextError(MappingError):
    """The release has no such place."""

    kind = "unsupported-context"


class IrreversibleImportError(MappingError):
    """A service import's destination that cannot be read backwards (a function other than a wildcard,
    or a source ``*`` not used exactly once)."""

    kind = "import-not-reversible"


@dataclass(frozen=True, slots=True)
class Context:
    """One place a transform applies: its name, the first release that has it, and the `feature` words of
    the records whose cases apply a transform there."""

    name: str
    since: Version
    features: tuple[str, ...]

    def supported(self, profile: ReleaseProfile) -> bool:
        """Whether the release of `profile` has this place."""
        return Version.parse(profile.name).release >= self.since


CONTEXTS: Final = (
    Context("mapping", Version(2, 2, 0), ("mapping", "partition", "validation")),
    Context("stream-import", Version(2, 2, 0), ("stream-import",)),
    Context("service-import", Version(2, 2, 0), ("service-import",)),
    Context("stream", Version(2, 10, 0), ("stream-transform",)),
    Context("source", Version(2, 10, 0), ("source-transform",)),
    Context("mirror", Version(2, 10, 0), ("mirror-transform",)),
)


JETSTREAM: Final = frozenset({"stream", "source", "mirror"})
IMPORTS: Final = frozenset({"stream-import", "service-import"})
IMPORT_CYCLE: Final = "import-cycle"
"""How the reference refuses an import whose exporter imports every subject back from the importer: the
two imports form a cycle, whatever their subjects. The documents are silent on cycles; observed
(nats-server ``checkServiceImportsForCycles`` and ``checkStreamImportsForCycles``, which refuse the
configuration whichever of the two imports it adds last)."""
IMPORT_DUPLICATE: Final = "import-duplicate"
"""How the reference refuses an account that lists the same import twice (the same account, subject and
``to``). The documents are silent; observed (2.2.6, 2.10.27, 2.14.9): the configuration is refused,
"stream import already exists" for a stream import, "Duplicate service import subject" for a service
import."""
IMPORT_NOT_EXPORTED: Final = "import-not-exported"
"""How the reference refuses an import of a subject its account does not export. docs.nats.io,
"Accounts": an account shares a subject by exporting it, and another account imports what was
exported; "nsc" "Streams": of an export with a wildcard, "any subject that matches the pattern will be
exported". So an import is taken iff every subject it names is exported: its subject is contained in
the export's (`reference.matching.contains`); of an import only part of whose subjects are exported
the documents say nothing, and observed (2.2.6, 2.9.25 to 2.15.3) it is refused too ("stream import
not authorized", "service import not authorized")."""


def keeping(source: str) -> str:
    """The destination that maps every subject of `source` to itself (each ``*`` in place, as ``$n``)."""
    numbers = iter(range(1, source.count("*") + 1))
    return ".".join(f"${next(numbers)}" if token == "*" else token for token in source.split("."))


def prefixed(source: str, prefix: str) -> str:
    """The `to` a stream import with `prefix` amounts to: the prefix, a ``.`` unless it ends with one,
    then the source kept (`keeping`). The documents are silent on `prefix`; observed (nats-server
    ``addStreamImportWithClaim``): the subjects arrive with the prefix before them, and a prefix that is
    not a literal subject is refused, as this `to` is."""
    return f"{prefix}{'' if prefix.endswith('.') else '.'}{keeping(source)}"


def context_named(name: str) -> Context:
    """The context called `name` (ValueError naming the known ones otherwise)."""
    for context in CONTEXTS:
        if context.name == name:
            return context
    raise ValueError(f"no context named {name!r} (known: {', '.join(c.name for c in CONTEXTS)})")


def compile_in(
    context: str,
    source: str,
    destination: str,
    profile: ReleaseProfile,
    *,
    accounts: tuple[str, str] | None = None,
) -> Transform:
    """`source` -> `destination` validated and compiled as `context` must take it under `profile`'s
    release (raises MappingError as `compile_transform` does; `UnsupportedContextError` before the
    release that has the place). An import's `accounts` (importer, exporter) are what its account
    functions stand for; without them they are refused, as where the transform engine meets them. The
    documents do not describe those functions (`reference.functions`); observed on 2.14.10, an import
    in a configuration file takes ``{{account-hash()}}`` as the importing account's hash and
    ``{{account-hash-import()}}`` as the exporting one's (``t.*`` to
    ``x.{{account-hash()}}.{{account-hash-import()}}.$1`` delivers ``t.a`` of ``EXP`` in ``IMP`` as
    ``x.7bLjePac.6bnb23H0.a``), and refuses ``{{account-hash-leaf-remote()}}`` and any argument."""
    place = context_named(context)
    if source == "" and context in JETSTREAM:
        source = ">"
    if destination == "" and (context in JETSTREAM or context in IMPORTS):
        destination = keeping(source)
    if not place.supported(profile):
        message = f"{context} transforms appeared in {place.since}, not in {profile.name}"
        raise UnsupportedContextError(message)
    importer, exporter = accounts if accounts is not None and context in IMPORTS else (None, None)
    transform = compile_transform(source, destination, profile, account=importer, imported=exporter)
    if context == "service-import":
        _check_reversible(transform)
    return transform


def jetstream_applies(transform: Transform, subject: str) -> bool:
    """Whether a JetStream place's `transform` maps a message published on `subject`: its source matches
    it, and `subject` is one a message travels on (`is_message_subject`). The documents are silent on a
    subject with a wildcard token, which a publisher must not send ("Subject-Based Messaging",
    https://docs.nats.io/nats-concepts/subjects) and a connection that is not pedantic still may; observed
    (2.10.27, 2.14.10, 2.15.3): a stream, its sources and its mirror store such a message under the
    subject it was published on (``t.*.b`` as ``t.*.b`` under ``t.*.*`` -> ``x.$2.$1``)."""
    return is_message_subject(subject) and transform.matches(subject)


def _nodes(transform: Transform) -> list[FunctionNode | LiteralNode]:
    return [parse_token(token, transform.profile) for token in transform.destination.split(".")]


def repeats_a_wildcard(transform: Transform) -> bool:
    """True iff the destination names one of the source's wildcards more than once (``e.* -> $1.$1``)."""
    indexes = [
        index
        for node in _nodes(transform)
        if isinstance(node, FunctionNode) and node.name == "wildcard"
        for index in node.indexes
    ]
    return len(indexes) != len(set(indexes))


def _check_reversible(transform: Transform) -> None:
    indexes: list[int] = []
    for node in _nodes(transform):
        if isinstance(node, FunctionNode):
            if node.name != "wildcard":
                raise IrreversibleImportError(f"a service import cannot read {node.token!r} backwards")
            indexes += node.indexes
    if sorted(indexes) != list(range(1, transform.source.split(".").count("*") + 1)):
        message = f"{transform.destination!r} does not use every '*' of {transform.source!r} exactly once"
        raise IrreversibleImportError(message)


def local_pattern(destination: str, profile: ReleaseProfile) -> str:
    """The importer's subjects of a service import: `destination` with each wildcard token as ``*``
    (a token the release cannot read stays as written)."""
    tokens = []
    for token in destination.split("."):
        try:
            node = parse_token(token, profile)
        except MappingError:
            node = LiteralNode(token)
        tokens.append("*" if isinstance(node, FunctionNode) and node.name == "wildcard" else token)
    return ".".join(tokens)


def requested(transform: Transform, local: str) -> str:
    """The exporter's subject a request on `local` reaches through a service import compiled as
    `transform` by `compile_in`: the one subject it maps to `local` ('' when there is none)."""
    tokens = local.split(".")
    nodes = _nodes(transform)
    open_ended = transform.source.split(".")[-1] == ">"
    if len(tokens) < len(nodes) if open_ended else len(tokens) != len(nodes):
        return ""
    taken = {
        node.indexes[0]: tokens[position]
        for position, node in enumerate(nodes)
        if isinstance(node, FunctionNode)
    }
    numbers = iter(range(1, len(taken) + 1))
    source = [taken[next(numbers)] if token == "*" else token for token in transform.source.split(".")]
    if open_ended:
        source[-1:] = tokens[len(nodes) - 1 :]
    candidate = ".".join(source)
    return candidate if transform.matches(candidate) and transform.apply(candidate) == local else ""
