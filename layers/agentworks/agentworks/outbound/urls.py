"""What an outbound URL may be, and the addresses it may be sent to.

`parse` is the URL's shape: https (http only to loopback, and only with the local stack's
option), no credentials (`user:pass@`), a host that is a DNS name or an address. `resolve`
turns the host into the addresses to connect to, refusing the whole URL when ANY of them is
refused (addresses.refusal): a name that answers one public and one private address could
otherwise be steered to the private one. The connection then goes to an address `resolve`
returned (sending.py), so DNS cannot change between the check and the connection.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
from dataclasses import dataclass
from ipaddress import IPv6Address
from urllib.parse import urlsplit

from agentworks import limits
from agentworks.outbound.addresses import IPAddress, literal, refusal

# Set by `agentworks dev --allow-loopback-webhooks` (and the tests' fixture that stands for
# it); the deployed template never sets it.
ALLOW_LOOPBACK_ENV = "OUTBOUND_ALLOW_LOOPBACK"
_UNSENDABLE = re.compile(r"[\x00-\x20\x7f]")  # what no request line may carry
_LABEL = re.compile(r"^[a-z0-9_-]{1,63}$")


class RefusedUrl(ValueError):
    """The URL is not one outbound requests go to; the message says why (for the person
    saving it: the delivery record says only "refused URL" or "refused address")."""

    def __init__(self, message: str, address: bool = False) -> None:
        super().__init__(message)
        self.address = address  # refused for an address it is or resolves to


class Unresolved(Exception):
    """The host name did not resolve (no answer, or no such name)."""


@dataclass(frozen=True)
class Target:
    """One checked address to connect to."""

    family: socket.AddressFamily
    sockaddr: tuple[str, int] | tuple[str, int, int, int]
    address: IPAddress


@dataclass(frozen=True)
class OutboundUrl:
    scheme: str
    host: str  # name (ASCII: xn--… for IDN) or address: the TLS server name and the Host header
    port: int
    path: str  # path and query, sent as the request target
    address: IPAddress | None  # the host is an address (in whatever spelling)


def loopback_allowed() -> bool:
    """The local stack's development option: loopback receivers (and http:// to them)."""
    return os.environ.get(ALLOW_LOOPBACK_ENV) == "1"


def parse(url: str, allow_loopback: bool | None = None) -> OutboundUrl:
    """The URL's parts, or RefusedUrl: not https (http only with the loopback option), a
    user or password in it, no host, a host that is neither a name nor an address, or a
    host that is a refused address."""
    allow = loopback_allowed() if allow_loopback is None else allow_loopback
    if not url.isascii() or _UNSENDABLE.search(url):
        # A request line carries none; an internationalized name is given as xn--…
        raise RefusedUrl("spaces, control or non-ASCII characters: percent-encode them")
    try:
        parts = urlsplit(url)
        port = parts.port
        host = parts.hostname or ""
    except ValueError:
        raise RefusedUrl("not a URL (an https:// URL is needed)") from None
    if parts.scheme not in ("https", "http") or (parts.scheme == "http" and not allow):
        raise RefusedUrl("an https:// URL is needed")
    if "@" in parts.netloc:
        raise RefusedUrl("a user or password in the URL is refused; the webhook is signed")
    if not host:
        raise RefusedUrl("the URL has no host")
    if port == 0:
        raise RefusedUrl("port 0 is no port")
    bracketed = parts.netloc.rpartition("]")[0].startswith("[")
    address = literal(host)
    if bracketed and (address is None or address.version != 6):
        raise RefusedUrl("the host between [ ] is not an IPv6 address")
    if address is None:
        host = _checked_name(host)
    elif isinstance(address, IPv6Address) and address.scope_id:
        raise RefusedUrl("an IPv6 address with a zone (%…) is refused")
    else:
        _check_address(address, allow)
        host = str(address)  # 127.1 and 0x7f.1 are 127.0.0.1: the host as connected to
    path = parts.path or "/"
    return OutboundUrl(
        scheme=parts.scheme,
        host=host,
        port=port if port is not None else (443 if parts.scheme == "https" else 80),
        path=f"{path}?{parts.query}" if parts.query else path,
        address=address,
    )


def resolve(url: OutboundUrl, allow_loopback: bool | None = None) -> list[Target]:
    """The addresses to connect to (at most `limits.OUTBOUND_ADDRESSES_TRIED`), every one
    the host resolves to checked: RefusedUrl when any is refused, Unresolved when none."""
    allow = loopback_allowed() if allow_loopback is None else allow_loopback
    literal_target = [_target(url.address, url.port)] if url.address is not None else None
    targets = literal_target or _resolved(url, allow)
    if url.scheme == "http" and any(not t.address.is_loopback for t in targets):
        raise RefusedUrl("http:// only to this machine (loopback); else https://", True)
    return targets[: limits.OUTBOUND_ADDRESSES_TRIED]


def _resolved(url: OutboundUrl, allow: bool) -> list[Target]:
    try:
        found = socket.getaddrinfo(url.host, url.port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError, ValueError):
        raise Unresolved(url.host) from None
    targets: list[Target] = []
    for family, _, _, _, sockaddr in found:
        if family not in (socket.AF_INET, socket.AF_INET6):
            continue
        address = literal(str(sockaddr[0]))
        if address is None:
            raise RefusedUrl("the host resolves to something that is not an address", True)
        _check_address(address, allow, resolved=True)
        if all(t.address != address for t in targets):
            targets.append(_target(address, url.port))
    if not targets:
        raise Unresolved(url.host)
    return targets


def check_on_save(url: str) -> str:
    """What a URL must be to be saved: `parse`, and every address its host resolves to now
    allowed. A name that does not resolve yet is saved: each delivery resolves it again and
    checks the same rule. Raises RefusedUrl (a ValueError: a 400 where it is validated)."""
    parsed = parse(url)
    with contextlib.suppress(Unresolved):
        resolve(parsed)
    return url


def _check_address(address: IPAddress, allow: bool, resolved: bool = False) -> None:
    why = refusal(address, allow)
    if why is not None:
        said = "resolves to" if resolved else "is"
        article = "an" if why.startswith(("a", "e", "i", "o", "unspecified", "IETF")) else "a"
        raise RefusedUrl(f"the host {said} {article} {why} address; only public ones", True)


def _checked_name(name: str) -> str:
    labels = name.removesuffix(".").split(".")
    if len(name) > 253 or not all(_LABEL.match(label) for label in labels):
        raise RefusedUrl("the host is not a valid name")
    return name


def _target(address: IPAddress, port: int) -> Target:
    if address.version == 6:
        return Target(socket.AF_INET6, (str(address), port, 0, 0), address)
    return Target(socket.AF_INET, (str(address), port), address)
