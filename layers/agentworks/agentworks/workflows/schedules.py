"""Schedule triggers on EventBridge Scheduler (W11): one schedule per trigger, named
`agentworks-<triggerId>` in the stack's own schedule group (SCHEDULE_GROUP: grants name
the group, and deleting the stack deletes its schedules), whose target is the tick function
with `{"trigger_id": …}`.

The tick fires a due schedule either way — when the Scheduler invokes it with the id, and on
its one-minute round for any it missed — and a claim on the trigger's due time makes a
period fire once. Without a role and a tick to target (the tick itself, the local stack's
moto, which never fires schedules) nothing is put and the one-minute round does it all.
An invocation the Scheduler cannot deliver is retried, then kept in the tick's dead-letter
queue; one the tick fails is Lambda's to retry and keep (template.yaml, EventInvokeConfig).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from agentworks import limits
from agentworks.dynamo import error_code


class EventBridgeSchedules:
    def __init__(
        self,
        client: Callable[[], Any],
        role_arn: str,
        tick_arn: str,
        dead_letter_arn: str = "",
        group: str = "default",
    ) -> None:
        self._client = client  # created on first use
        self._role_arn = role_arn
        self._tick_arn = tick_arn
        self._dead_letter_arn = dead_letter_arn
        self._group = group

    @property
    def enabled(self) -> bool:
        return bool(self._role_arn and self._tick_arn)

    @staticmethod
    def name(trigger_id: str) -> str:
        return f"agentworks-{trigger_id}"

    def put(self, trigger_id: str, expression: str) -> None:
        if not self.enabled:
            return
        target: dict[str, Any] = {
            "Arn": self._tick_arn,
            "RoleArn": self._role_arn,
            "Input": json.dumps({"trigger_id": trigger_id}),
            "RetryPolicy": {
                "MaximumRetryAttempts": limits.SCHEDULE_RETRY_ATTEMPTS,
                "MaximumEventAgeInSeconds": limits.SCHEDULE_EVENT_MAX_AGE_SECONDS,
            },
        }
        if self._dead_letter_arn:  # kept for `agentworks ops redrive` (docs/operations.md)
            target["DeadLetterConfig"] = {"Arn": self._dead_letter_arn}
        request = {
            "Name": self.name(trigger_id),
            "GroupName": self._group,
            "ScheduleExpression": expression,
            "ScheduleExpressionTimezone": "UTC",
            "FlexibleTimeWindow": {"Mode": "OFF"},
            "Target": target,
        }
        from botocore.exceptions import ClientError

        try:
            self._client().create_schedule(**request)
        except ClientError as error:
            if error_code(error) != "ConflictException":
                raise
            self._client().update_schedule(**request)  # registered again: the new expression

    def delete(self, trigger_id: str) -> None:
        if not self.enabled:
            return
        from botocore.exceptions import ClientError

        try:
            self._client().delete_schedule(Name=self.name(trigger_id), GroupName=self._group)
        except ClientError as error:
            if error_code(error) != "ResourceNotFoundException":
                raise
