"""The official MCP client (streamable HTTP) as the platform uses it to reach an attached
server: one short session per operation, nothing kept between them.

At connect time the URL is checked again by the outbound rules (outbound.urls: https; no
private, loopback or link-local address, every address the name resolves to checked;
loopback only with the local stack's option), and the connection goes to the address that
was checked (the name is not resolved again; TLS still verifies the name). A redirect is
never followed (the SDK would follow one within the origin): it fails the operation naming
its status. Every operation has a timeout; a tool's result past `max_bytes` fails instead of
reaching the model. An `isError` result is a result (the model sees the tool's error); a
server that is down, times out, refuses the credentials or answers garbage raises
`ServerFailure`, whose message says what happened in words that never carry a header's
value or the library's error text.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from agentworks.outbound.urls import RefusedUrl, Target, Unresolved, parse, resolve

T = TypeVar("T")

# httpx logs every request's URL at INFO; the platform's log says what matters.
for _name in ("httpx", "httpx2", "mcp"):
    logging.getLogger(_name).setLevel(logging.WARNING)


@dataclass(frozen=True)
class Endpoint:
    """Where a server is and what to send it (the headers come from its secret)."""

    url: str
    headers: dict[str, str]

    def __repr__(self) -> str:  # never the headers' values, wherever it is printed
        return f"Endpoint(url={self.url!r}, headers={sorted(self.headers)!r})"


@dataclass(frozen=True)
class ToolInfo:
    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class ToolResult:
    is_error: bool
    content: list[dict[str, Any]]
    structured_content: dict[str, Any] | None
    size: int  # bytes, as result_size counts them


class ServerFailure(Exception):
    """The operation failed at or before the server; `str()` is safe to show the caller."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


class Cancelled(Exception):
    """The caller cancelled the operation (its run was cancelled)."""


def result_size(content: list[dict[str, Any]], structured: dict[str, Any] | None) -> int:
    """A result's size: the compact JSON of each content item and of the structured
    content, in UTF-8 bytes."""
    parts = [*content, *([structured] if structured is not None else [])]
    return sum(
        len(json.dumps(p, separators=(",", ":"), ensure_ascii=False).encode()) for p in parts
    )


def list_tools(
    endpoint: Endpoint, timeout: float, cancel: threading.Event | None = None
) -> list[ToolInfo]:
    """The server's tools (every page)."""

    async def operation(client: Any) -> list[ToolInfo]:
        found: list[ToolInfo] = []
        cursor: str | None = None
        while True:
            page = await client.list_tools(cursor=cursor)
            found.extend(
                ToolInfo(t.name, t.description or "", dict(t.input_schema or {}))
                for t in page.tools
            )
            cursor = page.next_cursor
            if not cursor:
                return found

    return _run(endpoint, timeout, cancel, operation)


def call_tool(
    endpoint: Endpoint,
    tool: str,
    arguments: dict[str, Any],
    timeout: float,
    max_bytes: int,
    cancel: threading.Event | None = None,
) -> ToolResult:
    """One tools/call; ServerFailure when it fails or its result is past `max_bytes`."""

    async def operation(client: Any) -> ToolResult:
        result = await client.call_tool(tool, arguments)
        content = [
            c.model_dump(mode="json", by_alias=True, exclude_none=True) for c in result.content
        ]
        structured = result.structured_content
        size = result_size(content, structured)
        if size > max_bytes:
            raise ServerFailure(
                f"The tool's result takes {size:,} bytes; at most {max_bytes:,} are passed on."
            )
        return ToolResult(bool(result.is_error), content, structured, size)

    return _run(endpoint, timeout, cancel, operation)


def _checked(url: str) -> Target:
    """The outbound rules at connect time (whatever was checked when it was saved): the
    address to connect to, every address the host resolves to allowed."""
    try:
        return resolve(parse(url))[0]
    except RefusedUrl as refused:
        raise ServerFailure(f"The MCP server's URL is refused now: {refused}.") from None
    except Unresolved:
        raise ServerFailure("The MCP server's host name does not resolve.") from None


def _pinned_transport(target: Target) -> Any:
    """An httpx transport that connects to the checked address only: the URL's host stays
    the Host header and the TLS server name (the certificate is verified against it), but
    no request resolves the name again, so DNS cannot swap in a refused address between
    the check and the connection. No proxy from the environment is used."""
    import httpx2

    class Pinned(httpx2.AsyncBaseTransport):
        def __init__(self) -> None:
            self._inner = httpx2.AsyncHTTPTransport(trust_env=False)

        async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
            host = request.url.host
            request.url = request.url.copy_with(host=str(target.address))
            request.extensions = {**request.extensions, "sni_hostname": host}
            return await self._inner.handle_async_request(request)

        async def aclose(self) -> None:
            await self._inner.aclose()

    return Pinned()


