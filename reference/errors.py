"""Error tree of nats-conformance.

`ConformanceError` is the root of every error the product raises on purpose; command lines catch it once
and print one line. The reference's own errors (invalid subjects, invalid mappings) live below it.
"""

from __future__ import annotations


class ConformanceError(Exception):
    """Root of every deliberate nats-conformance error; its message is one line meant for a user."""
