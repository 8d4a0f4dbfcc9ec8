"""A third party that follows nats-server rather than the documents: every question is answered by the
transform engine of one release (the `engine:RELEASE` target, fixtures.engine), under this adapter's own
name, so where that release and the documents differ this adapter differs from the documents too.

    nats-conformance campaign --target "adapter:python examples/adapters/follows_engine.py 2.14.5" \\
        --against engine:2.14.5 --profile 2.14.5

is judged "conforms to nats-server 2.14.5" (exit status 4) by the default `--judge-by engine`, and
diverges (exit status 1) with `--judge-by documents` (tests/live/test_judge_by.py).
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import threading
from typing import IO

from nats_conformance.fixtures.engine import engine_command

NAME = "example-follows-engine-adapter"


def relay_answers(engine: IO[bytes], out: IO[bytes]) -> None:
    """Copy the engine's answers, one JSON line each, renaming the implementation in its hello."""
    for line in engine:
        if b'"implementation"' in line:
            answer = json.loads(line)
            answer["implementation"] = NAME
            out.write(json.dumps(answer).encode() + b"\n")
        else:
            out.write(line)
        out.flush()


def main(release: str) -> int:
    engine = subprocess.Popen(
        shlex.split(engine_command(release)), stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert engine.stdin is not None
    assert engine.stdout is not None
    answers = threading.Thread(target=relay_answers, args=(engine.stdout, sys.stdout.buffer), daemon=True)
    answers.start()
    for line in sys.stdin.buffer:
        engine.stdin.write(line)
        engine.stdin.flush()
    engine.stdin.close()
    answers.join()
    return engine.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "2.14.5"))
