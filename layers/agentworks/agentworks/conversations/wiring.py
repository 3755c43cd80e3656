"""How the Crew services are put together (SPEC §4, §7): the stores, message runs and
reconciliation behind `Crews`, and the parts the tick uses on its own. It lives with
conversations, the higher of the two floors, because it hands the step runner the
conversation side (crews.conversation_records) that Crews never import.

Built from what it is given: what other services do when a call ends (a workflow step
waiting for it) comes in as `call_ended`; `runtime` composes the two."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.settings import Settings

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from agentworks.conversations.asked_starts import AskedStarts
    from agentworks.conversations.asker_runs import AskerRuns
    from agentworks.conversations.controls import ConversationControls
    from agentworks.conversations.crew_inbox_store import CrewInboxStore
    from agentworks.conversations.crew_messages import CrewInboxes, CrewReception
    from agentworks.conversations.inbox import ConversationInbox
    from agentworks.conversations.message_runs import MessageRuns
    from agentworks.conversations.messages_view import MessagesView
    from agentworks.conversations.requests import Requests
    from agentworks.conversations.stepping_in import SteppingIn
    from agentworks.conversations.wakeups import Wakeups
    from agentworks.crews.adapter_profiles import AdapterProfiles
    from agentworks.crews.adapters.registry import AdapterClients
    from agentworks.crews.calls import FunctionCalls
    from agentworks.crews.conversation_records import LiveConnection, StarterPrincipal
    from agentworks.crews.models import CallRecord
    from agentworks.crews.reconcile import CallReconciler
    from agentworks.crews.runner import StepRunner
    from agentworks.crews.service import CrewService
    from agentworks.mcp_servers.service import McpServers
    from agentworks.mcp_servers.token_calls import TokenCalls
    from agentworks.messaging.service import MessagingService

# What else follows a call's end (a workflow step waiting for it, W9 `crew`).
CallEnded = Callable[["CallRecord"], None]


@dataclass(frozen=True)
class Crews:
    """Crews, their function calls (SPEC §4), and messages to them (M8–M10)."""

    definitions: CrewService
    adapters: AdapterProfiles
    calls: FunctionCalls
    runner: StepRunner
    inboxes: CrewInboxes
    wakeups: Wakeups
    reconciler: CallReconciler
    requests: Requests  # requests in conversations with a Crew (C1, C2)
    controls: ConversationControls  # pause, resume, close, delete (C4)
    asked_starts: AskedStarts  # the tick starts runs of requests Crews' runs sent (C3)
    inbox: ConversationInbox  # the conversations a person may see, in tabs (C5)
    messages_view: MessagesView  # the account's conversations with a named agent (C5)
    stepping_in: SteppingIn  # a person answers for a Crew they can edit (C5)


def message_runs(
    settings: Settings, client: DynamoDBClient, clock: Clock, stepfunctions: Any
) -> tuple[CrewInboxStore, MessageRuns]:
    from agentworks.conversations.crew_inbox_store import CrewInboxStore
    from agentworks.conversations.message_runs import MessageRuns
    from agentworks.crews.call_store import CallStore
    from agentworks.crews.execution import Executions

    inbox = CrewInboxStore(client, settings.work_table)
    executions = Executions(settings.function_call_state_machine_arn, stepfunctions)
    return inbox, MessageRuns(CallStore(client, settings.work_table), inbox, executions, clock)


def call_reconciler(
    settings: Settings,
    client: DynamoDBClient,
    clock: Clock,
    stepfunctions: Any,
    inbox: CrewInboxStore,
    call_ended: CallEnded | None,
) -> CallReconciler:
    from agentworks.crews.call_store import CallStore
    from agentworks.crews.execution import Executions
    from agentworks.crews.open_call_store import OpenCallStore
    from agentworks.crews.reconcile import CallReconciler
    from agentworks.messaging.conversation_store import ConversationStore
    from agentworks.messaging.crew_inbox_views import CrewInboxViews

    # A reconciled message run's receipt goes `processed`, as a run that ended itself does.
    receipts = CrewInboxViews(ConversationStore(client, settings.messages_table), clock)
    return CallReconciler(
        CallStore(client, settings.work_table),
        OpenCallStore(client, settings.work_table),
        Executions(settings.function_call_state_machine_arn, stepfunctions),
        inbox,
        clock,
        receipts,
        call_ended=call_ended,
    )


def runs_on(
    settings: Settings,
    client: DynamoDBClient,
    clock: Clock,
    stepfunctions: Any,
    inbox: CrewInboxStore,
    state_machine_arn: str,
) -> MessageRuns:
    """Message runs started on a state machine named at run time (the step runner's own,
    which its settings can't name)."""
    from agentworks.conversations.message_runs import MessageRuns
    from agentworks.crews.call_store import CallStore
    from agentworks.crews.execution import Executions

    return MessageRuns(
        CallStore(client, settings.work_table),
        inbox,
        Executions(state_machine_arn, stepfunctions),
        clock,
    )


def build_reception(
    settings: Settings,
    client: DynamoDBClient,
    clock: Clock = SYSTEM_CLOCK,
    stepfunctions: Any = None,
) -> CrewReception:
    """The gate of messages to Crews (M10)."""
    from agentworks.conversations.crew_messages import CrewReception
    from agentworks.crews.crew_store import CrewStore

    inbox, runs = message_runs(settings, client, clock, stepfunctions)
    askers = asker_runs(settings, client, stepfunctions)
    return CrewReception(CrewStore(client, settings.work_table), inbox, runs, clock, askers)


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
    call_ended: CallEnded | None = None,
    mcp_servers: McpServers | None = None,
    mcp_token_calls: TokenCalls | None = None,
) -> Crews:
    """Without `messaging`, function calls work but message runs, hand-offs, review and
    wakeup scheduling answer that messages are unavailable. `call_ended` runs after the
    step runner or the reconciler records a call's end."""
    from agentworks.aws_clients import s3 as default_s3
    from agentworks.conversations.crew_messages import CrewInboxes
    from agentworks.conversations.wakeups import Wakeups
    from agentworks.crews.adapter_profile_store import AdapterProfileStore
    from agentworks.crews.adapter_profiles import AdapterProfiles
    from agentworks.crews.adapters.registry import (
        AdapterClients,
        account_problems,
        build_adapter,
        task_reader,
    )
    from agentworks.crews.call_store import CallStore
    from agentworks.crews.calls import FunctionCalls
    from agentworks.crews.crew_store import CrewStore
    from agentworks.crews.execution import Executions
    from agentworks.crews.outputs import OutputStore
    from agentworks.crews.runner import StepRunner
    from agentworks.crews.service import CrewService
    from agentworks.external_tasks.wait_store import ExternalWaitStore
    from agentworks.external_tasks.waits import ExternalWaits
    from agentworks.platform_url import PlatformUrl

    crews = CrewStore(client, settings.work_table)
    calls = CallStore(client, settings.work_table)
    outputs = OutputStore((lambda: s3) if s3 is not None else default_s3, settings.outputs_bucket)
    clients = adapter_clients or AdapterClients(
        clock=clock, a2a_secret_prefix=settings.a2a_secret_prefix
    )
    inbox, runs = message_runs(settings, client, clock, stepfunctions)
    controls = conversation_controls(settings, client, clock, stepfunctions, messaging, inbox, runs)
    requests = request_service(settings, client, clock, stepfunctions, messaging)
    check = partial(account_problems, clients=clients)
    definitions = CrewService(crews, clock, adapter_check=check)
    definitions.on_deleted = controls.close_all_of
    return Crews(
        definitions=definitions,
        adapters=AdapterProfiles(
            AdapterProfileStore(client, settings.work_table), clock, adapter_check=check
        ),
        calls=FunctionCalls(
            crews,
            calls,
            Executions(settings.function_call_state_machine_arn, stepfunctions),
            outputs,
            clock,
            call_ended=call_ended,
        ),
        runner=StepRunner(
            crews,
            calls,
            outputs,
            lambda settings: build_adapter(settings, clients),
            clock,
            messaging=messaging,
            inbox=inbox,
            askers=asker_runs(settings, client, stepfunctions),
            is_live=is_live_connection,
            starter=starter_principal,
            asked_starts_on=lambda machine: asked_starts(
                settings,
                client,
                clock,
                inbox,
                runs_on(settings, client, clock, stepfunctions, inbox, machine),
            ),
            call_ended=call_ended,
            mcp_servers=mcp_servers,
            mcp_token_calls=mcp_token_calls,
            waits=ExternalWaits(
                ExternalWaitStore(client, settings.work_table),
                partial(task_reader, clients=clients),
                PlatformUrl(settings.platform_api_url, settings.platform_api_url_parameter),
                clock,
            ),
        ),
        inboxes=CrewInboxes(
            crews, inbox, runs, messaging, is_live_connection, clock, requests=requests
        ),
        wakeups=Wakeups(inbox, runs, messaging, clock),
        reconciler=call_reconciler(settings, client, clock, stepfunctions, inbox, call_ended),
        requests=requests,
        controls=controls,
        asked_starts=asked_starts(settings, client, clock, inbox, runs),
        inbox=conversation_inbox(settings, client, clock),
        messages_view=messages_view(settings, client, clock),
        stepping_in=stepping_in(settings, client, clock, messaging, inbox, requests),
    )


