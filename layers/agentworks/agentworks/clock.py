"""Time as a dependency, so tests drive windows and TTLs without sleeping."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the epoch."""
        ...

    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    def now(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


class ElapsedClock:
    """Elapsed real time (monotonic: a wall-clock step never cuts a wait short or makes it
    longer), for waits on work that runs in real time elsewhere."""

    def now(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


SYSTEM_CLOCK = SystemClock()
ELAPSED_CLOCK = ElapsedClock()
