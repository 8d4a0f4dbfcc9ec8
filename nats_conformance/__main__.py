"""`python -m nats_conformance COMMAND ...`: the `nats-conformance` command (the console script's `main`)."""

import sys

from nats_conformance import main

if __name__ == "__main__":
    sys.exit(main())
