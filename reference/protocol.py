"""The adapter protocol's messages as types, and their wire objects (docs/adapter-protocol.md).

This is the one place that knows the protocol's field names: each question parses from a decoded
request object (`question_of`, with the `bad-request` texts of the protocol's field checks) and turns
back into one (`wire`); each answer turns into its answer fields (`answer_fields`) and is read back from
them as the answer to its question (`answer_of`). Both sides of the protocol use it: the reference
serving it (`reference.adapter`) and the client asking a library (`fixtures.clients.adapter`).

The types are plain slotted dataclasses, not frozen ones: a run builds one question and one answer per
question asked, tens of thousands a second.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final, Self, TypeVar, get_args

from nats_conformance.reference.errors import MAPPING_ERROR_KINDS, ConformanceError, SubjectMismatchError
from nats_conformance.reference.functions import LEGACY_WILDCARD, canonical_name
from nats_conformance.reference.weighted import parse_weight

__all__ = [
    "INTERNAL_ERROR",
    "JUDGED_KINDS",
    "MODES",
    "PROTOCOL_VERSION",
    "QUESTIONS",
    "Answer",
    "AnswerError",
    "BadRequestError",
    "Contained",
    "ContainsQuestion",
    "CoverageQuestion",
    "Covered",
    "Greeting",
    "GreetingError",
    "Hello",
    "Mapped",
    "MatchQuestion",
    "Matched",
    "PartitionQuestion",
    "Partitioned",
    "Question",
    "Refusal",
    "TransformQuestion",
    "ValidMappingQuestion",
    "ValidSubjectQuestion",
    "Validity",
    "WeightedEntry",
    "WeightedQuestion",
    "answer_fields",
    "answer_of",
    "question_of",
]

PROTOCOL_VERSION: Final = 2
"""The protocol's version, which a hello declares: 2 adds `contains` and `valid_mapping` (version 1 had
the others); an adapter of version 1 is asked neither."""
PROTOCOL_VERSIONS: Final = (1, 2)
VERSION_2_OPS: Final = frozenset({"contains", "valid_mapping"})
"""The operations version 2 added."""
INTERNAL_ERROR: Final = "internal-error"
"""The error kind of an implementation's own failure ("Answers"), never a refusal of the question."""

Request = Mapping[str, Any]
"""A decoded request object, as read from a request line."""
_Q = TypeVar("_Q")
Check = Callable[[_Q], object] | None
"""Called with a question partly read (the fields before its subject), to refuse it in the order the
reference always has: a mapping's refusal before a missing or mistyped subject."""


class BadRequestError(ConformanceError, ValueError):
    """A request line that is not a well-formed request (answered, never fatal)."""

    kind = "bad-request"


def _field(request: Request, name: str, kind: type, *, optional: bool = False) -> Any:
    """A request field of type `kind` ("Answers": a missing or mistyped field is `bad-request`)."""
    if name not in request or request[name] is None:
        if optional:
            return None
        raise BadRequestError(f"missing field {name!r}")
    value = request[name]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise BadRequestError(f"field {name!r} must be a {kind.__name__} (got {type(value).__name__})")
    return value


# Questions ("Operations (version 1)")


@dataclass(slots=True)
class _OpOnly:
    """A question that is its `op` alone."""

    op: ClassVar[str]

    @classmethod
    def parse(cls, request: Request) -> Self:
        return cls()

    def wire(self) -> dict[str, Any]:
        return {"op": self.op}


@dataclass(slots=True)
class Hello(_OpOnly):
    """`hello` ("hello"): what the implementation is and answers."""

    op: ClassVar[str] = "hello"


@dataclass(slots=True)
class TransformQuestion:
    """`transform` ("transform"): `subject` mapped by `source` -> `destination` under the rules of
    `server_version` (None: the newest), of the bare engine when `engine_only`."""

    op: ClassVar[str] = "transform"
    source: str
    destination: str
    subject: str
    server_version: str | None = None
    engine_only: bool = False

    @classmethod
    def parse(cls, request: Request, check: Check[TransformQuestion] = None) -> TransformQuestion:
        """`check` sees the question before its subject is read (the reference refuses a mapping
        before it looks at the subject)."""
        source = _field(request, "source", str)
        destination = _field(request, "destination", str)
        version = _field(request, "server_version", str, optional=True)
        engine_only = bool(_field(request, "engine_only", bool, optional=True))
        question = cls(source, destination, "", version, engine_only)
        if check is not None:
            check(question)
        question.subject = _field(request, "subject", str)
        return question

    def wire(self) -> dict[str, Any]:
        request = {
            "op": self.op,
            "source": self.source,
            "destination": self.destination,
            "subject": self.subject,
        }
        if self.server_version is not None:
            request["server_version"] = self.server_version
        return {**request, "engine_only": True} if self.engine_only else request


