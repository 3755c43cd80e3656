"""Environment settings of every function, validated once per cold start."""

from __future__ import annotations

import os
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
    # Relays (R5): their runs' machine; the runner's code function and the API it calls.
    relay_state_machine_arn: str = ""
    relay_code_function: str = ""
    platform_api_url: str = ""
    stage: str = "dev"


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings(
        identity_table=os.environ.get("IDENTITY_TABLE", ""),
        messages_table=os.environ.get("MESSAGES_TABLE", ""),
        signing_secret_arn=os.environ.get("SIGNING_SECRET_ARN", ""),
        work_table=os.environ.get("WORK_TABLE", ""),
        outputs_bucket=os.environ.get("OUTPUTS_BUCKET", ""),
        function_call_state_machine_arn=os.environ.get("FUNCTION_CALL_STATE_MACHINE_ARN", ""),
        workflow_state_machine_arn=os.environ.get("WORKFLOW_STATE_MACHINE_ARN", ""),
        scheduler_role_arn=os.environ.get("SCHEDULER_ROLE_ARN", ""),
        tick_function_arn=os.environ.get("TICK_FUNCTION_ARN", ""),
        relay_state_machine_arn=os.environ.get("RELAY_STATE_MACHINE_ARN", ""),
        relay_code_function=os.environ.get("RELAY_CODE_FUNCTION", ""),
        platform_api_url=os.environ.get("PLATFORM_API_URL", ""),
        stage=os.environ.get("STAGE", "dev"),
    )
