"""An httpx transport for requests the platform sends to a URL someone else chose (an A2A
agent's card and interfaces): every request's URL is checked by the outbound rules when it
is sent, and the connection goes to the address that was checked (the name stays the Host
header and the TLS server name, so the certificate is verified against it). No proxy from
the environment; redirects are the caller's to refuse (httpx follows none by default)."""

from __future__ import annotations

from typing import Any

import httpx

from agentworks.outbound.urls import RefusedUrl, Unresolved, parse, resolve


class RefusedRequest(httpx.TransportError):
    """The outbound rules refused the request's URL, or its host did not resolve."""


class CheckedTransport(httpx.AsyncBaseTransport):
    def __init__(self) -> None:
        self._inner = httpx.AsyncHTTPTransport(trust_env=False)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            target = resolve(parse(str(request.url)))[0]
        except RefusedUrl as refused:
            raise RefusedRequest(f"the URL is refused: {refused}") from None
        except Unresolved:
            raise RefusedRequest("the host name does not resolve") from None
        host = request.url.host
        request.url = request.url.copy_with(host=str(target.address))
        request.extensions = {**request.extensions, "sni_hostname": host}
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


def checked_client(headers: dict[str, str], timeout: float, **options: Any) -> httpx.AsyncClient:
    """An AsyncClient whose every request goes through the outbound rules."""
    return httpx.AsyncClient(
        headers=headers,
        timeout=httpx.Timeout(timeout),
        transport=CheckedTransport(),
        trust_env=False,
        follow_redirects=False,
        **options,
    )
