"""How a command line ends when interrupted (`reference.errors.run_command`)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nats_conformance.reference.errors import interrupts_held, run_command


@pytest.mark.parametrize(
    ("number", "status", "line"),
    [
        (signal.SIGINT, 130, "interrupted"),
        (signal.SIGTERM, 143, "terminated"),
        (signal.SIGHUP, 129, "hung up"),
    ],
)
def test_an_interrupt_turned_into_another_error_still_ends_the_command_as_interrupted(
    number: int, status: int, line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A signal whose interrupt the code it broke off replaces with an error of its own (Hypothesis's
    test wrapper fails an internal assertion when Ctrl-C lands while it sets up) ends the command as the
    signal says: its exit status and one line, no traceback."""

    def command() -> int:
        try:
            os.kill(os.getpid(), number)
            time.sleep(10)
        except KeyboardInterrupt:
            raise AssertionError("state._runner is not None")  # noqa: B904 - as the wrapper does
        return 0

    assert run_command(command) == status
    assert capsys.readouterr().err == f"nats-conformance: {line}\n"


def test_a_signal_while_interrupts_are_held_ends_the_command_once_the_block_ends(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A SIGTERM inside `interrupts_held` (a native library's import) lets the block finish, then ends
    the command as terminated, with its one line."""
    finished: list[bool] = []

    def command() -> int:
        with interrupts_held():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.1)  # the handler returns, so the sleep resumes (PEP 475)
            finished.append(True)
        return 0

    assert run_command(command) == 143
    assert finished == [True]
    assert capsys.readouterr().err == "nats-conformance: terminated\n"


def test_an_error_with_no_interrupt_is_not_taken_for_one() -> None:
    """An error no signal caused propagates as it is (a bug shows its traceback)."""

    def command() -> int:
        raise AssertionError("a bug")

    with pytest.raises(AssertionError, match="a bug"):
        run_command(command)


ESCAPING_EXEC = """
import sys
from nats_conformance.reference.errors import run_command

def command():
    exec("import os, signal, time\\nos.kill(os.getpid(), signal.SIGINT)\\ntime.sleep(10)")
    return 0

sys.exit(run_command(command, own_process=True))
"""
"""A command whose Ctrl-C lands in code run from a string (as dataclasses and Hypothesis run code)."""


def test_ctrl_c_inside_code_run_from_a_string_still_exits_130(tmp_path: Path) -> None:
    """CPython remembers a KeyboardInterrupt that left an ``exec`` of a string and, when the program ran
    as ``python -m``, kills the process with SIGINT at exit (-2, no line) although the command handled
    it; the command's status stays 130."""
    (tmp_path / "escaping.py").write_text(ESCAPING_EXEC)
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-m", "escaping"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stderr) == (130, "nats-conformance: interrupted\n")
