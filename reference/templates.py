"""Destination templates: text -> tuple of token nodes, per release (parse only, no validation of
wildcard indexes against the source; that is ``transform.compile_transform``'s job).

Documented forms (https://docs.nats.io/nats-concepts/subject_mapping): literal tokens, legacy ``$n``,
``{{wildcard(n)}}``, ``{{partition(n, i...)}}`` (and ``{{partition(n)}}`` from 2.12), ``{{split(i, sep)}}``,
``{{splitFromLeft/Right(i, pos)}}``, ``{{sliceFromLeft/Right(i, size)}}``, ``{{left(i, n)}}``,
``{{right(i, n)}}``, ``{{random(n)}}`` and ``>``. "The upper camel case on all subject mapping function
names is optional": each word's initial may be either case (from 2.9; 2.8 takes lower case only).

Observed details the document does not state (2.9.25-2.14.5): a function token is any token of more than
four characters starting ``{{`` and ending ``}}``; the name is searched anywhere inside it; whitespace is
allowed around the name and after commas; integer arguments are trimmed of spaces and read as Go's
``strconv.Atoi`` does (optional sign, ASCII digits, 64-bit); a ``split`` separator is taken verbatim and
must not contain a space.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from nats_conformance.reference.errors import (
    FunctionNotAvailableError,
    InvalidArgumentError,
    MappingError,
    UnknownFunctionError,
    UnsupportedFunctionError,
    WrongArgumentCountError,
)
from nats_conformance.reference.functions import FUNCTIONS, account_hash
from nats_conformance.reference.profiles import ALL_FUNCTIONS, ReleaseProfile

__all__ = [
    "FunctionNode",
    "LiteralNode",
    "Node",
    "account_function",
    "looks_like_function",
    "parse_token",
    "resolve_account_functions",
]

INT32_MIN: Final = -(2**31)
INT32_MAX: Final = 2**31 - 1
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1
_WS: Final = "[\t\n\f\r ]"
_ARG_SEPARATOR: Final = re.compile(",[\t\n\f\r ]*")
_ATOI: Final = re.compile(r"[+-]?[0-9]+")
_SSCANF_DOLLAR: Final = re.compile(r"\$([+-]?[0-9]+)")


def _name_pattern(name: str, casing: str) -> str:
    """``splitFromLeft`` -> ``[sS]plit[fF]rom[lL]eft`` (initial casing) or ``splitfromleft`` (lower)."""
    words = re.findall(r"[a-z]+|[A-Z][a-z]*", name)
    if casing == "lower":
        return name.lower() if name.islower() else name
    return "".join(f"[{w[0].lower()}{w[0].upper()}]{w[1:].lower()}" for w in words)


def _function_regex(name: str, casing: str) -> re.Pattern[str]:
    """A function token's regex; ``casing`` ``raw`` takes ``name`` as a pattern already."""
    inner = name if casing == "raw" else _name_pattern(name, casing)
    return re.compile(r"\{\{" + _WS + "*" + inner + _WS + r"*\((.*)\)" + _WS + r"*\}\}")


_ACCOUNT_ORDER: Final = ("account-hash-import", "account-hash-leaf-remote", "account-hash")
_ACCOUNT_REGEXES: Final = tuple(
    (name, _function_regex("-".join(f"[{w[0]}{w[0].upper()}]{w[1:]}" for w in name.split("-")), "raw"))
    for name in _ACCOUNT_ORDER
)
"""The account functions as the server finds them in a token (``[aA]ccount-[hH]ash``, spaces around the
name), in the order it tries them."""

_REGEXES: Final = {
    casing: {name: _function_regex(name, casing) for name in ALL_FUNCTIONS} for casing in ("lower", "initial")
}


@dataclass(frozen=True, slots=True)
class LiteralNode:
    """A destination token copied as written (including ``>`` and unparsed ``{{...}}`` text)."""

    text: str


@dataclass(frozen=True, slots=True)
class FunctionNode:
    """A placeholder: ``name`` is canonical (``wildcard`` for ``$n`` too); ``indexes`` are 1-based
    wildcard indexes as written; ``number`` is the count, position or size; ``text`` the separator."""

    token: str
    name: str
    indexes: tuple[int, ...] = ()
    number: int = 0
    text: str = ""


Node = LiteralNode | FunctionNode


def looks_like_function(token: str) -> bool:
    """True iff the server treats ``token`` as a function token: longer than 4, ``{{`` ... ``}}``."""
    return len(token) > 4 and token.startswith("{{") and token.endswith("}}")


