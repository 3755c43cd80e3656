"""Metrics stay whole when handlers run on threads (the local stack and the tests do;
Lambda never does): a flush never serialises a set another thread emptied meanwhile."""

from __future__ import annotations

import threading
import time
import warnings
from typing import Any

import pytest

from agentworks.observability import count, metrics


def test_a_flush_never_meets_a_set_another_thread_emptied(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    provider_class = type(metrics.provider)
    original = provider_class.serialize_metric_set
    serialising = threading.Event()

    def slow(self: Any, *args: Any, **kwargs: Any) -> Any:
        if threading.current_thread().name == "first-flush":
            serialising.set()
            time.sleep(0.2)  # the other thread's flush comes now
        return original(self, *args, **kwargs)

    monkeypatch.setattr(provider_class, "serialize_metric_set", slow)
    count("ThreadProbe")
    errors: list[BaseException] = []

    def first() -> None:
        try:
            metrics.flush_metrics()
        except Exception as error:  # what the race raised: a 500 for that invocation
            errors.append(error)

    thread = threading.Thread(target=first, name="first-flush")
    thread.start()
    assert serialising.wait(5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "No application metrics to publish"
        metrics.flush_metrics()
    thread.join(5)
    assert errors == []
    assert capsys.readouterr().out.count('"ThreadProbe":[') == 1  # published once, by the first
