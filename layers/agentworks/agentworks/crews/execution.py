"""Step Functions: start an execution (a call's, a workflow run's), answer a waiting task
(F7, mailbox adapter, W3), stop one (workflow cancel)."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from agentworks.dynamo import error_code

# What Step Functions answers for a token nothing waits on any more (answered already, timed
# out, its execution stopped).
CLOSED_TOKEN = frozenset({"TaskDoesNotExist", "TaskTimedOut", "InvalidToken"})


@lru_cache(maxsize=1)
def _sfn() -> Any:
    import boto3

    return boto3.client("stepfunctions")


class Executions:
    def __init__(self, state_machine_arn: str, client: Any | None = None) -> None:
        self._arn = state_machine_arn
        self._client = client

    @property
    def client(self) -> Any:
        return self._client or _sfn()

    def start(self, call_id: str) -> str:
        # The execution is named after the call: a second start of one call is refused.
        return self.start_named(call_id, {"call_id": call_id})

    def start_named(self, name: str, payload: dict[str, Any]) -> str:
        response = self.client.start_execution(
            stateMachineArn=self._arn, name=name, input=json.dumps(payload)
        )
        return str(response["executionArn"])

    def stop(self, name: str, cause: str) -> None:
        """Stops the named execution; one that already ended stays as it ended."""
        from botocore.exceptions import ClientError

        try:
            self.client.stop_execution(executionArn=self.execution_arn(name), cause=cause)
        except ClientError as error:
            if error_code(error) not in ("ExecutionDoesNotExist", "ExecutionNotRunning"):
                raise

    def resume(self, task_token: str, output: dict[str, Any]) -> None:
        self.client.send_task_success(taskToken=task_token, output=json.dumps(output))

    def resume_if_waiting(self, task_token: str, output: dict[str, Any]) -> bool:
        """`resume`, where a token nothing waits on any more is no error (False): a second
        answer, or the answer to a step whose execution ended, changes nothing."""
        from botocore.exceptions import ClientError

        try:
            self.resume(task_token, output)
        except ClientError as error:
            if error_code(error) not in CLOSED_TOKEN:
                raise
            return False
        return True

    def entered_states(self, execution_arn: str) -> int:
        """The states the execution has entered so far (its `…StateEntered` events, a Map's
        iterations included): the state transitions its account's usage counts. One
        request per 1,000 events, once per run, never on a hot path."""
        entered, page_token = 0, None
        while True:
            page = self.client.get_execution_history(
                executionArn=execution_arn,
                maxResults=1000,
                includeExecutionData=False,
                **({"nextToken": page_token} if page_token else {}),
            )
            entered += sum(1 for e in page["events"] if str(e["type"]).endswith("StateEntered"))
            page_token = page.get("nextToken")
            if not page_token:
                return entered

    def status(self, execution_arn: str) -> str:
        return str(self.client.describe_execution(executionArn=execution_arn)["status"])

    def execution_arn(self, call_id: str) -> str:
        # arn:…:stateMachine:<machine> → arn:…:execution:<machine>:<call_id> (named by `start`)
        return f"{self._arn.replace(':stateMachine:', ':execution:', 1)}:{call_id}"

    def status_of_call(self, call_id: str) -> str | None:
        """The status of the call's execution (RUNNING, SUCCEEDED, FAILED, TIMED_OUT,
        ABORTED, …); None when it was never started."""
        from botocore.exceptions import ClientError

        try:
            return self.status(self.execution_arn(call_id))
        except ClientError as error:
            if error_code(error) == "ExecutionDoesNotExist":
                return None
            raise
