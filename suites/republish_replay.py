"""Run one RePublish case again: `python -m suites replay --feature republish ...` (the line every
republish divergence prints, see `suites.republish.replay_command`).

A fresh JetStream server of the release is started, a stream with the given subjects and option is
created (a validation case), and when a subject is given one message is published on it and every
republished message is judged; the stream and the server are removed afterwards.
"""

from __future__ import annotations

import itertools
import time

from fixtures.backends import open_backend
from fixtures.jetstream import JetStreamClient, api_error, jetstream_config
from fixtures.options import build_run_config
from fixtures.provision import resolve_binary
from records.expectations import Expectations
from records.schema import Case
from reference.republish import RePublish, StreamModel, rules_for
from suites.differential import RunContext
from suites.republish import MessageLedger, Window, is_republished, judge_configuration, stream_config

STREAM = "REPLAY"
SETTLE = 0.2


def replay_republish(
    *,
    stream_subjects: str,
    source: str,
    destination: str,
    headers_only: bool = False,
    subject: str = "",
    version: str | None = None,
    backend: str | None = None,
    expectations: Expectations | None = None,
) -> list[Case]:
    """The cases of one replay: the stream's creation, then (with `subject`) its republished messages."""
    run = build_run_config([version] if version else [], [backend] if backend else [], None, None)
    server = open_backend(run.targets[0], run, binary_resolver=resolve_binary)
    counter = itertools.count()
    cases: list[Case] = []
    try:
        server.start(jetstream_config(server))
        context = RunContext.for_server(
            server,
            run_id="replay",
            expectations=expectations or Expectations(),
            next_case_id=lambda: next(counter),
        )
        rules = rules_for(server.version)
        # Without stream subjects (a case recorded without them), the source stands for them.
        subjects = tuple(s for s in stream_subjects.split(",") if s) or (source or "replay.>",)
        option = RePublish(source, destination, headers_only)
        with JetStreamClient(server.url) as js:
            js.tap(">", is_republished)
            reply = js.create_stream(stream_config(STREAM, subjects, option))
            cases.append(judge_configuration(context, rules, subjects, option, reply))
            if api_error(reply) is None:
                if subject:
                    cases += _publish_once(js, context, subjects, option, subject)
                js.delete_stream(STREAM)
    finally:
        server.cleanup()
    return cases


def _publish_once(
    js: JetStreamClient, context: RunContext, subjects: tuple[str, ...], option: RePublish, subject: str
) -> list[Case]:
    """Publish one message on `subject` and judge what is republished."""
    model = StreamModel(STREAM, subjects, option, rules_for(context.server_version))
    ledger = MessageLedger(subjects, option)
    sent = time.time_ns()
    js.publish(subject, b"replay")
    acked = time.time_ns()
    outcome = model.publish(subject, b"replay")
    ledger.windows[outcome.sequence] = Window(sent, acked)
    js.wait_until(lambda: ledger.complete(model.republished, js.tapped), 2.0)
    js.settle(SETTLE)
    return ledger.judge(context, model.republished, js.tapped, final=True)
