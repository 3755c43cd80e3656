"""Every AWS call a function makes is allowed by that function's role in the SAM-translated
template (issue: deploy fidelity). moto allows everything, so without this a missing grant
shows only as AccessDenied on a real deploy.

One flow drives every handler through its real path (HTTP API routes, MCP tools, Step
Functions executions running the step runner, the lambda/bedrock/mailbox adapters, the
tick, and the signing-secret fetch of the deployed wiring) while tests.support.aws_calls
records each call with the function that made it; then each call's IAM permissions are
checked against the role's resolved statements (tests.support.iam).
"""

from __future__ import annotations

import copy
import io
import json
import time
from collections import Counter
from dataclasses import replace
from typing import Any

import boto3
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber

from agentworks import limits, runtime
from agentworks.crews.adapters.registry import AdapterClients
from agentworks_local.template import load_template, resources_of_type
from tests.integration.crew_support import CONTRACTS, wait_for
from tests.integration.test_mailbox_adapter import DELEGATOR, wait_for_mailbox
from tests.support.aws_calls import AwsCall, CallRecorder, permissions_for, running
from tests.support.handlers import LambdaContext, invoke_function, load_handler
from tests.support.iam_guard import denials

TERMINAL = {"succeeded", "failed", "interrupted"}
FUNCTIONS = tuple(resources_of_type(load_template(), "AWS::Serverless::Function"))
# Granted actions the drive below does not reach, each with why it is still needed. A grant
# that is neither called nor named here fails test_no_role_grants_an_action_... .
_ANCESTORS = {"dynamodb:batchgetitem"}  # a child connection's ancestors (ends_with_parent),
# read when it authenticates or its authority is read again; the drive uses no child.
_ON_FAILURE = {"sqs:sendmessage"}  # an asynchronous invocation's OnFailure destination,
# sent with the function's role; the drive fails no invocation.
_AGENT_LAMBDA = {"lambda:getfunction", "lambda:listtags"}  # the lambda adapter's account
# binding (GetFunction, cached 60 s, reads the tag): the drive's lambda call runs elsewhere.
# The HTTP API's URL an external A2A agent calls back at, read when a call or step starts to
# wait for the agent's task (the drive runs no A2A agent; tests/integration/
# test_a2a_adapter.py registers it, with the URL the local stack gives directly).
_CALLBACK_URL = {"ssm:getparameter"}
NOT_DRIVEN: dict[str, set[str]] = {
    "ApiFunction": _ANCESTORS
    | {"dynamodb:conditioncheckitem"}  # transactions' checks on paths the drive does not take
    | {"scheduler:deleteschedule", "scheduler:updateschedule"},  # a schedule edited, removed
    "McpFunction": _ANCESTORS
    | _AGENT_LAMBDA
    # MCP runs the API's services; the drive calls MCP for some tools only. These are the
    # API's own paths (workflows, schedules, relays, files) through the MCP tools.
    | {"dynamodb:conditioncheckitem", "dynamodb:deleteitem", "iam:passrole", "s3:listbucket"}
    | {"scheduler:createschedule", "scheduler:deleteschedule", "scheduler:updateschedule"}
    | {"states:getexecutionhistory", "states:startexecution", "states:stopexecution"},
    "StepRunnerFunction": _ANCESTORS
    | _AGENT_LAMBDA
    | {"dynamodb:deleteitem"}  # a call's waiting token removed when the call is cancelled
    | {"states:startexecution"}  # a nested call of a function that calls another
    | _CALLBACK_URL,
    "WorkflowRunnerFunction": _ANCESTORS
    | _AGENT_LAMBDA
    # a workflow step run by the lambda or bedrock adapter; a crew step's task token answered
    | {"bedrock:invokemodel", "lambda:invokefunction", "states:sendtasksuccess"}
    | _CALLBACK_URL,
    "RelayRunnerFunction": _ANCESTORS,
    "TickFunction": _ANCESTORS
    | _ON_FAILURE
    # reconciling a lost call or run: its waiting token, its execution, its stop
    | {"dynamodb:deleteitem", "states:describeexecution", "states:sendtasksuccess"}
    | {"states:stopexecution"},
    "WebhooksFunction": _ON_FAILURE,
    "PushFunction": _ANCESTORS | {"dynamodb:updateitem"},  # a path the drive does not take
    "NotifierFunction": _ANCESTORS | _ON_FAILURE,
}
BIG = "x" * (limits.RESULT_INLINE_MAX_BYTES + 1024)  # written to S3 as result.json (F6)
MODEL = "us.anthropic.claude-3-5-haiku-20241022-v1:0"  # the documented model id (SPEC §8)


