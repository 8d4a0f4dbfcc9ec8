"""A server at a URL that wants TLS or credentials: `--tls-ca`, `--tls-cert/--tls-key`, `--user/--password`,
`--token`, `--nkey`, `--creds`, and TLS with creds, each against a local nats-server 2.14.5 configured to
require it (a throwaway CA made with the openssl CLI; nkeys from the `nkeys` package; the creds of an
operator-mode server minted by fixtures.operator). Each runs a small matching campaign and every case
is judged."""

from __future__ import annotations

import contextlib
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from nats_conformance.fixtures.children import start_child
from nats_conformance.fixtures.config import OperatorSettings, ServerConfig, render_config
from nats_conformance.fixtures.operator import NKey, OperatorKeys, creds_text
from nats_conformance.fixtures.provision import parse_version_spec, resolve_binary
from nats_conformance.fixtures.servers.local import HOST, free_port
from nats_conformance.suites.__main__ import main
from tests.live.campaigns import await_server

pytestmark = pytest.mark.live


def openssl(*arguments: str, cwd: Path) -> None:
    subprocess.run(["openssl", *arguments], cwd=cwd, check=True, capture_output=True)


def certificates(folder: Path) -> None:
    """ca.pem, and server.pem/server.key (for IP 127.0.0.1) and client.pem/client.key signed by it."""
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    openssl(
        "req",
        "-x509",
        *ec,
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "1",
        "-subj",
        "/CN=ca",
        cwd=folder,
    )
    (folder / "server.ext").write_text(f"subjectAltName=IP:{HOST}\nextendedKeyUsage=serverAuth\n")
    (folder / "client.ext").write_text("extendedKeyUsage=clientAuth\n")
    for name in ("server", "client"):
        openssl(
            "req", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={name}", cwd=folder
        )
        openssl(
            *("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial"),
            *("-out", f"{name}.pem", "-days", "1", "-extfile", f"{name}.ext"),
            cwd=folder,
        )


def secured(kind: str, folder: Path, port: int) -> tuple[str, str, list[str]]:
    """The server's configuration, its URL and the options that reach it, for one `kind` of security
    (`tls+creds`: both, as a hosted NATS service asks)."""
    listen = f'listen: "{HOST}:{port}"\n'
    url = f"nats://{HOST}:{port}"
    if kind == "tls+creds":
        creds, _, creds_options = secured("creds", folder, port)
        tls, url, tls_options = secured("tls", folder, port)
        return creds + tls.removeprefix(listen), url, [*tls_options, *creds_options]
    if kind in ("tls", "mutual-tls"):
        certificates(folder)
        verify = ", verify: true" if kind == "mutual-tls" else ""
        files = (
            f'cert_file: "{folder}/server.pem", key_file: "{folder}/server.key", ca_file: "{folder}/ca.pem"'
        )
        tls = f"tls {{ {files}{verify} }}\n"
        client = ["--tls-cert", str(folder / "client.pem"), "--tls-key", str(folder / "client.key")]
        return (
            listen + tls,
            f"tls://{HOST}:{port}",
            ["--tls-ca", str(folder / "ca.pem"), *(client if verify else [])],
        )
    if kind == "user":
        return (
            listen + 'authorization { user: "tester", password: "pa$$word" }\n',
            url,
            ["--user", "tester", "--password", "pa$$word"],
        )
    if kind == "token":
        return listen + 'authorization { token: "s3cret" }\n', url, ["--token", "s3cret"]
    if kind == "nkey":
        user = NKey.generate("user")
        (folder / "user.nk").write_text(user.seed + "\n")
        return (
            listen + f'authorization {{ users: [ {{ nkey: "{user.public}" }} ] }}\n',
            url,
            ["--nkey", str(folder / "user.nk")],
        )
    keys = OperatorKeys.generate()
    (folder / "user.creds").write_text(creds_text(keys.user_jwt(), keys.user))
    operator = OperatorSettings(
        operator_jwt=keys.operator_jwt(),
        system_account=keys.system_account.public,
        preload=(
            (keys.system_account.public, keys.account_jwt(system=True)),
            (keys.account.public, keys.account_jwt()),
        ),
        resolver="memory",
    )
    return (
        render_config(ServerConfig(operator=operator), host=HOST, port=port),
        url,
        ["--creds", str(folder / "user.creds")],
    )


@contextlib.contextmanager
def secured_server(kind: str, folder: Path) -> Iterator[tuple[str, list[str]]]:
    """A 2.14.5 server that requires `kind` of security, answering: its URL and the options that reach it."""
    binary = resolve_binary(parse_version_spec("2.14.5"))
    port = free_port()
    text, url, options = secured(kind, folder, port)
    (folder / "server.conf").write_text(text)
    server = start_child(
        [str(binary), "-c", str(folder / "server.conf")],
        log=folder / "server.log",
        cwd=folder,
        dies_with_thread=True,
    )
    try:
        await_server(port, folder / "server.log")
        yield url, options
    finally:
        server.stop()


@pytest.mark.parametrize("kind", ["tls", "mutual-tls", "user", "token", "nkey", "creds", "tls+creds"])
def test_a_campaign_reaches_a_server_that_requires_it(kind: str, tmp_path: Path) -> None:
    out = tmp_path / "runs"
    campaign = ["campaign", "--family", "matching", "--budget", "matching=50"]
    with secured_server(kind, tmp_path) as (url, options):
        refused = main([*campaign, "--target", url, "--out", str(tmp_path / "refused")])
        status = main([*campaign, "--target", url, *options, "--out", str(out)])
    assert refused == 3  # without the options every case is unknown: the server would not take one
    (run_dir,) = out.iterdir()
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert status == 0, manifest
    assert manifest["cases"] == sum(manifest["verdicts"].values()) >= 50
    assert manifest["verdicts"]["agree"] >= 50
    assert manifest["verdicts"]["unknown"] == 0
