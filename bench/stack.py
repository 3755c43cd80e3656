"""The system under measurement: template.yaml's tables on in-process moto, services built
like a deployed function's (with a clock the bench controls), and the real Lambda handlers
driven with API Gateway v2 events, as HTTP API runs them (the API function authenticates
the bearer token itself; that step is metered and timed apart from the route's work).

Call `open_stack` inside `moto.mock_aws()`.
"""

from __future__ import annotations

import contextlib
import io
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3

from agentworks import authentication, runtime
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.http_api import principal
from agentworks.settings import Settings, settings_from
from agentworks.signing import Signer
from agentworks_local import moto_patches
from agentworks_local.template import create_resources
from bench.meter import Meter, Tally
from tests.support.handlers import Api, Reply

REGION = "us-east-1"


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Powertools prints an EMF metrics blob per invocation; keep it off the report."""
    with contextlib.redirect_stdout(io.StringIO()):
        yield


@dataclass
class Invocation:
    """One HTTP request: the reply, and what each Lambda cost on the way."""

    reply: Reply
    authentication: Tally
    api: Tally  # the route's own work, authentication excluded
    authentication_seconds: float
    api_seconds: float  # the whole handler, authentication included

    @property
    def body(self) -> Any:
        return self.reply.body


class _Timed:
    """Stands in for a handler module: times (and meters) each call of its handler."""

    def __init__(self, handler: Any) -> None:
        self._handler = handler
        self.tally: Tally | None = None
        self.meter: Meter | None = None
        self.seconds = 0.0

    def handler(self, event: dict[str, Any], context: Any) -> Any:
        assert self.meter is not None
        with self.meter.recording(self.tally), quiet():
            started = time.perf_counter()
            try:
                return self._handler(event, context)
            finally:
                self.seconds = time.perf_counter() - started


class BenchApi(Api):
    """tests.support's Api with the handler timed and metered, and its authentication step
    metered and timed on its own, so the token check never blurs a route's cost."""

    def __init__(self, meter: Meter) -> None:
        super().__init__()
        self._meter = meter
        self._route = _Timed(self.api.handler)
        self._route.meter = meter
        self.api = self._route  # type: ignore[assignment]
        self._auth_tally: Tally | None = None
        self._auth_seconds = 0.0
        # The resolver calls authenticate_event through this module: time it there (the
        # newest bench stack's Api is the one that counts).
        principal.authenticate_event = self._authenticate  # type: ignore[assignment]

    def _authenticate(self, event: Any) -> Any:
        with self._meter.recording(self._auth_tally):
            started = time.perf_counter()
            try:
                return authentication.authenticate_event(event)
            finally:
                self._auth_seconds = time.perf_counter() - started

    def invoke(
        self,
        method: str,
        path: str,
        token: str,
        body: Any = None,
        query: dict[str, Any] | None = None,
        metered: bool = False,
    ) -> Invocation:
        auth, route = (Tally(), Tally()) if metered else (None, None)
        self._auth_tally, self._route.tally = auth, route
        self._auth_seconds = self._route.seconds = 0.0
        reply = self(method, path, token, body, query)
        return Invocation(
            reply, auth or Tally(), route or Tally(), self._auth_seconds, self._route.seconds
        )


@dataclass
class Stack:
    session: Any
    client: Any  # the services' DynamoDB client (metered)
    oracle: Any  # an unhooked client for looking without counting
    meter: Meter
    clock: Clock
    settings: Settings
    services: Any
    admin_token: str
    api: BenchApi

    def call(
        self,
        method: str,
        path: str,
        token: str,
        body: Any = None,
        query: dict[str, Any] | None = None,
        metered: bool = False,
        expect: int | tuple[int, ...] = (200, 201),
    ) -> Invocation:
        """One request through the handlers; fails loudly on an unexpected status, since a
        refused request would measure the wrong path."""
        done = self.api.invoke(method, path, token, body, query, metered)
        wanted = (expect,) if isinstance(expect, int) else expect
        if done.reply.status not in wanted:
            raise RuntimeError(f"{method} {path} -> {done.reply.status}: {done.reply.body}")
        return done

    def with_clock(self, clock: Clock, poll_interval: float = 1.0) -> Stack:
        """The same tables served by services on another clock (e.g. the real one)."""
        services = _services(self.settings, self.client, clock, poll_interval)
        runtime.install(services)
        return Stack(
            self.session,
            self.client,
            self.oracle,
            self.meter,
            clock,
            self.settings,
            services,
            self.admin_token,
            self.api,
        )

    def activate(self) -> None:
        """Makes this stack's services the ones the handlers use."""
        runtime.install(self.services)


