"""Which addresses an outbound request may reach: public unicast ones only.

A host is checked as the address it denotes, whatever its spelling: `127.1`, `0x7f.1`,
`2130706433` and `0177.0.0.1` are all 127.0.0.1 to the operating system, so they are here.
An IPv6 address that carries an IPv4 one (IPv4-mapped `::ffff:a.b.c.d`, IPv4-compatible
`::a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`, 6to4 `2002:aabb:ccdd::`) is judged by the one it
carries too.
"""

from __future__ import annotations

import ipaddress
import socket
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network

IPAddress = IPv4Address | IPv6Address

# The first that holds names the refusal (most specific first). Anything else that is not
# globally routable (ipaddress' `is_global`, `is_reserved`) is refused as "not public".
_REFUSED_V4: tuple[tuple[IPv4Network, str], ...] = tuple(
    (IPv4Network(net), kind)
    for net, kind in (
        ("0.0.0.0/32", "unspecified"),
        ("255.255.255.255/32", "broadcast"),
        ("0.0.0.0/8", "this-network"),
        ("127.0.0.0/8", "loopback"),
        ("10.0.0.0/8", "private"),
        ("172.16.0.0/12", "private"),
        ("192.168.0.0/16", "private"),
        ("100.64.0.0/10", "shared (CGNAT)"),
        ("169.254.0.0/16", "link-local"),
        ("192.0.0.0/24", "IETF protocol"),
        ("192.0.2.0/24", "documentation"),
        ("198.51.100.0/24", "documentation"),
        ("203.0.113.0/24", "documentation"),
        ("198.18.0.0/15", "benchmarking"),
        ("224.0.0.0/4", "multicast"),
        ("240.0.0.0/4", "reserved"),
    )
)
_REFUSED_V6: tuple[tuple[IPv6Network, str], ...] = tuple(
    (IPv6Network(net), kind)
    for net, kind in (
        ("::/128", "unspecified"),
        ("::1/128", "loopback"),
        ("64:ff9b:1::/48", "NAT64 local-use"),
        ("100::/64", "discard"),
        ("2001:db8::/32", "documentation"),
        ("2001::/23", "IETF protocol"),
        ("fc00::/7", "unique-local"),
        ("fe80::/10", "link-local"),
        ("fec0::/10", "site-local"),
        ("ff00::/8", "multicast"),
    )
)
_COMPATIBLE = IPv6Network("::/96")
_NAT64 = IPv6Network("64:ff9b::/96")


def literal(host: str) -> IPAddress | None:
    """The address `host` denotes when it is one (in any spelling the resolver accepts:
    dotted, shortened, decimal, octal or hex IPv4), else None: a name to resolve."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    try:
        # inet_aton reads what getaddrinfo and connect would: 127.1, 0x7f.1, 2130706433.
        return IPv4Address(socket.inet_aton(host))
    except (OSError, ValueError):
        return None


def embedded_ipv4(ip: IPv6Address) -> IPv4Address | None:
    """The IPv4 address an IPv6 one carries (mapped, compatible, NAT64, 6to4), if any."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip in _NAT64 or (ip in _COMPATIBLE and int(ip) > 1):  # :: and ::1 are themselves
        return IPv4Address(int(ip) & 0xFFFF_FFFF)
    return ip.sixtofour


def refusal(ip: IPAddress, allow_loopback: bool = False) -> str | None:
    """Why an outbound request may not go to `ip` ("loopback", "private", …), or None
    when it may. `allow_loopback` is the local stack's development option."""
    if isinstance(ip, IPv6Address):
        inner = embedded_ipv4(ip)
        if inner is not None:
            why = refusal(inner, allow_loopback)
            return None if why is None else f"{why} (IPv4 inside IPv6)"
        kind = next((k for net, k in _REFUSED_V6 if ip in net), None)
    else:
        kind = next((k for net, k in _REFUSED_V4 if ip in net), None)
    if kind == "loopback" and allow_loopback:
        return None
    if kind is None and (not ip.is_global or ip.is_reserved or ip.is_multicast):
        return "not public"
    return kind