def _body(value: Any) -> StreamingBody:
    raw = json.dumps(value).encode()
    return StreamingBody(io.BytesIO(raw), len(raw))


def _mcp(token: str, tool: str, **arguments: Any) -> dict[str, Any]:
    """One tools/call through the MCP function's handler, as API Gateway delivers it."""
    from tests.integration.test_mcp_handler import event

    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    reply = invoke_function("McpFunction", event("mcp_tools_list.json", token=token, body=body))
    assert reply["statusCode"] == 200, reply
    result = json.loads(reply["body"])["result"]
    assert result.get("isError") is not True, result
    return dict(result.get("structuredContent") or {})


def _crew_id(api: Any, token: str, name: str) -> str:
    return str(api("GET", f"/v1/crews/{name}", token).body["crew_id"])


def _handed_over(api: Any, token: str, call_id: str) -> None:
    deadline = time.monotonic() + 30
    while "handed to agent:worker" not in api("GET", f"/v1/calls/{call_id}", token).body.get(
        "progress", []
    ):
        assert time.monotonic() < deadline
        time.sleep(0.05)


def _call(api: Any, token: str, crew: str, **extra: Any) -> str:
    body = {"target": f"crew:{crew}", "function": "summarize", "args": {"text": "lease"}}
    accepted = api("POST", "/v1/calls", token, {**body, **extra})
    assert accepted.status == 202, accepted.body
    return str(accepted.body["call_id"])


