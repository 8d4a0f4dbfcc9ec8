"""The reference's mapped subjects for a batch, computed in a worker process while the batch is published.

Publishing and observing keep the main process busy (frames out, the tap's parsing in), and the
reference is pure Python: for a large batch, a second process working out the expected subjects at the
same time uses the machine's other core. Small batches are computed in place (a worker costs a process
start). The worker compiles each mapping again from its text: compiled transforms hold generated code
and do not travel between processes. Subjects travel to the worker and mapped subjects back as Arrow
arrays (`records.schema.text_array`): their buffers are copied whole, where a list of a million strings
would be pickled one by one.
"""

from __future__ import annotations

import atexit
import multiprocessing
import re
from collections.abc import Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Final

import pyarrow as pa
import pyarrow.compute as pc

from nats_conformance.records.schema import DELIVERED, LOST, text_array, texts_of
from nats_conformance.reference.functions import (
    LEGACY_WILDCARD,
    MAPPING_FUNCTIONS,
    canonical_functions,
    canonical_name,
)
from nats_conformance.reference.profiles import ReleaseProfile
from nats_conformance.reference.transform import Transform, compile_transform

PARALLEL_FROM: Final = 50_000
"""Batches with at least this many subjects use the worker."""

_pool: ProcessPoolExecutor | None = None
FUNCTION_NAME = re.compile(r"\{\{\s*([A-Za-z]+(?:-[A-Za-z]+)*)\s*\(")
Computed = tuple[pa.Array, pa.Array | None]
"""A mapping's expected subjects and, for a partition mapping, the partition number in each."""


ONE_TOKEN_FUNCTIONS = frozenset(function.name for function in MAPPING_FUNCTIONS if function.one_token)
"""Functions whose output is exactly one token; split and the slice/split-from functions may emit more."""


def _one_token(template_token: str) -> bool:
    names = [canonical_name(name) for name in FUNCTION_NAME.findall(template_token)]
    return template_token != ">" and all(name in ONE_TOKEN_FUNCTIONS for name in names)


def partition_position(transform: Transform) -> tuple[int | None, int]:
    """(index of the first `{{partition(n...)}}` token in a mapped subject, partition count n).

    The index counts from the end (negative) when a multi-token function comes before it, and is None
    when multi-token functions on both sides make it vary from subject to subject.
    """
    tokens = transform.destination.split(".")
    for index, token in enumerate(tokens):
        body = token.replace(" ", "").lower()
        if body.startswith("{{partition("):
            count_text = body[len("{{partition(") :].split(",")[0].rstrip(")}")
            count = int(count_text) if count_text.lstrip("-").isdigit() else 0
            if all(_one_token(before) for before in tokens[:index]):
                return index, count
            if all(_one_token(after) for after in tokens[index + 1 :]):
                return index - len(tokens), count
            return None, count
    return None, 0


def bucket_of(subject: str, position: int | None) -> int | None:
    """The partition number at `position` of a mapped subject, or None when there is none."""
    tokens = subject.split(".")
    if position is None or not -len(tokens) <= position < len(tokens):
        return None
    token = tokens[position]
    return int(token) if token.isdigit() and token.isascii() else None


def landing(arrived: Sequence[str], position: int | None) -> tuple[int | None, str]:
    """The `bucket` and `outcome` (records.schema) of a partition mapping's message that arrived on
    `arrived`: the partition of its one arrival (none when it arrived more than once), lost when none."""
    if not arrived:
        return None, LOST
    return (bucket_of(arrived[0], position) if len(arrived) == 1 else None), DELIVERED


