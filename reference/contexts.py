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

Where the documents are silent, observed: in the JetStream places an empty destination is a transform
that keeps the subject (a source's or mirror's entry then only filters): 2.10.27 and 2.14.5 accept
``{"src": "t.*", "dest": ""}`` in all three and store ``t.a`` as ``t.a``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from reference.errors import MappingError
from reference.profiles import ReleaseProfile
from reference.transform import Transform, compile_transform
from reference.versions import Version

__all__ = ["CONTEXTS", "Context", "UnsupportedContextError", "compile_in", "context_named"]


class UnsupportedContextError(MappingError):
    """The release has no such place."""

    kind = "unsupported-context"


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
    Context("import", Version(2, 2, 0), ("import",)),
    Context("stream", Version(2, 10, 0), ("stream-transform",)),
    Context("source", Version(2, 10, 0), ("source-transform",)),
    Context("mirror", Version(2, 10, 0), ("mirror-transform",)),
)


JETSTREAM: Final = frozenset({"stream", "source", "mirror"})


def keeping(source: str) -> str:
    """The destination that maps every subject of `source` to itself (each ``*`` in place, as ``$n``)."""
    numbers = iter(range(1, source.count("*") + 1))
    return ".".join(f"${next(numbers)}" if token == "*" else token for token in source.split("."))


def context_named(name: str) -> Context:
    """The context called `name` (ValueError naming the known ones otherwise)."""
    for context in CONTEXTS:
        if context.name == name:
            return context
    raise ValueError(f"no context named {name!r} (known: {', '.join(c.name for c in CONTEXTS)})")


def compile_in(context: str, source: str, destination: str, profile: ReleaseProfile) -> Transform:
    """`source` -> `destination` validated and compiled as `context` must take it under `profile`'s
    release (raises MappingError as `compile_transform` does; `UnsupportedContextError` before the
    release that has the place)."""
    place = context_named(context)
    if destination == "" and context in JETSTREAM:
        destination = keeping(source)
    if not place.supported(profile):
        message = f"{context} transforms appeared in {place.since}, not in {profile.name}"
        raise UnsupportedContextError(message)
    return compile_transform(source, destination, profile)