def _drive_every_handler(api: Any, stack: Any, agents: Any, mcp_server: Any = None) -> None:
    admin = stack.admin_token
    # Messages over HTTP (ApiFunction): connections, names, send, read, reply.
    worker = agents.named("worker")
    caller = agents.connection("caller")["token"]
    sent = api("POST", "/v1/messages", caller, {"target": "agent:worker", "message": "hi"})
    assert sent.status == 201, sent.body
    [message] = wait_for_mailbox(api, worker, "worker")
    reply = api("POST", "/v1/messages", worker, {"inbox_id": message["inbox_id"], "message": "ok"})
    assert reply.status == 201, reply.body
    assert api("GET", "/v1/agents", caller).status == 200

    # An attached MCP server (issue 28): its secret created, rotated, read, deleted.
    attached = {"name": "tools", "url": "https://tools.invalid/mcp", "headers": {"X-Key": "a"}}
    assert api("POST", "/v1/mcp-servers", admin, attached).status == 201
    assert api("PATCH", "/v1/mcp-servers/tools", admin, {"headers": {"X-Key": "b"}}).status == 200
    assert api("GET", "/v1/mcp-servers/tools", admin).status == 200
    assert api("DELETE", "/v1/mcp-servers/tools", admin).status == 200
    # …and through the MCP tool (McpFunction).
    _mcp(admin, "mcp_servers", action="add", definition=attached)
    _mcp(admin, "mcp_servers", action="update", name="tools", definition={"headers": {"X": "c"}})
    _mcp(admin, "mcp_servers", action="remove", name="tools")

    # A scripted Crew: a function call through a real execution, a question and its answer
    # (SendTaskSuccess), files, a Crew conversation, a wakeup fired by the tick.
    contracts = copy.deepcopy(CONTRACTS)
    contracts["adapter"]["rules"][1]["files"] = {"notes/summary.txt": "Summary"}
    assert api("POST", "/v1/crews", admin, contracts).status == 201
    call_id = _call(api, caller, "contracts")
    assert wait_for(api, caller, call_id, TERMINAL)["state"] == "succeeded"
    files = f"/v1/calls/{call_id}/files"
    assert api("GET", files, caller, query={"path": "notes/summary.txt"}).status == 200
    asked = api(
        "POST",
        "/v1/calls",
        caller,
        {"target": "crew:contracts", "function": "confirm", "args": {"action": "sign"}},
    ).body["call_id"]
    pending = wait_for(api, caller, asked, {"input_required"})
    request_id = pending["pending_inputs"][0]["request_id"]
    answered = api(
        "POST", f"/v1/calls/{asked}/reply", caller, {"request_id": request_id, "answer": "yes"}
    )
    assert answered.status in (200, 202), answered.body
    assert wait_for(api, caller, asked, TERMINAL)["state"] == "succeeded"
    talk = api("POST", "/v1/messages", caller, {"target": "crew:contracts", "message": "clause 8"})
    assert talk.status == 201, talk.body
    wakeup = api(
        "POST", "/v1/wakeups", caller, {"inbox_id": talk.body["inbox_id"], "delay_seconds": 120}
    )
    assert wakeup.status == 201, wakeup.body
    stack.clock.advance(121)
    tick = load_handler("tick").handler({"source": "aws.events"}, LambdaContext())
    assert tick["wakeups_fired"] == 1
    _drive_a2a(api, caller)
    _drive_a2a_adapter(api, stack, admin)

    # The mailbox adapter: results over 256 KiB posted over HTTP and over MCP go to S3.
    assert api("POST", "/v1/crews", admin, DELEGATOR).status == 201
    for surface in ("http", "mcp"):
        handed = _call(api, caller, "delegator")
        _handed_over(api, caller, handed)
        result = {"summary": BIG}
        if surface == "http":
            posted = api(
                "POST",
                f"/v1/calls/{handed}/result",
                worker,
                {"agent_name": "worker", "result": result},
            )
            assert posted.status == 200, posted.body
        else:
            _mcp(
                worker,
                "functions",
                action="complete",
                call_id=handed,
                agent_name="worker",
                result=result,
            )
        done = wait_for(api, caller, handed, TERMINAL)
        assert done["state"] == "succeeded" and done["result_file"] == "result.json", done
    # Read the big result over MCP, then a swept file over HTTP (HeadObject answers 404).
    assert _mcp(caller, "functions", action="read", call_id=handed, path="result.json")
    _mcp(worker, "messages", action="read", agent_name="worker", wait_seconds=0)
    boto3.client("s3", region_name="us-east-1").delete_object(
        Bucket=stack.settings.outputs_bucket,
        Key=f"calls/{_crew_id(api, caller, 'delegator')}/{handed}/result.json",
    )
    gone = api("GET", f"/v1/calls/{handed}/files", caller, query={"path": "result.json"})
    assert gone.status == 410, gone.body

    # The lambda and bedrock adapters: the user's function in moto's Lambda, bound to the
    # account by its tag (issue 23), answered in-process; a Stubber answers for Bedrock.
    from tests.support.agent_functions import AgentFunctions

    functions = AgentFunctions(stack)
    answer = {"final_text": "ok", "result": {"summary": "From Lambda."}}
    functions.create(
        "agentworks-agent-summarizer",
        lambda event: answer,
        account_id=stack.principal(admin).account_id,
    )
    bedrock = boto3.client("bedrock-runtime", region_name="us-east-1")
    bedrock_stub = Stubber(bedrock)
    bedrock_stub.add_response(
        "converse",
        {
            "output": {"message": {"role": "assistant", "content": [{"text": "Done."}]}},
            "stopReason": "end_turn",
            "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
            "metrics": {"latencyMs": 1},
        },
    )
    bedrock_stub.activate()
    crews = runtime.build_crews(
        stack.settings,
        stack.client,
        stack.clock,
        s3=boto3.client("s3", region_name="us-east-1"),
        stepfunctions=boto3.client("stepfunctions", region_name="us-east-1"),
        adapter_clients=AdapterClients(
            bedrock_runtime_factory=lambda: bedrock, lambda_factory=lambda: functions.client
        ),
        messaging=stack.services.messaging,
        starter_principal=stack.services.identity.live_principal,
        mcp_servers=stack.services.mcp_servers,
    )
    runtime.install(replace(stack.services, crews=crews))
    for name, adapter in (
        ("lambdacrew", {"type": "lambda", "function_name": "agentworks-agent-summarizer"}),
        ("bedrockcrew", {"type": "bedrock", "model_id": MODEL}),
    ):
        definition = {**copy.deepcopy(DELEGATOR), "name": name, "adapter": adapter}
        definition["functions"][0].pop("output_schema")
        assert api("POST", "/v1/crews", admin, definition).status == 201
        adapted = _call(api, caller, name)
        assert wait_for(api, caller, adapted, TERMINAL)["state"] == "succeeded", name
    assert len(functions.calls_of("agentworks-agent-summarizer")) == 1
    bedrock_stub.assert_no_pending_responses()

    # Deletions: a wakeup cancelled, a connection revoked, a name unregistered, a Crew gone.
    later = api(
        "POST", "/v1/wakeups", caller, {"inbox_id": talk.body["inbox_id"], "delay_seconds": 120}
    )
    assert later.status == 201, later.body
    for path, token in (
        (f"/v1/wakeups/{later.body['wakeup_id']}", caller),
        (f"/v1/connections/{agents.connection('spare')['connection_id']}", admin),
        ("/v1/agents/worker", worker),
        ("/v1/crews/lambdacrew", admin),
    ):
        deleted = api("DELETE", path, token, query={"agent_name": "worker"})
        assert deleted.status < 300, (path, deleted.body)

    _drive_workflows(api, stack, admin)
    if mcp_server is not None:
        _drive_mcp_tool_use(api, stack, admin, mcp_server)
    _drive_push(api, stack, agents)
    _drive_webhooks(api, stack, agents)

    # The deployed wiring reads the signing secret once per process (tests inject a signer).
    from agentworks.signing import signer_from_secret

    for function in (
        "ApiFunction",
        "McpFunction",
        "A2aFunction",
        "StepRunnerFunction",
        "WorkflowRunnerFunction",
        "WebhooksFunction",
        "NotifierFunction",  # A2A push notifications are signed with the account's key
    ):
        with running(function):
            signer_from_secret.__wrapped__(stack.settings.signing_secret_arn)


