"""What `GET /v1/usage` answers (and `agentworks usage` reads with the same models)."""

from __future__ import annotations

from pydantic import BaseModel, Field

PRICES_NOTE = (
    "Estimated from AWS us-east-1 on-demand list prices, free tiers left out, with what each "
    "operation takes as `make bench` measures it; not a bill (docs/usage.md)."
)


class UsageCounters(BaseModel):
    messages_sent: int = Field(0, description="Messages stored (first contacts included).")
    messages_read: int = Field(0, description="Messages returned by read pages.")
    read_requests: int = Field(0, description="Read pages that returned messages.")
    function_calls: int = Field(0, description="Crew function calls that ended.")
    state_transitions: int = Field(
        0, description="Step Functions states entered by Crew calls and message runs."
    )
    stored_bytes: int = Field(
        0, description="Stored size of the messages sent (each is kept 7 days)."
    )
    push_minutes: float = Field(0.0, description="Push channel connection time.")
    push_notices: int = Field(0, description="Notices posted on the push channel.")
    mcp_tool_calls: int = Field(
        0, description="Attached MCP servers' tools called by Crews and workflow steps."
    )
    relay_mcp_tool_calls: int = Field(
        0, description="Attached MCP servers' tools called by relay code (through the API)."
    )


class UsageCost(BaseModel):
    total_usd: float
    api_gateway_usd: float = Field(description="HTTP API requests, WebSocket messages and minutes.")
    lambda_usd: float
    dynamodb_usd: float = Field(description="Read and write units.")
    step_functions_usd: float
    storage_usd: float = Field(description="The messages' 7 days in DynamoDB.")


class UsageDay(UsageCounters):
    day: str = Field(description="UTC day, YYYY-MM-DD.")
    estimated_cost_usd: float


class UsageReport(BaseModel):
    """One account's usage per UTC day, oldest first (days without use show zeros)."""

    account_id: str
    first_day: str
    last_day: str
    days: list[UsageDay]
    total: UsageCounters
    estimated_cost: UsageCost
    prices: str = PRICES_NOTE
