"""Response models of /v1/crews, /v1/functions, /v1/calls and /v1/scheduler (F1–F8, M9):
what the API answers, the MCP `crews` and `functions` tools declare as their output and
the CLI parses — one contract, so a renamed field breaks every surface's tests."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from agentworks.crews.models import CallState, FunctionSpec, Messaging
from agentworks.mcp_servers.declarations import McpToolGrant


class CrewView(BaseModel):
    """A Crew's current definition and counters; its adapter's settings for an admin only
    (anyone else sees `{"type": …}`)."""

    crew_id: str
    target: str = Field(description="crew:NAME")
    version: int
    running: int = Field(description="Calls running now (each holds an execution slot).")
    created_at: str = Field(description="ISO 8601, UTC")
    updated_at: str = Field(description="ISO 8601, UTC")
    name: str
    instructions: str
    messaging: Messaging
    adapter: dict[str, Any] | None
    access: list[str]
    functions: list[FunctionSpec]
    may_ask: list[str] = Field(default_factory=list, description="C4: Crews it may ask.")
    visibility: Literal["account", "private"] = "account"
    mcp_tools: list[McpToolGrant] = Field(
        default_factory=list,
        description="Issue 28: the attached MCP servers' tools this Crew may call.",
    )
    owner_connection_id: str | None = Field(
        default=None, description="C4: the connection that created it (None before owners)."
    )


class CrewList(BaseModel):
    crews: list[CrewView]


class CrewDeleted(BaseModel):
    target: str
    deleted: bool


class FunctionList(BaseModel):
    target: str
    version: int = Field(description="The Crew's definition version these functions belong to.")
    functions: list[FunctionSpec]


class PendingInputView(BaseModel):
    request_id: str
    question: str
    asked_at: str | None


class CallFile(BaseModel):
    path: str
    size: int


class McpCallView(BaseModel):
    """One MCP tool call a turn made (issue 28); its arguments and result stay in the
    record (or the file it names), not here."""

    server: str
    tool: str
    outcome: str = Field(description="ok, tool_error (the tool's isError), refused or failed")
    duration_ms: int
    result_bytes: int


class CallView(BaseModel):
    """A call's state, saved progress, questions, outcome and file metadata (F4–F7)."""

    call_id: str
    target: str
    function: str
    state: CallState
    terminal: bool
    progress: list[str]
    errors: list[str]
    pending_inputs: list[PendingInputView]
    final_text: str | None
    result: Any = Field(description="The result JSON when it is inline (else see result_file).")
    result_file: str | None
    files: list[CallFile]
    turns: int
    cost_usd: float = Field(0.0, description="USD its agent turns spent")
    mcp_calls: list[McpCallView] = Field(
        default_factory=list, description="Its turns' MCP tool calls, oldest first (issue 28)."
    )
    created_at: str | None
    updated_at: str | None


class CallSummary(BaseModel):
    """One function call in a list (C5 the Runs page): where it stands, not its outcome."""

    call_id: str
    target: str
    function: str
    state: CallState
    terminal: bool
    waiting_for_answer: bool = Field(description="It has a question a person should answer.")
    cost_usd: float
    created_at: str | None
    updated_at: str | None


class CallList(BaseModel):
    calls: list[CallSummary] = Field(description="Newest first.")
    next_before: str | None = Field(
        default=None, description="More calls may be older: pass this as `before` for them"
    )


class CallAccepted(CallView):
    replayed: bool = Field(description="True when a retry returned the original call.")


class FilePage(BaseModel):
    call_id: str
    path: str
    page: int
    pages: int
    size: int
    encoding: Literal["utf-8", "base64"] = Field(
        description="utf-8, or base64 for bytes that are not UTF-8"
    )
    content: str


class SchedulerView(BaseModel):
    paused: bool = Field(description="True: the tick fires none of this account's wakeups.")


class AdapterProfileView(BaseModel):
    """An adapter profile; its settings for an admin only (anyone else sees its type)."""

    name: str
    type: str = Field(description="scripted, bedrock, lambda or mailbox")
    settings: dict[str, Any] | None = Field(
        description="The adapter block (type and its options); null unless you are an admin."
    )
    mcp_tools: list[McpToolGrant] = Field(
        default_factory=list,
        description="Issue 28: the attached MCP servers' tools steps with it may call.",
    )
    version: int
    created_at: str = Field(description="ISO 8601, UTC")
    updated_at: str = Field(description="ISO 8601, UTC")


class AdapterProfileList(BaseModel):
    adapters: list[AdapterProfileView]


class AdapterProfileDeleted(BaseModel):
    name: str
    deleted: bool
