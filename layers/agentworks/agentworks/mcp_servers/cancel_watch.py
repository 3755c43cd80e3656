"""A tool call's cancel event, set once the run that made the call has stopped.

The MCP client ends a call whose cancel event is set (client.call_tool). Whether the run
stopped is a read of its record, so it is asked every `every` seconds while the call is in
flight — by a thread that ends with the call — never after it. A read that fails is no
reason to cancel: the next one decides.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import TracebackType

from agentworks.observability import logger


class CancelWatch:
    """`with CancelWatch(stopped, every) as cancel:` — `cancel` is set once `stopped()`."""

    def __init__(
        self,
        stopped: Callable[[], bool] | None,
        every: float,
        cancel: threading.Event | None = None,
    ) -> None:
        self._stopped = stopped
        self._every = every
        self._cancel = cancel or threading.Event()
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> threading.Event:
        if self._stopped is not None:
            self._thread = threading.Thread(
                target=self._watch, name="mcp-cancel-watch", daemon=True
            )
            self._thread.start()
        return self._cancel

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join()

    def _watch(self) -> None:
        assert self._stopped is not None
        while not self._done.wait(self._every):
            try:
                stopped = self._stopped()
            except Exception:
                logger.warning("could not read whether the run stopped during an MCP call")
                continue
            if stopped:
                self._cancel.set()
                return
