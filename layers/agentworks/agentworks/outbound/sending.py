"""One POST to an outbound URL, to the address that was checked.

The URL is checked again here (urls.parse, urls.resolve), whatever was checked when it was
saved; the TCP connection goes to one of the addresses `resolve` checked, never to a name
resolved again, while TLS still verifies the certificate against the URL's host name (SNI
and Host are the name). A redirect is an answer like any other (`HTTP 302`), never
followed. No proxy from the environment is used.

What a caller may see of a failed attempt is its category (`Outcome.describe`), never the
library's error text: "Connection refused" or a TLS alert would map the network behind a
refused or unreachable host.
"""

from __future__ import annotations

import http.client
import socket
import ssl
from dataclasses import dataclass
from functools import lru_cache

from agentworks.outbound.urls import OutboundUrl, RefusedUrl, Target, Unresolved, parse, resolve

REFUSED_URL = "refused URL"
REFUSED_ADDRESS = "refused address"
NOT_RESOLVED = "name not resolved"
CONNECTION_FAILED = "connection failed"
TLS_FAILED = "TLS failed"
TIMED_OUT = "timed out"
# What a stored attempt may say; anything else (recorded before these) shows as "failed".
CATEGORIES = frozenset(
    {REFUSED_URL, REFUSED_ADDRESS, NOT_RESOLVED, CONNECTION_FAILED, TLS_FAILED, TIMED_OUT}
)


@dataclass(frozen=True)
class Outcome:
    """How one attempt went: the receiver's HTTP status, or the category of failure."""

    status: int | None = None
    failure: str | None = None

    @property
    def delivered(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    @property
    def final(self) -> bool:
        """Trying again cannot help: the URL or its addresses are refused."""
        return self.failure in (REFUSED_URL, REFUSED_ADDRESS)

    def describe(self) -> str:
        """What the caller sees: `HTTP 302`, `refused address`, `connection failed`, …"""
        return self.failure or f"HTTP {self.status}"


def shown(error: str | None) -> str | None:
    """A stored attempt's error as a caller may see it: a category or `HTTP <status>`;
    text kept by an older version (a library's message) reads as "failed"."""
    if error is None or error in CATEGORIES:
        return error
    status = error.removeprefix("answered ").removeprefix("HTTP ")
    return f"HTTP {status}" if status.isdigit() else "failed"


def post(url: str, body: bytes, headers: dict[str, str], timeout: float) -> Outcome:
    """POSTs `body` to `url` once, after checking it (see the module's docstring)."""
    try:
        checked = parse(url)
        targets = resolve(checked)
    except RefusedUrl as refused:
        return Outcome(failure=REFUSED_ADDRESS if refused.address else REFUSED_URL)
    except Unresolved:
        return Outcome(failure=NOT_RESOLVED)
    connection = _connection(checked, targets, timeout)
    try:
        connection.request("POST", checked.path, body=body, headers=headers)
        with connection.getresponse() as response:
            return Outcome(status=int(response.status))
    except (ssl.SSLError, ssl.CertificateError):
        return Outcome(failure=TLS_FAILED)
    except TimeoutError:
        return Outcome(failure=TIMED_OUT)
    except (OSError, http.client.HTTPException, ValueError):
        return Outcome(failure=CONNECTION_FAILED)
    finally:
        connection.close()


def connect(targets: list[Target], timeout: float) -> socket.socket:
    """A TCP connection to the first of `targets` that answers (the addresses `resolve`
    checked: nothing here looks a name up)."""
    last: OSError = OSError("no address")
    for target in targets:
        sock = socket.socket(target.family, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect(target.sockaddr)
        except OSError as error:
            sock.close()
            last = error
            continue
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock
    raise last


@lru_cache(maxsize=1)
def _tls() -> ssl.SSLContext:
    # Certificates verified against the URL's host name (check_hostname is on by default).
    return ssl.create_default_context()


class _PinnedHTTP(http.client.HTTPConnection):
    """http.client with `connect` going to checked addresses (http: loopback only)."""

    def __init__(self, url: OutboundUrl, targets: list[Target], timeout: float) -> None:
        super().__init__(url.host, url.port, timeout=timeout)
        self._targets, self._seconds = targets, timeout

    def connect(self) -> None:
        self.sock = connect(self._targets, self._seconds)


class _PinnedHTTPS(http.client.HTTPSConnection):
    def __init__(self, url: OutboundUrl, targets: list[Target], timeout: float) -> None:
        super().__init__(url.host, url.port, timeout=timeout, context=_tls())
        self._targets, self._seconds = targets, timeout

    def connect(self) -> None:
        sock = connect(self._targets, self._seconds)
        try:
            self.sock = _tls().wrap_socket(sock, server_hostname=self.host)
        except BaseException:
            sock.close()
            raise


def _connection(
    url: OutboundUrl, targets: list[Target], timeout: float
) -> http.client.HTTPConnection:
    kind: type[_PinnedHTTP | _PinnedHTTPS]
    kind = _PinnedHTTPS if url.scheme == "https" else _PinnedHTTP
    return kind(url, targets, timeout)