def stepping_in(
    settings: Settings,
    client: DynamoDBClient,
    clock: Clock,
    messaging: MessagingService | None,
    inbox: CrewInboxStore,
    requests: Requests,
) -> SteppingIn:
    """C5: a person who can edit a Crew answers for it in its conversations."""
    from agentworks.conversations.stepping_in import SteppingIn
    from agentworks.crews.crew_store import CrewStore
    from agentworks.messaging.conversation_store import ConversationStore
    from agentworks.messaging.crew_inbox_views import CrewInboxViews

    return SteppingIn(
        CrewStore(client, settings.work_table),
        inbox,
        requests,
        CrewInboxViews(ConversationStore(client, settings.messages_table), clock),
        messaging,
        clock,
    )


def conversation_inbox(
    settings: Settings, client: DynamoDBClient, clock: Clock
) -> ConversationInbox:
    """C5: the conversations a person may see, sorted into the Inbox's tabs."""
    from agentworks.conversations.inbox import ConversationInbox
    from agentworks.conversations.request_store import RequestStore
    from agentworks.crews.call_store import CallStore
    from agentworks.crews.crew_store import CrewStore
    from agentworks.messaging.conversation_store import ConversationStore

    return ConversationInbox(
        CrewStore(client, settings.work_table),
        ConversationStore(client, settings.messages_table),
        RequestStore(client, settings.work_table),
        CallStore(client, settings.work_table),
        clock,
    )


