"""What the live tests of whole campaigns share: the containers a campaign made, a process's arguments."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fixtures.docker import process_daemon
from fixtures.options import RunConfig, Target
from fixtures.servers.container import LABEL_OWNER
from reference.versions import Version


def containers_of(owner: str) -> list[Any]:
    """The containers (running or not) labelled as made by the process `owner` (`process_identity`), on
    the daemon this process uses, which a campaign started from it uses too."""
    client = process_daemon().client()
    try:
        return list(client.containers.list(all=True, filters={"label": f"{LABEL_OWNER}={owner}"}))
    finally:
        client.close()


def arguments(pid: int) -> list[str]:
    """The command line of process `pid` ([] once it is gone)."""
    try:
        return [part.decode() for part in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") if part]
    except OSError:
        return []


def newest_of_session(target: Target, run_config: RunConfig) -> bool:
    """Whether `target` runs the newest release among the session's targets: the one release the costly
    fault tests run on, whichever releases a session pins."""
    newest = max(run_config.versions, key=lambda spec: Version.search(spec.label) or Version(0, 0, 0))
    return target.spec.label == newest.label
