"""Wiring: builds the services a function uses from its settings, once per process.

Tests and the local stack call `build_services` with their own client and clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.identity.connection_store import ConnectionStore
from agentworks.identity.service import IdentityService
from agentworks.messaging.agent_store import AgentStore
from agentworks.messaging.conversation_store import ConversationStore
from agentworks.messaging.cursors import Cursors
from agentworks.messaging.directory import AgentDirectory
from agentworks.messaging.lifecycle import InboxLifecycle
from agentworks.messaging.lifecycle_store import LifecycleStore
from agentworks.messaging.service import MessagingService
from agentworks.settings import Settings, get_settings
from agentworks.signing import Signer, signer_from_secret

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


@dataclass(frozen=True)
class Services:
    identity: IdentityService
    directory: AgentDirectory
    messaging: MessagingService
    lifecycle: InboxLifecycle


def build_services(
    settings: Settings,
    client: DynamoDBClient,
    signer: Signer,
    clock: Clock = SYSTEM_CLOCK,
    poll_interval: float = 1.0,
) -> Services:
    identity = IdentityService(ConnectionStore(client, settings.identity_table), clock)
    agents = AgentStore(client, settings.messages_table)
    lifecycle = InboxLifecycle(LifecycleStore(client, settings.messages_table), clock)
    return Services(
        identity=identity,
        directory=AgentDirectory(agents, identity.is_live_connection, clock),
        messaging=MessagingService(
            ConversationStore(client, settings.messages_table),
            agents,
            Cursors(signer),
            lifecycle,
            clock,
            poll_interval,
        ),
        lifecycle=lifecycle,
    )


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

    settings = get_settings()
    return build_services(settings, dynamodb(), signer_from_secret(settings.signing_secret_arn))


def identity_only() -> IdentityService:
    """What the authorizer needs: no signing secret, no messaging stores."""
    return _installed.identity if _installed is not None else _default_identity()


@lru_cache(maxsize=1)
def _default_identity() -> IdentityService:
    from agentworks.aws_clients import dynamodb

    return IdentityService(ConnectionStore(dynamodb(), get_settings().identity_table))


def tick_services() -> InboxLifecycle:
    """What the tick needs: the retention rules over the messages table."""
    return _installed.lifecycle if _installed is not None else _default_lifecycle()


@lru_cache(maxsize=1)
def _default_lifecycle() -> InboxLifecycle:
    from agentworks.aws_clients import dynamodb

    return InboxLifecycle(LifecycleStore(dynamodb(), get_settings().messages_table))