def _drive_a2a(api: Any, token: str) -> None:
    """Issue 30 (A2aFunction): the contracts Crew's card and the account's cards, a call
    sent, read, listed and cancelled while it asks, its push notification configs, a
    request in a conversation."""
    assert api("GET", "/a2a", token).status == 200
    assert api("GET", "/a2a/contracts/.well-known/agent-card.json", token).status == 200

    def rpc(method: str, params: dict[str, Any]) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        answer = api("POST", "/a2a/contracts", token, body, headers=[("a2a-version", "1.0")])
        assert "result" in answer.body, answer.body
        return dict(answer.body["result"] or {})  # a delete's result is null

    def message(part: dict[str, Any]) -> dict[str, Any]:
        return {
            "message": {"messageId": f"iam-{time.time_ns()}", "role": "ROLE_USER", "parts": [part]},
            "configuration": {"returnImmediately": True},
        }

    confirm = {"data": {"function": "confirm", "args": {"action": "drop"}}}
    for ending in ("answered", "cancelled"):
        task_id = rpc("SendMessage", message(confirm))["task"]["id"]
        request_id = wait_for(api, token, task_id, {"input_required"})["pending_inputs"][0][
            "request_id"
        ]
        rpc("GetTask", {"id": task_id})
        # A push notification config registered, listed and deleted (§1).
        hook = {"taskId": task_id, "id": "hook", "url": "https://hooks.example.com/a2a"}
        rpc("CreateTaskPushNotificationConfig", hook)
        rpc("ListTaskPushNotificationConfigs", {"taskId": task_id})
        rpc("DeleteTaskPushNotificationConfig", {"taskId": task_id, "id": "hook"})
        if ending == "answered":
            answer = message({"data": {request_id: "yes"}})
            answer["message"]["taskId"] = task_id
            rpc("SendMessage", answer)
        else:
            assert rpc("CancelTask", {"id": task_id})["status"]["state"] == "TASK_STATE_CANCELED"
    rpc("ListTasks", {})
    asked = rpc("SendMessage", message({"text": "clause 9"}))["task"]
    rpc("GetTask", {"id": asked["id"]})
    follow_up = message({"text": "clause 10"})
    follow_up["message"]["contextId"] = asked["contextId"]
    rpc("SendMessage", follow_up)