@dataclass(slots=True)
class MatchQuestion:
    """`match` ("match"): whether subscription `pattern` matches `subject`."""

    op: ClassVar[str] = "match"
    pattern: str
    subject: str

    @classmethod
    def parse(cls, request: Request) -> MatchQuestion:
        return cls(_field(request, "pattern", str), _field(request, "subject", str))

    def wire(self) -> dict[str, Any]:
        return {"op": self.op, "pattern": self.pattern, "subject": self.subject}


@dataclass(slots=True)
class ValidSubjectQuestion:
    """`valid_subject` ("valid_subject"): whether `subject` is valid, by the publish rule when
    `literal`."""

    op: ClassVar[str] = "valid_subject"
    subject: str
    literal: bool = False
    lenient: bool = False
    """Version 2: asks a library's lenient check, which may accept what the rule refuses but never
    refuses what it accepts (docs/adapter-protocol.md, "valid_subject")."""

    @classmethod
    def parse(cls, request: Request) -> ValidSubjectQuestion:
        subject = _field(request, "subject", str)
        literal = bool(_field(request, "literal", bool, optional=True))
        return cls(subject, literal, bool(_field(request, "lenient", bool, optional=True)))

    def wire(self) -> dict[str, Any]:
        request = {"op": self.op, "subject": self.subject, "literal": self.literal}
        return {**request, "lenient": True} if self.lenient else request

    @property
    def rule(self) -> str:
        """The rule asked, as a hello's `subject_rules` names it."""
        return ("publish" if self.literal else "subscribe") + ("-lenient" if self.lenient else "")


@dataclass(slots=True)
class PartitionQuestion:
    """`partition` ("partition"): the partition of `tokens` among `n`."""

    op: ClassVar[str] = "partition"
    tokens: list[str]
    n: int

    @classmethod
    def parse(cls, request: Request) -> PartitionQuestion:
        tokens = _field(request, "tokens", list)
        if not all(isinstance(t, str) for t in tokens):
            raise BadRequestError("field 'tokens' must be a list of strings")
        n = _field(request, "n", int)
        if n < 1:
            raise BadRequestError(f"field 'n' must be >= 1 (got {n})")
        return cls(tokens, n)

    def wire(self) -> dict[str, Any]:
        return {"op": self.op, "tokens": self.tokens, "n": self.n}


@dataclass(slots=True)
class WeightedEntry:
    """One destination of a weighted list ("weighted"): `weight` as written (`50` or `"50%"`)."""

    destination: str
    weight: int | str
    cluster: str | None = None

    @classmethod
    def parse(cls, item: object) -> WeightedEntry:
        if not isinstance(item, dict):
            raise BadRequestError("field 'destinations' must be a list of objects")
        weight = item.get("weight")
        if isinstance(weight, bool) or not isinstance(weight, (int, str)):
            raise BadRequestError("field 'weight' must be an integer or text like '50%'")
        destination = _field(item, "destination", str)
        parse_weight(weight)  # an unreadable weight is refused (`invalid-weight`) before the next field
        return cls(destination, weight, _field(item, "cluster", str, optional=True))

    def wire(self) -> dict[str, Any]:
        entry = {"destination": self.destination, "weight": self.weight}
        return entry if self.cluster is None else {**entry, "cluster": self.cluster}


