"""Wiring: builds the services a function uses from its settings, once per process.

Tests and the local stack call `build_services` with their own client and clock.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import TYPE_CHECKING, Any

from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.conversations import wiring as crews_wiring
from agentworks.conversations.wiring import (
    asked_starts,
    build_reception,
    message_runs,
    request_service,
)
from agentworks.settings import Settings, get_settings

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from agentworks.audit.log import AuditLog
    from agentworks.conversation_webhooks.delivery import WebhookDelivery
    from agentworks.conversation_webhooks.subscriptions import WebhookSubscriptions
    from agentworks.conversations.asked_starts import AskedStarts
    from agentworks.conversations.crew_inbox_store import CrewInboxStore
    from agentworks.conversations.requests import Requests
    from agentworks.conversations.wakeups import Wakeups
    from agentworks.conversations.wiring import CallEnded, Crews
    from agentworks.crews.adapters.registry import AdapterClients
    from agentworks.crews.calls import FunctionCalls
    from agentworks.crews.conversation_records import LiveConnection, StarterPrincipal
    from agentworks.crews.reconcile import CallReconciler
    from agentworks.external_tasks.following import TaskFollower
    from agentworks.identity.service import IdentityService
    from agentworks.mcp_servers.service import McpServers
    from agentworks.mcp_servers.token_calls import TokenCalls
    from agentworks.messaging.directory import AgentDirectory
    from agentworks.messaging.lifecycle import InboxLifecycle
    from agentworks.messaging.service import MessagingService
    from agentworks.push.wiring import Push
    from agentworks.relays.credentials import RunCredentials
    from agentworks.relays.functions import RelayFunctions
    from agentworks.relays.host import RelayHost
    from agentworks.relays.reconcile import RelayReconciler
    from agentworks.relays.wiring import Relays
    from agentworks.runners.delivery import JobDelivery
    from agentworks.signing import Signer
    from agentworks.usage.reports import UsageReports
    from agentworks.workflows.engine import WorkflowEngine
    from agentworks.workflows.registry import WorkflowRegistry
    from agentworks.workflows.wiring import Workflows


@dataclass(frozen=True)
class TickServices:
    """What the one-minute tick runs: retention sweeps and wakeups (M9, M11)."""

    lifecycle: InboxLifecycle
    wakeups: Wakeups
    reconciler: CallReconciler
    schedules: WorkflowRegistry
    relay_runs: RelayReconciler  # runs whose execution ended unrecorded (R5)
    requests: Requests  # requests past their deadline expire (C2)
    runner_jobs: JobDelivery  # cli steps' jobs nobody claimed or renewed (issue 10 item 6)
    asked_starts: AskedStarts  # requests Crews' runs sent start their runs (C3)
    external_tasks: TaskFollower  # external agents' tasks calls and steps wait for (§2)


@dataclass(frozen=True)
class Services:
    identity: IdentityService
    directory: AgentDirectory
    messaging: MessagingService
    lifecycle: InboxLifecycle
    crews: Crews
    workflows: Workflows
    relays: Relays
    push: Push
    usage: UsageReports  # usage and cost per account (issue 12)
    audit: AuditLog  # the audit log of conversations with a Crew (C6)
    webhooks: WebhookSubscriptions  # conversation webhooks' subscriptions (C6)
    mcp_servers: McpServers  # attached MCP servers (issue 28)
    mcp_token_calls: TokenCalls  # lambda adapters' agents call their turns' tools
    external_tasks: TaskFollower  # the tick reads external agents' tasks steps wait for


def build_services(
    settings: Settings,
    client: DynamoDBClient,
    signer: Signer,
    clock: Clock = SYSTEM_CLOCK,
    poll_interval: float = 1.0,
    s3: Any = None,
    stepfunctions: Any = None,
    adapter_clients: AdapterClients | None = None,
    scheduler: Any = None,
    lambda_client: Any = None,
    push_management: Any = None,
    secrets: Any = None,
) -> Services:
    # Imported here, not at module load: each function pays only for what it builds.
    from agentworks.identity.connection_store import ConnectionStore
    from agentworks.identity.service import IdentityService
    from agentworks.messaging.agent_store import AgentStore
    from agentworks.messaging.conversation_store import ConversationStore
    from agentworks.messaging.cursors import Cursors
    from agentworks.messaging.directory import AgentDirectory
    from agentworks.messaging.lifecycle import InboxLifecycle
    from agentworks.messaging.lifecycle_store import LifecycleStore
    from agentworks.messaging.service import MessagingService
    from agentworks.usage.recorder import UsageRecorder
    from agentworks.usage.reports import UsageReports
    from agentworks.usage.tally import UsageTally
    from agentworks.usage.usage_store import UsageStore

    usage = UsageStore(client, settings.work_table)
    reads_tally = UsageTally(UsageRecorder(usage, clock), clock)
    identity = IdentityService(ConnectionStore(client, settings.identity_table), clock)
    agents = AgentStore(client, settings.messages_table, settings.identity_table)
    lifecycle = InboxLifecycle(LifecycleStore(client, settings.messages_table), clock)
    # Messaging asks the Crews' gate about sends to a Crew (M10); Crews answer through
    # messaging. The gate needs no messaging, so it is built first.
    messaging = MessagingService(
        ConversationStore(client, settings.messages_table),
        agents,
        Cursors(signer),
        lifecycle,
        clock,
        poll_interval,
        crew_gate=build_reception(settings, client, clock, stepfunctions),
        usage=reads_tally,  # read pages, written at most once a minute
    )
    mcp_servers = build_mcp_servers(settings, client, clock, secrets)
    call_tokens = build_token_calls(settings, client, signer, identity, mcp_servers, clock, s3)
    crews = build_crews(
        settings,
        client,
        clock,
        s3,
        stepfunctions,
        adapter_clients,
        messaging=messaging,
        is_live_connection=identity.is_live_connection,
        starter_principal=identity.live_principal,
        mcp_servers=mcp_servers,
        mcp_token_calls=call_tokens,
    )
    from agentworks.relays.wiring import build_relays
    from agentworks.workflows.wiring import build_workflows, route_workflows

    workflows = build_workflows(
        settings,
        client,
        signer,
        clock,
        s3,
        stepfunctions,
        adapter_clients,
        scheduler,
        mcp_servers=mcp_servers,
        mcp_token_calls=call_tokens,
    )
    relays = build_relays(
        settings, client, clock, s3, stepfunctions, lambda_client, mcp_servers=mcp_servers
    )
    route_workflows(crews.calls, workflows.functions)  # target=workflow:NAME (W10)
    route_relays(crews.calls, relays.functions)  # target=relay:NAME (issue 9)
    route_relays(workflows.calls, relays.functions)  # …from a workflow's steps too
    from agentworks.push.wiring import build_push

    audit, webhooks = build_audit(settings, client, signer, clock)
    return Services(
        identity=identity,
        directory=AgentDirectory(agents, identity.is_live_connection, clock),
        messaging=messaging,
        lifecycle=lifecycle,
        crews=crews,
        workflows=workflows,
        relays=relays,
        push=build_push(settings, client, clock, push_management, lambda: signer),
        usage=UsageReports(usage, clock, pending=reads_tally),
        audit=audit,
        webhooks=webhooks,
        mcp_servers=mcp_servers,
        mcp_token_calls=call_tokens,
        external_tasks=build_follower(settings, client, clock, stepfunctions, adapter_clients),
    )


def build_follower(
    settings: Settings,
    client: DynamoDBClient,
    clock: Clock = SYSTEM_CLOCK,
    stepfunctions: Any = None,
    adapter_clients: AdapterClients | None = None,
) -> TaskFollower:
    """The tick's round over external agents' tasks (issue 30 §2): the waits' store, the
    adapters that read the tasks, Step Functions to resume the steps, and what tells that
    a wait's call or run ended (then its task is cancelled at the agent)."""
    from agentworks.aws_clients import s3
    from agentworks.crews.adapters.registry import AdapterClients, task_reader
    from agentworks.crews.call_store import CallStore
    from agentworks.crews.execution import Executions
    from agentworks.external_tasks.following import TaskFollower as Follower
    from agentworks.external_tasks.wait_store import ExternalWaitStore
    from agentworks.workflows.run_store import RunStore

    clients = adapter_clients or AdapterClients(
        clock=clock, a2a_secret_prefix=settings.a2a_secret_prefix
    )
    calls = CallStore(client, settings.work_table)
    runs = RunStore(client, settings.work_table, s3, settings.outputs_bucket)

    def owner_ended(owner: str) -> bool:
        kind, _, rest = owner.partition(":")
        if kind == "call":
            found = calls.get(rest)
            return found is None or found[0].terminal
        return runs.ended(rest.partition(":")[0])  # step:<run_id>:<position>

    return Follower(
        ExternalWaitStore(client, settings.work_table),
        partial(task_reader, clients=clients),
        # A token is answered whatever machine waits on it.
        Executions("", stepfunctions).resume_if_waiting,
        owner_ended,
        clock,
    )