def buckets_of(subjects: pa.Array, position: int | None) -> pa.Array:
    """`bucket_of` of every subject of a `text_array`, computed on the whole column (int64): one regular
    expression finds the token at `position` (counted from the end when negative) when it is all ASCII
    digits, null where there is none."""
    if position is None or not pa.types.is_string(subjects.type):
        return pa.array([bucket_of(subject, position) for subject in texts_of(subjects)], pa.int64())
    if position >= 0:
        pattern = rf"^(?:[^.]*\.){{{position}}}(?P<bucket>[0-9]+)(?:\.|$)"
    else:
        pattern = rf"(?:^|\.)(?P<bucket>[0-9]+)(?:\.[^.]*){{{-position - 1}}}$"
    token = pc.struct_field(pc.extract_regex(subjects, pattern), [0])
    return pc.cast(token, pa.int64())


def expected_of(transform: Transform, subjects: Sequence[str]) -> Computed:
    """The reference's subjects for `subjects` (a `text_array`) and, when the destination partitions,
    the partition number each holds (`buckets_of`)."""
    expected = text_array(transform.apply_all(subjects))
    if "partition" not in transform.functions:
        return expected, None
    return expected, buckets_of(expected, partition_position(transform)[0])


def _apply_all(
    profile: ReleaseProfile, mappings: Sequence[tuple[str, str, str | None, pa.Array]]
) -> list[Computed]:
    return [
        expected_of(compile_transform(source, destination, profile, account=account), texts_of(subjects))
        for source, destination, account, subjects in mappings
    ]


def _worker() -> ProcessPoolExecutor:
    global _pool  # noqa: PLW0603 - one worker for the whole process, started on first use
    if _pool is None:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["nats_conformance.reference.transform"])
        _pool = ProcessPoolExecutor(max_workers=1, mp_context=context)
        atexit.register(_pool.shutdown, cancel_futures=True)
    return _pool


class ExpectedSubjects:
    """Subjects and expected subjects per mapping of a batch, as `text_array`s: started at construction,
    read with `of`. Mappings with `{{random(n)}}` are always computed in place (their draws are judged by
    `Transform.accepts`)."""

    def __init__(
        self, groups: Sequence[tuple[Transform, Sequence[str]]], *, parallel: bool | None = None
    ) -> None:
        self.groups = groups
        total = sum(len(subjects) for _, subjects in groups)
        use_worker = total >= PARALLEL_FROM if parallel is None else parallel
        self._remote = [i for i, (t, _) in enumerate(groups) if use_worker and not t.is_random]
        self._subjects = [text_array(subjects) for _, subjects in groups]
        self._future: Future[list[Computed]] | None = None
        self._by_mapping: dict[tuple[str, str], tuple[pa.Array, pa.Array, pa.Array | None]] | None = None
        if self._remote:
            profile = groups[0][0].profile
            mappings = [
                (t.source, t.destination, t.account, self._subjects[i])
                for i, t in ((i, groups[i][0]) for i in self._remote)
            ]
            self._future = _worker().submit(_apply_all, profile, mappings)

    def of(self, transform: Transform) -> tuple[pa.Array, pa.Array, pa.Array | None]:
        """The subjects of `transform`'s mapping (one of this batch's, found by source and destination),
        their expected subjects and, for a partition mapping, the partition number of each expected
        subject."""
        if self._by_mapping is None:
            remote = dict(zip(self._remote, self._future.result() if self._future else [], strict=True))
            self._by_mapping = {
                (t.source, t.destination): (
                    self._subjects[index],
                    *(remote[index] if index in remote else expected_of(t, subjects)),
                )
                for index, (t, subjects) in enumerate(self.groups)
            }
        return self._by_mapping[transform.source, transform.destination]


def functions_named(destination: str) -> tuple[str, ...]:
    """Function names a destination spells, valid or not, as `canonical_functions` gives them (`$n` for
    a `$` placeholder)."""
    names = FUNCTION_NAME.findall(destination)
    return canonical_functions([LEGACY_WILDCARD, *names] if "$" in destination else names)


def instance_of(source: str) -> str:
    """A subject the source matches: each wildcard token as the token ``a``."""
    return ".".join("a" if token in ("*", ">") else token for token in source.split("."))
