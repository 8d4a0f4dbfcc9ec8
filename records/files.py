"""Files a command publishes are replaced whole: written under a temporary name beside them, then renamed,
so that an interrupted or failed write leaves the old file or the new one, never a mix."""

from __future__ import annotations

from contextlib import suppress
from pathlib import Path


def replace_text(path: Path, text: str) -> None:
    """Write `text` to `path` through a temporary file in the same folder and a rename.

    Raises:
        OSError: the file cannot be written (the old one, if any, is kept and no temporary is left).
    """
    temporary = path.with_name(f".{path.name}.tmp")
    try:
        temporary.write_text(text)
        temporary.replace(path)
    except OSError:
        with suppress(OSError):
            temporary.unlink(missing_ok=True)
        raise