def _drive_a2a_adapter(api: Any, stack: Any, admin: str) -> None:
    """Issue 30 §2: calls handed to an external A2A agent whose tasks outlast their turns.
    The step runner stores each wait and asks the agent to call back; the agent's notice
    reaches A2aFunction, which reads the task and resumes the call; the tick reads a task
    and cancels one whose call was cancelled."""
    from agentworks.platform_url import PlatformUrl
    from tests.integration import test_a2a_adapter as adapter
    from tests.support.a2a_test_agent import a2a_test_agent

    with (
        a2a_test_agent() as agent,
        adapter._platform_url(api) as url,
        pytest.MonkeyPatch.context() as patch,
    ):
        patch.setattr(PlatformUrl, "__call__", lambda self: url)
        adapter._store_headers(api, stack, agent)
        assert api("POST", "/v1/crews", admin, adapter._crew(agent)).status == 201
        later = adapter._call(api, admin, "later")
        adapter._wait_for_a_wait(stack)
        while not agent.registered:
            time.sleep(0.05)
        agent.release.set()  # its notice: A2aFunction reads the task and resumes the call
        assert wait_for(api, admin, later, TERMINAL)["state"] == "succeeded"
        slow = adapter._call(api, admin, "slow")
        adapter._wait_for_a_wait(stack)
        services = runtime.services()
        services.crews.calls.cancel(services.identity.authenticate(admin), slow)
        stack.clock.advance(15)
        assert adapter.tick()["external_tasks_cancelled"] == 1
        agent.wait_cancelled()


def _drive_mcp_tool_use(api: Any, stack: Any, admin: str, mcp_server: Any) -> None:
    """Issue 28: a Crew's turn (StepRunnerFunction) and a workflow step's
    (WorkflowRunnerFunction) call an attached server's tool: each reads its secret."""
    from tests.integration import test_mcp_tool_use as tool_use
    from tests.integration.workflow_support import define, start, wait_run

    tool_use._attach(api, admin, mcp_server)
    assert api("POST", "/v1/crews", admin, tool_use._crew(["echo"])).status == 201
    done = tool_use._lookup(api, admin, "echo")
    assert done["state"] == "succeeded" and done["result"]["outcome"] == "ok", done["errors"]
    define(api, admin, copy.deepcopy(tool_use.PROFILE))
    run = wait_run(api, admin, start(api, admin, tool_use._workflow("echo")))
    assert run["status"] == "succeeded", run


