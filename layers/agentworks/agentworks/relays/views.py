"""The Relay API's request and response models (R1–R4): HTTP, MCP and the CLI share them."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentworks import limits
from agentworks.messaging.models import iso
from agentworks.relays.records import Checkpoint, McpCall, RelayHead, RelayRun, Release


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PublishRelay(_Strict):
    """The Relay's files (POSIX relative path → UTF-8 text), as `relays publish` reads them."""

    files: dict[str, str] = Field(
        description="relay.yaml and the Python modules; path → text.",
        max_length=limits.RELAY_FILES_MAX,
    )
    name: str | None = Field(None, description="Publish under this name, not relay.yaml's.")


class StartRelayRun(_Strict):
    function: str = Field(min_length=1, max_length=64)
    input: dict[str, Any] = Field(description="The entrypoint's INPUT (its input_schema).")
    idempotency_key: str = Field(
        min_length=1,
        max_length=limits.RELAY_IDEMPOTENCY_KEY_MAX_CHARS,
        description="The same key returns the original run; with other input, 409.",
    )
    version: int | None = Field(None, ge=1, description="A release; left out: the active one.")


class RetryRelayRun(_Strict):
    replay_uncertain: bool = Field(
        False,
        description="For a run that needs reconciliation: you checked the uncertain steps' "
        "side effects, so they run again.",
    )


class StepStart(_Strict):
    safe: bool = Field(False, description="The step may run again if an attempt was lost in it.")


class StepFinish(_Strict):
    result: Any = None


class StepDecision(BaseModel):
    decision: Literal["run", "done", "uncertain"]
    result: Any = None
    evidence: dict[str, Any] | None = None


class FunctionView(BaseModel):
    name: str
    entrypoint: str
    description: str
    input_schema: dict[str, Any]


class ReleaseView(BaseModel):
    relay: str
    version: int
    content_hash: str
    active: bool
    functions: list[FunctionView]
    description: str
    published_at: str
    created: bool = Field(True, description="False when identical source was published before.")
    mcp_tools: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Issue 28: the attached MCP servers' tools its code may call, "
        "[{server, tools}] as relay.yaml declares them.",
    )

    @classmethod
    def of(cls, release: Release, active_version: int, created: bool = True) -> ReleaseView:
        return cls(
            relay=release.relay,
            version=release.version,
            content_hash=release.content_hash,
            active=release.version == active_version,
            functions=[FunctionView(**vars(f)) for f in release.functions],
            description=release.description,
            published_at=iso(release.published_at) or "",
            created=created,
            mcp_tools=release.mcp_tools,
        )


class ReleaseList(BaseModel):
    relay: str
    active_version: int
    releases: list[ReleaseView]


class RelaySummary(BaseModel):
    relay: str
    active_version: int
    latest_version: int
    description: str
    updated_at: str

    @classmethod
    def of(cls, head: RelayHead) -> RelaySummary:
        return cls(
            relay=head.relay,
            active_version=head.active_version,
            latest_version=head.latest_version,
            description=head.description,
            updated_at=iso(head.updated_at) or "",
        )


class RelayList(BaseModel):
    relays: list[RelaySummary]


class StepView(BaseModel):
    name: str
    status: Literal["started", "completed", "uncertain"]
    attempt: int
    safe: bool
    replays: int
    started_at: str | None = None
    completed_at: str | None = None


class McpCallView(BaseModel):
    """A tool call of an attached MCP server that the run's code made (issue 28)."""

    server: str
    tool: str
    step: str | None = Field(description="The durable step that made it, if any.")
    attempt: int
    outcome: Literal["ok", "tool_error", "failed", "cancelled", "refused"]
    duration_ms: int
    result_bytes: int
    error: str | None = None
    started_at: str
    arguments: dict[str, Any] | None = None
    result: dict[str, Any] | None = Field(
        None, description="{is_error, content, structured_content}, as the code received it."
    )
    content_file: str | None = Field(
        None,
        description="Large arguments and results are kept in the outputs bucket under this "
        "key instead of inline.",
    )

    @classmethod
    def of(cls, call: McpCall) -> McpCallView:
        return cls(
            server=call.server,
            tool=call.tool,
            step=call.step,
            attempt=call.attempt,
            outcome=call.outcome,
            duration_ms=call.duration_ms,
            result_bytes=call.result_bytes,
            error=call.error,
            started_at=iso(call.started_at) or "",
            arguments=json.loads(call.arguments_json) if call.arguments_json else None,
            result=json.loads(call.result_json) if call.result_json else None,
            content_file=call.content_key,
        )


class RelayRunView(BaseModel):
    run_id: str
    relay: str
    function: str
    version: int
    caller: str = Field(description="The calling connection, or workflow:<id> for a workflow.")
    status: Literal["queued", "running", "retrying", "succeeded", "failed", "needs_reconciliation"]
    terminal: bool
    attempts: int
    result: Any = None
    error: str | None = None
    evidence: dict[str, Any] | None = None
    steps: list[StepView] = Field(default_factory=list)
    created_at: str
    updated_at: str
    replayed: bool = Field(False, description="True when the key returned the original run.")
    mcp_calls: list[McpCallView] = Field(
        default_factory=list,
        description="Issue 28: the attached MCP servers' tools its code called, oldest first "
        f"(the first {limits.RELAY_MCP_CALLS_SHOWN}).",
    )
    mcp_calls_more: bool = Field(False, description="More calls were made than are shown.")

    @classmethod
    def of(
        cls,
        run: RelayRun,
        steps: list[Checkpoint],
        replayed: bool = False,
        calls: tuple[list[McpCall], bool] = ([], False),
    ) -> RelayRunView:

        return cls(
            run_id=run.run_id,
            relay=run.relay,
            function=run.function,
            version=run.version,
            caller=run.caller,
            status=run.status,
            terminal=run.terminal,
            attempts=run.attempt,
            result=json.loads(run.result_json) if run.result_json is not None else None,
            error=run.error,
            evidence=run.evidence,
            steps=[_step(run, s) for s in steps],
            created_at=iso(run.created_at) or "",
            updated_at=iso(run.updated_at or run.created_at) or "",
            replayed=replayed,
            mcp_calls=[McpCallView.of(c) for c in calls[0]],
            mcp_calls_more=calls[1],
        )


def _step(run: RelayRun, checkpoint: Checkpoint) -> StepView:
    lost = checkpoint.status == "started" and (run.terminal or checkpoint.attempt < run.attempt)
    return StepView(
        name=checkpoint.name,
        status="uncertain" if lost else checkpoint.status,
        attempt=checkpoint.attempt,
        safe=checkpoint.safe,
        replays=checkpoint.replays,
        started_at=iso(checkpoint.started_at),
        completed_at=iso(checkpoint.completed_at),
    )
