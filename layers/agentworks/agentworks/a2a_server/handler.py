"""The A2A request handler of one Crew (issue 30 §1), over the function calls every other
surface uses: same principal, scopes, bounds and refusals, and no task store of its own.

SendMessage with a data part `{"function": …, "args": …}` calls the function (the message
id is the call's submission_id, so a resent message recovers its task); text alone is a
request in a conversation with the Crew; a message to an existing task answers the question
it waits on with a data part `{request_id: answer}`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator
from typing import Any

from a2a.helpers.proto_helpers import get_data_parts, get_text_parts
from a2a.server.context import ServerCallContext
from a2a.server.events import Event
from a2a.server.request_handlers.request_handler import RequestHandler
from a2a.types.a2a_pb2 import (
    AgentCard,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.errors import (
    A2AError,
    ExtendedAgentCardNotConfiguredError,
    InternalError,
    InvalidParamsError,
    InvalidRequestError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)

from agentworks import limits
from agentworks.a2a_server.call_tasks import CALL_STATES_OF, call_task
from agentworks.a2a_server.parts import answers_in
from agentworks.a2a_server.push_configs import TaskPushConfigs
from agentworks.a2a_server.push_configs import check as check_push_config
from agentworks.a2a_server.request_tasks import (
    asker_inbox,
    question_of,
    request_of,
    request_task,
)
from agentworks.conversations.inbox_models import ConversationDetail
from agentworks.conversations.models import RequestView
from agentworks.conversations.wiring import Crews
from agentworks.crews.models import CallFunction, ReplyToCall
from agentworks.errors import AgentWorksError, Unavailable
from agentworks.identity.models import Principal
from agentworks.ids import parse_inbox_id, parse_message_id
from agentworks.json_input import whole_numbers
from agentworks.messaging.models import SendMessage
from agentworks.messaging.service import MessagingService

PRINCIPAL = "agentworks.principal"
CREW = "agentworks.crew"


class CrewTasks(RequestHandler):
    def __init__(
        self, crews: Crews, messaging: MessagingService, push_configs: TaskPushConfigs
    ) -> None:
        self._crews = crews
        self._calls = crews.calls
        self._messaging = messaging
        self._push_configs = push_configs

    # -- SendMessage ----------------------------------------------------------------------

    async def on_message_send(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> Task | Message:
        principal, crew = _caller(context)
        message = params.message
        pushed = _pushed(params)
        calls = any(_function_call(d) for d in get_data_parts(message.parts))
        if pushed is not None:
            # Refused before anything is sent: a request's task has no configs.
            if _is_request(message.task_id) or not (message.task_id or calls):
                raise PushNotificationNotSupportedError(_NO_REQUEST_PUSH)
            check_push_config(pushed)
        if message.task_id:
            task = self._answer(principal, crew, message)
        elif calls:
            task = self._call(principal, crew, message)
        elif get_text_parts(message.parts):
            task = self._ask(principal, crew, message)
        else:
            raise InvalidParamsError(
                'Send a data part {"function": NAME, "args": {...}} naming one of the '
                "skills on this agent's card, or text to ask the Crew in a conversation."
            )
        if pushed is not None:
            # Stored once the call exists: a change before this instant is not sent.
            self._push_configs.create(principal.account_id, task.id, pushed)
        if not params.configuration.return_immediately:
            task = await self._settled(principal, crew, task)
        return task

    def _call(self, principal: Principal, crew: str, message: Message) -> Task:
        call = next(d for d in get_data_parts(message.parts) if _function_call(d))
        if not isinstance(call.get("args", {}), dict):
            raise InvalidParamsError("args must be a JSON object.")
        request = _checked(
            CallFunction,
            target=f"crew:{crew}",
            function=str(call["function"]),
            args=whole_numbers(call.get("args") or {}),
            submission_id=message.message_id or None,
        )
        return call_task(_domain(self._calls.call, principal, request))

    def _ask(self, principal: Principal, crew: str, message: Message) -> Task:
        """Text: a request in a conversation with the Crew (C1) — a new one, or the one
        whose inbox is the message's contextId."""
        text = "\n".join(get_text_parts(message.parts))
        where: dict[str, Any] = (
            {"inbox_id": message.context_id}
            if message.context_id.startswith("ibx_")
            else {"target": f"crew:{crew}"}
        )
        request = _checked(
            SendMessage,
            message=text,
            kind="request",
            submission_id=message.message_id or None,
            **where,
        )
        receipt = _domain(self._messaging.send, principal, request)
        return self._request_task(principal, crew, receipt.message_id)

    def _answer(self, principal: Principal, crew: str, message: Message) -> Task:
        """A message to an existing task answers the question it waits on."""
        answers = answers_in(message)
        if not answers:
            raise InvalidParamsError(
                "Answer a question with a data part {request_id: answer}; the task's status "
                "message names the request ids it asks."
            )
        task_id = message.task_id
        if _is_request(task_id):
            detail, request = self._request(principal, crew, task_id)
            asked = question_of(detail, request)
            run_id = asked.run_id if asked is not None else None
        else:
            self._call_status(principal, crew, task_id)
            run_id = task_id
        if run_id is None:
            raise InvalidParamsError("This task waits on no question.")
        for request_id, answer in answers.items():
            reply = _checked(ReplyToCall, request_id=request_id, answer=answer)
            _domain(self._calls.reply, principal, run_id, reply)
        return self._task(principal, crew, task_id)

    async def _settled(self, principal: Principal, crew: str, task: Task) -> Task:
        """Re-reads the task (0.25 s, doubling to 2 s) until it ends or asks, for at most
        A2A_SEND_WAIT_SECONDS; then answers with the task as it stands."""
        deadline = time.monotonic() + limits.A2A_SEND_WAIT_SECONDS
        pause = 0.25
        while task.status.state not in _SETTLED and time.monotonic() + pause < deadline:
            await asyncio.sleep(pause)
            pause = min(pause * 2, 2.0)
            task = self._task(principal, crew, task.id)
        return task

    # -- tasks ---------------------------------------------------------------------------

    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task:
        principal, crew = _caller(context)
        return self._task(principal, crew, params.id)

    async def on_list_tasks(
        self, params: ListTasksRequest, context: ServerCallContext
    ) -> ListTasksResponse:
        """The caller's function calls on this Crew, newest first, a page at a time (the
        pageToken is the calls list's `before`); with a conversation's contextId (the
        caller's inbox), the requests sent from it, newest first."""
        principal, crew = _caller(context)
        size = params.page_size or limits.A2A_TASKS_PAGE_DEFAULT
        if not 1 <= size <= limits.CALLS_PAGE_MAX:
            raise InvalidParamsError(f"pageSize must be 1–{limits.CALLS_PAGE_MAX}.")
        if params.context_id.startswith("ibx_"):  # a conversation's requests
            requests = self._conversation_tasks(principal, crew, params)
            return ListTasksResponse(
                tasks=requests[:size], page_size=size, total_size=len(requests[:size])
            )
        statuses, next_page = _domain(
            self._calls.recent_statuses, principal, size, crew, params.page_token or None
        )
        wanted = CALL_STATES_OF.get(params.status) if params.status else None
        after = _changed_after(params)
        tasks = [
            call_task(s, include_artifacts=params.include_artifacts)
            for s in statuses
            if (wanted is None or s["state"] in wanted)
            and (not params.context_id or s["call_id"] == params.context_id)
        ]
        if after is not None:
            tasks = [t for t in tasks if t.status.timestamp.ToMilliseconds() > after]
        return ListTasksResponse(
            tasks=tasks, page_size=size, total_size=len(tasks), next_page_token=next_page or ""
        )

    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> Task:
        principal, crew = _caller(context)
        task = self._task(principal, crew, params.id)
        if task.status.state in _TERMINAL:
            raise TaskNotCancelableError("The task already ended.")
        if _is_request(params.id):
            _domain(self._crews.requests.cancel, principal, params.id)
            return self._task(principal, crew, params.id)
        return call_task(_domain(self._calls.cancel, principal, params.id))

    def _task(self, principal: Principal, crew: str, task_id: str) -> Task:
        if _is_request(task_id):
            return self._request_task(principal, crew, task_id)
        return call_task(self._call_status(principal, crew, task_id))

    def _call_status(self, principal: Principal, crew: str, task_id: str) -> dict[str, Any]:
        """The call behind `task_id`, if it is a call on this Crew the caller may see; an
        unknown id, another account's and another agent's look the same."""
        status = _domain(self._calls.status, principal, task_id)
        if status.get("target") != f"crew:{crew}":
            raise TaskNotFoundError()
        return status

    def _conversation_tasks(
        self, principal: Principal, crew: str, params: ListTasksRequest
    ) -> list[Task]:
        """The requests sent from the inbox `params.context_id` in its conversation with
        this Crew — none for a conversation the caller may not see, or with another Crew,
        exactly as for one that never existed."""
        try:
            conversation = parse_inbox_id(params.context_id).conversation_id
            detail = _domain(self._crews.inbox.show, principal, conversation)
        except (AgentWorksError, A2AError):
            return []
        if f"crew:{crew}" not in {a.address for a in detail.agents}:
            return []
        sent = [r for r in detail.requests if asker_inbox(r.message_id) == params.context_id]
        # Newest first: a conversation's message ids end in its zero-padded sequence.
        sent.sort(key=lambda r: r.message_id, reverse=True)
        tasks = [request_task(detail, r) for r in sent]
        after = _changed_after(params)
        return [
            t
            for t in tasks
            if (not params.status or t.status.state == params.status)
            and (after is None or t.status.timestamp.ToMilliseconds() > after)
        ]

    def _request_task(self, principal: Principal, crew: str, message_id: str) -> Task:
        return request_task(*self._request(principal, crew, message_id))

    def _request(
        self, principal: Principal, crew: str, message_id: str
    ) -> tuple[ConversationDetail, RequestView]:
        """The request `message_id` in a conversation with this Crew the caller may see."""
        ref = _domain(parse_message_id, message_id)
        detail = _domain(self._crews.inbox.show, principal, ref.inbox.conversation_id)
        request = request_of(detail, message_id)
        if request is None or f"crew:{crew}" not in {a.address for a in detail.agents}:
            raise TaskNotFoundError()
        return detail, request

    # -- push notification configs (push_configs; sent by the notifier) -------------------

    async def on_create_task_push_notification_config(
        self, params: TaskPushNotificationConfig, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        principal, crew = _caller(context)
        self._pushed_call(principal, crew, params.task_id)
        return self._push_configs.create(principal.account_id, params.task_id, params)

    async def on_get_task_push_notification_config(
        self, params: GetTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        principal, crew = _caller(context)
        self._pushed_call(principal, crew, params.task_id)
        return self._push_configs.get(params.task_id, params.id)

    async def on_list_task_push_notification_configs(
        self, params: ListTaskPushNotificationConfigsRequest, context: ServerCallContext
    ) -> ListTaskPushNotificationConfigsResponse:
        """All of them (at most A2A_PUSH_CONFIGS_PER_TASK): one page."""
        principal, crew = _caller(context)
        self._pushed_call(principal, crew, params.task_id)
        return ListTaskPushNotificationConfigsResponse(
            configs=self._push_configs.list(params.task_id)
        )

    async def on_delete_task_push_notification_config(
        self, params: DeleteTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> None:
        principal, crew = _caller(context)
        self._pushed_call(principal, crew, params.task_id)
        self._push_configs.delete(params.task_id, params.id)

    def _pushed_call(self, principal: Principal, crew: str, task_id: str) -> None:
        """A call task the caller may read, as GetTask decides (any other id is refused by
        the same bytes, before anything is read or written of its configs). A request's
        task has no configs: its state lives in a conversation, not in a call."""
        if _is_request(task_id):
            raise PushNotificationNotSupportedError(_NO_REQUEST_PUSH)
        self._call_status(principal, crew, task_id)

    # -- not offered (the card says so) --------------------------------------------------

    # -- streaming: a long poll under SSE (API Gateway answers each request whole) ----------

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        """SendStreamingMessage: the task as sent, then the task at each change of its
        state until it ends or asks — within A2A_SEND_WAIT_SECONDS, as HTTP API holds no
        stream open; past that the stream ends and SubscribeToTask goes on."""
        params.configuration.return_immediately = True
        task = await self.on_message_send(params, context)
        yield task
        if isinstance(task, Task):
            principal, crew = _caller(context)
            async for changed in self._changes(principal, crew, task):
                yield changed

    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        """The task as it stands, then at each change of its state, as above; a task that
        already ended cannot be subscribed to (the A2A rule)."""
        principal, crew = _caller(context)
        task = self._task(principal, crew, params.id)
        if task.status.state in _TERMINAL:
            raise UnsupportedOperationError("The task already ended: read it with GetTask.")
        yield task
        async for changed in self._changes(principal, crew, task):
            yield changed

    async def _changes(self, principal: Principal, crew: str, task: Task) -> AsyncGenerator[Task]:
        """The task each time its state changed (read 0.25 s apart, doubling to 2 s), until
        it ends or asks, for at most A2A_SEND_WAIT_SECONDS."""
        deadline = time.monotonic() + limits.A2A_SEND_WAIT_SECONDS
        pause = 0.25
        while task.status.state not in _SETTLED and time.monotonic() + pause < deadline:
            await asyncio.sleep(pause)
            pause = min(pause * 2, 2.0)
            read = self._task(principal, crew, task.id)
            if read.status.state != task.status.state:
                yield read
            task = read

    async def on_get_extended_agent_card(
        self, params: GetExtendedAgentCardRequest, context: ServerCallContext
    ) -> AgentCard:
        raise ExtendedAgentCardNotConfiguredError()


_NO_REQUEST_PUSH = (
    "Push notifications are offered for function calls' tasks; follow a request in a "
    "conversation with GetTask (or the push channel's notices)."
)
_TERMINAL = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_REJECTED,
    }
)
# What a SendMessage waits on before answering (unless returnImmediately): the task's end
# or its question.
_SETTLED = _TERMINAL | {TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED}


def _changed_after(params: ListTasksRequest) -> int | None:
    """ListTasks' statusTimestampAfter in epoch ms, when given."""
    if not params.HasField("status_timestamp_after"):
        return None
    return int(params.status_timestamp_after.ToMilliseconds())


def _is_request(task_id: str) -> bool:
    return task_id.startswith("msg_")


def _pushed(params: SendMessageRequest) -> TaskPushNotificationConfig | None:
    """The push notification config a SendMessage registers with its task, if any."""
    configuration = params.configuration
    if configuration.HasField("task_push_notification_config"):
        return configuration.task_push_notification_config
    return None


def _function_call(data: Any) -> bool:
    return isinstance(data, dict) and "function" in data


def _caller(context: ServerCallContext) -> tuple[Principal, str]:
    return context.state[PRINCIPAL], context.state[CREW]


def _checked(model: Any, **fields: Any) -> Any:
    """The product's request model, its refusals as A2A invalid params."""
    from pydantic import ValidationError

    try:
        return model(**fields)
    except ValidationError as invalid:
        problem = invalid.errors()[0]
        where = ".".join(str(p) for p in problem["loc"])
        raise InvalidParamsError(f"{where}: {problem['msg']}") from None


def _domain(operation: Any, *args: Any) -> Any:
    try:
        return operation(*args)
    except AgentWorksError as refused:
        raise a2a_error(refused) from None


def a2a_error(refused: AgentWorksError) -> A2AError:
    """One product error as the A2A error of its kind, the product's error in `data`."""
    data = refused.to_body()
    if isinstance(refused, Unavailable):
        # The SDK's own message, the same for every unknown or unauthorized id.
        return TaskNotFoundError(data=data)
    if refused.status in (400, 409, 413, 422):
        return InvalidParamsError(refused.message, data=data)
    if refused.status in (401, 403):
        return InvalidRequestError(refused.message, data=data)
    return InternalError(refused.message, data=data)
