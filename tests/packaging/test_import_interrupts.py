"""Ctrl-C or SIGTERM while a command still imports its modules ends it with its one line and exit
status, no traceback: every entry point installs its signal handling before the heavy imports."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PAUSED_RUN = """
import os, runpy, sys, time

class Pause:
    \"\"\"Stops the import of one module: says so on the pipe, then sleeps until a signal's handler
    raises. It sleeps a tenth of a second at a time: a signal the kernel hands to another thread (one a
    library started) wakes no sleep of the main thread, whose handler then runs when its sleep ends.\"\"\"

    def find_spec(self, name, path=None, target=None):
        if name == {module!r}:
            sys.meta_path.remove(self)
            os.write({fd}, b".")
            for _ in range(6000):
                time.sleep(0.1)
        return None

sys.meta_path.insert(0, Pause())
if {repeat}:
    leave = sys.exit

    def exit_after_a_repeat(status=None):
        \"\"\"The signal comes again as the command's process exits (a second Ctrl-C).\"\"\"
        os.kill(os.getpid(), {repeat})
        leave(status)

    sys.exit = exit_after_a_repeat
sys.argv = [{entry!r}, *{argv!r}]
if {entry!r} == "nats_conformance":
    from nats_conformance import main  # as the installed console script does
    sys.exit(main())
runpy.run_module({entry!r}, run_name="__main__", alter_sys=True)
"""
"""`python -m ENTRY ARGV...` (or the `nats-conformance` console script) with the import of one module
the command needs paused until a signal arrives."""

ENTRIES = [
    ("nats_conformance.suites", ["campaign", "--help"], "nats_conformance.fixtures.provision"),
    ("nats_conformance.reports", ["build", "--help"], "nats_conformance.reports.build"),
    ("nats_conformance.fixtures", ["provision", "--help"], "nats_conformance.fixtures.provision"),
    ("nats_conformance.reference", ["map", "--help"], "nats_conformance.reference.adapter"),
    ("nats_conformance", ["map", "--help"], "nats_conformance.fixtures.provision"),
    # The reference model the command line itself is built on (`reference/__init__.py` imports all of it).
    ("nats_conformance", ["map", "--help"], "nats_conformance.reference.channels"),
]
"""Each entry point, a command it runs and a module it imports before running it."""


ENDINGS = [
    (signal.SIGINT, 130, "interrupted"),
    (signal.SIGTERM, 143, "terminated"),
    (signal.SIGHUP, 129, "hung up"),
]
"""A signal, the exit status and the line it ends a command with."""


@pytest.mark.parametrize("ending", ENDINGS, ids=["SIGINT", "SIGTERM", "SIGHUP"])
@pytest.mark.parametrize(
    ("entry", "argv", "module"), ENTRIES, ids=[f"{entry}-{module}" for entry, _, module in ENTRIES]
)
def test_a_signal_during_the_imports_ends_the_command_with_one_line(
    entry: str, argv: list[str], module: str, ending: tuple[int, int, str]
) -> None:
    assert run_paused(entry, argv, module, ending) == (ending[1], f"nats-conformance: {ending[2]}\n", "")


@pytest.mark.parametrize("ending", ENDINGS, ids=["SIGINT", "SIGTERM", "SIGHUP"])
@pytest.mark.parametrize(
    ("entry", "argv", "module"),
    [ENTRIES[0], *ENTRIES[-2:]],
    ids=["suites-commands", "nats_conformance-commands", "nats_conformance-reference"],
)
def test_the_same_signal_again_as_the_process_exits_keeps_its_status(
    entry: str, argv: list[str], module: str, ending: tuple[int, int, str]
) -> None:
    """A command a signal ended ignores that signal's repeats until its process exits: without that, a
    second one after its line killed it (status -2 for SIGINT, with a KeyboardInterrupt traceback)."""
    number, status, line = ending
    result = run_paused(entry, argv, module, ending, repeat=number)
    assert result == (status, f"nats-conformance: {line}\n", "")


def test_a_command_run_in_process_hands_the_signals_back_after_an_interrupt() -> None:
    """`main(argv)` called with its arguments (a test, a caller's own program) restores the caller's
    handlers even after a signal ended it; only a process's own command line keeps ignoring them."""
    from nats_conformance.reference.errors import run_command

    def interrupted() -> int:
        raise KeyboardInterrupt

    before = signal.getsignal(signal.SIGINT)
    assert run_command(interrupted) == 130
    assert signal.getsignal(signal.SIGINT) is before


def run_paused(
    entry: str, argv: list[str], module: str, ending: tuple[int, int, str], repeat: int = 0
) -> tuple[int, str, str]:
    """Exit status, stderr and stdout of `entry` paused in the import of `module`, then sent the
    signal of `ending` (and `repeat` again as it exits)."""
    number = ending[0]
    read, write = os.pipe()
    script = PAUSED_RUN.format(module=module, fd=write, entry=entry, argv=argv, repeat=repeat)
    process = subprocess.Popen(
        [sys.executable, "-c", script],
        cwd=ROOT,
        pass_fds=[write],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    os.close(write)
    try:
        with os.fdopen(read, "rb") as ready:
            assert ready.read(1) == b".", "the command never imported " + module
        process.send_signal(number)
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return process.returncode, err, out
