"""A correct adapter: the reference model behind the JSON-lines adapter protocol, under its own name.

Run it as a target:
python -m nats_conformance.suites campaign --target "adapter:python examples/adapters/correct.py"
The suite must find nothing here (tests/suites/test_library.py).
"""

from __future__ import annotations

import sys
from typing import Any

from nats_conformance.reference.adapter import handle_request, serve

NAME = "example-correct-adapter"


def handle(request: Any) -> dict[str, Any]:
    answer = handle_request(request)
    if isinstance(request, dict) and request.get("op") == "hello" and "error" not in answer:
        answer["implementation"] = NAME
    return answer


if __name__ == "__main__":
    serve(sys.stdin.buffer, sys.stdout.buffer, handle)
