"""Judging a mapping batch by whole columns gives every case the verdict the per-case judge gives it."""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
import pytest

from nats_conformance.records.expectations import Expectations
from nats_conformance.records.schema import CaseBlock, text_array
from nats_conformance.reference.profiles import nearest_profile
from nats_conformance.reference.transform import NOT_DELIVERED, compile_transform
from nats_conformance.suites.engine.verdicts import RunContext, judge_delivery
from nats_conformance.suites.expected import ExpectedSubjects, bucket_of, buckets_of
from nats_conformance.suites.families.mapping import MappingObservation, judge_mapping_batch
from nats_conformance.suites.harness import Observation

SUBJECTS = ["o.3.x", "o.12.x.y", "o.x", "o..x", "o.٣.x", "o.-1.x", "o", "o.\udcff.1", "o.007.x"]


@pytest.mark.parametrize("position", [None, 0, 1, 2, 5, -1, -2, -3, -7])
def test_buckets_of_a_column_are_those_of_each_subject(position: int | None) -> None:
    utf8 = [subject for subject in SUBJECTS if "\udcff" not in subject]
    for subjects in (SUBJECTS, utf8):  # a binary column (bytes that are not UTF-8) and a string one
        buckets = buckets_of(text_array(subjects), position)
        assert buckets.to_pylist() == [bucket_of(subject, position) for subject in subjects]


def test_only_cases_that_arrived_once_where_the_reference_says_join_the_block() -> None:
    profile = nearest_profile("2.14.5")
    transform = compile_transform("m.*.*", "o.{{partition(3,1,2)}}.{{split(1,-)}}", profile)
    subjects = ("m.a-b.c", "m.--.c", "m.\udcff.c", "m.d.e", "m.f.g", "m.h.i", "m.é-x.y")
    expected = transform.apply_all(subjects)
    arrivals = [(index, subject) for index, subject in enumerate(expected) if index not in (1, 3, 4)]
    # 1 maps to no subject (delivered nowhere: agrees on its own), 3 not delivered, 4 on a wrong
    # subject, 5 twice
    arrivals += [(4, "o.9.f"), (5, expected[5])]
    observation = Observation.of(
        len(subjects),
        np.array([index for index, _ in arrivals], np.int64),
        pa.array([subject.encode("utf-8", "surrogateescape") for _, subject in arrivals], pa.binary()),
    )
    observed = MappingObservation(accepted=[(transform, subjects)], deliveries=observation)
    observed.expected = ExpectedSubjects(observed.accepted, parallel=False)
    ids = itertools.count()
    context = RunContext("r", "nats-server", "2.14.5", "process", Expectations(), lambda: next(ids))
    result = judge_mapping_batch(context, observed, 0)
    singles = {case.subject: (case.verdict, case.difference) for case in result.cases}
    assert singles == {
        "m.--.c": ("agree", ""),
        "m.d.e": ("diverge", "not-delivered"),
        "m.f.g": ("diverge", "wrong-subject"),
        "m.h.i": ("diverge", "duplicated"),
    }
    (nowhere,) = [case for case in result.cases if case.subject == "m.--.c"]
    assert (nowhere.expected, nowhere.observed) == (NOT_DELIVERED, "")
    assert repr(transform.apply("m.--.c")) in nowhere.detail
    (block,) = result.blocks
    assert isinstance(block, CaseBlock)
    agreed = block.cases()
    assert [case.subject for case in agreed] == ["m.a-b.c", "m.\udcff.c", "m.é-x.y"]
    for case in agreed:
        index = subjects.index(case.subject)
        alone = judge_delivery(
            context,
            transform=transform,
            subject=case.subject,
            arrived=[expected[index]],
            failure="",
            seed=0,
            duration_us=0,
        )
        assert (case.verdict, case.expected, case.observed, case.bucket) == (
            alone.verdict,
            alone.expected,
            alone.observed,
            alone.bucket,
        )
    assert sorted(case.case_id for case in [*result.cases, *agreed]) == list(range(len(subjects)))


@pytest.mark.parametrize(
    ("arrived", "failure", "verdict", "difference"),
    [
        ([], "", "agree", ""),
        (["o.x"], "", "diverge", "delivered-not-a-subject"),
        ([], "connection reset", "unknown", "unknown"),
    ],
)
def test_a_subject_mapped_to_no_subject_is_judged_by_the_reference_outcome(
    arrived: list[str], failure: str, verdict: str, difference: str
) -> None:
    """`split` of a token that is all separator writes ``o.`` (an empty token): the reference's outcome
    is that no subscriber receives it; nothing arriving agrees only when the publication went through."""
    transform = compile_transform("m.*", "o.{{split(1,-)}}", nearest_profile("2.14.5"))
    assert transform.apply("m.--") == "o."
    assert transform.delivers("m.--") == NOT_DELIVERED
    ids = itertools.count()
    context = RunContext("r", "nats-server", "2.14.5", "process", Expectations(), lambda: next(ids))
    case = judge_delivery(
        context, transform=transform, subject="m.--", arrived=arrived, failure=failure, seed=0, duration_us=0
    )
    assert (case.verdict, case.difference, case.expected) == (verdict, difference, NOT_DELIVERED)
