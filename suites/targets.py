"""What `--target` names: a nats-server release, a running server at a URL, or a transform library
behind the adapter protocol. One option for every kind, so that reports and replays name the target
the same way.

    --target 2.14.5                         a release (or line `2.10`, `system`, a binary path)
    --target nats://127.0.0.1:4222          a running server (mappings applied with --apply-command)
    --target "adapter:python my_lib.py"     a program speaking docs/adapter-protocol.md
    --target adapter:nats-jwt               a packaged adapter (`adapters/`, `nats-conformance adapters`),
                                            built and cached when missing (fixtures.adapters),
                                            and named so in records and replay lines
    --target engine:2.14.5                  the transform engine of a release, in-process behind
                                            the adapter protocol (fixtures.engine), judged like an
                                            adapter under that release's rules
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from nats_conformance.fixtures.options import OptionError

ADAPTER_PREFIX = "adapter:"
ENGINE_PREFIX = "engine:"
URL_PREFIXES = ("nats://", "tls://")


@dataclass(frozen=True, slots=True)
class TargetSpec:
    """A parsed `--target`: its kind (`server`, `url`, `adapter` or `engine`) and the rest of the text."""

    kind: str
    value: str


def parse_target(text: str) -> TargetSpec:
    """Read one `--target` value; an empty value or an adapter without a command is a one-line error."""
    text = text.strip()
    if text.startswith(ADAPTER_PREFIX):
        command = text[len(ADAPTER_PREFIX) :].strip()
        if not command:
            raise OptionError("--target adapter: needs the adapter's command, e.g. 'adapter:python lib.py'")
        return TargetSpec("adapter", command)
    if text.startswith(ENGINE_PREFIX):
        release = text[len(ENGINE_PREFIX) :].strip()
        if not release:
            raise OptionError("--target engine: needs a nats-server release, e.g. 'engine:2.14.5'")
        return TargetSpec("engine", release)
    if text.startswith(URL_PREFIXES):
        return TargetSpec("url", text)
    if not text:
        raise OptionError(
            "--target is empty: give a release (2.14.5), a nats:// URL, adapter:COMMAND or engine:RELEASE"
        )
    return TargetSpec("server", text)


@dataclass(frozen=True, slots=True)
class Targets:
    """Every `--target` of a command line, merged with the older options that name servers."""

    versions: tuple[str, ...]
    server_url: str | None
    adapters: tuple[str, ...]
    engines: tuple[str, ...] = ()
    """The releases of `engine:` targets."""

    @property
    def has_servers(self) -> bool:
        return bool(self.versions or self.server_url)


def gather_targets(targets: Sequence[str], versions: Sequence[str], server_url: str | None) -> Targets:
    """`--target` values together with `--server-version` and `--server-url`."""
    parsed = [parse_target(text) for text in targets]
    urls = [spec.value for spec in parsed if spec.kind == "url"] + ([server_url] if server_url else [])
    if len(set(urls)) > 1:
        raise OptionError(f"one server URL per run (got {', '.join(dict.fromkeys(urls))})")
    return Targets(
        versions=(*versions, *(spec.value for spec in parsed if spec.kind == "server")),
        server_url=urls[0] if urls else None,
        adapters=tuple(spec.value for spec in parsed if spec.kind == "adapter"),
        engines=tuple(spec.value for spec in parsed if spec.kind == "engine"),
    )
