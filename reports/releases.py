"""Releases as the records name them, ordered by version number (2.9 before 2.10), not as text."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_NUMBER = re.compile(r"\d+")
REFERENCE_IMPLEMENTATION = "nats-server"


def version_key(version: str) -> tuple[tuple[int, ...], int, str]:
    """Sort key of a version text: its dotted numbers, then pre-releases (``2.11.0-RC.1``) before the
    release, then the text itself. Anything without numbers (``system``) sorts first."""
    core, _, suffix = version.strip().lstrip("v").partition("-")
    numbers = tuple(int(part) for part in _NUMBER.findall(core))
    return numbers, 0 if suffix else 1, version


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
    def key(self) -> tuple[bool, str, tuple[tuple[int, ...], int, str]]:
        """Sort key: nats-server first, then by implementation name and version number."""
        return (
            self.implementation != REFERENCE_IMPLEMENTATION,
            self.implementation,
            version_key(self.version),
        )


def sorted_releases(releases: Iterable[Release]) -> list[Release]:
    """Distinct releases in version order."""
    return sorted(set(releases), key=lambda release: release.key)
