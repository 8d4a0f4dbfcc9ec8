"""The texts of a run's coverage of nats-server's own code (`records.coverage.ReleaseCoverage`, read with
the records) that the renderers share."""

from __future__ import annotations

from nats_conformance.records.coverage import ReleaseCoverage, Unreached, percent


def first_line(block: Unreached) -> str:
    """The block's first line of source, stripped (what a table row shows of it)."""
    lines = [line.strip() for line in block.source.splitlines() if line.strip()]
    return lines[0] if lines else ""


INTRO = (
    "Statements of nats-server's mapping code that the run's cases reached, from the counters of its "
    "-cover build (`nats-conformance coverage`): subject_transform.go whole, and the functions of the "
    "mapping surface elsewhere (account mappings, imports and exports, stream configuration checks, "
    "subject matching; the list is records/coverage.py's `MAPPING_SURFACE`). Each block no case reached "
    "links to its lines at the release's tag."
)


def headline(item: ReleaseCoverage) -> str:
    """One sentence: the release, the surface's figure, and how many processes wrote counters."""
    return (
        f"Run {item.run_id} on nats-server {item.release}: {item.covered:,} of {item.statements:,} "
        f"statements of the mapping surface ({item.percent}), {len(item.unreached):,} blocks unreached "
        f"({item.unreachable:,} statements of them unreachable from any configuration or message: "
        f"{item.covered:,} of {item.statements - item.unreachable:,} reachable ones, "
        f"{percent(item.covered, item.statements - item.unreachable)}); "
        f"{item.counter_files} process(es) wrote counters (the servers"
        + (" and the engine oracle)" if item.engine else ")")
        + (
            f"; {item.restarts} server(s) restarted after a fault, whose counters are lost"
            if item.restarts
            else ""
        )
    )
