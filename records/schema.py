"""One row per case: the record every suite writes and every report reads (see docs/record-schema.md).

Bump `SCHEMA_VERSION` on any change that a reader of the previous version would misread; readers
refuse records newer than they know.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any, Final, TypeAlias

import pyarrow as pa

from nats_conformance.reference.channels import ServerSpec
from nats_conformance.reference.weighted import WeightedDestination

SCHEMA_VERSION: Final = 7

ADDED_IN: Final = {"steps": 3, "oracle": 4, "kind": 5, "outcome": 5, "command": 6, "exact": 7}
"""Columns added after schema 2, by the version that added them: older records lack them, and readers
derive them (`records.load.upgraded`). Schema 3 also widened `partitions` and `bucket` to 64 bits
(readers widen older records' 32-bit values); schema 5 made `bucket` null where it was negative; schema 6
moved an adapter's command from `detail` to `command`; schema 7 added `exact`."""
EXACT: Final = "exact"
"""The column of a row's exact values that its other columns hold only approximately (JSON by column
name, empty for most rows): `records.writer` fills it, `case_of` puts the values back."""

KINDS: Final = ("case", "summary")
"""A row is one case, or the summary of a unit's distribution test (a weighted list's shares, a partition
mapping's uniformity) over the cases of its messages."""
OUTCOMES: Final = ("delivered", "lost", "unchanged")
"""Where a published message of a partition mapping or weighted list went: delivered (to the partition
or entry `bucket` says; none when it is none of them), lost (delivered nowhere), or unchanged (delivered
on its published subject where the reference has the list's remainder lose it)."""
DELIVERED, LOST, UNCHANGED = OUTCOMES

VERDICTS: Final = ("agree", "diverge", "expected", "unknown")
"""Every case ends in exactly one: the server agreed with the reference, it diverged, it diverged in a
way the expectations file lists, or the run could not tell (the server or the network failed)."""
REFUSED: Final = "mapping-refused"
"""The `difference` of an `unknown` case whose mapping the server refused, so it was never published, in
runs recorded before 2026-11-29 (the unknown-cases threshold does not count these, and the reports still
read them so): such a subject now takes its refusal's judgement (`suites.engine.verdicts.judged_as`)."""
NOT_SUPPORTED: Final = "not-supported"
"""The `difference` of an `unknown` case an adapter was not asked, as its `hello` leaves out the operation
or a mapping function the question uses (docs/adapter-protocol.md): the report shows such a row as `not
supported`, and the unknown-cases threshold does not count these either."""
CRASH_UNCONFIRMED: Final = "server-crash-unconfirmed"
"""The `difference` of an `unknown` case of a unit during which a server at a URL stopped answering: a
crash, most likely, that the server's log (not the suite's to read) cannot confirm."""

FEATURES: Final = (
    "mapping",
    "validation",
    "matching",
    "partition",
    "weighted",
    "republish",
    "streaming",
    "overlap",
    "stream-transform",
    "source-transform",
    "mirror-transform",
    "stream-import",
    "service-import",
    "leaf-deny",
)


LITERAL: Final = "literal"
"""How a class names the functions of a case that uses none."""


def case_class_of(feature: str, functions: str, difference: str) -> str:
    """A divergence's class as text, `feature:fn1+fn2:difference` (`LITERAL` when no function is used);
    empty when nothing differed. The one place the text is made from its three parts."""
    return f"{feature}:{functions or LITERAL}:{difference}" if difference else ""


@dataclass(frozen=True, slots=True)
class Case:
    """One checked case. Fields that do not apply to a feature stay at their defaults.

    A divergence's class is the structured value (feature, functions, difference); `case_class` is its
    text, for display and for the files that key on it (baselines, case-file names)."""

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
    kind: str = "case"
    detail: str = ""
    expectation: str = ""
    difference: str = ""
    partitions: int = 0
    bucket: int | None = None
    outcome: str = ""
    seed: int = 0
    duration_us: int = 0
    stream_subjects: tuple[str, ...] = ()
    headers_only: bool = False
    weights: tuple[WeightedDestination, ...] = ()
    layout: tuple[ServerSpec, ...] = ()
    steps: tuple[str, ...] = ()
    oracle: str = ""
    command: str = ""
    exact: str = ""

    @property
    def case_class(self) -> str:
        return case_class_of(self.feature, self.functions, self.difference)


Texts: TypeAlias = Sequence[str] | pa.Array
"""A column of text: a list, or an Arrow array (`text_array`) as the volume path builds them."""


def text_array(texts: Sequence[str | None]) -> pa.Array:
    """Texts as an Arrow `string` array; as `binary` (their exact bytes) when one holds bytes that are not
    UTF-8 (kept as surrogate escapes), so that equal arrays mean equal bytes either way."""
    try:
        return pa.array(texts, pa.string())
    except UnicodeEncodeError:
        return pa.array(
            [None if text is None else text.encode("utf-8", "surrogateescape") for text in texts], pa.binary()
        )


def text_at(column: Texts, index: int) -> str:
    """The text at `index` of a column (`text_array`'s bytes back to text with surrogate escapes)."""
    if not isinstance(column, pa.Array):
        return column[index]
    value = column[index].as_py()
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value


def texts_of(column: Texts) -> list[str]:
    """Every text of a column, as `text_at` gives them."""
    if not isinstance(column, pa.Array):
        return list(column)
    values: list[Any] = column.to_pylist()
    if pa.types.is_string(column.type):
        return values
    return [value.decode("utf-8", "surrogateescape") for value in values]


@dataclass(frozen=True, slots=True)
class CaseBlock:
    """Many cases with one verdict that share every column of `shared` except the per-case ones:
    case id, subject, expected, observed and (when given) bucket. Volume suites produce these instead
    of one `Case` per subject, their text columns as Arrow arrays (`text_array`)."""

    shared: Case
    case_ids: Sequence[int]
    subjects: Texts
    expected: Texts
    observed: Texts
    buckets: Sequence[int | None] | pa.Array | None = None

    def __len__(self) -> int:
        return len(self.subjects)

    def case(self, index: int) -> Case:
        """The block's case at `index`."""
        s = self.shared
        bucket = s.bucket if self.buckets is None else self.buckets[index]
        if isinstance(bucket, pa.Scalar):
            bucket = bucket.as_py()
        return replace(
            s,
            case_id=self.case_ids[index],
            subject=text_at(self.subjects, index),
            expected=text_at(self.expected, index),
            observed=text_at(self.observed, index),
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
    "kind": pa.string(),
    "detail": pa.string(),
    "expectation": pa.string(),
    "difference": pa.string(),
    "partitions": pa.int64(),
    "bucket": pa.int64(),
    "outcome": pa.string(),
    "seed": pa.int64(),
    "duration_us": pa.int64(),
    "stream_subjects": pa.list_(pa.field("item", pa.string(), nullable=False)),
    "headers_only": pa.bool_(),
    "weights": pa.list_(
        pa.field(
            "item",
            pa.struct(
                [
                    pa.field("destination", pa.string(), nullable=False),
                    pa.field("weight", pa.int32(), nullable=False),
                    pa.field("cluster", pa.string()),
                ]
            ),
            nullable=False,
        )
    ),
    "layout": pa.list_(
        pa.field(
            "item",
            pa.struct(
                [
                    pa.field("channels", pa.list_(pa.field("item", pa.string(), nullable=False))),
                    pa.field("clustered", pa.bool_(), nullable=False),
                ]
            ),
            nullable=False,
        )
    ),
    "steps": pa.list_(pa.field("item", pa.string(), nullable=False)),
    "oracle": pa.string(),
    "command": pa.string(),
    "exact": pa.string(),
}

COLUMNS: Final = tuple(field.name for field in fields(Case))
NULLABLE: Final = ("bucket",)
"""The columns that may hold null: `bucket` of a row with no partition or entry."""
SCHEMA: Final = pa.schema(
    [pa.field(name, ARROW_TYPES[name], nullable=name in NULLABLE) for name in COLUMNS],
    metadata={b"nats_conformance_schema": str(SCHEMA_VERSION).encode()},
)
assert set(COLUMNS) == set(ARROW_TYPES), "every Case field needs an Arrow type"


def arrow_value(name: str, value: Any) -> Any:
    """A `Case` field's value in the form pyarrow takes for its column (nested values as dicts)."""
    if name == "weights":
        return [{"destination": w.destination, "weight": w.weight, "cluster": w.cluster} for w in value]
    if name == "layout":
        return [{"channels": list(s.channels), "clustered": s.clustered} for s in value]
    return value


def case_of(row: Mapping[str, Any]) -> Case:
    """A `Case` from a row read back by any engine (Spark rows as dicts, pandas or pyarrow values)."""
    values: dict[str, Any] = {
        name: _plain(row[name]) if row.get(name) is not None else None for name in COLUMNS
    }
    values.update(json.loads(values.pop(EXACT) or "{}"))  # the values stored only approximately
    values["stream_subjects"] = tuple(str(s) for s in values["stream_subjects"])
    values["steps"] = () if values["steps"] is None else tuple(str(s) for s in values["steps"])
    values["oracle"] = values["oracle"] or ""
    values["command"] = values["command"] or ""
    values["weights"] = weights_of(values["weights"])
    values["layout"] = tuple(
        ServerSpec(tuple(str(c) for c in s["channels"]), bool(s["clustered"])) for s in values["layout"]
    )
    return Case(**values)


def weights_of(items: Any) -> tuple[WeightedDestination, ...]:
    """A `weights` value read back (mappings with destination, weight and cluster) as entries."""
    return tuple(WeightedDestination(str(w["destination"]), int(w["weight"]), w["cluster"]) for w in items)


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python value it holds; other values (lists, arrays of dicts) as they are."""
    item = getattr(value, "item", None)
    return item() if callable(item) and getattr(value, "ndim", 1) == 0 else value