class _HttpAnswer(Exception):
    """An HTTP answer that ends the operation (raised by the response hook)."""

    def __init__(self, status: int, redirect: bool) -> None:
        super().__init__(status)
        self.status, self.redirect = status, redirect


async def _refuse_unexpected(response: Any) -> None:
    status = int(response.status_code)
    if 300 <= status < 400:
        raise _HttpAnswer(status, redirect=True)
    if status >= 400 and not (status == 405 and response.request.method in ("GET", "DELETE")):
        # 405 to the optional GET stream or session DELETE is "not offered", not a failure.
        raise _HttpAnswer(status, redirect=False)


def _run(
    endpoint: Endpoint,
    timeout: float,
    cancel: threading.Event | None,
    operation: Callable[[Any], Awaitable[T]],
) -> T:
    target = _checked(endpoint.url)

    async def session() -> T:
        import anyio
        import httpx2
        from mcp.client import Client
        from mcp.client.streamable_http import streamable_http_client

        http = httpx2.AsyncClient(
            headers=dict(endpoint.headers),
            timeout=httpx2.Timeout(timeout),
            transport=_pinned_transport(target),
            trust_env=False,
            follow_redirects=False,
        )
        http.event_hooks["response"] = [_refuse_unexpected]
        outcome: list[T] = []

        async def work() -> None:
            async with (
                http,
                Client(
                    streamable_http_client(
                        endpoint.url, http_client=http, terminate_on_close=False
                    ),
                    cache=None,
                    read_timeout_seconds=timeout,
                ) as client,
            ):
                outcome.append(await operation(client))
            scope.cancel()

        async def watch() -> None:
            while cancel is not None and not cancel.is_set():
                await anyio.sleep(0.05)
            if cancel is not None:
                scope.cancel()

        with anyio.fail_after(timeout):
            async with anyio.create_task_group() as group:
                scope = group.cancel_scope
                group.start_soon(work)
                if cancel is not None:
                    group.start_soon(watch)
        if not outcome:
            raise Cancelled()
        return outcome[0]

    try:
        return _in_own_loop(session)
    except (ServerFailure, Cancelled):
        raise
    except Exception as error:  # every failure becomes one clear message
        raise _failure(error, timeout) from None


def _in_own_loop(make: Callable[[], Awaitable[T]]) -> T:
    """Runs the async session to its end from sync code, also when the caller is inside an
    event loop (the MCP function's tools): then in a thread of its own."""
    import anyio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return anyio.run(make)
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(anyio.run, make).result()


def _leaves(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _leaves(inner)]
    return [error]


def _failure(error: BaseException, timeout: float) -> ServerFailure:
    """What the caller may read of a failure: its category, the server's HTTP status, an
    MCP error's code; never a header, a network detail or the library's text."""
    import httpx2
    from mcp.shared.exceptions import MCPError

    leaves = _leaves(error)
    for leaf in leaves:
        if isinstance(leaf, ServerFailure):
            return leaf
        if isinstance(leaf, _HttpAnswer):
            if leaf.redirect:
                return ServerFailure(
                    f"The MCP server answered a redirect (HTTP {leaf.status}), which is not "
                    "followed; attach the server with its final URL.",
                    leaf.status,
                )
            if leaf.status in (401, 403):
                return ServerFailure(
                    f"The MCP server refused the credentials (HTTP {leaf.status}); give it "
                    "new ones: agentworks mcp-servers update NAME --header …",
                    leaf.status,
                )
            return ServerFailure(f"The MCP server answered HTTP {leaf.status}.", leaf.status)
    for leaf in leaves:
        if isinstance(leaf, TimeoutError | httpx2.TimeoutException) or (
            isinstance(leaf, MCPError) and "timed out" in str(leaf)
        ):
            return ServerFailure(f"The MCP server did not answer within {timeout:g} s.")
    for leaf in leaves:
        if isinstance(leaf, httpx2.ConnectError | httpx2.NetworkError):
            return ServerFailure("Could not connect to the MCP server (is it up?).")
    for leaf in leaves:
        if isinstance(leaf, MCPError):
            code = getattr(getattr(leaf, "error", None), "code", None)
            return ServerFailure(f"The MCP server answered an MCP error (code {code}).")
    return ServerFailure("The MCP server's answer was not understood (not MCP over HTTP).")
