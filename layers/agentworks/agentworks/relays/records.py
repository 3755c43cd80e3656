"""What a Relay, a release, a run and a durable step's checkpoint are (R1–R4)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

RunStatus = Literal["queued", "running", "retrying", "succeeded", "failed", "needs_reconciliation"]
TERMINAL: frozenset[str] = frozenset({"succeeded", "failed", "needs_reconciliation"})
StepStatus = Literal["started", "completed"]


@dataclass(frozen=True)
class ReleaseFunction:
    name: str
    entrypoint: str  # module:function
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class Release:
    """An immutable snapshot of a Relay's source, named by its content hash."""

    account_id: str
    relay: str
    version: int
    content_hash: str
    archive_key: str  # the S3 object of the deterministic archive
    functions: list[ReleaseFunction]
    description: str
    published_at: int  # ms
    published_by: str  # connection id
    # Issue 28: the MCP tools its code may call, as relay.yaml declares them (absent on
    # releases published before).
    mcp_tools: list[dict[str, Any]] = field(default_factory=list)

    def function(self, name: str) -> ReleaseFunction | None:
        return next((f for f in self.functions if f.name == name), None)

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> Release:
        data = json.loads(text)
        data["functions"] = [ReleaseFunction(**f) for f in data["functions"]]
        return cls(**data)


@dataclass(frozen=True)
class RelayHead:
    """A Relay of an account: its active and latest release."""

    account_id: str
    relay: str
    active_version: int
    latest_version: int
    description: str
    updated_at: int


@dataclass(frozen=True)
class RelayRun:
    run_id: str
    account_id: str
    relay: str
    function: str
    version: int  # the pinned release
    input_json: str
    idempotency_key: str
    fingerprint: str  # what the key was first used for (function, input, version asked)
    caller: str  # the connection id, or workflow:<id> when a workflow's step called
    caller_connection_id: str  # whose authority the run carries (re-checked at each call)
    created_at: int
    status: RunStatus = "queued"
    attempt: int = 0  # attempts started, over every execution
    execution: str = ""  # the name of the current execution
    execution_attempts: int = 0  # attempts of the current execution
    credential_hash: str = ""  # of the current attempt's run-scoped credential
    result_json: str | None = None
    error: str | None = None
    evidence: dict[str, Any] | None = None  # why a run needs reconciliation
    updated_at: int = 0
    retries: int = 0  # explicit `relays retry`
    attempt_started_at: int = 0  # ms; when the current attempt began (0: before issue 28)

    def attempt_ends_at(self, timeout_seconds: int) -> int | None:
        """When the current attempt's time is up (ms), if known."""
        if not self.attempt_started_at:
            return None
        return self.attempt_started_at + timeout_seconds * 1000

    @property
    def input(self) -> dict[str, Any]:
        value = json.loads(self.input_json)
        return value if isinstance(value, dict) else {}

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL


@dataclass(frozen=True)
class Checkpoint:
    """One durable step of a run: started (maybe uncertain later) or completed."""

    name: str
    status: StepStatus
    attempt: int  # the attempt that started (or completed) it
    safe: bool  # declared safe to replay when uncertain
    started_at: int
    completed_at: int | None = None
    result_json: str | None = None
    replays: int = 0


McpCallOutcome = Literal["ok", "tool_error", "failed", "cancelled", "refused"]


@dataclass(frozen=True)
class McpCall:
    """One tool call relay code made (issue 28): on its run, and its step when it said so.
    The arguments and result are inline up to RELAY_MCP_CALL_INLINE_MAX_BYTES, else in
    the outputs bucket under `content_key`."""

    call_id: str
    run_id: str
    attempt: int
    step: str | None
    server: str
    tool: str
    started_at: int  # ms
    duration_ms: int
    outcome: McpCallOutcome
    result_bytes: int
    error: str | None = None
    arguments_json: str | None = None
    result_json: str | None = None
    content_key: str | None = None