@dataclass(slots=True)
class WeightedQuestion:
    """`weighted` ("weighted"): `subject` mapped by a weighted list of destinations, `draw` (0..99)
    choosing among them, in `cluster`."""

    op: ClassVar[str] = "weighted"
    source: str
    destinations: list[WeightedEntry]
    subject: str
    draw: int
    cluster: str | None = None
    server_version: str | None = None

    @classmethod
    def parse(cls, request: Request, check: Check[WeightedQuestion] = None) -> WeightedQuestion:
        """`check` sees the question before its draw and subject are read (the reference refuses a
        weighted list before it looks at them)."""
        destinations = [WeightedEntry.parse(item) for item in _field(request, "destinations", list)]
        source = _field(request, "source", str)
        cluster = _field(request, "cluster", str, optional=True)
        version = _field(request, "server_version", str, optional=True)
        question = cls(source, destinations, "", 0, cluster, version)
        if check is not None:
            check(question)
        draw = _field(request, "draw", int)
        if not 0 <= draw <= 99:
            raise BadRequestError(f"field 'draw' must be 0..99 (got {draw})")
        question.draw, question.subject = draw, _field(request, "subject", str)
        return question

    def wire(self) -> dict[str, Any]:
        request: dict[str, Any] = {
            "op": self.op,
            "source": self.source,
            "destinations": [entry.wire() for entry in self.destinations],
            "subject": self.subject,
            "draw": self.draw,
        }
        if self.cluster is not None:
            request["cluster"] = self.cluster
        if self.server_version is not None:
            request["server_version"] = self.server_version
        return request


@dataclass(slots=True)
class ContainsQuestion:
    """`contains` ("contains", version 2): whether every subject subscription `filter` matches, the
    subscription `within` matches too."""

    op: ClassVar[str] = "contains"
    filter: str
    within: str

    @classmethod
    def parse(cls, request: Request) -> ContainsQuestion:
        return cls(_field(request, "filter", str), _field(request, "within", str))

    def wire(self) -> dict[str, Any]:
        return {"op": self.op, "filter": self.filter, "within": self.within}


@dataclass(slots=True)
class ValidMappingQuestion:
    """`valid_mapping` ("valid_mapping", version 2): whether a mapping of `source` to the weighted list
    `destinations` is valid under the rules of `server_version` (None: the newest)."""

    op: ClassVar[str] = "valid_mapping"
    source: str
    destinations: list[WeightedEntry]
    server_version: str | None = None

    @classmethod
    def parse(cls, request: Request) -> ValidMappingQuestion:
        listed = _field(request, "destinations", list)
        if not all(isinstance(item, dict) for item in listed):
            raise BadRequestError("field 'destinations' must be a list of objects")
        destinations = []
        for item in listed:
            weight = item.get("weight")
            if isinstance(weight, bool) or not isinstance(weight, (int, str)):
                raise BadRequestError("field 'weight' must be an integer or text like '50%'")
            cluster = _field(item, "cluster", str, optional=True)
            destinations.append(WeightedEntry(_field(item, "destination", str), weight, cluster))
        source = _field(request, "source", str)
        return cls(source, destinations, _field(request, "server_version", str, optional=True))

    def wire(self) -> dict[str, Any]:
        request: dict[str, Any] = {
            "op": self.op,
            "source": self.source,
            "destinations": [entry.wire() for entry in self.destinations],
        }
        if self.server_version is not None:
            request["server_version"] = self.server_version
        return request


@dataclass(slots=True)
class CoverageQuestion(_OpOnly):
    """`coverage` ("coverage", optional): the code the questions since the last one ran."""

    op: ClassVar[str] = "coverage"


Question = (
    Hello
    | TransformQuestion
    | MatchQuestion
    | ValidSubjectQuestion
    | PartitionQuestion
    | WeightedQuestion
    | ContainsQuestion
    | ValidMappingQuestion
    | CoverageQuestion
)

QUESTIONS: Final[Mapping[str, Callable[[Request], Question]]] = {
    kind.op: kind.parse for kind in get_args(Question)
}
"""Each operation's question, parsed from its request object, by `op` name."""


def question_of(request: Request) -> Question:
    """The question a request object asks (raises `BadRequestError` with the protocol's texts when it
    is not a well-formed one)."""
    op = request.get("op")
    parse = QUESTIONS.get(op) if isinstance(op, str) else None
    if parse is None:
        raise BadRequestError(f"unknown op {op!r}; known: {', '.join(sorted(QUESTIONS))}")
    return parse(request)


# Answers ("Answers", and each operation's answer fields)


@dataclass(slots=True)
class Mapped:
    """A transform's or weighted list's mapped subject (None: a weighted message dropped)."""

    subject: str | None


@dataclass(slots=True)
class Matched:
    """A match's answer."""

    match: bool


@dataclass(slots=True)
class Validity:
    """A valid_subject's or valid_mapping's answer; `reason`, the error kind of a refused mapping where
    the reference knows it, is not compared (an adapter's answer has none)."""

    valid: bool
    reason: str = field(default="", compare=False)


