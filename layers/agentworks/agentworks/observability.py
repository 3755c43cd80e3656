"""Powertools Logger, Metrics and Tracer shared by every function.

Logs carry the correlation id and never message bodies or tokens.

The tracer loads the X-Ray SDK on the first sampled invocation, not at import: the SDK
and its patching were the largest part of every function's cold start. Lambda's active
tracing records the function's segments without it, and botocore forwards the invocation's
trace header on every AWS call, so an unsampled invocation loses nothing (docs/benchmarks.md).
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit, single_metric
from aws_lambda_powertools.metrics.provider.cloudwatch_emf.cloudwatch import (
    AmazonCloudWatchEMFProvider,
)
from aws_lambda_powertools.tracing import tracer as powertools_tracing


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


# What the functions call out through: AWS over botocore, webhooks over http.client.
# (Powertools' default, patch_all, would also import and patch e.g. sqlite3 and requests.)
TRACED_MODULES = ("botocore", "httplib")
_TRUTHY = {"1", "true", "yes", "y", "on", "t"}


def tracing_enabled() -> bool:
    """Powertools' rule (Tracer._is_tracer_disabled): off when POWERTOOLS_TRACE_DISABLED
    says so, and outside Lambda or under SAM local / Chalice, where no daemon listens."""
    if os.environ.get("POWERTOOLS_TRACE_DISABLED", "false").strip().lower() in _TRUTHY:
        return False
    if os.environ.get("AWS_SAM_LOCAL") or os.environ.get("AWS_CHALICE_CLI_MODE"):
        return False
    return bool(os.environ.get("LAMBDA_TASK_ROOT"))


def invocation_sampled() -> bool:
    """Whether Lambda sampled this invocation: the header the runtime sets per invocation,
    which the X-Ray SDK itself reads (it records nothing unless Sampled=1)."""
    return "Sampled=1" in os.environ.get("_X_AMZN_TRACE_ID", "")


Handler = Callable[..., Any]


class LazyTracer:
    """Powertools' Tracer, created on the first sampled invocation (it imports the X-Ray
    SDK and patches botocore); until then the decorated handler runs as it is. Once loaded
    every invocation goes through powertools, which skips the unsampled ones itself."""

    def __init__(self, patch_modules: tuple[str, ...] = TRACED_MODULES) -> None:
        self._patch_modules = patch_modules
        self._tracer: Tracer | None = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._tracer is not None

    def recording(self) -> Tracer | None:
        """The powertools Tracer, created on the first sampled invocation (None before it,
        and always with tracing off); from then on powertools handles unsampled ones."""
        if self._tracer is None:
            if not (invocation_sampled() and tracing_enabled()):
                return None
            with self._lock:
                if self._tracer is None:
                    self._tracer = Tracer(patch_modules=self._patch_modules)
        return self._tracer

    def capture_lambda_handler(
        self,
        lambda_handler: Handler | None = None,
        capture_response: bool | None = None,
        capture_error: bool | None = None,
    ) -> Any:
        """Tracer.capture_lambda_handler, applied on the first sampled invocation: the
        `## handler` subsegment with its ColdStart and Service annotations."""
        if lambda_handler is None:
            return functools.partial(
                self.capture_lambda_handler,
                capture_response=capture_response,
                capture_error=capture_error,
            )
        handler = lambda_handler
        traced: list[Handler] = []

        @functools.wraps(handler)
        def decorate(event: Any, context: Any, **kwargs: Any) -> Any:
            tracer = self.recording()
            if tracer is None:
                # As powertools' wrapper would have: this invocation used up the cold start,
                # so a later sampled one is not annotated ColdStart.
                powertools_tracing._is_cold_start()
                return handler(event, context, **kwargs)
            if not traced:
                traced.append(
                    tracer.capture_lambda_handler(
                        handler, capture_response=capture_response, capture_error=capture_error
                    )
                )
            return traced[0](event, context, **kwargs)

        return decorate

    def put_annotation(self, key: str, value: Any) -> None:
        tracer = self.recording()
        if tracer is not None:
            tracer.put_annotation(key=key, value=value)

    def put_metadata(self, key: str, value: Any, namespace: str | None = None) -> None:
        tracer = self.recording()
        if tracer is not None:
            tracer.put_metadata(key=key, value=value, namespace=namespace)


logger = Logger()
metrics = _metrics()
tracer = LazyTracer()


def observed_handler(correlation_id_path: str | None = None) -> Callable[[Handler], Handler]:
    """How every function's handler is observed: the logger's Lambda context, its keys
    cleared per invocation (one invocation's ids never reach the next one's lines); the
    tracer's handler segment, without the response (it may hold message bodies); metrics
    flushed when it returns."""

    def observe(handler: Handler) -> Handler:
        traced = tracer.capture_lambda_handler(metrics.log_metrics(handler), capture_response=False)
        observed: Handler = logger.inject_lambda_context(
            traced, correlation_id_path=correlation_id_path, clear_state=True
        )
        return observed

    return observe


def count(name: str, value: int = 1) -> None:
    metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)


def count_outcome(name: str, outcome: str) -> None:
    """Ends by outcome (a call's or a run's terminal state), each in its own EMF blob like
    refusals, so the dashboard can plot one line per outcome."""
    with single_metric(
        name=name, unit=MetricUnit.Count, value=1, namespace=metrics.namespace
    ) as metric:
        metric.add_dimension(name="outcome", value=outcome)


def count_refusal(operation: str, reason: str) -> None:
    """Refusals by reason, each in its own EMF blob so the dimension stays its own."""
    with single_metric(
        name=f"{operation}Refused", unit=MetricUnit.Count, value=1, namespace=metrics.namespace
    ) as metric:
        metric.add_dimension(name="reason", value=reason)
