"""Every writer of the records' ``functions`` column gives one spelling in one order."""

from __future__ import annotations

import itertools

from nats_conformance.records.expectations import Expectation, Expectations
from nats_conformance.records.schema import Case
from nats_conformance.reference.profiles import for_version
from nats_conformance.reference.transform import compile_transform
from nats_conformance.suites.engine.verdicts import RunContext, case_class_of, make_case
from nats_conformance.suites.expected import functions_named


def context(*entries: Expectation) -> RunContext:
    counter = itertools.count(1)
    return RunContext("run", "nats-server", "2.14.5", "process", Expectations(entries), lambda: next(counter))


def case(functions: tuple[str, ...], difference: str = "wrong-subject", *entries: Expectation) -> Case:
    return make_case(
        context(*entries),
        feature="validation",
        functions=functions,
        source="v.*",
        destination="",
        subject="",
        expected="accept",
        observed="reject",
        difference=difference,
    )


def test_validation_and_mapping_writers_agree_on_spelling_and_order() -> None:
    destination = "x.{{SliceFromRight(1,2)}}.$1.{{splitfromleft(1,1)}}.{{wildcard(1)}}"
    named = functions_named(destination)
    compiled = compile_transform("v.*", destination, for_version("2.14")).functions
    assert named == ("$n", "wildcard", "splitFromLeft", "sliceFromRight")
    assert case(named).functions == "$n+wildcard+splitFromLeft+sliceFromRight"
    assert case(compiled).functions == "wildcard+splitFromLeft+sliceFromRight"
    assert case(tuple(reversed(compiled))).functions == case(compiled).functions


def test_the_case_class_uses_the_column_form() -> None:
    written = case(("slicefromright", "$n"))
    assert written.case_class == "validation:$n+sliceFromRight:wrong-subject"
    assert written.case_class == case_class_of("validation", ("SliceFromRight", "$n", "$n"), "wrong-subject")
    assert case(()).case_class == "validation:literal:wrong-subject"


def test_expectations_filtering_on_functions_still_match_any_spelling() -> None:
    entry = Expectation(
        "left-right", "validation", "reference-accept-server-reject", functions=("left", "RIGHT")
    )
    matched = case(("wildcard", "right"), "reference-accept-server-reject", entry)
    assert (matched.verdict, matched.expectation) == ("expected", "left-right")
    other = case(("wildcard",), "reference-accept-server-reject", entry)
    assert other.verdict == "diverge"


def test_names_of_no_mapping_function_keep_their_place_after_the_known_ones() -> None:
    assert case(("partial", "full")).functions == "partial+full"
    assert functions_named("{{NoSuch(1)}}.{{left(1,1)}}") == ("left", "nosuch")