def _drive_workflows(api: Any, stack: Any, admin: str) -> None:
    """Runs with a session too large for its item (S3), an escalation resolved (a task
    token) and a cancelled run (StopExecution)."""
    from tests.integration.workflow_support import wait_run, wait_step

    profiles = [
        {"name": "echo", "type": "scripted", "rules": [{"default": "{prompt}" * 18}]},
        {
            "name": "asker",
            "type": "scripted",
            "rules": [{"when": "Go", "ask": "Which?", "reply": "{answer}"}],
        },
    ]
    for profile in profiles:
        assert api("POST", "/v1/adapters", admin, profile).status == 201
    big = {"label": "big", "adapter": "echo", "prompt": "x" * limits.WORKFLOW_PROMPT_MAX_CHARS}
    started = api(
        "POST", "/v1/workflows", admin, {"workflowId": "big", "stages": [{"steps": [big]}]}
    )
    ran = wait_run(api, admin, started.body["runId"])
    assert ran["stages"][0]["steps"][0]["output"] == "x" * limits.WORKFLOW_PROMPT_MAX_CHARS * 18
    # A crew step: the runner calls crew:contracts's function as the run's starter.
    crewed = {"label": "sum", "crew": "contracts", "function": "summarize", "args": {"text": "t"}}
    flow = {"workflowId": "crewed", "stages": [{"steps": [crewed]}]}
    ran = wait_run(api, admin, api("POST", "/v1/workflows", admin, flow).body["runId"])
    assert ran["status"] == "succeeded", ran
    asking = {"label": "ask", "adapter": "asker", "policy": "escalate", "prompt": "Go"}
    flow = {"workflowId": "asks", "stages": [{"steps": [asking]}]}
    # A schedule fires from the tick (StartExecution as the registrant), a webhook from
    # the API function.
    scheduled = """---
workflowId: scheduled
triggers:
  - {kind: schedule, name: hourly, schedule: rate(1 hour)}
  - {kind: webhook, name: hook}
---
## only
### ask
```yaml
adapter: echo
```
Go
"""
    registered = api("PUT", "/v1/workflow-definitions", admin, {"content": scheduled})
    assert registered.status == 200, registered.body
    stack.clock.advance(3600)
    with running("TickFunction"):
        fired = load_handler("tick").handler({"source": "aws.events"}, LambdaContext())
    assert fired["schedules_fired"] == 1
    for then in ("resolve", "cancel"):
        run_id = api("POST", "/v1/workflows", admin, flow).body["runId"]
        wait_step(api, admin, run_id, "ask", {"waiting"})
        body = {"step": "ask", "answer": "yes"} if then == "resolve" else None
        assert api("POST", f"/v1/workflows/{run_id}/{then}", admin, body).status == 200
        wait_run(api, admin, run_id)

    # A Relay (issue 9): publishing stores its archive (ApiFunction), a run's attempt reads
    # it and invokes the relay code function (RelayRunnerFunction).
    from tests.integration.relay_support import publish, relay_files
    from tests.integration.relay_support import wait_run as wait_relay

    publish(api, admin, relay_files("echo", "async def run(INPUT):\n    return INPUT\n"))
    # Deployed, the runner learns the API's URL from the template's SSM parameter.
    _read_api_url_from_parameter(stack)
    started = api(
        "POST",
        "/api/relays/echo/runs",
        admin,
        {"function": "run", "input": {"a": 1}, "idempotency_key": "k"},
    )
    assert started.status == 202, started.body
    ran = wait_relay(api, admin, "echo", started.body["run_id"])
    assert ran["status"] == "succeeded", ran


def _read_api_url_from_parameter(stack: Any) -> None:
    from agentworks.platform_url import PlatformUrl

    name = _api_url_parameter(stack, "RelayRunnerFunction")
    ssm = boto3.client("ssm", region_name="us-east-1")
    stack.services.relays.host.api_url = PlatformUrl(parameter=name, ssm=lambda: ssm)


def _api_url_parameter(stack: Any, function: str) -> str:
    """The API URL parameter `function`'s environment names, holding the deployed URL."""
    template = load_template()
    variables = template["Resources"][function]["Properties"]["Environment"]
    name = variables["Variables"]["PLATFORM_API_URL_PARAMETER"]["Fn::Sub"]
    name = name.replace("${AWS::StackName}", stack.resources.stack_name)
    ssm = boto3.client("ssm", region_name="us-east-1")
    ssm.put_parameter(Name=name, Value="https://api.example.test", Type="String", Overwrite=True)
    return str(name)


