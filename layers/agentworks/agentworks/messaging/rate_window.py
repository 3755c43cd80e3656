"""M11 rate limit as a pure sliding window: at most N accepted messages in any hour of a
conversation, both directions together. The window (accepted timestamps) travels along
the message chain: each message carries the window as of itself, and the next message
can only be put after that one was read, so racing senders can't both use a slot."""

from __future__ import annotations

import math
from dataclasses import dataclass

from agentworks import limits


@dataclass(frozen=True)
class RateDecision:
    allowed: bool
    window: list[int]  # accepted timestamps still inside the window, incl. this one if allowed
    retry_after: int  # seconds until a slot frees up (0 when allowed)

    @property
    def remaining(self) -> int:
        return max(0, limits.RATE_LIMIT_MESSAGES - len(self.window))


def admit(
    window: list[int],
    now_ms: int,
    limit: int = limits.RATE_LIMIT_MESSAGES,
    span_seconds: int = limits.RATE_LIMIT_WINDOW_SECONDS,
) -> RateDecision:
    span_ms = span_seconds * 1000
    live = sorted(t for t in window if t > now_ms - span_ms)
    if len(live) < limit:
        return RateDecision(True, [*live, now_ms], 0)
    oldest_that_blocks = live[len(live) - limit]
    wait_ms = oldest_that_blocks + span_ms - now_ms
    return RateDecision(False, live, max(1, math.ceil(wait_ms / 1000)))


def peek(window: list[int], now_ms: int) -> RateDecision:
    """The window as seen now, without admitting anything (for `state`)."""
    span_ms = limits.RATE_LIMIT_WINDOW_SECONDS * 1000
    live = sorted(t for t in window if t > now_ms - span_ms)
    retry = 0
    if len(live) >= limits.RATE_LIMIT_MESSAGES:
        retry = max(1, math.ceil((live[-limits.RATE_LIMIT_MESSAGES] + span_ms - now_ms) / 1000))
    return RateDecision(len(live) < limits.RATE_LIMIT_MESSAGES, live, retry)
