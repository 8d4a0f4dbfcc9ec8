"""One case run again on a fresh server: the `replay` command's work, for command-line fields or a case
file (records.casefile), on any release and backend. Known divergences are not looked up: a replay shows
the comparison with the reference as it is."""

from __future__ import annotations

import itertools

from fixtures.backends import open_backend
from fixtures.config import ServerConfig
from fixtures.options import RunConfig
from fixtures.provision import resolve_binary
from records.casefile import CaseFile
from records.expectations import Expectations
from records.replay import layout_json
from records.schema import Case
from reference.profiles import for_version
from suites.differential import MappingBatch, RunContext, run_mapping_batch, run_validation_case


def replay_on_server(
    run: RunConfig, *, feature: str, source: str, destination: str, subject: str
) -> list[Case]:
    """The cases of one mapping (or validation) case on the run's first target, started afresh."""
    server = open_backend(run.targets[0], run, binary_resolver=resolve_binary)
    counter = itertools.count()
    try:
        server.start(ServerConfig())
        profile = for_version(server.version)
        context = RunContext.for_server(
            server, run_id="replay", expectations=Expectations(), next_case_id=lambda: next(counter)
        )
        if feature != "validation" and subject:
            batch = MappingBatch(((source, destination),), ((subject,),))
            cases = run_mapping_batch(server, profile, batch, context).all_cases()
            if cases:
                return cases
        return [run_validation_case(server, profile, source, destination, context)]
    finally:
        server.cleanup()


def replay_file_on_server(case: CaseFile, run: RunConfig) -> list[Case]:
    """A case file's case on a server target; republish and streaming cases use their own replays."""
    if case.feature == "republish":
        from suites.republish_replay import replay_republish

        return replay_republish(
            stream_subjects=",".join(case.stream_subjects),
            source=case.source,
            destination=case.destination,
            headers_only=case.headers_only,
            subject=case.subject,
            version=run.targets[0].spec.text,
            backend=run.backends[0],
        )
    if case.feature == "streaming":
        from suites.streaming.replay import replay_streaming

        source = layout_json(case.layout) if case.layout else case.source
        return replay_streaming(source, case.subject, run.targets[0].spec.text)
    return replay_on_server(
        run, feature=case.feature, source=case.source, destination=case.destination, subject=case.subject
    )
