"""The places a subject transform applies, and which rules validate it in each.

docs.nats.io, "Subject Mapping and Partitioning" (nats-concepts/subject_mapping), introduction: "There are
two places where you can apply subject mappings: each account has its own set of subject mappings [...]
and you can also use subject mappings as part of the imports and exports between accounts". The same
transform engine also runs in JetStream from 2.10: a stream's ``subject_transform``, the transforms of its
sources and of its mirror (docs.nats.io, "Streams", "Subject Transforms"), and RePublish. The documents
state each function once, for all places; they are silent on which validator each place runs, so that is
observed (where a place's rule is not stated here, it is the account mapping's, and a server that does
otherwise shows a divergence of that context).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from reference.profiles import ReleaseProfile
from reference.transform import Transform, compile_transform
from reference.versions import Version

__all__ = ["CONTEXTS", "Context", "compile_in", "context_named"]


@dataclass(frozen=True, slots=True)
class Context:
    """One place a transform applies.

    Attributes:
        name: the `context` word of records and reports.
        since: the first release that has the place.
        engine_only: the place runs the bare transform engine, without the account-mapping validator
            (observed: a stream's transforms accept ``left``/``right``, which ``mappings {}`` refuses).
    """

    name: str
    since: Version
    engine_only: bool = False

    def supported(self, profile: ReleaseProfile) -> bool:
        """Whether the release of `profile` has this place."""
        return Version.parse(profile.name).release >= self.since


CONTEXTS: Final = (
    Context("mapping", Version(2, 2, 0)),
    Context("import", Version(2, 2, 0)),
    Context("stream", Version(2, 10, 0), engine_only=True),
    Context("source", Version(2, 10, 0), engine_only=True),
    Context("mirror", Version(2, 10, 0), engine_only=True),
)


def context_named(name: str) -> Context:
    """The context called `name` (ValueError naming the known ones otherwise)."""
    for context in CONTEXTS:
        if context.name == name:
            return context
    raise ValueError(f"no context named {name!r} (known: {', '.join(c.name for c in CONTEXTS)})")


def compile_in(context: str, source: str, destination: str, profile: ReleaseProfile) -> Transform:
    """`source` -> `destination` validated and compiled as `context` takes it under `profile`'s release
    (raises MappingError as `compile_transform` does)."""
    return compile_transform(source, destination, profile, engine_only=context_named(context).engine_only)
