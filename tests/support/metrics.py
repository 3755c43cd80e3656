"""The metrics the code adds through powertools (observability.count), counted by name."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from agentworks import observability


def counted_metrics(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    seen: Counter[str] = Counter()

    def add_metric(name: str, unit: Any, value: float, **_: Any) -> None:
        seen[name] += int(value)

    monkeypatch.setattr(observability.metrics, "add_metric", add_metric)
    return seen
