"""`python -m nats_conformance.reference ...`: the commands of `reference.commands`, imported with the signal
handling on."""

from __future__ import annotations

import sys

from nats_conformance.reference.cli import entry_point

main = entry_point("nats_conformance.reference.commands")

if __name__ == "__main__":
    sys.exit(main())
