"""`site serve DIR`: a preview of a built site on 127.0.0.1 (``http.server``), until Ctrl-C."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from nats_conformance.records.errors import ReportError

HOST = "127.0.0.1"


class QuietHandler(SimpleHTTPRequestHandler):
    """Serves the site's files without a log line per request."""

    def log_message(self, format: str, *args: Any) -> None:
        """Nothing: the preview prints only its address."""


def say_now(line: str) -> None:
    print(line, flush=True)


def serve(site: Path, port: int, say: Callable[[str], None] = say_now) -> None:
    """Serve `site` on 127.0.0.1:`port` (0: a free port) until interrupted; `say` gets its address.

    Raises:
        ReportError: `site` holds no index.html, or the port cannot be bound.
    """
    if not (site / "index.html").is_file():
        raise ReportError(f"{site} is no built site (no index.html; build it with: site RUN... --out {site})")
    handler = partial(QuietHandler, directory=str(site))
    try:
        server = ThreadingHTTPServer((HOST, port), handler)
    except OSError as error:
        raise ReportError(f"cannot serve on {HOST}:{port}: {error.strerror or error}") from error
    with server:
        say(f"serving {site.name or site} at http://{HOST}:{server.server_address[1]}/ (Ctrl-C stops)")
        server.serve_forever()
