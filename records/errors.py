"""Errors of reading records into a report (`records.load`, the query engines, a Spark session) and of the
report builder: each is one line for the user, naming the file or option at fault."""

from __future__ import annotations

from nats_conformance.reference.errors import ConformanceError


class ReportError(ConformanceError):
    """A report cannot be built: a missing or empty run directory, a corrupt or newer records file, or
    a Spark failure. The message is one line and names what is wrong and where."""

    kind = "report"