def messages_view(settings: Settings, client: DynamoDBClient, clock: Clock) -> MessagesView:
    """C5: the account's conversations with a named agent (the Messages view)."""
    from agentworks.conversations.messages_view import MessagesView
    from agentworks.messaging.conversation_store import ConversationStore
    from agentworks.messaging.named_conversation_store import NamedConversationIndex

    return MessagesView(
        NamedConversationIndex(client, settings.messages_table),
        ConversationStore(client, settings.messages_table),
        clock,
    )


def conversation_controls(
    settings: Settings,
    client: DynamoDBClient,
    clock: Clock,
    stepfunctions: Any,
    messaging: MessagingService | None,
    inbox: CrewInboxStore,
    runs: MessageRuns,
) -> ConversationControls:
    from agentworks.conversations.controls import ConversationControls
    from agentworks.conversations.request_store import RequestStore
    from agentworks.crews.crew_store import CrewStore
    from agentworks.crews.execution import Executions

    return ConversationControls(
        CrewStore(client, settings.work_table),
        inbox,
        RequestStore(client, settings.work_table),
        runs,
        messaging,
        Executions(settings.function_call_state_machine_arn, stepfunctions),
        clock,
    )


def request_service(
    settings: Settings,
    client: DynamoDBClient,
    clock: Clock,
    stepfunctions: Any,
    messaging: MessagingService | None,
) -> Requests:
    from agentworks.conversations.request_store import RequestStore
    from agentworks.conversations.requests import Requests
    from agentworks.crews.execution import Executions

    return Requests(
        RequestStore(client, settings.work_table),
        messaging,
        Executions(settings.function_call_state_machine_arn, stepfunctions),
        clock,
        askers=asker_runs(settings, client, stepfunctions),
    )


def asked_starts(
    settings: Settings,
    client: DynamoDBClient,
    clock: Clock,
    inbox: CrewInboxStore,
    runs: MessageRuns,
) -> AskedStarts:
    from agentworks.conversations.asked_starts import AskedStarts
    from agentworks.conversations.request_store import RequestStore
    from agentworks.crews.crew_store import CrewStore
    from agentworks.messaging.conversation_store import ConversationStore
    from agentworks.messaging.crew_inbox_views import CrewInboxViews

    return AskedStarts(
        RequestStore(client, settings.work_table),
        inbox,
        runs,
        CrewStore(client, settings.work_table),
        CrewInboxViews(ConversationStore(client, settings.messages_table), clock),
        clock,
    )


def asker_runs(settings: Settings, client: DynamoDBClient, stepfunctions: Any) -> AskerRuns:
    """C3: the runs that asked another Crew, woken by what comes of their requests."""
    from agentworks.conversations.asker_runs import AskerRuns
    from agentworks.crews.call_store import CallStore
    from agentworks.crews.execution import Executions

    executions = Executions(settings.function_call_state_machine_arn, stepfunctions)
    return AskerRuns(CallStore(client, settings.work_table), executions)
