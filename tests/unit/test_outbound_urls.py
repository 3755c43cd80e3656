"""Outbound URLs (issue 24 §3): one rule when a URL is saved and again at every delivery.
Every address form tried (the SSRF table of docs/outbound.md) is refused or accepted the
same at both; a delivery connects to the address it checked (DNS answering differently
afterwards changes nothing), never follows a redirect, and says what went wrong only as a
category."""

from __future__ import annotations

import itertools
import socket
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from ipaddress import ip_address
from pathlib import Path
from typing import Any

import pytest

from agentworks.outbound import sending
from agentworks.outbound.sending import CATEGORIES, post, shown
from agentworks.outbound.urls import ALLOW_LOOPBACK_ENV, RefusedUrl, check_on_save
from agentworks.workflows.webhooks import Webhooks
from tests.support.clock import FakeClock
from tests.support.webhook_receiver import webhook_receiver

ROOT = Path(__file__).resolve().parents[2]
PUBLIC_V4 = "93.184.215.14"
PUBLIC_V6 = "2606:4700:4700::1111"
# What the mocked resolver answers for each name (anything else: no such name).
DNS: dict[str, list[str]] = {
    "internal.example.test": ["10.1.2.3"],
    "mixed.example.test": [PUBLIC_V4, "10.1.2.3"],  # one public, one private
    "v6-internal.example.test": ["fd00:ec2::254"],  # the EC2 metadata service over IPv6
    "metadata.example.test": ["169.254.169.254"],
    "localhost": ["127.0.0.1", "::1"],
    "hooks.example.test": [PUBLIC_V4, PUBLIC_V6],
}

# (URL, why it is refused) — the SSRF table; docs/outbound.md lists the same.
REFUSED = [
    ("https://127.0.0.1/hook", "loopback"),
    ("https://2130706433/hook", "loopback"),  # decimal
    ("https://0x7f.1/hook", "loopback"),  # hex, shortened
    ("https://0177.0.0.1/hook", "loopback"),  # octal
    ("https://127.1/hook", "loopback"),  # shortened
    ("https://[::1]/hook", "loopback"),
    ("https://[::ffff:127.0.0.1]/hook", "loopback (IPv4 inside IPv6)"),
    ("https://[::ffff:7f00:1]/hook", "loopback (IPv4 inside IPv6)"),
    ("https://[::127.0.0.1]/hook", "loopback (IPv4 inside IPv6)"),  # IPv4-compatible
    ("https://[64:ff9b::a00:1]/hook", "private (IPv4 inside IPv6)"),  # NAT64 of 10.0.0.1
    ("https://[2002:a9fe:a9fe::]/hook", "link-local (IPv4 inside IPv6)"),  # 6to4
    ("https://169.254.169.254/latest/meta-data/", "link-local"),
    ("https://10.0.0.1/hook", "private"),
    ("https://172.16.0.1/hook", "private"),
    ("https://192.168.1.1/hook", "private"),
    ("https://100.64.0.1/hook", "shared (CGNAT)"),
    ("https://[fc00::1]/hook", "unique-local"),
    ("https://[fd00:ec2::254]/hook", "unique-local"),
    ("https://[fe80::1]/hook", "link-local"),
    ("https://0.0.0.0/hook", "unspecified"),
    ("https://0/hook", "unspecified"),
    ("https://[::]/hook", "unspecified"),
    ("https://224.0.0.1/hook", "multicast"),
    ("https://[ff02::1]/hook", "multicast"),
    ("https://255.255.255.255/hook", "broadcast"),
    ("https://240.0.0.1/hook", "reserved"),
    ("https://192.0.2.10/hook", "documentation"),
    ("https://internal.example.test/hook", "resolves to a private"),
    ("https://mixed.example.test/hook", "resolves to a private"),
    ("https://v6-internal.example.test/hook", "resolves to a unique-local"),
    ("https://metadata.example.test/hook", "resolves to a link-local"),
    ("https://localhost/hook", "resolves to a loopback"),
    ("https://user:pass@hooks.example.test/hook", "a user or password"),
    ("https://user@hooks.example.test/hook", "a user or password"),
    ("https://:pass@hooks.example.test/hook", "a user or password"),
    ("http://hooks.example.test/hook", "an https:// URL is needed"),
    ("http://127.0.0.1:8080/hook", "an https:// URL is needed"),
    ("ftp://hooks.example.test/hook", "an https:// URL is needed"),
    ("https://[fe80::1%25eth0]/hook", "zone"),
    ("https://hooks .example.test/hook", "spaces"),
    ("https://hooks.example.test/a b", "spaces"),
    ("https://hooks.example.test/\r\nX-Injected: 1", "control"),
    ("https://bücher.example.test/hook", "non-ASCII"),  # given as xn--bcher-kva.example.test
    ("https://hooks_example!.test/hook", "not a valid name"),
    ("https://hooks.example.test:0/hook", "port 0"),
]
ACCEPTED = [
    (f"https://{PUBLIC_V4}/hook", PUBLIC_V4),
    (f"https://[{PUBLIC_V6}]/hook", PUBLIC_V6),
    (f"https://[::ffff:{PUBLIC_V4}]/hook", f"::ffff:{PUBLIC_V4}"),  # judged by its IPv4
    ("https://[64:ff9b::808:808]/hook", "64:ff9b::808:808"),  # NAT64 of 8.8.8.8
    ("https://hooks.example.test/hook?x=1", PUBLIC_V4),  # the first address it resolves to
]


