"""Environment settings of every function, validated once per cold start."""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import lru_cache

from pydantic import BaseModel, Field


class Settings(BaseModel):
    identity_table: str = Field(min_length=3)
    messages_table: str = Field(min_length=3)
    signing_secret_arn: str = Field(min_length=1)
    work_table: str = ""
    outputs_bucket: str = ""
    # Only the functions that start executions know the state machine (no template cycle).
    function_call_state_machine_arn: str = ""
    workflow_state_machine_arn: str = ""
    # W11: EventBridge Scheduler invokes the tick with this role (empty: the tick alone).
    scheduler_role_arn: str = ""
    tick_function_arn: str = ""
    tick_dead_letter_queue_arn: str = ""  # where the Scheduler keeps what it cannot deliver
    schedule_group: str = "default"  # the stack's own group (template: WorkflowScheduleGroup)
    # Relays (R5): their runs' machine; the runner's code function and the API it calls.
    relay_state_machine_arn: str = ""
    relay_code_function: str = ""
    platform_api_url: str = ""
    # Deployed, the runner reads the URL from this SSM parameter (relays.platform_url).
    platform_api_url_parameter: str = ""
    # Push delivery (issue 10): listeners, and the WebSocket stage's management endpoint.
    listeners_table: str = ""
    push_endpoint: str = ""
    # Attached MCP servers' secrets are named under this prefix (the IAM grant's).
    mcp_secret_prefix: str = "agentworks/mcp-servers/"
    # a2a adapters' auth_secret: <prefix><account_id>/<name> (issue 30 §2).
    a2a_secret_prefix: str = "agentworks/a2a-agents/"
    stage: str = "dev"


def settings_from(environment: Mapping[str, str]) -> Settings:
    """Settings from a function's environment variables (template.yaml names them; the
    local stack's `LocalResources.environment()` gives the same names)."""
    return Settings(
        identity_table=environment.get("IDENTITY_TABLE", ""),
        messages_table=environment.get("MESSAGES_TABLE", ""),
        signing_secret_arn=environment.get("SIGNING_SECRET_ARN", ""),
        work_table=environment.get("WORK_TABLE", ""),
        outputs_bucket=environment.get("OUTPUTS_BUCKET", ""),
        function_call_state_machine_arn=environment.get("FUNCTION_CALL_STATE_MACHINE_ARN", ""),
        workflow_state_machine_arn=environment.get("WORKFLOW_STATE_MACHINE_ARN", ""),
        scheduler_role_arn=environment.get("SCHEDULER_ROLE_ARN", ""),
        tick_function_arn=environment.get("TICK_FUNCTION_ARN", ""),
        tick_dead_letter_queue_arn=environment.get("TICK_DEAD_LETTER_QUEUE_ARN", ""),
        schedule_group=environment.get("SCHEDULE_GROUP", "default"),
        relay_state_machine_arn=environment.get("RELAY_STATE_MACHINE_ARN", ""),
        relay_code_function=environment.get("RELAY_CODE_FUNCTION", ""),
        platform_api_url=environment.get("PLATFORM_API_URL", ""),
        platform_api_url_parameter=environment.get("PLATFORM_API_URL_PARAMETER", ""),
        listeners_table=environment.get("LISTENERS_TABLE", ""),
        push_endpoint=environment.get("PUSH_ENDPOINT", ""),
        mcp_secret_prefix=environment.get("MCP_SECRET_PREFIX", "agentworks/mcp-servers/"),
        a2a_secret_prefix=environment.get("A2A_SECRET_PREFIX", "agentworks/a2a-agents/"),
        stage=environment.get("STAGE", "dev"),
    )


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return settings_from(os.environ)


def push_url() -> str:
    """The push channel's WebSocket URL (ws:// or wss://; "" when none), where the web pages
    follow their runs. Read alone: serving the public page shells needs no other setting."""
    return os.environ.get("PUSH_URL", "")
