"""Crew definitions and function-call records (F1–F8)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agentworks import limits
from agentworks.mcp_servers.declarations import McpToolGrant, duplicate_servers

Messaging = Literal["off", "review", "on"]
CallState = Literal[
    "accepted", "running", "input_required", "succeeded", "failed", "cancelled", "interrupted"
]
TERMINAL_STATES: frozenset[str] = frozenset({"succeeded", "failed", "cancelled", "interrupted"})

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_FUNCTION_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")


class FunctionSpec(BaseModel):
    """A declared function: checked inputs, optional checked output (F1, F3, F6)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = Field("", max_length=2_000)
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    output_schema: dict[str, Any] | None = None

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _FUNCTION_RE.match(value):
            raise ValueError("function names are 1–64 letters, digits, '_' or '-', from a letter")
        return value


class CrewDefinition(BaseModel):
    """What a Crew file (YAML or JSON) declares."""

    model_config = ConfigDict(extra="forbid")

    name: str
    instructions: str = Field("", max_length=limits.INSTRUCTIONS_MAX_CHARS)
    messaging: Messaging = "off"
    adapter: dict[str, Any]
    access: list[str] = Field(
        default_factory=list,
        max_length=limits.CREW_ACCESS_MAX_ENTRIES,
        description="Connection ids that may call or message this Crew; empty = the account.",
    )
    may_ask: list[str] = Field(
        default_factory=list,
        max_length=limits.CREW_ACCESS_MAX_ENTRIES,
        description="C4 (specific only): the Crews this one may ask in conversations; "
        "empty = none.",
    )
    functions: list[FunctionSpec] = Field(
        default_factory=list, max_length=limits.FUNCTIONS_PER_CREW
    )
    visibility: Literal["account", "private"] = Field(
        "account",
        description="C4: `private` — only its owner (the connection that created it) sees, "
        "calls or messages it; account admins don't.",
    )
    mcp_tools: list[McpToolGrant] = Field(
        default_factory=list,
        max_length=limits.MCP_TOOLS_DECLARED_SERVERS_MAX,
        description="Issue 28: the tools of attached MCP servers this Crew may call, "
        '[{server, tools: [tool, …]}]; "*" only where written. Empty = none.',
    )

    @field_validator("name")
    @classmethod
    def _crew_name(cls, value: str) -> str:
        if not _NAME_RE.match(value):
            raise ValueError(
                "Crew names are 1–64 ASCII letters, digits, '.', '_' or '-', from a letter or digit"
            )
        return value

    @field_validator("messaging", mode="before")
    @classmethod
    def _yaml_booleans(cls, value: Any) -> Any:
        # YAML 1.1 reads bare on/off as booleans.
        if value is True:
            return "on"
        if value is False:
            return "off"
        return value

    @field_validator("adapter")
    @classmethod
    def _adapter_type(cls, value: dict[str, Any]) -> dict[str, Any]:
        if not isinstance(value.get("type"), str):
            raise ValueError("adapter needs a type (scripted, bedrock, lambda or mailbox)")
        return value

    @model_validator(mode="after")
    def _unique_functions(self) -> CrewDefinition:
        names = [f.name for f in self.functions]
        if len(names) != len(set(names)):
            raise ValueError("function names must be unique within a Crew")
        if duplicate_servers(self.mcp_tools):
            raise ValueError("mcp_tools names a server twice: one entry per server")
        return self

    def function(self, name: str) -> FunctionSpec | None:
        return next((f for f in self.functions if f.name == name), None)


@dataclass
class Crew:
    account_id: str
    crew_id: str
    definition: CrewDefinition
    version: int
    running: int
    created_at: int
    updated_at: int
    owner_connection_id: str | None = None  # C4: the connection that created it

    @property
    def name(self) -> str:
        return self.definition.name.lower()

    @property
    def is_private(self) -> bool:
        return self.definition.visibility == "private"


@dataclass
class PendingInput:
    request_id: str
    question: str
    asked_at: int


