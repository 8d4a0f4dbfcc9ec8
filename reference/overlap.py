"""An account's mappings together: where a subject may go when several sources match it.

docs.nats.io, "Subject Mapping and Partitioning" (nats-concepts/subject_mapping) states each mapping on
its own and is silent on a subject that two or more sources match. The reference therefore accepts any of
them: a subject's candidates are the subjects each matching mapping maps it to, or the subject itself when
no source matches. Which candidate a server picks is not a rule of the documents; the suite records the
pick, and a server that picks another for the same configuration after a reload or a restart is a
finding of its own (`suites.families.overlap`).

What is in force is documented: a changed mapping takes effect on a configuration reload, and in
operator mode "as soon as you push the updated account JWT" (the same page's introduction).
"""

from __future__ import annotations

from collections.abc import Sequence

from nats_conformance.reference.transform import Transform

__all__ = ["candidates", "matching"]


def matching(transforms: Sequence[Transform], subject: str) -> list[Transform]:
    """The mappings whose source matches `subject`, in the order given."""
    return [transform for transform in transforms if transform.matches(subject)]


def candidates(transforms: Sequence[Transform], subject: str) -> tuple[str, ...]:
    """Every subject `subject` may arrive on: each matching mapping's, without repeats, in the order
    given; the subject itself when no source matches."""
    mapped = (transform.apply(subject) for transform in matching(transforms, subject))
    return tuple(dict.fromkeys(mapped)) or (subject,)
