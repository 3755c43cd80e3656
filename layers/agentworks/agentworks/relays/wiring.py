"""Wiring of the Relay services (SPEC §5) from a function's settings; runtime.py holds the
process-wide instances. Each builder makes only what its function uses: authentication of
a run's credential needs two stores, the tick's reconciler one store and Step Functions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentworks.clock import SYSTEM_CLOCK, Clock

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from agentworks.mcp_servers.service import McpServers
    from agentworks.relays.credentials import RunCredentials
    from agentworks.relays.functions import RelayFunctions
    from agentworks.relays.host import RelayHost
    from agentworks.relays.mcp_calls import RelayMcpCalls
    from agentworks.relays.reconcile import RelayReconciler
    from agentworks.relays.releases import RelayReleases
    from agentworks.relays.runs import RelayRuns
    from agentworks.relays.steps import DurableSteps
    from agentworks.settings import Settings


@dataclass(frozen=True)
class Relays:
    """Releases, runs, their durable steps, credentials, host and reconciler."""

    releases: RelayReleases
    runs: RelayRuns
    steps: DurableSteps
    credentials: RunCredentials
    host: RelayHost
    functions: RelayFunctions  # target=relay:NAME on the functions surface
    reconciler: RelayReconciler
    # Tool calls of attached MCP servers from relay code (issue 28); None where the
    # function that built these services answers no such call.
    mcp_calls: RelayMcpCalls | None = None


def build_relays(
    settings: Settings,
    client: DynamoDBClient,
    clock: Clock = SYSTEM_CLOCK,
    s3: Any = None,
    stepfunctions: Any = None,
    lambda_client: Any = None,
    ssm: Any = None,
    mcp_servers: McpServers | None = None,
) -> Relays:
    from agentworks.aws_clients import relay_lambda
    from agentworks.aws_clients import s3 as default_s3
    from agentworks.crews.execution import Executions
    from agentworks.platform_url import PlatformUrl
    from agentworks.relays.functions import RelayFunctions
    from agentworks.relays.host import RelayHost, lambda_launcher
    from agentworks.relays.mcp_call_store import McpCallStore
    from agentworks.relays.mcp_calls import RelayMcpCalls
    from agentworks.relays.reconcile import RelayReconciler
    from agentworks.relays.release_store import ReleaseStore
    from agentworks.relays.releases import RelayReleases
    from agentworks.relays.run_store import RelayRunStore
    from agentworks.relays.runs import RelayRuns
    from agentworks.relays.steps import DurableSteps

    store = ReleaseStore(
        client,
        settings.work_table,
        (lambda: s3) if s3 is not None else default_s3,
        settings.outputs_bucket,
    )
    releases = RelayReleases(store, clock)
    runs = RelayRunStore(client, settings.work_table)
    launch = lambda_launcher(
        settings.relay_code_function,
        (lambda: lambda_client) if lambda_client is not None else relay_lambda,
    )
    executions = Executions(settings.relay_state_machine_arn, stepfunctions)
    calls = McpCallStore(
        client,
        settings.work_table,
        (lambda: s3) if s3 is not None else default_s3,
        settings.outputs_bucket,
    )
    relay_runs = RelayRuns(releases, runs, executions, clock, calls)
    credentials = build_credentials(settings, client, clock)
    return Relays(
        releases=releases,
        runs=relay_runs,
        functions=RelayFunctions(releases, relay_runs),
        steps=DurableSteps(runs, clock),
        credentials=credentials,
        host=RelayHost(
            runs,
            releases,
            credentials.connections,
            launch,
            PlatformUrl(
                settings.platform_api_url,
                settings.platform_api_url_parameter,
                (lambda: ssm) if ssm is not None else None,
            ),
            clock,
        ),
        reconciler=RelayReconciler(runs, executions, clock),
        mcp_calls=(
            RelayMcpCalls(runs, releases, calls, mcp_servers, clock)
            if mcp_servers is not None
            else None
        ),
    )


def build_credentials(
    settings: Settings, client: DynamoDBClient, clock: Clock = SYSTEM_CLOCK
) -> RunCredentials:
    from agentworks.identity.connection_store import ConnectionStore
    from agentworks.relays.credentials import RunCredentials
    from agentworks.relays.run_store import RelayRunStore

    return RunCredentials(
        RelayRunStore(client, settings.work_table),
        ConnectionStore(client, settings.identity_table),
        clock,
    )


def build_reconciler(settings: Settings, client: DynamoDBClient) -> RelayReconciler:
    from agentworks.crews.execution import Executions
    from agentworks.relays.reconcile import RelayReconciler
    from agentworks.relays.run_store import RelayRunStore

    return RelayReconciler(
        RelayRunStore(client, settings.work_table), Executions(settings.relay_state_machine_arn)
    )
