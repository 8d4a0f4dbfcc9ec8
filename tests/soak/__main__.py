"""`python -m tests.soak`: the nemesis soak (`tests.soak.soak`)."""

import sys

from tests.soak.soak import main

sys.exit(main())
