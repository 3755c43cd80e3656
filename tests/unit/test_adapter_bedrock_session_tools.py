"""Issue 28 item 3, the bedrock adapter's added tools without a server: Bedrock-safe names
mapped back to (server, tool), and a workflow step's functions offered and called
(W10's FunctionAccess) next to the platform's tools, a refusal going back as the model's
tool error."""

from __future__ import annotations

import re
from typing import Any

from agentworks.crews.adapters.base import AdapterError, TurnRequest
from agentworks.crews.adapters.bedrock_session_tools import SessionTools, bedrock_name
from agentworks.crews.adapters.tool_use import McpTool, McpToolOutcome

SAFE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # Converse's toolSpec name rule


def test_names_are_bedrock_safe_unique_and_short() -> None:
    assert bedrock_name("github", "search_issues", set()) == "mcp_github_search_issues"
    odd = bedrock_name("docs.v2", "get page/1", set())
    assert SAFE.match(odd) and odd == "mcp_docs_v2_get_page_1"
    taken = {"mcp_docs_v2_get_page_1"}
    other = bedrock_name("docs_v2", "get page.1", taken)  # the same once made safe
    assert SAFE.match(other) and other not in taken
    long = bedrock_name("s" * 64, "t" * 128, set())
    assert SAFE.match(long) and len(long) == 64
    assert long != bedrock_name("s" * 64, "t" * 127 + "u", set())


class FakeTools:
    def __init__(self) -> None:
        self.called: list[tuple[str, str, Any]] = []

    def tools(self) -> list[McpTool]:
        return [McpTool("docs.v2", "get page", "Reads a page", {"type": "object"})]

    def call(self, server: str, tool: str, arguments: Any) -> McpToolOutcome:
        self.called.append((server, tool, arguments))
        return McpToolOutcome("tool_error", [{"type": "text", "text": "no such page"}])


class FakeFunctions:
    def list(self, target: str) -> dict[str, Any]:
        return {"target": target, "functions": [{"name": "summarize"}]}

    def call_and_wait(self, target: str, function: str, args: dict[str, Any]) -> dict[str, Any]:
        if target == "crew:secret":
            raise AdapterError("the function call was refused: Not found")
        return {"call_id": "call_1", "state": "succeeded", "result": {"summary": args["text"]}}

    def status(self, call_id: str) -> dict[str, Any]:
        return {}


def _request() -> TurnRequest:
    return TurnRequest(
        "workflow:w", "", {}, "message", "go", functions=FakeFunctions(), mcp_tools=FakeTools()
    )


def test_a_use_maps_back_to_its_server_and_tool_and_errors_are_flagged() -> None:
    request = _request()
    tools = SessionTools.of(request, {"human_feedback"})
    assert tools.names() == {"mcp_docs_v2_get_page", "functions_list", "functions_call"}
    text, is_error = tools.run("mcp_docs_v2_get_page", {"id": 3}) or ("", False)
    assert (text, is_error) == ("no such page", True)
    assert request.mcp_tools.called == [("docs.v2", "get page", {"id": 3})]  # type: ignore[union-attr]
    assert tools.run("human_feedback", {}) is None  # the platform's own


def test_a_workflow_steps_functions_are_listed_and_called() -> None:
    tools = SessionTools.of(_request(), set())
    listed = tools.run("functions_list", {"target": "crew:legal"})
    assert listed is not None and '"summarize"' in listed[0] and not listed[1]
    called = tools.run(
        "functions_call", {"target": "crew:legal", "function": "summarize", "args": {"text": "x"}}
    )
    assert called is not None and '"succeeded"' in called[0] and not called[1]
    refused = tools.run("functions_call", {"target": "crew:secret", "function": "f"})
    assert refused == ("the function call was refused: Not found", True)
    assert tools.run("functions_call", {"function": "f"}) == (
        "Error: 'target' (e.g. crew:NAME) is required.",
        True,
    )


def test_a_crew_call_without_function_access_is_offered_no_function_tools() -> None:
    request = TurnRequest("legal", "", {}, "function", "go", mcp_tools=FakeTools())
    assert SessionTools.of(request, set()).names() == {"mcp_docs_v2_get_page"}
    assert SessionTools.of(TurnRequest("legal", "", {}, "message", "go"), set()).names() == set()
