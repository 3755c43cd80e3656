"""The `crews` and `functions` MCP tools through the MCP function's handler (F1–F8, A4, A5).

Raw JSON-RPC events carry the bearer tokens of real connections of the in-process
moto stack; calls really execute on Step Functions (moto), whose Lambda tasks run the step
runner. The F7 elicitation path needs the 2026-07-28 envelope, so it runs through the
official client behind the in-process gateway of test_mcp_official_client.
"""

from __future__ import annotations

import copy
import itertools
import json
import time
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import anyio
import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import ElicitRequestParams, ElicitResult

from agentworks import limits
from tests.integration.crew_support import CONTRACTS
from tests.integration.test_mcp_handler import (
    connection,
    event,
    lambda_context,
    load_handler_module,
    text_of,
)
from tests.integration.test_mcp_official_client import URL, gateway

TERMINAL = {"succeeded", "failed", "cancelled", "interrupted"}

# CONTRACTS plus a function that writes a file (F2 read).
WITH_REPORT = copy.deepcopy(CONTRACTS)
WITH_REPORT["adapter"]["rules"].insert(
    0,
    {
        "function": "report",
        "reply": "Report written.",
        "files": {"report.txt": "Report on {args.topic}\nline two"},
    },
)
WITH_REPORT["functions"].append(
    {
        "name": "report",
        "description": "Write a report file",
        "input_schema": {
            "type": "object",
            "properties": {"topic": {"type": "string"}},
            "required": ["topic"],
        },
    }
)


@pytest.fixture(scope="module")
def mcp_app() -> ModuleType:
    return load_handler_module()


