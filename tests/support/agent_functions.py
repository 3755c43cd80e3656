"""Users' agent functions (the `lambda` adapter's `agentworks-agent-*`) on the moto stack:
real moto Lambda functions, tagged as an operator tags them, whose invocations moto's
seam hands to a Python callable here, each one recorded.

Tags live in moto (GetFunction/ListTags answer them; the IAM check reads them for
`aws:ResourceTag`), so a test re-tags a function exactly as `aws lambda tag-resource` does.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable
from typing import Any

import boto3

from agentworks.crews.adapters.function_bindings import ACCOUNT_TAG

Answer = Callable[[dict[str, Any]], Any]


class AgentFunctions:
    def __init__(self, stack: Any) -> None:
        from agentworks_local import lambda_seam
        from tests.support.handlers import invoke_function

        self.client = boto3.client("lambda", region_name="us-east-1")
        self.invoked: list[tuple[str, dict[str, Any]]] = []  # (function name, event)
        self._answers: dict[str, Answer] = {}
        resources = stack.resources

        def dispatch(name: str, event: Any) -> Any:
            if name in self._answers:
                self.invoked.append((name, event))
                return self._answers[name](event)
            return invoke_function(resources.logical_id_of(name), event)

        lambda_seam.install(dispatch)
        self._role = boto3.client("iam", region_name="us-east-1").create_role(
            RoleName="agent-functions", AssumeRolePolicyDocument="{}"
        )["Role"]["Arn"]

    def create(self, name: str, answer: Answer, account_id: str | None = None) -> str:
        """A function answering `answer(event)`, bound to `account_id` (None: untagged)."""
        self._answers[name] = answer
        arn = str(
            self.client.create_function(
                FunctionName=name,
                Runtime="python3.12",
                Role=self._role,
                Handler="app.handler",
                Code={"ZipFile": _zip()},
            )["FunctionArn"]
        )
        if account_id is not None:
            self.bind(name, account_id)
        return arn

    def bind(self, name: str, account_id: str) -> None:
        """What an operator runs: aws lambda tag-resource --tags agentworks:account=…"""
        arn = self.client.get_function(FunctionName=name)["Configuration"]["FunctionArn"]
        self.client.tag_resource(Resource=arn, Tags={ACCOUNT_TAG: account_id})

    def calls_of(self, name: str) -> list[dict[str, Any]]:
        return [event for called, event in self.invoked if called == name]


def _zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("app.py", "def handler(event, context):\n    return event\n")
    return buffer.getvalue()