def build_mcp_servers(
    settings: Settings, client: DynamoDBClient, clock: Clock = SYSTEM_CLOCK, secrets: Any = None
) -> McpServers:
    """Attached MCP servers: their items in the work table, their headers in Secrets
    Manager (the process's client, made on first use, when none is given)."""
    from agentworks.aws_clients import secretsmanager
    from agentworks.mcp_servers.secret_store import McpSecretStore
    from agentworks.mcp_servers.server_store import McpServerStore
    from agentworks.mcp_servers.service import McpServers

    return McpServers(
        McpServerStore(client, settings.work_table),
        McpSecretStore(
            secretsmanager if secrets is None else lambda: secrets, settings.mcp_secret_prefix
        ),
        clock,
    )


def build_token_calls(
    settings: Settings,
    client: DynamoDBClient,
    signer: Signer,
    identity: IdentityService,
    mcp_servers: McpServers,
    clock: Clock = SYSTEM_CLOCK,
    s3: Any = None,
) -> TokenCalls:
    """What `lambda` adapters' agents call their turns' MCP tools with: tokens signed by the
    deployment's keys, their calls recorded in the work table (large content in S3)."""
    from agentworks.aws_clients import s3 as default_s3
    from agentworks.mcp_servers.call_tokens import McpCallTokens
    from agentworks.mcp_servers.token_calls import TokenCalls
    from agentworks.mcp_servers.turn_call_store import TurnCallStore

    store = TurnCallStore(
        client,
        settings.work_table,
        (lambda: s3) if s3 is not None else default_s3,
        settings.outputs_bucket,
    )
    return TokenCalls(
        McpCallTokens(signer, identity.live_principal, clock),
        mcp_servers,
        store,
        clock,
        run_ended=_run_ended(settings, client),
    )


