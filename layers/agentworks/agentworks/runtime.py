"""Wiring: builds the services a function uses from its settings, once per process.

Tests and the local stack call `build_services` with their own client and clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.crews.adapters.registry import AdapterClients, build_adapter
from agentworks.crews.call_store import CallStore
from agentworks.crews.calls import FunctionCalls
from agentworks.crews.crew_store import CrewStore
from agentworks.crews.execution import Executions
from agentworks.crews.outputs import OutputStore
from agentworks.crews.runner import StepRunner
from agentworks.crews.service import CrewService
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
class Crews:
    """Crews and their function calls (SPEC §4)."""

    definitions: CrewService
    calls: FunctionCalls
    runner: StepRunner


@dataclass(frozen=True)
class Services:
    identity: IdentityService
    directory: AgentDirectory
    messaging: MessagingService
    lifecycle: InboxLifecycle
    crews: Crews


def build_services(
    settings: Settings,
    client: DynamoDBClient,
    signer: Signer,
    clock: Clock = SYSTEM_CLOCK,
    poll_interval: float = 1.0,
    s3: Any = None,
    stepfunctions: Any = None,
    adapter_clients: AdapterClients | None = None,
) -> Services:
    identity = IdentityService(ConnectionStore(client, settings.identity_table), clock)
    agents = AgentStore(client, settings.messages_table, settings.identity_table)
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
        crews=build_crews(settings, client, clock, s3, stepfunctions, adapter_clients),
    )


def build_crews(
    settings: Settings,
    client: DynamoDBClient,
    clock: Clock = SYSTEM_CLOCK,
    s3: Any = None,
    stepfunctions: Any = None,
    adapter_clients: AdapterClients | None = None,
) -> Crews:
    from agentworks.aws_clients import s3 as default_s3

    crews = CrewStore(client, settings.work_table)
    calls = CallStore(client, settings.work_table)
    outputs = OutputStore((lambda: s3) if s3 is not None else default_s3, settings.outputs_bucket)
    clients = adapter_clients or AdapterClients()
    return Crews(
        definitions=CrewService(crews, clock),
        calls=FunctionCalls(
            crews,
            calls,
            Executions(settings.function_call_state_machine_arn, stepfunctions),
            outputs,
            clock,
        ),
        runner=StepRunner(
            crews, calls, outputs, lambda settings: build_adapter(settings, clients), clock
        ),
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
