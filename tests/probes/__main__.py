import sys

from tests.probes.harness import main

sys.exit(main())
