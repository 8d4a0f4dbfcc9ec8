"""A leaf node remote's deny lists (docs.nats.io, "Configuration" of leaf nodes, "LeafNode remotes Entry
Block", https://docs.nats.io/running-a-nats-service/configuration/leafnodes/leafnode_conf): messages on
the subjects of ``deny_exports`` are not sent to the hub, those of ``deny_imports`` not received from it.
Each entry is a subject, wildcards allowed, and a message is denied when its subject matches an entry as
it would a subscription's ("Subject-Based Messaging", https://docs.nats.io/nats-concepts/subjects,
"Wildcards").

The documents do not say yet what an account function in an entry stands for, so the source of 2.14.10
(``leafRemoteDenyPermissions``, server/leafnode.go) and its servers decide: ``{{account-hash()}}`` is
the hash of the remote's local account, ``{{account-hash-leaf-remote()}}`` that of the hub's account the
leaf node is bound to; ``{{account-hash-import()}}``, an argument, or an entry that is no subject (a
space) makes the leaf node refuse its configuration.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from nats_conformance.reference.errors import MappingError
from nats_conformance.reference.matching import matches
from nats_conformance.reference.profiles import ReleaseProfile
from nats_conformance.reference.subjects import is_server_valid_subject
from nats_conformance.reference.templates import resolve_account_functions

__all__ = ["DenyList", "InvalidDenySubjectError", "deny_list"]


class InvalidDenySubjectError(MappingError):
    """A deny list entry that is no subject (the server's rule, `is_server_valid_subject`)."""

    kind = "invalid-deny-subject"


@dataclass(frozen=True, slots=True)
class DenyList:
    """One deny list with its account functions resolved: `patterns`, and the `functions` they used."""

    patterns: tuple[str, ...]
    functions: tuple[str, ...]

    def denies(self, subject: str) -> bool:
        """True iff a message on `subject` is denied: it matches one of the patterns."""
        return any(matches(pattern, subject) for pattern in self.patterns)


def deny_list(entries: Sequence[str], profile: ReleaseProfile, account: str, remote: str) -> DenyList:
    """The deny list `entries` of a remote whose local account is `account`, bound to the hub's account
    `remote`, on `profile`'s release.

    Raises:
        InvalidDenySubjectError: an entry that is no subject.
        MappingError: an account function the leaf node refuses (`resolve_account_functions`).
    """
    patterns: list[str] = []
    used: list[str] = []
    for entry in entries:
        if not is_server_valid_subject(entry):
            raise InvalidDenySubjectError(f"{entry!r} is not a valid subject")
        pattern, functions = resolve_account_functions(entry, profile, account, leaf_remote=remote)
        patterns.append(pattern)
        used += functions
    return DenyList(tuple(patterns), tuple(dict.fromkeys(used)))
