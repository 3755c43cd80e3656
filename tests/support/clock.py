"""A clock that moves only when told to, or when the code under test 'sleeps'."""

from __future__ import annotations


class FakeClock:
    """Starts at an uneven instant by default: DynamoDB sizes numbers by significant digits,
    so round timestamps would make stored items look smaller than real ones."""

    def __init__(self, start: float = 1_812_345_678.901) -> None:
        self.t = start

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.t += seconds

    def advance(self, seconds: float) -> None:
        self.t += seconds