@dataclass
class CallRecord:
    """A function call, or (kind "message") a Crew's run for a message or a wakeup in one of
    its conversations: same record, same state machine, no function slot."""

    call_id: str
    account_id: str
    crew_name: str
    crew_id: str
    function: str
    args: dict[str, Any]
    caller_connection_id: str
    state: str
    created_at: int
    updated_at: int
    submission_id: str | None = None
    turns: int = 0
    corrections: int = 0
    progress: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    pending_inputs: list[PendingInput] = field(default_factory=list)
    answers: list[dict[str, str]] = field(default_factory=list)  # {"request_id", "answer"}
    final_text: str | None = None
    result: Any = None
    has_result: bool = False
    result_file: str | None = None
    files: list[dict[str, Any]] = field(default_factory=list)  # {"path", "size"}
    slot_held: bool = True
    task_token: str | None = None
    handoff_inbox_id: str | None = None
    outcome: str | None = None  # the terminal state `finish` records
    correction: str | None = None  # validation errors the next turn must fix (F6)
    cost_usd: float = 0.0
    kind: str = "function"  # or "message" (then `function` is "")
    inbox_id: str | None = None  # message runs: the Crew's side of the conversation
    message_id: str | None = None  # the message it answers (None: a wakeup's run)
    wakeup_id: str | None = None  # the wakeup that started it
    reply_message_id: str | None = None  # the Crew's answer, once posted
    handoff_agent: str | None = None  # mailbox adapter: the agent the work went to
    handoff_agent_id: str | None = None  # … that identity of the name (M4)
    handoff_message: str | None = None  # the work, between the turn and its hand-off
    # C3: a request this run sends another Crew, and what came of it
    asked_crew: str | None = None
    asked_message: str | None = None  # the request's words, between the turn and sending
    asked_handoff: bool = False
    asked_request_id: str | None = None  # the request's message id, once sent
    asked_reply: str | None = None  # what the next turn reads (its reply, or why none)
    # C3 ask-back: the request goes to the other side of this run's own conversation (an
    # agent or a person), and the run waits for the reply that answers it.
    asked_back: bool = False
    asked_reply_id: str | None = None  # the reply's message id (the next turn reads it)
    ask_backs: int = 0  # how often it asked back (limits.ASK_BACKS_PER_RUN)
    # What the next turn continues (an a2a adapter's task waiting for an answer).
    session_id: str | None = None
    # An external agent's task the call waits for ({"task_id", "deadline_ms"}): the
    # AwaitTask state hands it to the tick (agentworks.external_tasks) with its token.
    awaited_task: dict[str, Any] | None = None
    depth: int = 1  # C4: how many conversations deep this run works
    # States its execution entered, as the step runner's invocations saw them (usage).
    transitions: int = 0
    # Issue 28: its turns' MCP tool calls ({server, tool, outcome, duration_ms,
    # result_bytes, arguments, result} or content_file), in the order they were made.
    mcp_calls: list[dict[str, Any]] = field(default_factory=list)
    mcp_calls_made: int = 0  # all of them (the record keeps the newest; usage counts all)

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL_STATES


# ---- API shapes ----


class CallFunction(BaseModel):
    model_config = ConfigDict(extra="forbid")
    target: str = Field(description="crew:NAME")
    function: str
    args: dict[str, Any] = Field(
        default_factory=dict,
        description="Matching the function's input_schema; at most "
        f"{limits.ARGS_MAX_BYTES // 1024} KiB of JSON, nested at most "
        f"{limits.ARGS_MAX_DEPTH} levels.",
    )
    submission_id: str | None = Field(None, min_length=1, max_length=limits.SUBMISSION_ID_MAX_CHARS)


class ReplyToCall(BaseModel):
    model_config = ConfigDict(extra="forbid")
    request_id: str = Field(min_length=1, max_length=64)
    answer: str = Field(min_length=1, max_length=limits.ANSWER_MAX_CHARS)


class PostCallResult(BaseModel):
    """Mailbox adapter: the named agent doing the work posts its outcome."""

    model_config = ConfigDict(extra="forbid")
    agent_name: str = Field(description="The agent the work was handed to (you act as it).")
    final_text: str | None = Field(None, max_length=100_000)
    result: Any = Field(None, description="The result JSON (validated by the output schema).")
