"""One row per case: the record every suite writes and every report reads (see docs/record-schema.md).

Bump `SCHEMA_VERSION` on any change that a reader of the previous version would misread; readers
refuse records newer than they know.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from typing import Final

import pyarrow as pa

SCHEMA_VERSION: Final = 1

VERDICTS: Final = ("agree", "diverge", "expected", "unknown")
"""Every case ends in exactly one: the server agreed with the reference, it diverged, it diverged in a
way the expectations file lists, or the run could not tell (the server or the network failed)."""

FEATURES: Final = (
    "mapping",
    "validation",
    "matching",
    "partition",
    "weighted",
    "republish",
    "streaming",
)


@dataclass(frozen=True, slots=True)
class Case:
    """One checked case. Fields that do not apply to a feature stay at their defaults."""

    run_id: str
    case_id: int
    implementation: str
    server_version: str
    backend: str
    feature: str
    functions: str
    source: str
    destination: str
    subject: str
    expected: str
    observed: str
    verdict: str
    detail: str = ""
    expectation: str = ""
    case_class: str = ""
    partitions: int = 0
    bucket: int = -1
    seed: int = 0
    duration_us: int = 0


@dataclass(frozen=True, slots=True)
class CaseBlock:
    """Many cases with one verdict that share every column of `shared` except the per-case ones:
    case id, subject, expected, observed and (when given) bucket. Volume suites produce these instead
    of one `Case` per subject."""

    shared: Case
    case_ids: Sequence[int]
    subjects: Sequence[str]
    expected: Sequence[str]
    observed: Sequence[str]
    buckets: Sequence[int] | None = None

    def __len__(self) -> int:
        return len(self.subjects)

    def case(self, index: int) -> Case:
        """The block's case at `index`."""
        s = self.shared
        bucket = self.buckets[index] if self.buckets is not None else s.bucket
        return replace(
            s,
            case_id=self.case_ids[index],
            subject=self.subjects[index],
            expected=self.expected[index],
            observed=self.observed[index],
            bucket=bucket,
        )

    def cases(self) -> list[Case]:
        """The block as single cases (for small blocks and tests)."""
        return [self.case(index) for index in range(len(self))]


PER_CASE: Final = ("case_id", "subject", "expected", "observed", "bucket")
"""The columns a `CaseBlock` holds per case; the others come from its `shared` case."""


ARROW_TYPES: Final[dict[str, pa.DataType]] = {
    "run_id": pa.string(),
    "case_id": pa.int64(),
    "implementation": pa.string(),
    "server_version": pa.string(),
    "backend": pa.string(),
    "feature": pa.string(),
    "functions": pa.string(),
    "source": pa.string(),
    "destination": pa.string(),
    "subject": pa.string(),
    "expected": pa.string(),
    "observed": pa.string(),
    "verdict": pa.string(),
    "detail": pa.string(),
    "expectation": pa.string(),
    "case_class": pa.string(),
    "partitions": pa.int32(),
    "bucket": pa.int32(),
    "seed": pa.int64(),
    "duration_us": pa.int64(),
}

COLUMNS: Final = tuple(field.name for field in fields(Case))
SCHEMA: Final = pa.schema(
    [pa.field(name, ARROW_TYPES[name], nullable=False) for name in COLUMNS],
    metadata={b"nats_conformance_schema": str(SCHEMA_VERSION).encode()},
)
assert set(COLUMNS) == set(ARROW_TYPES), "every Case field needs an Arrow type"
