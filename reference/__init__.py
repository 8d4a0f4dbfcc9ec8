"""The nats-conformance reference model: the documented (and, where silent, observed) behaviour of NATS
subjects and subject mapping, per nats-server release. Pure standard library; no I/O outside
``__main__`` and ``adapter``.
"""

from __future__ import annotations

from reference.errors import (
    MAPPING_ERROR_KINDS,
    ConformanceError,
    DuplicateDestinationError,
    InvalidArgumentError,
    InvalidDestinationError,
    InvalidSourceError,
    InvalidWeightError,
    MappingError,
    SubjectMismatchError,
    TotalWeightError,
    UnknownFunctionError,
    UnknownVersionError,
    UnsupportedFunctionError,
    WildcardIndexOutOfRangeError,
    WildcardsNotUsedError,
    WrongArgumentCountError,
)
from reference.matching import SubjectIndex, matches
from reference.partition import fnv1a32, partition
from reference.profiles import ALL_FUNCTIONS, NEWEST, RELEASE_LINES, ReleaseLine, ReleaseProfile, for_version
from reference.subjects import (
    is_pedantic_valid,
    is_server_valid_subject,
    is_valid_publish_subject,
    is_valid_subject,
    tokenize,
)
from reference.transform import Transform, compile_transform
from reference.weighted import WeightedDestination, WeightedMapping, compile_weighted, parse_weight

__all__ = [
    "ALL_FUNCTIONS",
    "MAPPING_ERROR_KINDS",
    "NEWEST",
    "RELEASE_LINES",
    "ConformanceError",
    "DuplicateDestinationError",
    "InvalidArgumentError",
    "InvalidDestinationError",
    "InvalidSourceError",
    "InvalidWeightError",
    "MappingError",
    "ReleaseLine",
    "ReleaseProfile",
    "SubjectIndex",
    "SubjectMismatchError",
    "TotalWeightError",
    "Transform",
    "UnknownFunctionError",
    "UnknownVersionError",
    "UnsupportedFunctionError",
    "WeightedDestination",
    "WeightedMapping",
    "WildcardIndexOutOfRangeError",
    "WildcardsNotUsedError",
    "WrongArgumentCountError",
    "compile_transform",
    "compile_weighted",
    "fnv1a32",
    "for_version",
    "is_pedantic_valid",
    "is_server_valid_subject",
    "is_valid_publish_subject",
    "is_valid_subject",
    "matches",
    "parse_weight",
    "partition",
    "tokenize",
]