class Resolver:
    """socket.getaddrinfo as the tests' DNS: `answers` per name, counted."""

    def __init__(self, answers: dict[str, list[str]]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    def __call__(self, host: str, port: Any, *args: Any, **kwargs: Any) -> list[Any]:
        self.asked.append(host)
        found = self.answers.get(host)
        if found is None:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [
            (socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "",
             (a, int(port), 0, 0) if ":" in a else (a, int(port)))
            for a in found
        ]  # fmt: skip


@pytest.fixture
def dns(monkeypatch: pytest.MonkeyPatch) -> Resolver:
    resolver = Resolver(dict(DNS))
    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    return resolver


@pytest.fixture
def connects(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every address a socket connected to; the connection is then refused (nothing here
    may leave the machine)."""
    targets: list[Any] = []

    def connect(self: socket.socket, address: Any) -> None:
        targets.append(address)
        raise ConnectionRefusedError(111, "Connection refused")

    monkeypatch.setattr(socket.socket, "connect", connect)
    return targets


@pytest.fixture(autouse=True)
def deployed_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ALLOW_LOOPBACK_ENV, raising=False)


def _send(url: str) -> sending.Outcome:
    return post(url, b"{}", {"Content-Type": "application/json"}, 2.0)


@pytest.mark.parametrize(("url", "why"), REFUSED)
def test_every_refused_form_is_refused_at_save_and_at_delivery(
    url: str, why: str, dns: Resolver, connects: list[Any]
) -> None:
    with pytest.raises(RefusedUrl) as refused:
        check_on_save(url)
    assert why in str(refused.value)
    outcome = _send(url)
    assert not outcome.delivered and outcome.final
    assert outcome.describe() in ("refused address", "refused URL")
    assert connects == []  # nothing was connected to


@pytest.mark.parametrize(("url", "address"), ACCEPTED)
def test_public_addresses_are_accepted_and_connected_to_as_checked(
    url: str, address: str, dns: Resolver, connects: list[Any]
) -> None:
    assert check_on_save(url) == url
    outcome = _send(url)
    assert outcome.describe() == "connection failed"  # the spy refuses every connection
    assert (ip_address(connects[0][0]), connects[0][1]) == (ip_address(address), 443)


def test_a_name_that_does_not_resolve_is_saved_and_checked_again_at_delivery(
    dns: Resolver, connects: list[Any]
) -> None:
    url = "https://later.example.test/hook"
    assert check_on_save(url) == url
    assert _send(url).describe() == "name not resolved"
    dns.answers["later.example.test"] = ["10.9.9.9"]  # it resolves now: to a private address
    assert _send(url).describe() == "refused address"
    assert connects == []


def test_dns_rebinding_connects_to_the_checked_address(
    dns: Resolver, connects: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A name that answers public when checked and private when asked again: the one
    resolution is both checked and connected to, so the private answer is never used."""
    answers = iter([[PUBLIC_V4], ["127.0.0.1"], ["127.0.0.1"]])

    def rebinding(host: str, port: Any, *args: Any, **kwargs: Any) -> list[Any]:
        dns.answers["rebind.example.test"] = next(answers)
        return dns(host, port)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    assert _send("https://rebind.example.test/hook").describe() == "connection failed"
    assert connects == [(PUBLIC_V4, 443)]
    assert dns.asked == ["rebind.example.test"]  # resolved once: checked and connected


def test_a_url_saved_while_public_is_refused_once_it_resolves_private(
    dns: Resolver, connects: list[Any]
) -> None:
    url = "https://moving.example.test/hook"
    dns.answers["moving.example.test"] = [PUBLIC_V4]
    assert check_on_save(url) == url
    dns.answers["moving.example.test"] = ["169.254.169.254"]
    note = Webhooks(FakeClock(start=1_800_000_000.0)).send(url, "key", "completed", {})
    assert (note.delivered, note.error, note.attempts) == (False, "refused address", 1)
    assert connects == []


@pytest.fixture
def redirecting(allow_loopback_webhooks: None) -> Iterator[tuple[str, Any]]:
    """A local receiver answering 302 to a second local receiver (both allowed by the
    local stack's option); yields the first's URL and the second receiver."""
    with webhook_receiver() as target, webhook_receiver() as first:
        first.redirect = target.url
        yield first.url, target


def test_a_redirect_is_an_outcome_never_followed(redirecting: tuple[str, Any]) -> None:
    url, target = redirecting
    note = Webhooks(FakeClock(start=1_800_000_000.0)).send(url, "key", "completed", {})
    assert (note.delivered, note.status_code, note.error) == (False, 302, "HTTP 302")
    # send returned after its last attempt: a followed redirect would have arrived by now.
    assert target.received == []


def test_a_failed_connection_shows_its_category_never_the_library_text(
    allow_loopback_webhooks: None,
) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # nothing listens once it is closed
    note = Webhooks(FakeClock(start=1_800_000_000.0)).send(
        f"http://127.0.0.1:{port}/hook", "key", "completed", {}
    )
    assert (note.delivered, note.status_code, note.error) == (False, None, "connection failed")
    assert note.attempts == 3  # worth retrying, unlike a refused URL


def test_tls_and_timeouts_show_only_their_category(allow_loopback_webhooks: None) -> None:
    with webhook_receiver() as plain:  # speaks HTTP: the TLS handshake fails
        https_to_http = plain.url.replace("http://", "https://")
        assert _send(https_to_http).describe() == "TLS failed"
    with socket.socket() as silent:  # accepts, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/hook"
        assert post(url, b"{}", {}, 0.3).describe() == "timed out"


def test_the_default_refuses_loopback_receivers() -> None:
    """As deployed (no OUTBOUND_ALLOW_LOOPBACK), a receiver on this machine gets nothing."""
    with webhook_receiver() as receiver:
        assert _send(receiver.url).describe() == "refused URL"  # http:// to loopback
        https = receiver.url.replace("http://", "https://")
        assert _send(https).describe() == "refused address"
        assert receiver.received == []


def test_the_deployed_template_never_allows_loopback() -> None:
    assert ALLOW_LOOPBACK_ENV not in (ROOT / "template.yaml").read_text()


def test_stored_attempts_show_only_categories() -> None:
    for category in CATEGORIES:
        assert shown(category) == category
    assert shown("HTTP 302") == "HTTP 302"
    assert shown("answered HTTP 500") == "HTTP 500"  # as recorded before
    assert shown("[Errno 111] Connection refused") == "failed"
    assert shown("[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed") == "failed"
    assert shown(None) is None


# ---- TLS to the checked address, verified against the URL's host name ----


def _certificate(tmp_path: Path, name: str) -> tuple[Path, Path]:
    """A self-signed certificate for `name` (its own CA) and its key, as PEM files."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / f"{name}.pem", tmp_path / f"{name}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


@pytest.fixture
def tls_receiver(
    tmp_path: Path, allow_loopback_webhooks: None, dns: Resolver, monkeypatch: pytest.MonkeyPatch
) -> Iterator[dict[str, Any]]:
    """An HTTPS receiver on 127.0.0.1 with a certificate for `hooks.local.test`, which the
    tests' DNS resolves to 127.0.0.1 and the client trusts; records SNI and Host."""
    cert, key = _certificate(tmp_path, "hooks.local.test")
    seen: dict[str, Any] = {"sni": [], "host": []}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            seen["host"].append(self.headers["Host"])
            self.send_response(204)
            self.end_headers()

        def log_message(self, *_: Any) -> None:
            pass

    server_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_tls.load_cert_chain(cert, key)
    server_tls.sni_callback = lambda _sock, name, _ctx: seen["sni"].append(name)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.handle_error = lambda *_: None  # type: ignore[method-assign]  # refused handshakes
    server.socket = server_tls.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    client_tls = ssl.create_default_context(cafile=str(cert))
    monkeypatch.setattr(sending, "_tls", lambda: client_tls)
    dns.answers["hooks.local.test"] = ["127.0.0.1"]
    dns.answers["other.local.test"] = ["127.0.0.1"]
    seen["port"] = server.server_address[1]
    try:
        yield seen
    finally:
        server.shutdown()
        server.server_close()


def test_tls_goes_to_the_checked_address_under_the_url_host_name(
    tls_receiver: dict[str, Any],
) -> None:
    port = tls_receiver["port"]
    assert _send(f"https://hooks.local.test:{port}/hook").describe() == "HTTP 204"
    assert tls_receiver["sni"] == ["hooks.local.test"]
    assert tls_receiver["host"] == [f"hooks.local.test:{port}"]
    # Same address, another name: the certificate does not match it, so nothing is sent.
    assert _send(f"https://other.local.test:{port}/hook").describe() == "TLS failed"
    assert tls_receiver["host"] == [f"hooks.local.test:{port}"]


def test_a_connection_tries_at_most_outbound_addresses_tried_of_a_hosts_addresses(
    dns: Resolver, connects: list[Any]
) -> None:
    """A host with one public address more than the connection tries: it tries
    OUTBOUND_ADDRESSES_TRIED of them, in the order resolved, and not the last."""
    from agentworks import limits

    many = [f"93.184.215.{n}" for n in range(10, 10 + limits.OUTBOUND_ADDRESSES_TRIED + 1)]
    dns.answers["many.example.test"] = many
    assert _send("https://many.example.test/hook").describe() == "connection failed"
    assert [c[0] for c in connects] == many[: limits.OUTBOUND_ADDRESSES_TRIED]


def test_a_workflow_webhook_is_tried_webhook_attempts_times_with_doubling_pauses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """W3: a receiver that keeps answering 503 is tried WEBHOOK_ATTEMPTS times, each attempt
    bounded by WEBHOOK_TIMEOUT_SECONDS, the pause before each retry doubling from
    WEBHOOK_BACKOFF_SECONDS (waited on the injected clock)."""
    from agentworks import limits
    from agentworks.outbound.sending import Outcome
    from agentworks.workflows import webhooks

    clock = FakeClock(start=1_800_000_000.0)
    tried: list[tuple[float, float]] = []

    def unavailable(url: str, key: Any, body: bytes, timestamp: int, timeout: float) -> Outcome:
        tried.append((clock.now(), timeout))
        return Outcome(status=503)

    monkeypatch.setattr(webhooks, "post_signed", unavailable)
    note = Webhooks(clock).send("https://hooks.example.test/hook", "key", "completed", {})
    assert (note.delivered, note.attempts, note.error) == (
        False,
        limits.WEBHOOK_ATTEMPTS,
        "HTTP 503",
    )
    assert {timeout for _, timeout in tried} == {limits.WEBHOOK_TIMEOUT_SECONDS}
    pauses = [later - earlier for (earlier, _), (later, _) in itertools.pairwise(tried)]
    first = limits.WEBHOOK_BACKOFF_SECONDS
    assert pauses == [first * 2**n for n in range(limits.WEBHOOK_ATTEMPTS - 1)]