def account_function(token: str, profile: ReleaseProfile) -> tuple[str, list[str]] | None:
    """The account function ``token`` calls in ``profile``'s release, with its arguments, or None."""
    if not profile.account_functions or not looks_like_function(token):
        return None
    for name, regex in _ACCOUNT_REGEXES:
        found = regex.search(token)
        if found is not None and name in profile.account_functions:
            return name, _ARG_SEPARATOR.split(found.group(1))
    return None


def resolve_account_functions(
    subject: str,
    profile: ReleaseProfile,
    account: str,
    imported: str | None = None,
    *,
    leaf_remote: str | None = None,
) -> tuple[str, tuple[str, ...]]:
    """``subject`` of an account mapping (or, with `imported`, of an import of account `imported`'s
    subjects; with `leaf_remote`, of a leaf node remote's deny list, bound to that account of the hub)
    with each account function token replaced by its value, and the names of those functions:
    ``{{account-hash()}}`` becomes ``account_hash(account)``, ``{{account-hash-import()}}`` in an import
    ``account_hash(imported)``, ``{{account-hash-leaf-remote()}}`` in a deny list
    ``account_hash(leaf_remote)``; the others name accounts the place has none of
    (``reference.functions``).

    Raises:
        WrongArgumentCountError: a function given an argument.
        FunctionNotAvailableError: a function whose account the place has none of.
    """
    if "{{" not in subject:
        return subject, ()
    tokens = subject.split(".")
    used: list[str] = []
    for position, token in enumerate(tokens):
        found = account_function(token, profile)
        if found is None:
            continue
        name, arguments = found
        if len(arguments) > 1 or arguments[0].strip():
            raise WrongArgumentCountError(f"{token}: {name} takes no arguments")
        named = {
            "account-hash": account,
            "account-hash-import": imported,
            "account-hash-leaf-remote": leaf_remote,
        }.get(name)
        if named is None:
            place = (
                "an import"
                if imported is not None
                else "a deny list"
                if leaf_remote is not None
                else "an account mapping"
            )
            raise FunctionNotAvailableError(f"{token}: {name} is not available in {place}")
        tokens[position] = account_hash(named)
        used.append(name)
    return ".".join(tokens), tuple(used)


def _atoi(text: str) -> int | None:
    """Go's ``strconv.Atoi`` after trimming spaces: the int, or None when Go would fail."""
    text = text.strip(" ")
    if not _ATOI.fullmatch(text):
        return None
    value = int(text)
    return value if _INT64_MIN <= value <= _INT64_MAX else None


def to_int32(value: int) -> int:
    """Go's ``int32(v)`` conversion: keep the low 32 bits, two's complement."""
    value &= 0xFFFFFFFF
    return value - 2**32 if value > INT32_MAX else value


def find_function(token: str, names: frozenset[str], casing: str) -> tuple[str, list[str]] | None:
    """The first function of ``names`` (server order) found in ``token``, with its arguments."""
    regexes = _REGEXES[casing]
    for name in ALL_FUNCTIONS:
        if name in names:
            match = regexes[name].search(token)
            if match is not None:
                return name, _ARG_SEPARATOR.split(match.group(1))
    return None


def unknown_function_error(token: str, accepted: frozenset[str]) -> MappingError:
    """The error for a function token none of ``accepted`` matches: unsupported if a known name fits."""
    found = find_function(token, frozenset(ALL_FUNCTIONS) - accepted, "initial")
    if found is not None:
        return UnsupportedFunctionError(
            f"function {found[0]}() in {token} is not accepted by this release's mapping validator"
        )
    return UnknownFunctionError(f"unknown function in {token}")


def _int_arg(token: str, text: str) -> int:
    value = _atoi(text)
    if value is None:
        raise InvalidArgumentError(f"function argument {text.strip()!r} is not an integer in {token}")
    return value


def _count_arg(token: str, text: str, profile: ReleaseProfile) -> int:
    """A ``random`` count: rejected above 2**31-1 from 2.12, else cut to 32 bits (observed; the
    documents do not describe ``random``)."""
    value = _int_arg(token, text)
    if profile.count_range_check and value > INT32_MAX:
        raise InvalidArgumentError(f"count {value} does not fit 32 bits in {token}")
    return to_int32(value)


def _partition_count(token: str, text: str, profile: ReleaseProfile) -> int:
    """The "number of partitions": a partition number lies "between 0 and number of partitions-1"
    (docs.nats.io, "Deterministic Subject token Partitioning"), so the count is at least 1. No upper
    bound is documented; from 2.12 the server rejects counts above 2**31-1 (observed)."""
    value = _int_arg(token, text)
    if value < 1:
        raise InvalidArgumentError(f"the number of partitions must be at least 1 (got {value}) in {token}")
    if profile.count_range_check and value > INT32_MAX:
        raise InvalidArgumentError(f"count {value} does not fit 32 bits in {token}")
    return value


