"""Build the compatibility site of given run directories, several times: the median wall time.

    .venv/bin/python benchmarks/bench_site.py RUN_DIR... [--repeats 5] [--engine duckdb|spark]

Each repeat is `reports.site.build_site` in this process into a fresh temporary directory (the records
checked, aggregated once for all runs and once per run, every page rendered and written). Prints each
repeat's time, then the median and the number of pages.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nats_conformance.reports.build import ENGINES
from nats_conformance.reports.site import build_site


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--engine", choices=ENGINES, default="duckdb")
    arguments = parser.parse_args()
    times = []
    pages = 0
    for repeat in range(arguments.repeats):
        with tempfile.TemporaryDirectory(prefix="bench-site-") as scratch:
            began = time.perf_counter()
            build_site(arguments.run_dirs, Path(scratch) / "site", engine=arguments.engine)
            times.append(time.perf_counter() - began)
            pages = sum(1 for _ in (Path(scratch) / "site").rglob("*.html"))
        print(f"repeat {repeat + 1}: {times[-1]:.3f} s", flush=True)
    print(f"median of {len(times)}: {statistics.median(times):.3f} s ({pages} pages, {arguments.engine})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
