"""Releases as the records name them, ordered by version number (2.9 before 2.10), not as text."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from nats_conformance.reference.errors import InvalidVersionError
from nats_conformance.reference.versions import Version, build_note

REFERENCE_IMPLEMENTATION = "nats-server"
VersionKey = tuple[bool, Version, str]


def version_key(version: str) -> VersionKey:
    """Sort key of a version text: versions in version order (``2.11.0-RC.1`` before ``2.11.0``), then the
    text itself; a text that is no version (``system``) sorts first, by text."""
    try:
        parsed = Version.parse(version)
    except InvalidVersionError:
        return False, Version(0, 0), version
    return True, parsed, version


@dataclass(frozen=True, slots=True)
class Release:
    """One tested target: the implementation and the version it announced (``server_version``)."""

    implementation: str
    version: str

    @property
    def label(self) -> str:
        """``2.14.5`` for nats-server, ``<implementation> <version>`` for any other implementation."""
        if self.implementation == REFERENCE_IMPLEMENTATION:
            return self.version
        return f"{self.implementation} {self.version}"

    @property
    def note(self) -> str:
        """What built it when a distribution did (`build_note`), else ''."""
        return build_note(self.version)

    @property
    def key(self) -> tuple[bool, str, VersionKey]:
        """Sort key: nats-server first, then by implementation name and version number."""
        return (
            self.implementation != REFERENCE_IMPLEMENTATION,
            self.implementation,
            version_key(self.version),
        )


def sorted_releases(releases: Iterable[Release]) -> list[Release]:
    """Distinct releases in version order."""
    return sorted(set(releases), key=lambda release: release.key)
