"""Records the expectation tests share: a crash of `{{partition(0,1)}}` on 2.10.27, as judged."""

from __future__ import annotations

from nats_conformance.records.schema import Case

CRASHING = Case(
    run_id="r1",
    case_id=0,
    implementation="nats-server",
    server_version="2.10.27",
    backend="process",
    feature="partition",
    functions="partition",
    source="a.*",
    destination="{{partition(0,1)}}",
    subject="a.x",
    expected="0",
    observed="",
    verdict="diverge",
    difference="server-crash",
)