def _services(settings: Settings, client: Any, clock: Clock, poll_interval: float) -> Any:
    signer = Signer(b"bench-signing-key-0123456789abcdef")
    return runtime.build_services(settings, client, signer, clock, poll_interval=poll_interval)


def open_stack(prefix: str, clock: Clock | None = None, poll_interval: float = 1.0) -> Stack:
    """Fresh tables named `<prefix>-...`, services on `clock`, an admin token."""
    moto_patches.apply()
    session = boto3.Session(region_name=REGION)
    env = create_resources(session, prefix=prefix).environment()
    settings = settings_from(env)
    client = session.client("dynamodb")
    oracle = session.client("dynamodb")
    meter = Meter(client, oracle)
    chosen = clock if clock is not None else SYSTEM_CLOCK
    services = _services(settings, client, chosen, poll_interval)
    runtime.install(services)
    admin = services.identity.bootstrap("bench")
    return Stack(
        session, client, oracle, meter, chosen, settings, services, admin.token, BenchApi(meter)
    )


class Requests:
    """Counts AWS requests by service and operation, from the clients the handlers use.
    Requests made off the main thread are the execution's (moto's Step Functions runner)."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.execution: Counter[str] = Counter()

    def hook(self, client: Any) -> None:
        client.meta.events.register("before-call.*.*", self._count)

    def _count(self, model: Any, **_: Any) -> None:
        key = f"{model.service_model.service_name}:{model.name}"
        self.counts[key] += 1
        if threading.current_thread() is not threading.main_thread():
            self.execution[key] += 1

    def total(self, service: str) -> int:
        return sum(n for k, n in self.counts.items() if k.startswith(service + ":"))


@dataclass
class ExecutingStack:
    """Every resource of template.yaml on moto, executions running the real handlers."""

    api: Api
    admin_token: str
    stepfunctions: Any  # an unhooked client, for looking at executions
    services: Any
    dynamodb: Any = None  # the services' own client (a bench.meter.Meter may hook it)


def executing_stack(prefix: str, requests: Requests) -> ExecutingStack:
    """Inside mock_aws with the Step Functions executor on: the stack's services, their
    DynamoDB, S3, Step Functions and Lambda clients counted by `requests`."""
    from agentworks.aws_clients import relay_lambda_config
    from agentworks_local import lambda_seam
    from tests.support.handlers import invoke_function

    moto_patches.apply()
    session = boto3.Session(region_name="us-east-1")
    resources = create_resources(session, prefix=prefix)
    lambda_seam.install(lambda name, event: invoke_function(resources.logical_id_of(name), event))
    dynamodb, s3, sfn = (session.client(s) for s in ("dynamodb", "s3", "stepfunctions"))
    lambda_client = session.client("lambda", config=relay_lambda_config())
    for client in (dynamodb, s3, sfn, lambda_client):
        requests.hook(client)
    services = runtime.build_services(
        settings_from(resources.environment()),
        dynamodb,
        Signer(b"bench-signing-key-0123456789"),
        s3=s3,
        stepfunctions=sfn,
        lambda_client=lambda_client,
    )
    runtime.install(services)
    admin = services.identity.bootstrap("bench").token
    return ExecutingStack(Api(), admin, session.client("stepfunctions"), services, dynamodb)