def _run_ended(settings: Settings, client: DynamoDBClient) -> Callable[[str], bool]:
    """Whether the Crew call ("call:<id>") or workflow run ("run:<id>") a call token was
    minted for has ended (gone counts as ended)."""
    from agentworks.crews.call_store import CallStore
    from agentworks.workflows.records import TERMINAL_RUN
    from agentworks.workflows.run_store import RunStore

    calls = CallStore(client, settings.work_table)
    runs = RunStore(client, settings.work_table, lambda: None, settings.outputs_bucket)

    def ended(run: str) -> bool:
        kind, _, run_id = run.partition(":")
        if kind == "call":
            call = calls.get(run_id)
            return call is None or call[0].terminal
        found = runs.get(run_id)
        return found is None or found[0].status in TERMINAL_RUN

    return ended


def build_crews(
    settings: Settings,
    client: DynamoDBClient,
    clock: Clock = SYSTEM_CLOCK,
    s3: Any = None,
    stepfunctions: Any = None,
    adapter_clients: AdapterClients | None = None,
    messaging: MessagingService | None = None,
    is_live_connection: LiveConnection | None = None,
    starter_principal: StarterPrincipal | None = None,
    mcp_servers: McpServers | None = None,
    mcp_token_calls: TokenCalls | None = None,
) -> Crews:
    """The Crew services, with a call's end answering the workflow steps waiting for it
    (W9 `crew`)."""
    return crews_wiring.build_crews(
        settings,
        client,
        clock,
        s3,
        stepfunctions,
        adapter_clients,
        messaging=messaging,
        is_live_connection=is_live_connection,
        starter_principal=starter_principal,
        call_ended=_call_ended(settings, client, clock, stepfunctions),
        mcp_servers=mcp_servers,
        mcp_token_calls=mcp_token_calls,
    )


