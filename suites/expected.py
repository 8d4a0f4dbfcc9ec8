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
from collections.abc import Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Final

import pyarrow as pa

from records.schema import text_array, texts_of
from reference.profiles import ReleaseProfile
from reference.transform import Transform, compile_transform

PARALLEL_FROM: Final = 50_000
"""Batches with at least this many subjects use the worker."""

_pool: ProcessPoolExecutor | None = None


def _apply_all(profile: ReleaseProfile, mappings: Sequence[tuple[str, str, pa.Array]]) -> list[pa.Array]:
    return [
        text_array(compile_transform(source, destination, profile).apply_all(texts_of(subjects)))
        for source, destination, subjects in mappings
    ]


def _worker() -> ProcessPoolExecutor:
    global _pool  # noqa: PLW0603 - one worker for the whole process, started on first use
    if _pool is None:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["reference.transform"])
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
        self._future: Future[list[pa.Array]] | None = None
        self._by_transform: dict[int, tuple[pa.Array, pa.Array]] | None = None
        if self._remote:
            profile = groups[0][0].profile
            mappings = [
                (groups[i][0].source, groups[i][0].destination, self._subjects[i]) for i in self._remote
            ]
            self._future = _worker().submit(_apply_all, profile, mappings)

    def of(self, transform: Transform) -> tuple[pa.Array, pa.Array]:
        """The subjects of `transform`'s group (one of this batch's transforms) and their expected
        subjects."""
        if self._by_transform is None:
            remote = dict(zip(self._remote, self._future.result() if self._future else [], strict=True))
            self._by_transform = {
                id(t): (
                    self._subjects[index],
                    remote[index] if index in remote else text_array(t.apply_all(subjects)),
                )
                for index, (t, subjects) in enumerate(self.groups)
            }
        return self._by_transform[id(transform)]