@dataclass(slots=True)
class Contained:
    """A contains answer."""

    contained: bool


@dataclass(slots=True)
class Partitioned:
    """A partition's answer, 0 <= partition < n."""

    partition: int


@dataclass(slots=True)
class Refusal:
    """A failed answer ("Answers"): its stable `kind` and a line of `detail` for people."""

    kind: str
    detail: str = ""

    @classmethod
    def of(cls, error: ConformanceError) -> Refusal:
        return cls(error.kind, str(error))


@dataclass(slots=True)
class Covered:
    """A coverage answer ("coverage"): blocks the last questions ran, how many first ran, and all."""

    blocks: int
    new: int
    reached: int


SUBJECT_RULES: Final = ("subscribe", "publish", "subscribe-lenient", "publish-lenient")
"""The rules `valid_subject` asks ("hello" `subject_rules`): wildcards allowed, or `literal`; each strict
or `lenient`."""
MODES: Final = ("account", "engine")
"""What an adapter's transform implements ("hello" `mode`): account mappings (the default) or the bare
engine."""
ANSWERED_OPS: Final = (
    "transform",
    "match",
    "valid_subject",
    "partition",
    "weighted",
    "contains",
    "valid_mapping",
)
"""The operations a hello's `answered_by` may name the library function of, beside `SUBJECT_RULES`
(a rule of `valid_subject` answered by a function of its own)."""
JUDGED_KINDS: Final = (*MAPPING_ERROR_KINDS, SubjectMismatchError.kind)
"""The protocol's error kinds an adapter's own kinds may be declared as ("hello" `error_kinds`)."""


class GreetingError(ValueError):
    """A hello whose declarations the client cannot read ("hello": a one-line error)."""


@dataclass(slots=True)
class Greeting:
    """The answer to `hello` ("hello"): what the implementation is, the operations (empty: every
    one) and mapping functions (None: every one) it answers, its `mode` and what its own error kinds
    stand for."""

    implementation: str
    protocol: int = PROTOCOL_VERSION
    server_version: str | None = None
    ops: frozenset[str] = frozenset()
    functions: frozenset[str] | None = None
    mode: str = "account"
    error_kinds: dict[str, str] = field(default_factory=dict)
    subject_rules: frozenset[str] | None = None
    """The rules of `valid_subject` it answers (`SUBJECT_RULES`); None: every one."""
    answered_by: dict[str, str] = field(default_factory=dict)
    """The library function that answers each operation or subject rule (`ANSWERED_OPS`,
    `SUBJECT_RULES`), as the implementation names it: shown in the report beside its results."""

    @classmethod
    def parse(cls, hello: Mapping[str, Any]) -> Greeting:
        """A hello's answer fields read (`implementation` '' when it names none); raises
        `GreetingError` on a `mode`, `functions` or `error_kinds` the client cannot read."""
        mode = hello.get("mode", "account")
        if mode not in MODES:
            raise GreetingError(f"'mode' must be one of {', '.join(MODES)} (got {mode!r})")
        listed = hello.get("functions")
        functions = None
        if listed is not None:
            if not isinstance(listed, list) or not all(isinstance(name, str) for name in listed):
                raise GreetingError("'functions' must be a list of mapping function names")
            unknown = [name for name in listed if canonical_name(name) in (None, LEGACY_WILDCARD)]
            if unknown:
                raise GreetingError(f"'functions' names no mapping function: {', '.join(unknown)}")
            functions = frozenset(str(canonical_name(name)) for name in listed)
        kinds = hello.get("error_kinds", {})
        if not isinstance(kinds, dict):
            raise GreetingError("'error_kinds' must map the adapter's error kinds to the protocol's")
        wrong = [f"{theirs}: {ours!r}" for theirs, ours in kinds.items() if ours not in JUDGED_KINDS]
        if wrong:
            raise GreetingError(
                f"'error_kinds' maps to no mapping error kind of the protocol: {', '.join(wrong)}"
            )
        version = hello.get("server_version")
        rules = hello.get("subject_rules")
        if rules is not None and (not isinstance(rules, list) or not set(rules) <= set(SUBJECT_RULES)):
            raise GreetingError(f"'subject_rules' must list some of {', '.join(SUBJECT_RULES)}")
        answered_by = hello.get("answered_by", {})
        keys = (*ANSWERED_OPS, *SUBJECT_RULES)
        if not isinstance(answered_by, dict) or not all(
            key in keys and isinstance(name, str) and name for key, name in answered_by.items()
        ):
            raise GreetingError(f"'answered_by' must map some of {', '.join(keys)} to function names")
        protocol = hello.get("protocol", 1)
        if type(protocol) is not int or protocol < 1:
            raise GreetingError(f"'protocol' must be a version number such as 2 (got {protocol!r})")
        return cls(
            implementation=str(hello.get("implementation") or ""),
            protocol=protocol,
            server_version=None if version is None else str(version),
            ops=frozenset(str(op) for op in hello.get("ops", ())),
            functions=functions,
            mode=mode,
            error_kinds=kinds,
            subject_rules=None if rules is None else frozenset(rules),
            answered_by=dict(answered_by),
        )