class Tools:
    """JSON-RPC `tools/call` through the handler as one connection (no protocol envelope,
    so no elicitation: the pending_inputs + reply path)."""

    def __init__(self, app: ModuleType, token: str) -> None:
        self.app, self.token, self.ids = app, token, itertools.count(100)

    def raw(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": next(self.ids), "method": method, "params": params}
        response = self.app.handler(
            event("mcp_tools_list.json", token=self.token, body=body), lambda_context()
        )
        assert response["statusCode"] == 200, response
        return json.loads(response["body"])

    def tool(self, tool: str, /, **arguments: Any) -> dict[str, Any]:
        reply = self.raw("tools/call", {"name": tool, "arguments": arguments})
        assert "result" in reply, reply
        return reply["result"]

    def ok(self, tool: str, /, **arguments: Any) -> dict[str, Any]:
        result = self.tool(tool, **arguments)
        assert result.get("isError") is not True, result
        assert "Traceback" not in text_of(result)
        return result["structuredContent"]

    def error(self, tool: str, /, **arguments: Any) -> dict[str, Any]:
        result = self.tool(tool, **arguments)
        assert result["isError"] is True, result
        return result["structuredContent"]["error"]

    def poll(self, call_id: str, states: set[str], timeout: float = 30) -> dict[str, Any]:
        """Polls action=status, as the tool description tells agents to."""
        deadline = time.monotonic() + timeout
        while True:
            status = self.ok("functions", action="status", call_id=call_id)
            if status["state"] in states:
                return status
            assert time.monotonic() < deadline, status
            time.sleep(0.05)


def as_admin(stack: Any, app: ModuleType) -> Tools:
    return Tools(app, stack.admin_token)


@pytest.fixture
def admin(stack: Any, mcp_app: ModuleType) -> Tools:
    return as_admin(stack, mcp_app)


@pytest.fixture
def caller(stack: Any, mcp_app: ModuleType) -> Tools:
    return Tools(mcp_app, connection(stack, "caller"))


# ---------------------------------------------------------------- discovery


def test_tools_list_offers_crews_and_functions_next_to_messages(
    stack: Any, mcp_app: ModuleType
) -> None:
    """SPEC §10: the tools; the schemas and descriptions teach the F2–F7 contract."""
    listed = Tools(mcp_app, connection(stack, "worker")).raw("tools/list", {})
    tools = {t["name"]: t for t in listed["result"]["tools"]}
    workflow_tools = {f"workflow_{a}" for a in ("start", "run_file", "status", "list")}
    workflow_tools |= {f"workflow_{a}" for a in ("cancel", "resolve", "retry")}
    assert set(tools) == {
        "messages",
        "crews",
        "functions",
        "adapters",
        "mcp_servers",
        "relays",
        *workflow_tools,
    }
    assert tools["workflow_start"]["inputSchema"]["required"] == ["workflowId", "stages"]
    assert tools["workflow_start"]["outputSchema"]["properties"]["runId"]["type"] == "string"
    adapters = tools["adapters"]
    assert set(adapters["inputSchema"]["properties"]["action"]["enum"]) == {
        "create", "update", "get", "list", "delete",
    }  # fmt: skip
    assert adapters["outputSchema"]["type"] == "object"

    crews = tools["crews"]
    assert set(crews["inputSchema"]["properties"]["action"]["enum"]) == {
        "create", "update", "get", "list", "delete", "release", "decline", "audit",
    }  # fmt: skip
    assert crews["inputSchema"]["required"] == ["action"]
    assert "object" in json.dumps(crews["inputSchema"]["properties"]["definition"])
    assert crews["annotations"]["readOnlyHint"] is False
    assert crews["annotations"]["destructiveHint"] is True
    assert crews["outputSchema"]["type"] == "object"

    functions = tools["functions"]
    schema = functions["inputSchema"]
    assert set(schema["properties"]["action"]["enum"]) == {
        "list", "call", "status", "read", "reply", "complete",
    }  # fmt: skip
    assert "ctx" not in schema["properties"] and "context" not in schema["properties"]
    assert {
        "target", "function", "args", "submission_id", "call_id", "path", "page",
        "request_id", "answer", "agent_name", "final_text", "result",
    } == set(schema["properties"]) - {"action"}  # fmt: skip
    description = functions["description"]
    for lesson in ("list: ", "KEEP IT", "until `terminal` is true", "NOT", "request_id"):
        assert lesson in description, lesson
    assert "SAME submission_id" in schema["properties"]["submission_id"]["description"]
    assert functions["annotations"]["readOnlyHint"] is False
    assert functions["outputSchema"]["type"] == "object"


# ---------------------------------------------------------------- crews (F1)


def test_f1_crews_lifecycle_through_the_tool(admin: Tools, caller: Tools) -> None:
    """F1: admin creates (YAML's bare `on` accepted), callers list/get, admin updates and
    deletes; definitions are checked."""
    created = admin.ok("crews", action="create", definition=CONTRACTS)
    assert created["target"] == "crew:contracts" and created["version"] == 1
    assert created["messaging"] == "on"
    assert [f["name"] for f in created["functions"]] == ["summarize", "confirm"]

    listed = caller.tool("crews", action="list")
    assert [c["name"] for c in listed["structuredContent"]["crews"]] == ["contracts"]
    assert "crew:contracts v1" in text_of(listed)
    got = caller.ok("crews", action="get", name="Contracts")
    assert got["crew_id"] == created["crew_id"]

    changed = copy.deepcopy(CONTRACTS)
    changed["instructions"] = "Be brief."
    updated = admin.ok("crews", action="update", definition=changed)
    assert updated["version"] == 2 and updated["instructions"] == "Be brief."

    # Only admins define Crews; names are unique; bad definitions say what is wrong.
    assert caller.error("crews", action="create", definition=CONTRACTS)["code"] == "forbidden"
    assert admin.error("crews", action="create", definition=CONTRACTS)["code"] == "conflict"
    bad = copy.deepcopy(CONTRACTS)
    bad["functions"][0]["input_schema"] = {"type": "nonsense"}
    refused = admin.error("crews", action="create", definition={**bad, "name": "other"})
    assert refused["code"] == "invalid_request" and "input_schema" in refused["message"]
    renamed = admin.error("crews", action="update", name="contracts", definition=bad)
    assert renamed["code"] == "invalid_request"

    assert admin.ok("crews", action="delete", name="contracts") == {
        "target": "crew:contracts",
        "deleted": True,
    }
    assert caller.error("crews", action="get", name="contracts")["code"] == "unavailable"


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"action": "get"}, "name"),
        ({"action": "create"}, "definition"),
        ({"action": "list", "name": "x"}, "name"),
        ({"action": "delete", "name": "x", "definition": {"name": "x"}}, "definition"),
        ({"action": "update", "definition": {"instructions": "no name"}}, "definition"),
        ({"action": "dance"}, None),
    ],
)
def test_crews_bad_arguments_are_invalid_request(
    admin: Tools, arguments: dict[str, Any], field: str | None
) -> None:
    """The one error shape for argument mistakes, naming the field."""
    result = admin.tool("crews", **arguments)
    error = result["structuredContent"]["error"]
    assert result["isError"] is True and error["code"] == "invalid_request"
    if field is not None:
        assert error["field"] == field


