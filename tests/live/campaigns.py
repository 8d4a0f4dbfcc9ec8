"""What the live tests of whole campaigns share: the containers a campaign made, a process's arguments."""

from __future__ import annotations

import contextlib
import shlex
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nats_conformance.fixtures.children import Child, start_child
from nats_conformance.fixtures.clients.wire import WireError, read_info
from nats_conformance.fixtures.docker import process_daemon
from nats_conformance.fixtures.options import RunConfig, Target
from nats_conformance.fixtures.provision import parse_version_spec, resolve_binary
from nats_conformance.fixtures.reaper import LABEL_OWNER
from nats_conformance.fixtures.servers.local import HOST, free_port
from nats_conformance.reference.versions import Version


def containers_of(owner: str) -> list[Any]:
    """The containers (running or not) labelled as made by the process `owner` (`process_identity`), on
    the daemon this process uses, which a campaign started from it uses too. One removed between the
    daemon's list and its inspection (the reaper of the next run at work) is gone, not an error."""
    client = process_daemon().client()
    try:
        labelled = {"label": f"{LABEL_OWNER}={owner}"}
        return list(client.containers.list(all=True, filters=labelled, ignore_removed=True))
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


def await_server(port: int, log: Path) -> None:
    """Return once a server answers on `port` (10 seconds at most)."""
    deadline = time.monotonic() + 10
    while True:
        try:
            read_info(HOST, port)
            return
        except (WireError, OSError):
            assert time.monotonic() < deadline, log.read_text() if log.exists() else "no log"
            time.sleep(0.05)


@dataclass(frozen=True)
class HandStarted:
    """A server started as a user would, outside the product: its binary, port, config file and process."""

    binary: Path
    port: int
    config: Path
    process: Child

    def apply_command(self) -> str:
        """The recipe's apply command for this server: test the new file with the server's own binary (a
        refused file is then a clear rejection, not a reload that never takes effect), install it, SIGHUP."""
        check = f"{shlex.quote(str(self.binary))} -t -c {{config}}"
        return f"{check} && cp {{config}} {shlex.quote(str(self.config))} && kill -HUP {self.process.pid}"


@contextlib.contextmanager
def hand_started_server(directory: Path, release: str = "2.14.5") -> Iterator[HandStarted]:
    """A server of `release` on a free loopback port, answering before this yields, stopped after."""
    binary = resolve_binary(parse_version_spec(release))
    port = free_port()
    config, log = directory / "server.conf", directory / "server.log"
    config.write_text(f'listen: "{HOST}:{port}"\n')
    process = start_child([str(binary), "-c", str(config)], log=log, cwd=directory, dies_with_thread=True)
    try:
        await_server(port, log)
        yield HandStarted(binary, port, config, process)
    finally:
        process.stop()