def _drive_push(api: Any, stack: Any, agents: Any) -> None:
    """Push delivery (issue 10): listeners open (PushFunction), a message notifies one and
    drops a revoked one (NotifierFunction: PostToConnection, DeleteConnection)."""
    from tests.integration.test_push_listeners import Stream, _connect, _push, _ws_event

    stream = Stream(stack)
    listener_name, caller = agents.named("listener"), agents.connection("pusher")["token"]
    sent = api("POST", "/v1/messages", caller, {"target": "agent:listener", "message": "hi"})
    listener, status, _ = _connect(listener_name, agent_name="listener")
    assert status == 200
    watcher = agents.connection("watcher")
    assert _connect(watcher["token"], inbox_id=sent.body["inbox_id"])[1] == 200
    assert (
        api("DELETE", f"/v1/connections/{watcher['connection_id']}", stack.admin_token).status
        == 200
    )
    stream.records()
    [first] = api("GET", "/v1/messages", listener_name, query={"agent_name": "listener"}).body[
        "messages"
    ]
    back = {"inbox_id": first["reply_address"], "message": "back"}
    assert api("POST", "/v1/messages", listener_name, back).status == 201
    more = {"inbox_id": sent.body["inbox_id"], "message": "more"}
    assert api("POST", "/v1/messages", caller, more).status == 201
    assert stream.deliver() == {"inboxes": 2, "posted": 1, "dropped": 1}
    assert _push(_ws_event("$disconnect", listener))[0] == 200
    # Signed in by the Inbox's cookie, from the pages' origin: deployed, PushFunction reads
    # the pages' URL from the parameter its environment names (issue 24).
    from agentworks.platform_url import PlatformUrl
    from tests.integration.test_web_inbox import cookie_header, sign_in

    parameter = _api_url_parameter(stack, "PushFunction")
    stack.services.push.pages_url = PlatformUrl(
        parameter=parameter, ssm=lambda: boto3.client("ssm", region_name="us-east-1")
    )
    cookied = _ws_event("$connect", "wscookie", None, agent_name="listener")
    cookied["headers"].update(cookie=cookie_header(sign_in(api, listener_name))[1])
    cookied["headers"]["origin"] = "https://api.example.test"
    assert _push(cookied)[0] == 200
    assert _push(_ws_event("$disconnect", "wscookie"))[0] == 200
    # Where the cookie cannot go (deployed, the push API's own host name): a push ticket the
    # API mints (ApiFunction) and the upgrade redeems (PushFunction), each reading the
    # signing secret as the deployed wiring does, and the session's item.
    from agentworks.identity.push_tickets import PushTickets
    from agentworks.signing import signer_from_secret
    from tests.integration.test_web_inbox import CSRF, call

    stack.services.push.tickets = PushTickets(
        lambda: signer_from_secret.__wrapped__(stack.settings.signing_secret_arn),
        lambda: stack.services.identity.web,
        stack.clock,
    )
    session = cookie_header(sign_in(api, listener_name))
    status, minted, _ = call("POST", "/v1/session/push-tickets", None, [session, CSRF])
    assert status == 200, minted
    ticketed = _ws_event("$connect", "wsticket", None, console="runs", ticket=minted["ticket"])
    ticketed["headers"]["origin"] = "https://api.example.test"
    assert _push(ticketed)[0] == 200
    assert _push(_ws_event("$disconnect", "wsticket"))[0] == 200


def _drive_webhooks(api: Any, stack: Any, agents: Any) -> None:
    """Conversation webhooks (C6): the work table's stream of audit entries to the webhooks
    function, which reads subscriptions, the conversation and its Crews, claims a delivery
    and records its attempts."""
    from agentworks import runtime
    from agentworks.signing import Signer
    from tests.integration.test_conversation_webhooks import Receiver
    from tests.support.streams import StreamReader

    receiver = Receiver()
    runtime.install_webhook_delivery(
        runtime.build_webhook_delivery(
            stack.settings, stack.client, Signer(b"test-signing-key-0123456789"), stack.clock
        )
    )
    try:
        stream = StreamReader(stack.client, stack.settings.work_table)
        hook = {"url": receiver.url, "events": ["agent_asked"]}
        assert api("POST", "/v1/webhooks", stack.admin_token, hook).status == 201
        caller = agents.connection("hooked")["token"]
        asked = {"target": "crew:contracts", "message": "clause 2", "kind": "request"}
        assert api("POST", "/v1/messages", caller, asked).status == 201
        delivered = load_handler("webhooks").handler({"Records": stream.records()}, LambdaContext())
        assert delivered["sent"] == 1, delivered
    finally:
        runtime.install_webhook_delivery(None)
        receiver.server.shutdown()


@pytest.fixture
def recorded(
    api: Any, stack: Any, agents: Any, allow_loopback_webhooks: None, mcp_server: Any
) -> CallRecorder:
    """(Loopback allowed: the conversation webhook's receiver and the MCP test server are
    on 127.0.0.1.)"""
    recorder = CallRecorder()
    with recorder.recording():
        _drive_every_handler(api, stack, agents, mcp_server)
    return recorder