def call_reconciler(
    settings: Settings,
    client: DynamoDBClient,
    clock: Clock,
    stepfunctions: Any,
    inbox: CrewInboxStore,
) -> CallReconciler:
    """Reconciles calls whose execution ended unrecorded; their ends answer waiting steps."""
    return crews_wiring.call_reconciler(
        settings,
        client,
        clock,
        stepfunctions,
        inbox,
        _call_ended(settings, client, clock, stepfunctions),
    )


def _call_ended(
    settings: Settings, client: DynamoDBClient, clock: Clock, stepfunctions: Any
) -> CallEnded:
    """The workflow steps waiting for calls' ends (W9 `crew`): a call's end answers them."""
    from agentworks.workflows.wiring import call_waits

    return call_waits(settings, client, clock, stepfunctions).call_ended


def build_audit(
    settings: Settings, client: DynamoDBClient, signer: Signer, clock: Clock
) -> tuple[AuditLog, WebhookSubscriptions]:
    from agentworks.audit.audit_store import AuditStore
    from agentworks.audit.log import AuditLog
    from agentworks.conversation_webhooks.subscription_store import SubscriptionStore
    from agentworks.conversation_webhooks.subscriptions import WebhookSubscriptions

    return (
        AuditLog(AuditStore(client, settings.work_table), signer, clock),
        WebhookSubscriptions(SubscriptionStore(client, settings.work_table), clock),
    )


def build_webhook_delivery(
    settings: Settings, client: DynamoDBClient, signer: Signer, clock: Clock = SYSTEM_CLOCK
) -> WebhookDelivery:
    """What the webhooks function runs: subscriptions and deliveries (work table), the
    conversation's parties (messages table) and its Crews' visibility."""
    from agentworks.conversation_webhooks.delivery import WebhookDelivery
    from agentworks.conversation_webhooks.subscription_store import SubscriptionStore
    from agentworks.crews.crew_store import CrewStore
    from agentworks.messaging.conversation_store import ConversationStore

    return WebhookDelivery(
        SubscriptionStore(client, settings.work_table),
        ConversationStore(client, settings.messages_table),
        CrewStore(client, settings.work_table),
        signer,
        clock,
    )


_webhook_delivery: WebhookDelivery | None = None


def install_webhook_delivery(custom: WebhookDelivery | None) -> None:
    """Tests put a delivery with their own clock here; None restores the default."""
    global _webhook_delivery
    _webhook_delivery = custom


def webhook_delivery() -> WebhookDelivery:
    """What the webhooks function calls (C6)."""
    return _webhook_delivery if _webhook_delivery is not None else _default_webhook_delivery()


@lru_cache(maxsize=1)
def _default_webhook_delivery() -> WebhookDelivery:
    from agentworks.aws_clients import dynamodb
    from agentworks.signing import signer_from_secret

    settings = get_settings()
    signer = signer_from_secret(settings.signing_secret_arn)
    return build_webhook_delivery(settings, dynamodb(), signer)


def route_relays(calls: FunctionCalls, functions: RelayFunctions) -> None:
    from agentworks.relays.runs import RUN_PREFIX

    calls.route("relay", RUN_PREFIX, functions)


_installed: Services | None = None


def install(custom: Services | None) -> None:
    """Tests put services with their own clock here; None restores the default."""
    global _installed
    _installed = custom


def services() -> Services:
    """The process-wide services of a deployed (or locally hosted) function."""
    return _installed if _installed is not None else _default_services()


@lru_cache(maxsize=1)
def _default_services() -> Services:
    from agentworks.aws_clients import dynamodb
    from agentworks.shutdown import on_shutdown
    from agentworks.signing import signer_from_secret

    settings = get_settings()
    built = build_services(settings, dynamodb(), signer_from_secret(settings.signing_secret_arn))
    on_shutdown(built.usage.flush_pending)  # the read tally, when Lambda retires us
    return built


def identity_only() -> IdentityService:
    """What authentication needs: the connection store, no signing secret or messaging."""
    return _installed.identity if _installed is not None else _default_identity()


