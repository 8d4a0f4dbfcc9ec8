"""Server versions: one type for every release, release line, pre-release and Go pseudo-version.

A version is ``MAJOR.MINOR.PATCH`` with an optional ``-PRERELEASE`` and ``+BUILD``, as Semantic Versioning
2.0.0 spells it (semver.org), with an optional leading ``v`` (Go module versions: ``v2.14.5``). Accepted:
releases (``2.14.5``), pre-releases (``2.14.6-RC.1``, ``2.11.0-beta.2``, ``2.14.0-dev``), Go
pseudo-versions (``v2.12.1-0.20250101123456-abcdef123456``, a pre-release of ``2.12.1``: Go Modules
Reference, "Pseudo-versions") and release lines (``2.10``: major and minor only).

Order is semver precedence (semver.org, item 11): numbers numerically, a pre-release before its release,
pre-release identifiers one by one (numeric ones numerically and before alphanumeric ones, which compare
in ASCII order; fewer identifiers first when all others are equal); build metadata is ignored. A release
line sorts before every version of the line, so ``2.10 <= v`` holds for all ``2.10.x`` and
``v <= 2.10`` holds for none of them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import total_ordering
from typing import Final

from nats_conformance.reference.errors import InvalidVersionError

__all__ = ["Version"]

_NUMBER: Final = r"(?:0|[1-9][0-9]*)"
_IDENTIFIERS: Final = r"[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*"
_VERSION: Final = (
    rf"v?(?P<major>{_NUMBER})\.(?P<minor>{_NUMBER})"
    rf"(?:\.(?P<patch>{_NUMBER})(?:-(?P<pre>{_IDENTIFIERS}))?(?:\+(?P<build>{_IDENTIFIERS}))?)?"
)
_WHOLE: Final = re.compile(_VERSION, re.ASCII)
_EMBEDDED: Final = re.compile(rf"(?<![0-9A-Za-z.+-]){_VERSION}(?![0-9A-Za-z.+-])", re.ASCII)
_LEADING_ZERO: Final = re.compile(r"0[0-9]+", re.ASCII)
_FORMS: Final = "a release such as 2.14.5, a line such as 2.10, or a pre-release such as 2.14.6-RC.1"
_PSEUDO_TAIL: Final = re.compile(r"[0-9]{14}-[0-9a-f]{12}", re.ASCII)
"""The last pre-release identifier of a Go pseudo-version: commit time and 12 hex digits of its hash."""


@total_ordering
@dataclass(frozen=True, slots=True)
class Version:
    """A nats-server version: ``Version(2, 14, 5)``, ``Version(2, 10)`` (a line), or parsed from text.

    Attributes:
        major, minor: the release line.
        patch: the patch number; None for a release line.
        prerelease: the dot-separated pre-release identifiers (``("RC", "1")``); empty for a release.
        build: the build metadata identifiers; kept for ``str`` but ignored by equality and order.
    """

    major: int
    minor: int
    patch: int | None = None
    prerelease: tuple[str, ...] = ()
    build: tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        if min(self.major, self.minor, 0 if self.patch is None else self.patch) < 0:
            raise InvalidVersionError(f"version numbers cannot be negative (got {self!s})")
        if self.patch is None and (self.prerelease or self.build):
            raise InvalidVersionError(f"a release line has no pre-release or build part (got {self!s})")

    @classmethod
    def parse(cls, text: str) -> Version:
        """The version ``text`` spells (surrounding whitespace and a leading ``v`` allowed).

        Raises:
            InvalidVersionError: ``text`` is no version (one line, naming the accepted forms).
        """
        found = _WHOLE.fullmatch(text.strip()) if isinstance(text, str) else None
        if found is None:
            raise InvalidVersionError(f"not a version: {text!r} (expected {_FORMS})")
        return cls._of(found, text)

    @classmethod
    def parse_or_none(cls, text: str) -> Version | None:
        """The version ``text`` spells, or None when it spells none (``system``, a path, a URL)."""
        try:
            return cls.parse(text)
        except InvalidVersionError:
            return None

    @classmethod
    def search(cls, text: str) -> Version | None:
        """The first whole version written inside ``text`` (``nats-server: v2.14.5`` gives 2.14.5)."""
        found = _EMBEDDED.search(text)
        return cls._of(found, text) if found else None

    @classmethod
    def _of(cls, found: re.Match[str], text: str) -> Version:
        pre = tuple(found["pre"].split(".")) if found["pre"] else ()
        if any(_LEADING_ZERO.fullmatch(identifier) for identifier in pre):
            raise InvalidVersionError(f"not a version: {text!r} (a numeric pre-release part starts with 0)")
        patch = found["patch"]
        return cls(
            int(found["major"]),
            int(found["minor"]),
            None if patch is None else int(patch),
            pre,
            tuple(found["build"].split(".")) if found["build"] else (),
        )

    @property
    def line(self) -> Version:
        """The release line, ``2.14`` for ``2.14.6-RC.1``."""
        return Version(self.major, self.minor)

    @property
    def release(self) -> Version:
        """The release this version is, or precedes: ``2.14.6`` for ``2.14.6-RC.1``; a line stays a line."""
        return Version(self.major, self.minor, self.patch)

    @property
    def base(self) -> Version:
        """The release a Go pseudo-version was built on (Go Modules Reference, "Pseudo-versions"):
        ``2.12.1-0.20250101123456-abcdef123456`` on 2.12.0, ``2.14.6-RC.1.0.20250101123456-abcdef123456``
        on 2.14.6-RC.1; any other version is its own base."""
        pre = self.prerelease
        if self.patch is None or len(pre) < 2 or pre[-2] != "0" or not _PSEUDO_TAIL.fullmatch(pre[-1]):
            return self
        if len(pre) > 2:
            return Version(self.major, self.minor, self.patch, pre[:-2])
        return Version(self.major, self.minor, max(self.patch - 1, 0))

    @property
    def is_line(self) -> bool:
        """True for a release line (``2.10``), which names no single release."""
        return self.patch is None

    @property
    def is_stable(self) -> bool:
        """True for a release (``2.14.5``): neither a line nor a pre-release, dev build or pseudo-version."""
        return self.patch is not None and not self.prerelease

    def _key(self) -> tuple[int, int, int, bool, tuple[tuple[bool, int, str], ...]]:
        identifiers = tuple(
            (False, int(part), "") if part.isdigit() else (True, 0, part) for part in self.prerelease
        )
        patch = -1 if self.patch is None else self.patch
        return self.major, self.minor, patch, not self.prerelease, identifiers

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return self._key() < other._key()

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}"
        if self.patch is not None:
            text += f".{self.patch}"
        if self.prerelease:
            text += "-" + ".".join(self.prerelease)
        if self.build:
            text += "+" + ".".join(self.build)
        return text


DISTRIBUTION_BUILDS: Final = {"debian": "distribution build (Debian)"}
"""What the first build metadata identifier of a version names (`2.9.10+debian.1.b3`: Debian's package
of 2.9.10, `fixtures.distribution`)."""


def build_note(version: str) -> str:
    """`distribution build (Debian)` for a version a distribution built (`2.9.10+debian.1.b3`), else ''."""
    parsed = Version.parse_or_none(version)
    return DISTRIBUTION_BUILDS.get(parsed.build[0], "") if parsed and parsed.build else ""
