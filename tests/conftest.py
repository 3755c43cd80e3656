"""Shared fixtures: a fresh in-memory AWS per test, resources built from template.yaml,
and services wired with a clock the test controls (no test sleeps to reach a window)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from hypothesis import HealthCheck, settings

from tests.support.clock import FakeClock

os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "AgentWorks")
os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "agentworks")
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_DEV", "false")

# Time is not what these tests check (latency is measured in `make bench`): on a loaded
# machine, or under mutmut's tracing, a slow input or example must not fail a rule's test.
settings.register_profile("agentworks", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("agentworks")


@dataclass
class Stack:
    client: Any
    services: Any
    clock: FakeClock
    settings: Any
    resources: Any
    admin_token: str

    def principal(self, token: str) -> Any:
        return self.services.identity.authenticate(token)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(start=1_800_000_000.0)


@pytest.fixture
def allow_loopback_webhooks(monkeypatch: pytest.MonkeyPatch) -> None:
    """What `agentworks dev --allow-loopback-webhooks` gives the handlers: outbound URLs
    (notifyUrl, conversation webhooks) may reach the tests' receivers on 127.0.0.1. Without
    it, as deployed, they may not (tests/integration/test_outbound_urls.py)."""
    from agentworks.outbound.urls import ALLOW_LOOPBACK_ENV

    monkeypatch.setenv(ALLOW_LOOPBACK_ENV, "1")


@pytest.fixture
def faults(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Injects AWS errors moto never raises into the services' DynamoDB client."""
    from tests.support.faults import install

    return install(stack.client, monkeypatch)


@pytest.fixture
def stack(clock: FakeClock) -> Iterator[Stack]:
    from moto import mock_aws

    from agentworks import runtime
    from agentworks.aws_clients import dynamodb_config, relay_lambda_config
    from agentworks.settings import settings_from
    from agentworks.signing import Signer
    from agentworks_local import lambda_seam, moto_patches
    from agentworks_local.template import create_resources
    from tests.support.handlers import invoke_function

    moto_patches.apply()
    # Step Functions really execute (moto's executor); their Lambda tasks run our handlers.
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):
        session = _ClientsReused()
        resources = create_resources(session, prefix="agentworks")
        lambda_seam.install(
            lambda name, event: invoke_function(resources.logical_id_of(name), event)
        )
        env = resources.environment()
        settings = settings_from(env)
        # The services' DynamoDB client is the test's own: tests hang event handlers and
        # faults on it (stack.client).
        client = boto3.Session(region_name="us-east-1").client("dynamodb", config=dynamodb_config())
        services = runtime.build_services(
            settings,
            client,
            Signer(b"test-signing-key-0123456789"),
            clock,
            poll_interval=1.0,
            s3=session.client("s3"),
            stepfunctions=session.client("stepfunctions"),
            scheduler=session.client("scheduler"),
            lambda_client=session.client("lambda", config=relay_lambda_config()),
            secrets=session.client("secretsmanager"),
        )
        runtime.install(services)
        admin = services.identity.bootstrap("test")
        try:
            yield Stack(client, services, clock, settings, resources, admin.token)
        finally:
            runtime.install(None)


class _ClientsReused:
    """A boto3 session whose clients outlive the test: making one copies botocore's event
    handlers (about 40 ms, fourteen per stack, half a fresh stack's setup). A client holds
    no AWS state: moto's backend, which every test gets fresh, is reached through botocore's
    handlers whichever test made the client. Tests change clients only by monkeypatch (undone
    after each test); the one they hang handlers on, stack.client, is made per test."""

    _clients: dict[tuple[str, str], Any] = {}
    # Made inside the first mock: a session made before moto is imported lacks its handler.
    _session: Any = None

    def client(self, service_name: str, config: Any = None) -> Any:
        if _ClientsReused._session is None:
            _ClientsReused._session = boto3.Session(region_name="us-east-1")
        options = sorted((config._user_provided_options if config else {}).items())
        key = (service_name, repr(options))
        if key not in self._clients:
            self._clients[key] = self._session.client(service_name, config=config)
        return self._clients[key]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """In CI (CI=true) a skipped test is a failed one, with its reason: a check that switched
    itself off (no chromium, no bubblewrap, no npm for the real CLIs) must not pass quietly."""
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("CI") and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, which must run every test: {reason}"