# ---------------------------------------------------------------- functions (F2–F8)


def test_f2_f3_discover_call_and_poll_to_succeeded(stack: Any, admin: Tools, caller: Tools) -> None:
    """F2: list → call → status until terminal; F3: the result matches the output schema;
    the call really ran as a Step Functions execution."""
    admin.ok("crews", action="create", definition=CONTRACTS)
    listed = caller.tool("functions", action="list", target="crew:contracts")
    functions = listed["structuredContent"]["functions"]
    assert [f["name"] for f in functions] == ["summarize", "confirm"]
    assert functions[0]["input_schema"]["required"] == ["text"]
    assert "action=call target=crew:contracts" in text_of(listed)

    accepted = caller.tool(
        "functions",
        action="call",
        target="crew:contracts",
        function="summarize",
        args={"text": "Either party may end it."},
        submission_id="sub-1",
    )
    status = accepted["structuredContent"]
    assert status["state"] == "accepted" and status["terminal"] is False
    assert status["replayed"] is False
    assert "poll action=status call_id=" + status["call_id"] in text_of(accepted)

    done = caller.poll(status["call_id"], TERMINAL)
    assert done["state"] == "succeeded", done
    assert done["result"] == {"summary": "Either party may end it."}
    final = caller.tool("functions", action="status", call_id=status["call_id"])
    assert "state=succeeded, terminal." in text_of(final)

    import boto3

    executions = boto3.client("stepfunctions", region_name="us-east-1").list_executions(
        stateMachineArn=stack.settings.function_call_state_machine_arn
    )["executions"]
    assert [(e["name"], e["status"]) for e in executions] == [(status["call_id"], "SUCCEEDED")]


def test_f3_schema_errors_carry_the_path(admin: Tools, caller: Tools) -> None:
    """F3: args are checked against the input schema before anything runs (422 shape)."""
    admin.ok("crews", action="create", definition=CONTRACTS)
    wrong = caller.error(
        "functions", action="call", target="crew:contracts", function="summarize",
        args={"text": 42},
    )  # fmt: skip
    assert wrong["code"] == "invalid_arguments" and wrong["path"] == "args.text"
    missing = caller.error(
        "functions", action="call", target="crew:contracts", function="summarize"
    )
    assert missing["code"] == "invalid_arguments"
    unknown = caller.error("functions", action="call", target="crew:contracts", function="nope")
    assert unknown["code"] == "invalid_request" and "functions list" in unknown["message"]
    not_crew = caller.error("functions", action="list", target="agent:contracts")
    assert not_crew["code"] == "invalid_request" and not_crew["field"] == "target"


def test_f4_same_submission_id_recovers_the_call(admin: Tools, caller: Tools) -> None:
    """F4: a retried call with the same submission_id returns the original call."""
    admin.ok("crews", action="create", definition=CONTRACTS)
    arguments = {
        "action": "call", "target": "crew:contracts", "function": "summarize",
        "args": {"text": "once"}, "submission_id": "retry-key",
    }  # fmt: skip
    first = caller.ok("functions", **arguments)
    again = caller.tool("functions", **arguments)
    assert again["structuredContent"]["call_id"] == first["call_id"]
    assert again["structuredContent"]["replayed"] is True
    assert "replayed=true" in text_of(again)
    other = caller.error("functions", **{**arguments, "args": {"text": "twice"}})
    assert other["code"] == "conflict" and other["field"] == "submission_id"
    caller.poll(first["call_id"], TERMINAL)