def test_every_aws_call_of_every_function_is_allowed_by_its_role(recorded, stack):
    calls = recorded.calls
    by_function = Counter(call.function for call in calls)
    # Every handler was attributed — but relay code, whose role allows no AWS call and whose
    # process holds no credentials to make one (test_relay_isolation.py).
    assert set(by_function) == set(FUNCTIONS) - {"RelayCodeFunction"}, by_function
    assert denials(calls, stack.resources) == []
    checked = {(c.function, p.action) for c in calls for p in permissions_for(c)}
    # Every kind of grant was exercised: tables, S3 both ways, executions, task tokens,
    # the adapters' Lambda and Bedrock calls, and the secret.
    actions = {action for _, action in checked}
    assert {
        "dynamodb:Query",
        "dynamodb:PutItem",
        "s3:PutObject",
        "s3:GetObject",
        "s3:ListBucket",
        "states:StartExecution",
        "states:SendTaskSuccess",
        "states:StopExecution",
        "lambda:InvokeFunction",
        "lambda:GetFunction",
        "lambda:ListTags",
        "bedrock:InvokeModel",
        "secretsmanager:GetSecretValue",
        "execute-api:ManageConnections",
        "ssm:GetParameter",
    } <= actions
    authorizations = {(c.function, p) for c in calls for p in permissions_for(c)}
    print(
        f"IAM coverage: {len(calls)} calls, {len(authorizations)} distinct authorizations, "
        f"{len(checked)} function/action pairs, {len(actions)} actions"
    )
    for function in FUNCTIONS:
        print(function, sorted(a for f, a in checked if f == function))


def test_a_call_the_role_does_not_allow_is_named(stack):
    """The check fails for a grant the template lacks, naming the call that needs it."""
    scan = AwsCall(
        "StepRunnerFunction", "dynamodb", "Scan", {"TableName": stack.settings.work_table}
    )
    delete = AwsCall(
        "ApiFunction",
        "s3",
        "DeleteObject",
        {"Bucket": stack.settings.outputs_bucket, "Key": "calls/c/x/result.json"},
    )
    denied = denials([scan, delete], stack.resources)
    assert denied == sorted(
        [
            "StepRunnerFunction: dynamodb.Scan needs dynamodb:Scan on "
            f"arn:aws:dynamodb:us-east-1:123456789012:table/{stack.settings.work_table}",
            "ApiFunction: s3.DeleteObject needs s3:DeleteObject on "
            f"arn:aws:s3:::{stack.settings.outputs_bucket}/calls/c/x/result.json",
        ]
    )


def test_calls_outside_a_handler_are_not_attributed(stack):
    key = {"pk": {"S": "none"}, "sk": {"S": "none"}}
    recorder = CallRecorder()
    with recorder.recording():
        stack.client.get_item(TableName=stack.settings.work_table, Key=key)
        with running("TickFunction"):
            stack.client.get_item(TableName=stack.settings.work_table, Key=key)
    assert [str(c) for c in recorder.calls] == ["TickFunction: dynamodb.GetItem"]
    assert recorder.unattributed == 1


def test_no_role_grants_an_action_its_function_never_calls(recorded):
    """Least privilege by the calls themselves: every action a function's role grants was
    called by that function while every handler was driven (not a list of actions someone
    remembered to forbid). What the drive cannot reach is named here, with why."""
    from tests.support.iam import role_of_function, role_statements, stack_resolver
    from tests.support.sam import translated_template

    translated = translated_template()
    resolve = stack_resolver(translated)
    called: dict[str, set[str]] = {}
    for call in recorded.calls:
        for permission in permissions_for(call):
            called.setdefault(call.function, set()).add(permission.action.lower())
    unused = {}
    for function in FUNCTIONS:
        statements = role_statements(translated, role_of_function(translated, function), resolve)
        granted = {a.lower() for s in statements if s.effect == "Allow" for a in s.actions}
        extra = granted - called.get(function, set()) - NOT_DRIVEN.get(function, set())
        if extra:
            unused[function] = sorted(extra)
    assert unused == {}, json.dumps(unused)