def _exact_arguments(token: str, name: str, args: list[str]) -> None:
    """Raise unless a function of fixed arity got its number of arguments (``reference.functions``)."""
    count = FUNCTIONS[name].max_arguments
    if len(args) != count:
        noun = "argument" if count == 1 else "arguments"
        raise WrongArgumentCountError(f"{name}() takes {count} {noun} (got {len(args)}) in {token}")


def _index_int_function(token: str, name: str, args: list[str], profile: ReleaseProfile) -> FunctionNode:
    _exact_arguments(token, name, args)
    index = _int_arg(token, args[0])
    number = _int_arg(token, args[1])
    if profile.int_width == "check-32":
        if not INT32_MIN <= number <= INT32_MAX:
            raise InvalidArgumentError(f"argument {number} does not fit 32 bits in {token}")
    else:
        number = to_int32(number)
    return FunctionNode(token, name, (index,), number)


def _parse_function(token: str, name: str, args: list[str], profile: ReleaseProfile) -> FunctionNode:
    """Arguments of one function token, checked as the release does (2.9 and later)."""
    if name == "wildcard":
        if len(args) != 1 or args == [""]:
            raise WrongArgumentCountError(f"wildcard() takes 1 argument in {token}")
        return FunctionNode(token, name, (_int_arg(token, args[0]),))
    if name == "partition":
        if len(args) == 1 and profile.partition_single_argument:
            return FunctionNode(token, name, (), _partition_count(token, args[0], profile))
        if len(args) < 2:
            raise WrongArgumentCountError(f"partition() takes a count and wildcard indexes in {token}")
        count = _partition_count(token, args[0], profile)
        return FunctionNode(token, name, tuple(_int_arg(token, a) for a in args[1:]), count)
    if name == "split":
        _exact_arguments(token, name, args)
        index = _int_arg(token, args[0])
        if " " in args[1] or "." in args[1]:
            raise InvalidArgumentError(f"split separator {args[1]!r} contains a space or a dot in {token}")
        return FunctionNode(token, name, (index,), 0, args[1])
    if name == "random":
        _exact_arguments(token, name, args)
        return FunctionNode(token, name, (), _count_arg(token, args[0], profile))
    return _index_int_function(token, name, args, profile)


def _parse_2_8(token: str, profile: ReleaseProfile) -> Node:
    """2.8: only lower-case ``wildcard`` and ``partition`` (>= 2 args); anything else stays literal."""
    found = find_function(token, frozenset({"wildcard"}), "lower")
    if found is not None and len(found[1]) == 1:
        return FunctionNode(token, "wildcard", (_int_arg(token, found[1][0]),))
    found = find_function(token, frozenset({"partition"}), "lower")
    if found is not None and len(found[1]) >= 2:
        count = _partition_count(token, found[1][0], profile)
        return FunctionNode(token, "partition", tuple(_int_arg(token, a) for a in found[1][1:]), count)
    return LiteralNode(token)


def parse_token(token: str, profile: ReleaseProfile, *, accepted: frozenset[str] | None = None) -> Node:
    """One destination token as the release's transform engine reads it.

    Args:
        token: the token text.
        profile: the release.
        accepted: function names to recognise (default: the engine's, ``profile.functions``).

    Raises:
        MappingError: unknown/unsupported function, wrong argument count, invalid argument.
    """
    names = profile.functions if accepted is None else accepted
    if len(token) > 1 and token[0] == "$":
        if profile.dollar_prefix_parse:
            match = _SSCANF_DOLLAR.match(token)
            return FunctionNode(token, "wildcard", (int(match.group(1)),)) if match else LiteralNode(token)
        index = _atoi(token[1:]) if token[1:] == token[1:].strip(" ") else None
        return LiteralNode(token) if index is None else FunctionNode(token, "wildcard", (index,))
    if not looks_like_function(token) or not profile.functions:
        return LiteralNode(token)
    if profile.unknown_function_is_literal:
        return _parse_2_8(token, profile)
    if account_function(token, profile) is not None:
        raise FunctionNotAvailableError(f"{token}: an account function, which the transform engine refuses")
    found = find_function(token, names, profile.casing)
    if found is None:
        raise unknown_function_error(token, names)
    return _parse_function(token, found[0], found[1], profile)
