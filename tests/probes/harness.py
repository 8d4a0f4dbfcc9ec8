"""The registry, the runner and the command line of the probes (`python -m tests.probes`).

A probe is one small function registered with `probe(id, kind, does, holds)`: it does what `does` says,
as a user or an operator would, and returns one line of evidence when `holds` held, or raises `Failed`
with the evidence that it did not. Probes of one `kind` need the same capability of the machine
(`KINDS`); a kind the machine lacks is reported as unavailable, with the reason, and its probes are not
run. Probes may share what they make (`Context.shared`: a killed run, a run with unknown cases), so that
`--only` runs a probe alone and the whole list makes each shared run once.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import shutil
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from nats_conformance.fixtures.provision import cache_root

ROOT = Path(__file__).resolve().parents[2]
RELEASE = "2.14.5"
"""The release every probe's campaign runs (one the test suite pins, in the server cache)."""
OLD_RELEASE = "2.9.25"
"""The second release the test suite pins (a sweep-like campaign over two releases)."""


class Failed(Exception):
    """A probe whose promise did not hold; the message is its one line of evidence."""


def check(held: object, evidence: str) -> None:
    """Raise `Failed(evidence)` unless `held`."""
    if not held:
        raise Failed(evidence)


def _binary_cached(release: str) -> bool:
    return (cache_root() / "nats-server" / release / "nats-server").is_file()


def _missing(*needs: str) -> str:
    """Why the machine cannot run a kind that needs `needs` ("" when it can)."""
    reasons = []
    for need in needs:
        if need == "root" and os.geteuid() != 0:
            reasons.append("not root")
        elif need == "releases":
            absent = [r for r in (RELEASE, OLD_RELEASE) if not _binary_cached(r)]
            if absent:
                reasons.append(f"no build of {', '.join(absent)} in {cache_root()} (./dev setup)")
        elif need == "spark":
            if importlib.util.find_spec("pyspark") is None:
                reasons.append("pyspark is not installed")
            if shutil.which("java") is None:
                reasons.append("no java on PATH")
        elif need == "docker":
            if shutil.which("dockerd") is None:
                reasons.append("no dockerd on PATH")
            if importlib.util.find_spec("docker") is None:
                reasons.append("the docker package is not installed (the containers extra)")
        elif need == "go" and shutil.which("go") is None:
            reasons.append("no go on PATH")
        elif need == "mount" and shutil.which("mount") is None:
            reasons.append("no mount")
    return "; ".join(reasons)


KINDS: dict[str, tuple[str, ...]] = {
    "bad-input": (),
    "signals": ("releases",),
    "build": ("go",),
    "server": ("releases",),
    "reports": ("releases",),
    "spark": ("releases", "spark"),
    "disk": ("releases", "root", "mount"),
    "container": ("releases", "root", "docker"),
}
"""Each kind of probe and what it needs of the machine."""


@dataclass(frozen=True, slots=True)
class Probe:
    id: str
    kind: str
    does: str
    """What the user or operator does."""
    holds: str
    """What must hold."""
    run: Callable[[Context], str]

    def line(self) -> str:
        return f"{self.id}: {self.does}; {self.holds}"


PROBES: dict[str, Probe] = {}
F = TypeVar("F", bound=Callable[["Context"], str])


def probe(id: str, kind: str, does: str, holds: str) -> Callable[[F], F]:
    """Register the decorated function as the probe `id`."""
    assert kind in KINDS, kind

    def register(function: F) -> F:
        assert id not in PROBES, f"two probes named {id}"
        PROBES[id] = Probe(id, kind, does, holds, function)
        return function

    return register


@dataclass
class Context:
    """What the probes of one harness run share: its output directory, a work directory per probe, the
    runs several probes read (made once, by the first probe that asks), and what is to be cleaned up."""

    out: Path
    shared: dict[str, Any] = field(default_factory=dict)
    cleanup: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)
    current: str = ""

    def __enter__(self) -> Context:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cleanup.close()

    def work(self, name: str = "") -> Path:
        """The current probe's directory, or a new empty directory `name` in it."""
        path = self.out / "work" / self.current
        if name:
            path = path / name
            if path.exists():
                shutil.rmtree(path)
        path.mkdir(parents=True, exist_ok=True)
        return path

    def once(self, name: str, make: Callable[[Path], Any]) -> Any:
        """What `make(directory)` returns, made the first time a probe asks for `name`."""
        if name not in self.shared:
            directory = self.out / "work" / "shared" / name
            if directory.exists():
                shutil.rmtree(directory)
            directory.mkdir(parents=True)
            self.shared[name] = make(directory)
        return self.shared[name]


@dataclass(slots=True)
class Result:
    id: str
    kind: str
    status: str
    """pass, fail or unavailable"""
    evidence: str
    seconds: float


