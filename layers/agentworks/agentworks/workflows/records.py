"""What a workflow run stores (W1–W8): the run, and one record per step.

A step's `turns` are its own part of its session (the prompts it sent, the answers it got);
a session's history for a later step is the turns of the chain of steps that share it
(`sessions.history`), so two steps that reuse one session in the same stage each see the
history as the step they name left it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

RunStatus = Literal["running", "succeeded", "failed", "cancelled"]
StepStatus = Literal["pending", "running", "waiting", "succeeded", "failed", "cancelled", "skipped"]
TERMINAL_RUN: frozenset[str] = frozenset({"succeeded", "failed", "cancelled"})
TERMINAL_STEP: frozenset[str] = frozenset({"succeeded", "failed", "cancelled", "skipped"})


@dataclass(frozen=True)
class Position:
    """Where a step runs: its item (0 unless a pipeline), its stage, its place in the stage."""

    item: int
    stage: int
    index: int


@dataclass
class Notification:
    """One webhook to `notifyUrl` (escalation or completion) and how it went."""

    event: str
    step: str | None
    delivered: bool
    attempts: int
    status_code: int | None = None
    error: str | None = None
    at: int = 0


@dataclass
class RunRecord:
    run_id: str
    account_id: str
    connection_id: str  # who started it: the run is theirs (and the account admin's)
    workflow_id: str
    definition: dict[str, Any]  # the workflow_start JSON as checked (camelCase)
    created_at: int
    status: str = "running"
    retry_of: str | None = None
    ended_at: int | None = None
    error: str | None = None
    notifications: list[Notification] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunRecord:
        notes = [Notification(**n) for n in data.pop("notifications", [])]
        return cls(**data, notifications=notes)


@dataclass
class StepRecord:
    run_id: str
    stage: int  # 0-based positions in the definition
    index: int
    label: str
    stage_label: str
    status: str = "pending"
    session_id: str | None = None
    output: str | None = None
    started_at: int | None = None
    ended_at: int | None = None
    cost_usd: float = 0.0
    replayed: bool = False
    input_hash: str | None = None
    turns: list[dict[str, str]] = field(default_factory=list)  # {"role", "content"}
    question: str | None = None  # the session's open question (escalate)
    answer: str | None = None  # a person's answer, waiting to be sent to the session
    task_token: str | None = None
    error: str | None = None
    turns_file: str | None = None  # S3 key when the turns outgrew the item
    call_id: str | None = None  # a crew step's function call
    busy_rounds: int = 0  # a crew step's asks of a Crew that was busy (CrewBusy waits)
    route: str | None = None  # routing/branch: the route taken (W9)
    human: dict[str, str] | None = None  # humanInputs a person gave (W9)
    item: int = 0  # a pipeline's item (W12); 0 for a run of stages
    # cli steps (issue 10 item 6): the runner job of the turn that is out, the correction
    # that turn asks for, and the runner that holds the step's CLI session.
    job_id: str | None = None
    correction: str | None = None
    runner: str | None = None
    runner_name: str | None = None
    # Issue 28: the session's MCP tool calls ({server, tool, outcome, duration_ms,
    # result_bytes, arguments, result} or content_file), in the order they were made.
    mcp_calls: list[dict[str, Any]] = field(default_factory=list)
    # What the adapter's next turn continues, apart from the step's session (an a2a
    # agent's task that asked, or that the tick follows as `awaited_task`).
    adapter_session: str | None = None
    awaited_task: dict[str, Any] | None = None  # {"task_id", "deadline_ms"}

    @property
    def position(self) -> Position:
        return Position(self.item, self.stage, self.index)

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL_STEP

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StepRecord:
        return cls(**data)