def test_f7_question_answered_with_reply(admin: Tools, caller: Tools) -> None:
    """F7: the pending question shows in status with its request_id; only the matching
    request_id answers it; the call then finishes with the answer."""
    admin.ok("crews", action="create", definition=CONTRACTS)
    call_id = caller.ok(
        "functions", action="call", target="crew:contracts", function="confirm",
        args={"action": "deploy"},
    )["call_id"]  # fmt: skip
    waiting = caller.poll(call_id, {"input_required"} | TERMINAL)
    assert waiting["state"] == "input_required" and waiting["terminal"] is False
    [question] = waiting["pending_inputs"]
    assert question["question"] == "Proceed with deploy?"
    text = text_of(caller.tool("functions", action="status", call_id=call_id))
    assert f"QUESTION request_id={question['request_id']}: Proceed with deploy?" in text
    assert f"action=reply call_id={call_id} request_id={question['request_id']}" in text

    wrong = caller.error(
        "functions", action="reply", call_id=call_id, request_id="req_wrong", answer="yes"
    )
    assert wrong["code"] == "conflict" and wrong["field"] == "request_id"
    replied = caller.ok(
        "functions", action="reply", call_id=call_id, request_id=question["request_id"],
        answer="yes",
    )  # fmt: skip
    assert replied["state"] == "running" and replied["pending_inputs"] == []
    done = caller.poll(call_id, TERMINAL)
    assert done["state"] == "succeeded" and done["result"] == {"confirmed": "yes"}
    late = caller.error(
        "functions", action="reply", call_id=call_id, request_id=question["request_id"],
        answer="again",
    )  # fmt: skip
    assert late["code"] == "conflict"


def test_f5_a_full_crew_is_busy_and_queues_nothing(admin: Tools, caller: Tools) -> None:
    """F5: three calls waiting for answers hold the Crew's slots; a fourth is `busy`."""
    admin.ok("crews", action="create", definition=CONTRACTS)
    held = [
        caller.ok(
            "functions",
            action="call",
            target="crew:contracts",
            function="confirm",
            args={"action": f"step {n}"},
        )["call_id"]
        for n in range(3)
    ]
    busy = caller.error(
        "functions", action="call", target="crew:contracts", function="summarize",
        args={"text": "one more"},
    )  # fmt: skip
    assert busy["code"] == "busy"
    for call_id in held:
        caller.poll(call_id, {"input_required"} | TERMINAL)


def test_f2_read_a_call_file_by_page(admin: Tools, caller: Tools) -> None:
    """F2 read: a file the call wrote, page 0 of 1; an unknown path is unavailable."""
    admin.ok("crews", action="create", definition=WITH_REPORT)
    call_id = caller.ok(
        "functions", action="call", target="crew:contracts", function="report",
        args={"topic": "renewals"},
    )["call_id"]  # fmt: skip
    done = caller.poll(call_id, TERMINAL)
    assert done["state"] == "succeeded" and done["final_text"] == "Report written."
    content = "Report on renewals\nline two"
    assert done["files"] == [{"path": "report.txt", "size": len(content)}]
    page = caller.tool("functions", action="read", call_id=call_id, path="report.txt")
    assert page["structuredContent"] == {
        "call_id": call_id, "path": "report.txt", "page": 0, "pages": 1,
        "size": len(content), "encoding": "utf-8", "content": content,
    }  # fmt: skip
    assert "page 0 of pages 0–0" in text_of(page)
    beyond = caller.ok("functions", action="read", call_id=call_id, path="report.txt", page=1)
    assert beyond["content"] == "" and beyond["pages"] == 1
    gone = caller.error("functions", action="read", call_id=call_id, path="secrets.txt")
    assert gone["code"] == "unavailable"


