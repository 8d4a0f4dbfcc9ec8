"""The public surface of ``reference`` is explicit and stable."""

from __future__ import annotations

import inspect

from nats_conformance import reference
from nats_conformance.reference import errors


def test_all_lists_exactly_the_public_names() -> None:
    public = {
        name
        for name, value in vars(reference).items()
        if not name.startswith("_") and not inspect.ismodule(value) and name != "annotations"
    }
    assert set(reference.__all__) == public
    assert len(reference.__all__) == len(set(reference.__all__))


def test_every_mapping_error_has_a_distinct_kebab_kind() -> None:
    classes = [c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, errors.MappingError)]
    kinds = [c.kind for c in classes if c is not errors.MappingError]
    assert sorted(kinds) == sorted(errors.MAPPING_ERROR_KINDS)
    assert all(k == k.lower() and " " not in k for k in kinds)
    assert issubclass(errors.MappingError, ValueError)
    assert issubclass(errors.UnknownVersionError, errors.ConformanceError)
