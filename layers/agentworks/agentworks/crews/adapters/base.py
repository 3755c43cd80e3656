"""The adapter contract: one agent turn in, a final answer / result / question / hand-off out.

The platform owns everything around a turn (records, validation, retries, waiting for a
person, files in S3); an adapter only turns a prompt and its context into an answer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from agentworks.crews.adapters.tool_use import McpToolUse


class FunctionAccess(Protocol):
    """W10: what a workflow step's session may do with functions, as its source workflow."""

    def list(self, target: str) -> dict[str, Any]: ...

    def call_and_wait(self, target: str, function: str, args: dict[str, Any]) -> dict[str, Any]:
        """Calls (or, in the same scope, finds the call made) and waits for its outcome;
        returns the call's status."""
        ...

    def status(self, call_id: str) -> dict[str, Any]: ...


@dataclass(frozen=True)
class TurnRequest:
    """Everything an adapter may use for one turn."""

    crew_name: str
    instructions: str
    settings: dict[str, Any]  # the Crew's `adapter` block (type + its own settings)
    kind: Literal["function", "message"]
    prompt: str  # the message text, or a rendered description of the function call
    function: str | None = None  # kind == "function"
    args: dict[str, Any] | None = None  # kind == "function": the validated arguments
    output_schema: dict[str, Any] | None = None  # when set, the turn must produce `result`
    answer: str | None = None  # the person's answer to this call's pending question
    correction: str | None = None  # validation errors of the previous result to fix
    history: tuple[dict[str, str], ...] = ()  # earlier turns: {"role", "content"}
    # Where files go (informational for adapters that run code; produced files are
    # returned in TurnResult.files and stored by the platform).
    function_output_dir: str = ""
    crew_output_dir: str = ""
    function_result_file: str = ""
    functions: FunctionAccess | None = None  # a workflow step's access to functions (W10)
    # The session this turn continues as its adapter named it (a `cli` adapter's CLI session
    # id, which it resumes); None on a session's first turn and for adapters that keep none.
    session_id: str | None = None
    # The account the turn runs for (a `lambda` adapter's function must be bound to it).
    account_id: str = ""
    # Attached MCP servers' tools the turn may call (issue 28): every call goes through it
    # (admission, the caller's scopes, bounds, records). None where no server is wired.
    mcp_tools: McpToolUse | None = None
    # Whether the call or run was cancelled meanwhile (read by adapters that wait on
    # another system, which then stop the work there too).
    cancelled: Callable[[], bool] | None = None


@dataclass
class Handoff:
    """Work handed to a named external agent (mailbox adapter)."""

    agent_name: str
    message: str


@dataclass
class CrewRequest:
    """A request to another Crew (C3): the run waits for what comes of it and carries on
    (at once, for a hand-off)."""

    crew_name: str
    message: str
    handoff: bool = False


@dataclass(frozen=True)
class RunnerWork:
    """A turn a local runner carries out (`cli` adapter): the bridge that claims it runs the
    CLI headless and reports the answer, the CLI's session id and the cost."""

    command: str  # claude | codex, found on the runner's PATH
    prompt: str
    model: str | None = None
    args: tuple[str, ...] = ()  # from the adapter's allow-list
    timeout_seconds: int = 0
    resume: str | None = None  # the CLI session this turn continues


@dataclass(frozen=True)
class AwaitedTask:
    """An external agent's task still working when the turn ended (a2a adapter): the call
    or step waits on a task token, costing no invocation and no transition, while the tick
    reads the task (agentworks.external_tasks); its end starts the next turn, which reads
    the outcome."""

    task_id: str
    deadline_ms: int  # when the task is cancelled at the agent if it has not ended


@dataclass
class TurnResult:
    """Exactly one of: a final answer (with an optional structured result), a question
    for a person, a hand-off to an external agent, work for a local runner, or an external
    agent's task to wait for."""

    final_text: str | None = None
    result: Any = None  # the JSON the agent "wrote to FUNCTION_RESULT_FILE"
    has_result: bool = False  # distinguishes a null result from no result
    files: dict[str, bytes] = field(default_factory=dict)  # relative path -> content
    question: str | None = None  # raise a pending human input (F7): a person answers
    handoff: Handoff | None = None
    crew_request: CrewRequest | None = None
    # C3: in a conversation, a request back to its other side (the run carries on with
    # the reply); the turn's `answer` is then that reply.
    ask_back: str | None = None
    runner_work: RunnerWork | None = None
    cost_usd: float = 0.0
    progress: list[str] = field(default_factory=list)  # execution messages worth showing
    # What the next turn of the same call continues (an a2a adapter's task waiting for the
    # question's answer): handed back as TurnRequest.session_id.
    session_id: str | None = None
    awaited_task: AwaitedTask | None = None  # with the session_id that follows it


class AdapterError(Exception):
    """The agent could not complete the turn (bad settings, the model/Lambda failed).
    The call ends `failed` with this message; nothing retries it on its own."""


class Adapter(Protocol):
    def run_turn(self, request: TurnRequest) -> TurnResult: ...
