"""The part of JSON Schema (draft 2020-12) that docs/adapter-protocol.schema.json uses, checked without a
dependency: type, const, enum, pattern, minLength, minimum, maximum, properties, required,
additionalProperties, propertyNames, items, oneOf and local $ref."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

SCHEMA = Path(__file__).resolve().parents[2] / "docs" / "adapter-protocol.schema.json"
TYPES = {
    "object": dict,
    "array": list,
    "string": str,
    "boolean": bool,
    "null": type(None),
}


def load() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(SCHEMA.read_text())
    return schema


def _is_type(value: Any, name: str) -> bool:
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, TYPES[name])


def errors(value: Any, schema: dict[str, Any], root: dict[str, Any], where: str = "$") -> list[str]:
    """Why `value` does not match `schema` (empty when it does)."""
    if "$ref" in schema:
        target: Any = root
        for part in schema["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        return errors(value, target, root, where)
    found: list[str] = []
    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_is_type(value, name) for name in names):
            return [f"{where}: {type(value).__name__} is not {names}"]
    if "const" in schema and value != schema["const"]:
        found.append(f"{where}: not {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        found.append(f"{where}: {value!r} not in {schema['enum']}")
    if "pattern" in schema and isinstance(value, str) and not re.search(schema["pattern"], value):
        found.append(f"{where}: {value!r} does not match {schema['pattern']}")
    if "minLength" in schema and isinstance(value, str) and len(value) < schema["minLength"]:
        found.append(f"{where}: shorter than {schema['minLength']}")
    if "minimum" in schema and isinstance(value, (int, float)) and value < schema["minimum"]:
        found.append(f"{where}: {value} < {schema['minimum']}")
    if "maximum" in schema and isinstance(value, (int, float)) and value > schema["maximum"]:
        found.append(f"{where}: {value} > {schema['maximum']}")
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        found += [f"{where}: missing {name!r}" for name in schema.get("required", []) if name not in value]
        for name, item in value.items():
            if "propertyNames" in schema:
                found += errors(name, schema["propertyNames"], root, f"{where}.{name}(name)")
            if name in properties:
                found += errors(item, properties[name], root, f"{where}.{name}")
            elif schema.get("additionalProperties") is False:
                found.append(f"{where}: unexpected {name!r}")
            elif isinstance(schema.get("additionalProperties"), dict):
                found += errors(item, schema["additionalProperties"], root, f"{where}.{name}")
    if isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            found += errors(item, schema["items"], root, f"{where}[{index}]")
    if "oneOf" in schema:
        matching = [option for option in schema["oneOf"] if not errors(value, option, root, where)]
        if len(matching) != 1:
            found.append(f"{where}: matches {len(matching)} of oneOf's {len(schema['oneOf'])} schemas")
    return found
