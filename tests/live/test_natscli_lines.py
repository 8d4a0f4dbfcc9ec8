"""The `nats` CLI lines printed beside a case (`records.replay.nats_cli_command`, `server_config`) run as
printed with a real natscli, the release the lines are written for (`fixtures.provision.NATSCLI_VERSION`,
built from the Go module proxy like the servers, `fixtures.provision.NATSCLI`), against a real nats-server.

Each case is a real one: its question replayed on nats-server 2.14.5 (`suites.replay`), which observed the
subject. Its line is run with bash, with nothing substituted: the lines name no server, so the server's
URL is in `NATS_URL`, which natscli reads for `--server`. Each command exits 0 and the output shows the
subject the server observed for the case."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from nats_conformance.fixtures.children import Child, start_child
from nats_conformance.fixtures.options import build_run_config
from nats_conformance.fixtures.provision import NATSCLI, NATSCLI_VERSION, parse_version_spec, resolve_binary
from nats_conformance.fixtures.servers.local import HOST, free_port
from nats_conformance.records.casefile import CaseFile
from nats_conformance.records.replay import nats_cli_command, server_config
from nats_conformance.records.schema import Case
from nats_conformance.suites.replay import replay_on_server
from tests.live.campaigns import await_server
from tests.records.test_cli_lines import GLOBAL_FLAGS, NATSCLI_FLAGS

pytestmark = pytest.mark.live

RELEASE = "2.14.5"
"""The nats-server release the cases are observed on and the lines run against."""


@pytest.fixture(scope="module")
def natscli() -> Path:
    """The natscli of the lines, built once into the cache when it lacks it."""
    return resolve_binary(NATSCLI_VERSION, NATSCLI)


@dataclass(frozen=True)
class Shell:
    """Runs printed lines with bash in a folder, with natscli first on PATH and a server in NATS_URL."""

    natscli: Path
    folder: Path
    url: str

    def environment(self) -> dict[str, str]:
        return {
            **os.environ,
            "PATH": f"{self.natscli.parent}{os.pathsep}{os.environ['PATH']}",
            "NATS_URL": self.url,
            # natscli's contexts live under the configuration folder: none of this machine's
            "XDG_CONFIG_HOME": str(self.folder / "config"),
        }

    def run(self, line: str) -> str:
        """The output of `line`, which must exit 0."""
        done = subprocess.run(
            ["bash", "-c", line],
            cwd=self.folder,
            env=self.environment(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert done.returncode == 0, (line, done.stdout, done.stderr)
        return done.stdout + done.stderr

    def start(self, line: str, log: Path) -> Child:
        """`line` running in the background (a command that runs until stopped), output into `log`."""
        return start_child(
            ["bash", "-c", f"exec {line}"],
            log=log,
            cwd=self.folder,
            environment=self.environment(),
            dies_with_thread=True,
        )


def steps_of(comment_line: str) -> list[str]:
    """The commands of a printed `then, each in its own shell: A ; B` comment (the last line's)."""
    return comment_line.split("# then, each in its own shell: ", 1)[1].split(" ; ")


def await_output(log: Path, text: str) -> str:
    """The output of a background command once it shows `text` (10 seconds at most)."""
    deadline = time.monotonic() + 10
    while text not in (shown := log.read_text() if log.exists() else ""):
        assert time.monotonic() < deadline, (text, shown)
        time.sleep(0.05)
    return shown


@contextlib.contextmanager
def started_server(folder: Path, config: str) -> Iterator[str]:
    """nats-server RELEASE with `config` (its port given on the command line), yielding its URL."""
    folder.mkdir(parents=True, exist_ok=True)
    binary = resolve_binary(parse_version_spec(RELEASE))
    port = free_port()
    path, log = folder / "server.conf", folder / "server.log"
    path.write_text(config)
    process = start_child(
        [str(binary), "-c", str(path), "-a", HOST, "-p", str(port)],
        log=log,
        cwd=folder,
        dies_with_thread=True,
    )
    try:
        await_server(port, log)
        yield f"nats://{HOST}:{port}"
    finally:
        process.stop()


@pytest.fixture
def shell(natscli: Path, tmp_path: Path) -> Iterator[Shell]:
    """A fresh JetStream server for one test's lines (streams of one case's names)."""
    store = tmp_path / "jetstream"
    with started_server(tmp_path / "server", f'jetstream {{store_dir: "{store}"}}\n') as url:
        work = tmp_path / "work"
        work.mkdir()
        yield Shell(natscli, work, url)


def observed_case(
    feature: str, source: str, destination: str, subject: str, stream_subjects: tuple[str, ...] = ()
) -> Case:
    """The case of this question that nats-server RELEASE answered, replayed on it afresh."""
    run = build_run_config([RELEASE], ["process"], None, None)
    question = CaseFile(feature, source, destination, subject, RELEASE, stream_subjects=stream_subjects)
    cases = replay_on_server(run, question)
    (case,) = [case for case in cases if case.subject == subject]
    assert case.verdict == "agree", case
    return case


def test_the_lines_name_the_natscli_that_runs_them(natscli: Path) -> None:
    """The build is the release the lines are written for, and it takes every flag they use."""
    version = subprocess.run([str(natscli), "--version"], capture_output=True, text=True, check=True)
    assert version.stdout.strip() == f"v{NATSCLI_VERSION}"
    for verb, flags in NATSCLI_FLAGS.items():
        shown = subprocess.run(
            [str(natscli), *verb, "--help"], capture_output=True, text=True, timeout=30, check=True
        )
        listed = set(re.findall(r"--[a-z][a-z-]*", shown.stdout + shown.stderr))
        assert flags | GLOBAL_FLAGS <= listed, (verb, flags - listed)


@pytest.mark.parametrize(
    ("feature", "source", "destination", "subject"),
    [
        ("mapping", "m.*.*", "n.{{wildcard(2)}}.{{wildcard(1)}}", "m.a.b"),
        ("partition", "p.*", "q.{{partition(3,1)}}.{{wildcard(1)}}", "p.x"),
    ],
)
def test_a_mapping_line_prints_the_subject_the_server_mapped(
    shell: Shell, feature: str, source: str, destination: str, subject: str
) -> None:
    """`nats server mapping` maps the subject with natscli's own engine (nats-server v2.15.0's) and prints
    it, then an empty line (`python -m nats_conformance.reference map` prints the subject alone): the server's
    subject, which is the reference's (the case agrees)."""
    case = observed_case(feature, source, destination, subject)
    line = nats_cli_command(case)
    assert line.startswith("nats server mapping ")
    assert shell.run(line).splitlines() == [case.observed, ""]
    assert case.observed == case.expected


def test_a_validation_line_exits_0_when_accepted_and_1_with_the_error_when_refused(shell: Shell) -> None:
    accepted = observed_case("validation", "v.*", "w.{{wildcard(1)}}", "")
    assert accepted.observed == "accept"
    assert shell.run(nats_cli_command(accepted)).splitlines() == ["w.x", ""]
    refused = observed_case("validation", "v.*", "w.{{wildcard(2)}}", "")
    assert refused.observed != "accept"
    done = subprocess.run(
        ["bash", "-c", nats_cli_command(refused)],
        cwd=shell.folder,
        env=shell.environment(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 1
    assert "invalid mapping destination: wildcard index out of range" in done.stderr


@pytest.mark.parametrize("place", ["stream", "source", "mirror"])
def test_a_stream_transform_line_reads_back_the_message_on_the_transformed_subject(
    shell: Shell, place: str
) -> None:
    """The streams are added (a source's or a mirror's from its JSON file), the subject is published and
    `nats stream get` shows the stored message on the subject the server transformed it to."""
    case = observed_case(f"{place}-transform", "t.*.*", "t.{{wildcard(2)}}.{{wildcard(1)}}", "t.a.b")
    assert case.observed == "t.b.a"
    shown = shell.run(nats_cli_command(case))
    stored = "ORIGIN" if place == "stream" else "TARGET"
    item = re.findall(rf"^Item: {stored}#1 received .* on Subject (\S+)$", shown, re.MULTILINE)
    assert item == [case.observed], shown


def test_a_republish_line_adds_the_stream_and_its_steps_show_the_republished_subject(shell: Shell) -> None:
    case = observed_case("republish", "one.>", "uno.>", "one.x", stream_subjects=("one.>",))
    line = nats_cli_command(case)
    added = shell.run(line)  # the comment is bash's too
    assert "Republishing: one.> to uno.>" in added
    subscribe, publish = steps_of(line)
    log = shell.folder / "sub.log"
    subscriber = shell.start(subscribe, log)
    try:
        await_output(log, "Subscribing on >")
        shell.run(publish)
        shown = await_output(log, "[#2] Received on")  # the publish, then its republished copy
    finally:
        subscriber.stop()
    assert re.findall(r'Received on "([^"]+)"', shown) == [case.subject, case.observed.split()[0]]


@pytest.mark.parametrize("kind", ["stream", "service"])
def test_an_import_case_s_configuration_runs_with_its_printed_steps(
    natscli: Path, tmp_path: Path, kind: str
) -> None:
    """natscli cannot configure imports: the printed configuration runs a server (only its port given on
    the command line), and the printed steps show the subject the import mapped."""
    subject = "e.a" if kind == "stream" else "i.a"
    case = observed_case(f"{kind}-import", "e.*", "i.{{wildcard(1)}}", subject)
    config = server_config(case)
    with started_server(tmp_path / "server", config) as url:
        (tmp_path / "work").mkdir()
        shell = Shell(natscli, tmp_path / "work", url)
        listen, send = steps_of(config.splitlines()[-1])
        log = shell.folder / "listen.log"
        listener = shell.start(listen, log)
        try:
            await_output(log, "Subscribing on" if kind == "stream" else "Listening on")
            sent = shell.run(send)
            shown = await_output(log, "Received on")
        finally:
            listener.stop()
    if kind == "stream":  # the importer sees the exporter's message on its local subject
        assert re.findall(r'Received on "([^"]+)"', shown)[0] == case.observed
    else:  # the exporter's responder gets the request on its own subject, and its reply comes back
        assert re.findall(r'Received on subject "([^"]+)"', shown)[0] == case.observed
        assert "ok" in sent.splitlines(), sent