Answer = Mapped | Matched | Validity | Contained | Partitioned | Refusal | Covered | Greeting


def answer_fields(answer: Answer) -> dict[str, Any]:
    """An answer's fields on the wire, without its `id` (a greeting's optional declarations only when
    it makes them)."""
    if isinstance(answer, Mapped):
        return {"subject": answer.subject}
    if isinstance(answer, Matched):
        return {"match": answer.match}
    if isinstance(answer, Validity):
        return {"valid": answer.valid}
    if isinstance(answer, Contained):
        return {"contained": answer.contained}
    if isinstance(answer, Partitioned):
        return {"partition": answer.partition}
    if isinstance(answer, Refusal):
        return {"error": answer.kind, "detail": answer.detail}
    if isinstance(answer, Covered):
        return {"blocks": answer.blocks, "new": answer.new, "reached": answer.reached}
    fields: dict[str, Any] = {
        "protocol": answer.protocol,
        "implementation": answer.implementation,
        "server_version": answer.server_version,
        "ops": sorted(answer.ops),
    }
    if answer.functions is not None:
        fields["functions"] = sorted(answer.functions)
    if answer.mode != "account":
        fields["mode"] = answer.mode
    if answer.error_kinds:
        fields["error_kinds"] = answer.error_kinds
    if answer.subject_rules is not None:
        fields["subject_rules"] = sorted(answer.subject_rules)
    if answer.answered_by:
        fields["answered_by"] = answer.answered_by
    return fields


class AnswerError(ValueError):
    """An answer object without the result its question asks for, or with one of another type."""


def _result(answer: Mapping[str, Any], name: str, *kinds: type) -> Any:
    """An answer's field `name`, of one of the JSON types `kinds` (raises `AnswerError`)."""
    if name not in answer:
        raise AnswerError(f"answer without field {name!r}")
    value = answer[name]
    if type(value) not in kinds:
        wanted = " or ".join("null" if kind is type(None) else kind.__name__ for kind in kinds)
        raise AnswerError(f"field {name!r} must be a {wanted} (got {type(value).__name__})")
    return value


def _mapped(answer: Mapping[str, Any]) -> Mapped:
    return Mapped(_result(answer, "subject", str, type(None)))


RESULTS: Final[Mapping[str, Callable[[Mapping[str, Any]], Answer]]] = {
    Hello.op: Greeting.parse,
    TransformQuestion.op: _mapped,
    WeightedQuestion.op: _mapped,
    MatchQuestion.op: lambda answer: Matched(_result(answer, "match", bool)),
    ValidSubjectQuestion.op: lambda answer: Validity(_result(answer, "valid", bool)),
    ValidMappingQuestion.op: lambda answer: Validity(_result(answer, "valid", bool)),
    ContainsQuestion.op: lambda answer: Contained(_result(answer, "contained", bool)),
    PartitionQuestion.op: lambda answer: Partitioned(_result(answer, "partition", int)),
    CoverageQuestion.op: lambda answer: Covered(
        *(_result(answer, name, int) for name in ("blocks", "new", "reached"))
    ),
}
"""Each operation's answer read from its answer fields, by `op` name."""


def answer_of(question: Question, answer: Mapping[str, Any]) -> Answer:
    """The answer an answer object gives `question` (its `id` and fields it does not know aside): a
    `Refusal` when it names an `error`, else the question's result. Raises `AnswerError` when that is
    missing or of another type, `GreetingError` on a hello's declarations the client cannot read."""
    if "error" in answer:
        detail = answer.get("detail")
        return Refusal(_result(answer, "error", str), detail if type(detail) is str else "")
    return RESULTS[question.op](answer)
