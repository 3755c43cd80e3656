"""An event loop per request for the ASGI apps served through Mangum (MCP, A2A)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def own_event_loop() -> Iterator[None]:
    """A loop of this request's own (Mangum runs on the thread's current loop): closed after,
    so a host that serves each request on a new thread (the local stack) leaks no loops."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        yield
    finally:
        asyncio.set_event_loop(None)
        loop.close()
