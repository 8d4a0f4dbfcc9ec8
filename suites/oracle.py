"""The engine oracle: the transform engine of a live target's own release, asked the same mapping and
validation questions, so that a divergence between the reference and the server becomes a diagnosis.
An adapter target is compared the same way with the engine of a chosen release (`--against`).

The engine is the `engine:` target (`fixtures.engine`), asked in account mode: the account-mapping
validation of that release, then the release's transform, with no configuration, reload, wire or
delivery around it. Each case records which of the three answers agree (`Case.oracle`):

- `all-agree`: reference, server and engine give the same answer;
- `reference-alone`: the server and its engine agree, the reference differs from both (the reference
  is wrong, or the documents and all server code disagree);
- `target-alone`: the engine agrees with the reference and the target does otherwise (for a live
  server: the path around the engine changes the result);
- `all-differ`: no two agree;
- `engine-alone`: the reference and the server agree, the engine does not;
- `engine-unanswered`: the engine gave no answer (it does not know the operation, or failed).

A case whose server side is unknown has no `oracle` value.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Final

from nats_conformance.fixtures.clients.adapter import AdapterProcess
from nats_conformance.fixtures.cover import COVER_DIR, STOP_GRACE, engine_counters
from nats_conformance.fixtures.engine import engine_command
from nats_conformance.reference.matching import matching_subject
from nats_conformance.reference.protocol import INTERNAL_ERROR, Answer, Mapped, Refusal, TransformQuestion

ORACLE_CLASSES: Final = (
    "all-agree",
    "reference-alone",
    "target-alone",
    "all-differ",
    "engine-alone",
    "engine-unanswered",
)
REFUSED: Final = "reject"
"""The engine's answer, as the validation cases spell it, when it refuses a mapping."""


def three_way(reference: str, server: str, engine: str | None) -> str:
    """Which of the three answers agree (see the module's list); `engine` None: no answer."""
    if engine is None:
        return "engine-unanswered"
    if reference == server:
        return "all-agree" if engine == server else "engine-alone"
    if engine == server:
        return "reference-alone"
    return "target-alone" if engine == reference else "all-differ"


def failed(answer: Answer | None) -> bool:
    """Whether an answer is the target's own failure (`internal-error`, docs/adapter-protocol.md)."""
    return isinstance(answer, Refusal) and answer.kind == INTERNAL_ERROR


class EngineOracle:
    """The engine of one release, asked in account mode; answers are kept per question."""

    def __init__(self, release: str, *, coverage_dir: Path | None = None) -> None:
        """With `coverage_dir`, the engine is the release's -cover build writing its counters into its
        `ENGINE_COUNTERS` when it exits at `close` (GOCOVERDIR)."""
        self.release = release
        if coverage_dir is None:
            self._adapter = AdapterProcess(engine_command(release))
        else:
            self._adapter = AdapterProcess(
                engine_command(release, cover=True),
                environment={COVER_DIR: str(engine_counters(coverage_dir))},
                close_grace=STOP_GRACE,
            )
        self._accepts: dict[tuple[str, str], bool | None] = {}

    def close(self) -> None:
        self._adapter.close()

    def __enter__(self) -> EngineOracle:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _ask(self, source: str, destination: str, subjects: Sequence[str]) -> list[Answer | None]:
        """The engine's answers to the mapping's transform questions (None: no answer, or its own
        failure)."""
        answers = self._adapter.ask(
            [TransformQuestion(source, destination, subject, self.release) for subject in subjects]
        )
        return [None if failed(answer) else answer for answer in answers]

    def accepts(self, source: str, destination: str) -> bool | None:
        """Whether the engine takes the mapping (None: no answer)."""
        key = (source, destination)
        if key not in self._accepts:
            # The protocol's question needs a subject; one the source matches makes any error the mapping's.
            (answer,) = self._ask(source, destination, [matching_subject(source)])
            self._accepts[key] = (
                None
                if answer is None
                else not isinstance(answer, Refusal) or answer.kind == "subject-mismatch"
            )
        return self._accepts[key]

    def validation(self, source: str, destination: str) -> str | None:
        """The engine's answer to a validation case, spelt as the server's (`accept`/`reject`)."""
        accepted = self.accepts(source, destination)
        return None if accepted is None else "accept" if accepted else REFUSED

    def maps(self, source: str, destination: str, subjects: Sequence[str]) -> list[str | None]:
        """The subject the engine maps each of `subjects` to ('' when it refuses; None: no answer)."""
        return [
            str(answer.subject) if isinstance(answer, Mapped) else None if answer is None else ""
            for answer in self._ask(source, destination, subjects)
        ]