@lru_cache(maxsize=1)
def _default_identity() -> IdentityService:
    from agentworks.aws_clients import dynamodb
    from agentworks.identity.connection_store import ConnectionStore
    from agentworks.identity.service import IdentityService

    return IdentityService(ConnectionStore(dynamodb(), get_settings().identity_table))


def workflow_engine() -> WorkflowEngine:
    """What the workflow runner's task states call."""
    return _installed.workflows.engine if _installed is not None else _default_engine()


@lru_cache(maxsize=1)
def _default_engine() -> WorkflowEngine:
    from agentworks.aws_clients import dynamodb
    from agentworks.relays.wiring import build_relays
    from agentworks.signing import signer_from_secret

    settings = get_settings()
    signer = signer_from_secret(settings.signing_secret_arn)
    from agentworks.workflows.wiring import build_workflows

    workflows = build_workflows(
        settings, dynamodb(), signer, mcp_servers=build_mcp_servers(settings, dynamodb())
    )
    # A step may call a Relay's function (target=relay:NAME): that starts a run.
    route_relays(workflows.calls, build_relays(settings, dynamodb()).functions)
    return workflows.engine


def relay_host() -> RelayHost:
    """What the relay runner's task states call."""
    return _installed.relays.host if _installed is not None else _default_relay_host()


@lru_cache(maxsize=1)
def _default_relay_host() -> RelayHost:
    from agentworks.aws_clients import dynamodb
    from agentworks.relays.wiring import build_relays

    return build_relays(get_settings(), dynamodb()).host


def run_credentials() -> RunCredentials:
    """What authentication needs for a relay run's credential (relays.credentials)."""
    return _installed.relays.credentials if _installed is not None else _default_credentials()


@lru_cache(maxsize=1)
def _default_credentials() -> RunCredentials:
    from agentworks.aws_clients import dynamodb
    from agentworks.relays.wiring import build_credentials

    return build_credentials(get_settings(), dynamodb())


def push() -> Push:
    """What the push and notifier functions call (issue 10)."""
    return _installed.push if _installed is not None else _default_push()


@lru_cache(maxsize=1)
def _default_push() -> Push:
    from agentworks.aws_clients import dynamodb
    from agentworks.push.wiring import build_push

    return build_push(get_settings(), dynamodb())


def tick_services() -> TickServices:
    """What the tick needs: the retention rules over the messages table, firing due wakeups
    and schedules, and reconciling ended executions (the work table, StartExecution and
    DescribeExecution, a registrant's connection; no signing secret)."""
    if _installed is not None:
        return TickServices(
            _installed.lifecycle,
            _installed.crews.wakeups,
            _installed.crews.reconciler,
            _installed.workflows.registry,
            _installed.relays.reconciler,
            _installed.crews.requests,
            _installed.workflows.runners.delivery,
            _installed.crews.asked_starts,
            _installed.external_tasks,
        )
    return _default_tick()


@lru_cache(maxsize=1)
def _default_tick() -> TickServices:
    from agentworks.aws_clients import dynamodb
    from agentworks.conversations.wakeups import Wakeups
    from agentworks.messaging.lifecycle import InboxLifecycle
    from agentworks.messaging.lifecycle_store import LifecycleStore
    from agentworks.relays.wiring import build_reconciler
    from agentworks.workflows.wiring import build_workflows

    settings = get_settings()
    inbox, runs = message_runs(settings, dynamodb(), SYSTEM_CLOCK, None)
    workflows = build_workflows(settings, dynamodb(), None)
    return TickServices(
        InboxLifecycle(LifecycleStore(dynamodb(), settings.messages_table)),
        Wakeups(inbox, runs, None),
        call_reconciler(settings, dynamodb(), SYSTEM_CLOCK, None, inbox),
        # Schedules start runs; the tick holds no signing key (no webhook-key answers).
        workflows.registry,
        build_reconciler(settings, dynamodb()),
        request_service(settings, dynamodb(), SYSTEM_CLOCK, None, None),
        workflows.runners.delivery,
        asked_starts(settings, dynamodb(), SYSTEM_CLOCK, inbox, runs),
        build_follower(settings, dynamodb()),
    )
