"""Powertools Logger, Metrics and Tracer shared by every function.

Logs carry the correlation id and never message bodies or tokens.
"""

from __future__ import annotations

import os

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit, single_metric

logger = Logger()
# A default namespace, so counting never fails where the environment doesn't set one.
metrics = Metrics(namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "AgentWorks"))
tracer = Tracer()


def count(name: str, value: int = 1) -> None:
    metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)


def count_refusal(operation: str, reason: str) -> None:
    """Refusals by reason, each in its own EMF blob so the dimension stays its own."""
    with single_metric(
        name=f"{operation}Refused", unit=MetricUnit.Count, value=1, namespace=metrics.namespace
    ) as metric:
        metric.add_dimension(name="reason", value=reason)