def test_a5_a_call_is_its_callers(stack: Any, mcp_app: ModuleType, admin: Tools) -> None:
    """A5: another connection of the account cannot see, read or answer someone's call;
    a connection without functions scopes is refused."""
    admin.ok("crews", action="create", definition=CONTRACTS)
    owner = Tools(mcp_app, connection(stack, "owner"))
    other = Tools(mcp_app, connection(stack, "other"))
    call_id = owner.ok(
        "functions", action="call", target="crew:contracts", function="confirm",
        args={"action": "x"},
    )["call_id"]  # fmt: skip
    waiting = owner.poll(call_id, {"input_required"} | TERMINAL)
    assert other.error("functions", action="status", call_id=call_id)["code"] == "unavailable"
    request_id = waiting["pending_inputs"][0]["request_id"]
    refused = other.error(
        "functions", action="reply", call_id=call_id, request_id=request_id, answer="no"
    )
    assert refused["code"] == "unavailable"
    # The admin sees every call of the account.
    assert admin.ok("functions", action="status", call_id=call_id)["call_id"] == call_id
    reader = Tools(mcp_app, connection(stack, "reader", ["messages:read"]))
    assert reader.error("functions", action="list", target="crew:contracts")["code"] == (
        "forbidden"
    )


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"action": "status"}, "call_id"),
        ({"action": "status", "call_id": "call_x", "target": "crew:x"}, "target"),
        ({"action": "call", "target": "crew:contracts"}, "function"),
        ({"action": "reply", "call_id": "call_x", "request_id": "req_x"}, "answer"),
        ({"action": "read", "call_id": "call_x"}, "path"),
        ({"action": "list"}, "target"),
        ({"action": "reply", "call_id": "c", "request_id": "r",
          "answer": "x" * (limits.ANSWER_MAX_CHARS + 1)}, None),
        ({"action": "call", "target": "crew:c", "function": "f",
          "submission_id": "s" * (limits.SUBMISSION_ID_MAX_CHARS + 1)}, None),
        ({"action": "read", "call_id": "c", "path": "p", "page": "first"}, None),
        ({"action": "call", "target": "crew:c", "function": "f", "args": "text=hi"}, None),
    ],
)  # fmt: skip
def test_functions_bad_arguments_are_invalid_request(
    caller: Tools, arguments: dict[str, Any], field: str | None
) -> None:
    """The one error shape for argument mistakes, naming the field."""
    error = caller.error("functions", **arguments)
    assert error["code"] == "invalid_request"
    if field is not None:
        assert error["field"] == field


def test_unused_arguments_filled_with_empty_values_are_ignored(admin: Tools, caller: Tools) -> None:
    """Clients that fill every field send null, "", {} for unused ones: not stray."""
    admin.ok("crews", action="create", definition=CONTRACTS)
    listed = caller.ok(
        "functions", action="list", target="crew:contracts", function="", args={},
        call_id=None, path="",
    )  # fmt: skip
    assert listed["target"] == "crew:contracts"


# ---------------------------------------------------------------- F7 over elicitation