def run_probes(probes: list[Probe], out: Path, say: Callable[[str], None]) -> list[Result]:
    results = []
    unavailable = {kind: _missing(*KINDS[kind]) for kind in {p.kind for p in probes}}
    with Context(out) as context:
        for item in probes:
            started = time.monotonic()
            if unavailable[item.kind]:
                result = Result(item.id, item.kind, "unavailable", unavailable[item.kind], 0.0)
            else:
                context.current = item.id
                shutil.rmtree(out / "work" / item.id, ignore_errors=True)  # an earlier run's, same --out
                try:
                    result = Result(item.id, item.kind, "pass", item.run(context), 0.0)
                except Failed as failed:
                    result = Result(item.id, item.kind, "fail", str(failed), 0.0)
                except Exception as error:  # a fault of the harness: the probe could not say
                    (out / "work").mkdir(parents=True, exist_ok=True)
                    (out / "work" / f"{item.id}.traceback").write_text(traceback.format_exc())
                    result = Result(item.id, item.kind, "fail", f"harness error: {error!r}"[:300], 0.0)
            result.seconds = round(time.monotonic() - started, 1)
            results.append(result)
            say(f"{result.status.upper():11} {result.id} ({result.seconds:.0f} s): {result.evidence}")
    return results


def describe(results: list[Result], seconds: float) -> str:
    counts = {s: sum(r.status == s for r in results) for s in ("pass", "fail", "unavailable")}
    lines = [
        f"{len(results)} probes in {seconds:.0f} s: {counts['pass']} pass, {counts['fail']} fail, "
        f"{counts['unavailable']} unavailable",
        *(f"{r.status:11} {r.id}: {r.evidence}" for r in results),
    ]
    return "\n".join(lines) + "\n"


def table() -> str:
    """The probes as the Markdown table of docs/guide/probes.md (a test keeps the page in step)."""
    rows = ["| id | kind | what is done | what must hold |", "|---|---|---|---|"]
    for item in PROBES.values():
        does, holds = item.does.replace("|", "\\|"), item.holds.replace("|", "\\|")
        rows.append(f"| `{item.id}` | {item.kind} | {does} | {holds} |")
    return "\n".join(rows) + "\n"


def load() -> None:
    """Register every probe (the modules' decorators do)."""
    import tests.probes.bad_input
    import tests.probes.campaigns
    import tests.probes.reports_and_spark  # noqa: F401


def selected(only: str) -> list[Probe]:
    if not only:
        return list(PROBES.values())
    names = [name.strip() for name in only.split(",") if name.strip()]
    unknown = [name for name in names if name not in PROBES]
    if unknown:
        raise SystemExit(f"probes: error: no probe {', '.join(unknown)} (--list lists them)")
    return [PROBES[name] for name in names]


@contextlib.contextmanager
def _terminated_as_interrupt() -> Iterator[None]:
    """SIGTERM and SIGHUP end the harness as Ctrl-C does: the probe's processes are cleaned up."""

    def interrupt(number: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = {number: signal.signal(number, interrupt) for number in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def main(argv: list[str] | None = None) -> int:
    load()
    parser = argparse.ArgumentParser(
        prog="python -m tests.probes",
        description="The fault and bad-input probes of the reliability contract (docs/guide/probes.md).",
        epilog="Exit status: 0 every probe passed, 1 one failed, 2 this machine cannot run a kind of probe.",
    )
    parser.add_argument("--list", action="store_true", help="list the probes, one a line, and exit")
    parser.add_argument("--only", default="", metavar="ID[,ID...]", help="run only these probes")
    parser.add_argument("--out", type=Path, default=Path("runs/probes"), help="where probes.json/.txt land")
    arguments = parser.parse_args(argv)
    probes = selected(arguments.only)
    if arguments.list:
        for item in probes:
            print(f"{item.id} [{item.kind}]: {item.does}; {item.holds}")
        return 0
    out = arguments.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    try:
        with _terminated_as_interrupt():
            results = run_probes(probes, out, lambda line: print(line, flush=True))
    except KeyboardInterrupt:
        print("probes: interrupted", file=sys.stderr)
        return 130
    seconds = time.monotonic() - started
    summary = {
        "seconds": round(seconds, 1),
        "results": [asdict(r) | {"does": PROBES[r.id].does, "holds": PROBES[r.id].holds} for r in results],
    }
    (out / "probes.json").write_text(json.dumps(summary, indent=2) + "\n")
    (out / "probes.txt").write_text(describe(results, seconds))
    print(describe(results, seconds).splitlines()[0])
    if any(r.status == "fail" for r in results):
        return 1
    missing = sorted({f"{r.kind} ({r.evidence})" for r in results if r.status == "unavailable"})
    if missing:
        print(f"probes: this machine cannot run: {'; '.join(missing)}", file=sys.stderr)
        return 2
    return 0
