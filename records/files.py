"""Files a command publishes are replaced whole: written under a temporary name beside them, then renamed,
so that an interrupted or failed write leaves the old file or the new one, never a mix."""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
from collections.abc import Callable, Mapping
from contextlib import suppress
from pathlib import Path


def printable(text: str) -> str:
    """Text with bytes that are not UTF-8 (kept as surrogate escapes by the reference and the tap, so
    that byte-level results compare exactly) written as `\\xNN`."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def replace_text(path: Path, text: str) -> None:
    """Write `text` to `path` through a temporary file in the same folder and a rename (as UTF-8, bytes
    that are not UTF-8 as `printable` writes them).

    Raises:
        OSError: the file cannot be written (the old one, if any, is kept and no temporary is left).
    """
    temporary = path.with_name(f".{path.name}.tmp")
    try:
        temporary.write_text(printable(text), encoding="utf-8")
        temporary.replace(path)
    except OSError:
        with suppress(OSError):
            temporary.unlink(missing_ok=True)
        raise


_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def _exchange(first: Path, second: Path) -> None:
    """Swap two paths in one step (Linux `renameat2` with `RENAME_EXCHANGE`): no moment sees neither."""
    libc = ctypes.CDLL(None, use_errno=True)
    names = os.fsencode(first), os.fsencode(second)
    if libc.renameat2(_AT_FDCWD, names[0], _AT_FDCWD, names[1], _RENAME_EXCHANGE) != 0:
        number = ctypes.get_errno()
        raise OSError(number, os.strerror(number), str(second))


def replace_folder(path: Path, files: Mapping[str, str], *, owned: Callable[[Path], bool]) -> None:
    """Write `files` (text by path under the folder, as `replace_text` writes it) as the folder `path`,
    whole: into a new folder beside it, which then takes the old one's place in one step (`_exchange`),
    so that an interrupted write, even a killed one, leaves the old folder or the new one, never a mix;
    the old one is removed after.
    An existing `path` is replaced only if it is empty or `owned` says this command wrote it.

    Raises:
        OSError: the folder cannot be written (the old one is kept and nothing temporary is left), or
            `path` holds files of someone else's (`FileExistsError`).
    """
    if path.is_dir() and any(path.iterdir()) and not owned(path):
        raise FileExistsError(errno.EEXIST, "it holds other files; name a new or empty folder")
    staged = path.with_name(f".{path.name}.new-{os.getpid()}")
    try:
        for name, text in files.items():
            page = staged / name
            page.parent.mkdir(parents=True, exist_ok=True)
            page.write_text(printable(text), encoding="utf-8")
        if path.exists():
            _exchange(staged, path)  # the old folder is now the staged one, removed below
        else:
            staged.rename(path)
    finally:
        shutil.rmtree(staged, ignore_errors=True)