@pytest.fixture
def deployment_env(stack: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The function environment template.yaml gives: the request-state key comes from
    the deployment's signing secret (SIGNING_SECRET_ARN), as on AWS."""
    from agentworks.settings import get_settings

    for key, value in stack.resources.environment().items():
        monkeypatch.setenv(key, value)
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def official_client(stack: Any, token: str, mode: str, answers: list[str] | None) -> Client:
    """The official client behind the in-process API Gateway; `answers` (if given) are what
    the user types into elicitation forms, in order; asked messages are kept on the client."""
    http = httpx2.AsyncClient(
        transport=gateway(stack, load_handler_module().handler, []),
        headers={"Authorization": f"Bearer {token}"},
    )
    asked: list[str] = []

    async def elicit(_context: Any, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params.message)
        assert answers, "asked more questions than the test answers"
        return ElicitResult(action="accept", content={"answer": answers.pop(0)})

    client = Client(
        streamable_http_client(URL, http_client=http),
        mode=mode,  # type: ignore[arg-type]
        elicitation_callback=elicit if answers is not None else None,
    )
    client.asked = asked  # type: ignore[attr-defined]
    return client


def issue(stack: Any, name: str) -> str:
    admin = stack.principal(stack.admin_token)
    return stack.services.identity.create_connection(admin, name).token


async def poll_status(client: Client, call_id: str, timeout: float = 30) -> dict[str, Any]:
    """Polls action=status until terminal (an elicitation, if any, is answered on the way)."""
    deadline = time.monotonic() + timeout
    while True:
        result = await client.call_tool("functions", {"action": "status", "call_id": call_id})
        assert result.is_error is False, result.content
        status = result.structured_content
        assert status is not None
        if status["terminal"]:
            return status
        assert time.monotonic() < deadline, status
        await anyio.sleep(0.05)


def test_f7_question_arrives_as_elicitation_on_2026_protocol(
    stack: Any, admin: Tools, deployment_env: None
) -> None:
    """F7: a 2026-07-28 client with elicitation gets the question while polling status;
    its user's answer goes to the call (the same reply path) and the call succeeds."""
    admin.ok("crews", action="create", definition=CONTRACTS)
    token = issue(stack, "elicited")

    async def scenario() -> tuple[dict[str, Any], list[str]]:
        async with official_client(stack, token, "auto", ["ship it"]) as client:
            accepted = await client.call_tool(
                "functions",
                {"action": "call", "target": "crew:contracts", "function": "confirm",
                 "args": {"action": "deploy"}},
            )  # fmt: skip
            assert accepted.structured_content is not None
            done = await poll_status(client, accepted.structured_content["call_id"])
            return done, client.asked  # type: ignore[attr-defined]

    done, asked = anyio.run(scenario)
    assert done["state"] == "succeeded", done
    assert done["result"] == {"confirmed": "ship it"}
    [message] = asked
    assert "Proceed with deploy?" in message and "crew:contracts" in message


@pytest.mark.parametrize(
    ("mode", "elicits"),
    [("legacy", True), ("legacy", False), ("auto", False)],
)
def test_f7_other_clients_see_pending_inputs_and_reply(
    stack: Any, admin: Tools, deployment_env: None, mode: str, elicits: bool
) -> None:
    """F7 fallback: on the handshake protocol (even with an elicitation callback: a
    stateless server cannot ask there), or without the elicitation capability, status shows
    pending_inputs and action=reply answers."""
    admin.ok("crews", action="create", definition=CONTRACTS)
    token = issue(stack, "plain")

    async def scenario() -> tuple[dict[str, Any], list[str]]:
        answers = ["never asked"] if elicits else None
        async with official_client(stack, token, mode, answers) as client:
            accepted = await client.call_tool(
                "functions",
                {"action": "call", "target": "crew:contracts", "function": "confirm",
                 "args": {"action": mode}},
            )  # fmt: skip
            assert accepted.structured_content is not None
            call_id = accepted.structured_content["call_id"]
            waiting: dict[str, Any] = {}
            deadline = time.monotonic() + 30
            while waiting.get("state") != "input_required":
                assert time.monotonic() < deadline, waiting
                await anyio.sleep(0.05)
                result = await client.call_tool(
                    "functions", {"action": "status", "call_id": call_id}
                )
                assert result.structured_content is not None
                waiting = result.structured_content
            [question] = waiting["pending_inputs"]
            await client.call_tool(
                "functions",
                {"action": "reply", "call_id": call_id,
                 "request_id": question["request_id"], "answer": f"ok {mode}"},
            )  # fmt: skip
            return await poll_status(client, call_id), client.asked  # type: ignore[attr-defined]

    done, asked = anyio.run(scenario)
    assert done["state"] == "succeeded" and done["result"] == {"confirmed": f"ok {mode}"}
    assert asked == []


def test_request_state_key_is_shared_by_workers() -> None:
    """Two workers (two codecs) built from the same deployment secret open each other's
    sealed state; a different secret cannot."""
    from mcp.server.request_state import InvalidRequestState

    from agentworks.mcp_server.request_state import SharedKeyCodec

    secret = b"deployment-secret-0123456789-abcdef"
    one, two = SharedKeyCodec(lambda: secret), SharedKeyCodec(lambda: secret)
    sealed = one.seal(b'{"call_id":"call_1"}')
    assert two.unseal(sealed) == b'{"call_id":"call_1"}'
    with pytest.raises(InvalidRequestState):
        SharedKeyCodec(lambda: b"another-deployment-secret-987654321").unseal(sealed)
