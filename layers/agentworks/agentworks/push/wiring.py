"""Push delivery's parts, built from settings (the push and notifier functions, the
local stack and the tests build them the same way)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentworks.clock import SYSTEM_CLOCK, Clock

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from agentworks.identity.push_tickets import PushTickets
    from agentworks.messaging.stream_usage import StreamUsage
    from agentworks.push.a2a_config_store import A2aPushConfigStore
    from agentworks.push.listening import Listening
    from agentworks.push.notifier import Notifier
    from agentworks.push.run_notices import RunNotices
    from agentworks.settings import Settings
    from agentworks.signing import Signer


@dataclass
class Push:
    listening: Listening
    notifier: Notifier
    run_notices: RunNotices  # the web console's: runs of the account that changed (C5)
    usage: StreamUsage  # the notifier's batches also count sends (agentworks.usage)
    # The web pages' push tickets (identity.push_tickets): an upgrade's `?ticket=…`.
    tickets: PushTickets
    # A2A push notification configs (issue 30 §1): registered by the a2a function, sent
    # by the notifier when their call's state changes, signed with the account's webhook
    # keys (the keys conversation and workflow webhooks are signed with).
    a2a_configs: A2aPushConfigStore
    webhook_keys: Callable[[str], list[str]]
    # The HTTP API's URL, which serves the web pages: a cookie-signed upgrade's Origin.
    pages_url: Callable[[], str] = lambda: ""


def management_client(endpoint: str) -> Any:
    """API Gateway's management API at the WebSocket stage (https://{api}.execute-api…/{stage})."""
    from urllib.parse import urlsplit

    import boto3

    # https://{api}.execute-api.{region}.amazonaws.com/{stage} names its region; a local
    # endpoint does not (the environment's region applies).
    labels = (urlsplit(endpoint).hostname or "").split(".")
    region = labels[2] if len(labels) > 3 and labels[1] == "execute-api" else None
    return boto3.client("apigatewaymanagementapi", endpoint_url=endpoint, region_name=region)


def build_push(
    settings: Settings,
    client: DynamoDBClient,
    clock: Clock = SYSTEM_CLOCK,
    management: Any = None,
    signer: Callable[[], Signer] | None = None,
) -> Push:
    from agentworks.identity.connection_store import ConnectionStore
    from agentworks.identity.push_tickets import PushTickets
    from agentworks.identity.service import IdentityService
    from agentworks.messaging.agent_store import AgentStore
    from agentworks.messaging.authority import InboxAuthority
    from agentworks.messaging.conversation_store import ConversationStore
    from agentworks.messaging.stream_usage import StreamUsage
    from agentworks.platform_url import PlatformUrl
    from agentworks.push.a2a_config_store import A2aPushConfigStore
    from agentworks.push.channel import ManagementApiChannel
    from agentworks.push.listener_store import ListenerStore
    from agentworks.push.listening import Listening
    from agentworks.push.notifier import Notifier
    from agentworks.push.run_notices import RunNotices
    from agentworks.usage.recorder import UsageRecorder
    from agentworks.usage.usage_store import UsageStore

    conversations = ConversationStore(client, settings.messages_table)
    agents = AgentStore(client, settings.messages_table, settings.identity_table)
    listeners = ListenerStore(client, settings.listeners_table)
    channel = ManagementApiChannel(
        (lambda: management)
        if management is not None
        else (lambda: management_client(settings.push_endpoint))
    )
    usage = UsageStore(client, settings.work_table)
    identity = ConnectionStore(client, settings.identity_table)

    signing = signer if signer is not None else lambda: _deployment_signer(settings)

    def webhook_keys(account_id: str) -> list[str]:
        from agentworks.workflows.webhooks import WEBHOOK_PURPOSE

        return signing().derived_keys(WEBHOOK_PURPOSE, account_id)

    def account_of(conversation: str) -> str | None:
        found = conversations.get_conversation(conversation, int(clock.now() * 1000))
        return found.account_id if found else None

    # A listener's connection as it authenticates now: a child whose ancestor was revoked
    # gets no more notices either.
    notifier = Notifier(
        listeners,
        channel,
        lambda account, conn: identity.get_live_connection(account, conn, clock.now()),
        clock,
    )
    return Push(
        listening=Listening(
            listeners,
            InboxAuthority(conversations, agents, clock),
            clock,
            UsageRecorder(usage, clock),
        ),
        notifier=notifier,
        run_notices=RunNotices(listeners, notifier, run_accounts(settings, client), clock),
        usage=StreamUsage(usage, account_of),
        pages_url=PlatformUrl(settings.platform_api_url, settings.platform_api_url_parameter),
        tickets=PushTickets(signing, lambda: IdentityService(identity, clock).web, clock),
        a2a_configs=A2aPushConfigStore(client, settings.work_table),
        webhook_keys=webhook_keys,
    )


def _deployment_signer(settings: Settings) -> Signer:
    from agentworks.signing import signer_from_secret

    return signer_from_secret(settings.signing_secret_arn)


def run_accounts(settings: Settings, client: DynamoDBClient) -> Callable[[str], str | None]:
    """The account a call, workflow run or Relay run belongs to (None: not stored), read
    through its own store: a step's item does not name it."""
    from agentworks.aws_clients import s3
    from agentworks.crews.call_store import CallStore
    from agentworks.relays.run_store import RelayRunStore
    from agentworks.workflows.run_store import RunStore

    calls = CallStore(client, settings.work_table)
    workflow_runs = RunStore(client, settings.work_table, s3, settings.outputs_bucket)
    relay_runs = RelayRunStore(client, settings.work_table)

    def account_of(run_id: str) -> str | None:
        if run_id.startswith("wfrun_"):
            run = workflow_runs.get(run_id)
            return run[0].account_id if run else None
        if run_id.startswith("rrun_"):
            relay = relay_runs.get(run_id)
            return relay[0].account_id if relay else None
        call = calls.get(run_id)
        return call[0].account_id if call else None

    return account_of
