"""Powertools Logger, Metrics and Tracer shared by every function.

Logs carry the correlation id and never message bodies or tokens.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit, single_metric
from aws_lambda_powertools.metrics.provider.cloudwatch_emf.cloudwatch import (
    AmazonCloudWatchEMFProvider,
)


class _AtomicEMFProvider(AmazonCloudWatchEMFProvider):
    """Powertools' EMF metrics, with adding and flushing one at a time. Lambda runs one
    invocation per process, but the local stack and the tests run handlers on threads:
    one invocation's flush could clear the shared set between another's emptiness check
    and its serialisation ("Must contain at least one metric", a 500)."""

    _lock = threading.RLock()  # re-entered: add_metric flushes at 100 metrics

    def add_metric(self, *args: Any, **kwargs: Any) -> None:
        with self._lock:
            super().add_metric(*args, **kwargs)

    def flush_metrics(self, raise_on_empty_metrics: bool = False) -> None:
        with self._lock:
            super().flush_metrics(raise_on_empty_metrics=raise_on_empty_metrics)


def _metrics() -> Metrics:
    # A default namespace, so counting never fails where the environment doesn't set one.
    namespace = os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "AgentWorks")
    provider = _AtomicEMFProvider(
        namespace=namespace,
        service=os.environ.get("POWERTOOLS_SERVICE_NAME"),
        metric_set=Metrics._metrics,  # the state every Metrics instance shares
        dimension_set=Metrics._dimensions,
        metadata_set=Metrics._metadata,
        default_dimensions=Metrics._default_dimensions,
    )
    return Metrics(namespace=namespace, provider=provider)


logger = Logger()
metrics = _metrics()
tracer = Tracer()


def count(name: str, value: int = 1) -> None:
    metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)


def count_refusal(operation: str, reason: str) -> None:
    """Refusals by reason, each in its own EMF blob so the dimension stays its own."""
    with single_metric(
        name=f"{operation}Refused", unit=MetricUnit.Count, value=1, namespace=metrics.namespace
    ) as metric:
        metric.add_dimension(name="reason", value=reason)
