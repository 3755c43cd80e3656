"""AWS services the local stack does not emulate, answered with an error that says so.

moto has no Bedrock runtime: a `converse` would get moto's 500 HTML page (and a traceback
on the console), so a Crew's call would fail with `500: <!doctype html>`. Instead, each such
call is answered in process, before any request leaves, with an AWS-style error naming the
local stack and what to do. The Crew's call then fails with that message.
"""

from __future__ import annotations

from typing import Any

import boto3
from botocore.awsrequest import AWSResponse, HTTPHeaders

# service id (hyphenized, as in botocore's event names) -> what to do instead
UNAVAILABLE = {
    "bedrock-runtime": (
        "Bedrock is not available on the local stack; try this Crew locally with the "
        "scripted, lambda or mailbox adapter, and use the bedrock adapter on a deployed stack"
    ),
}
ERROR_CODE = "NotAvailableOnLocalStack"


def _refuse(message: str) -> Any:
    def before_call(model: Any, **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        response = AWSResponse(url="", status_code=501, headers=HTTPHeaders(), raw=None)
        parsed = {
            "Error": {"Code": ERROR_CODE, "Message": message},
            "ResponseMetadata": {"HTTPStatusCode": 501, "HTTPHeaders": {}},
        }
        return response, parsed

    return before_call


def install(session: boto3.Session | None = None) -> None:
    """Answers every call to an unavailable service made through `session`'s clients
    (the default session: the one the adapters' clients come from) created from now on."""
    events = (session or boto3._get_default_session()).events
    for service, message in UNAVAILABLE.items():
        events.register(f"before-call.{service}", _refuse(message), unique_id=f"local-{service}")
