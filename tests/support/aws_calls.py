"""Records the AWS calls Lambda handlers make, attributed to the function that made them,
and names the IAM permissions each call needs (for tests/support/iam.py to check).

Attribution: `running(logical_id)` marks the current context while a handler runs
(tests.support.handlers wraps every loaded handler in it, which also covers the in-process
Step Functions seam). A call made by test code outside any handler is not attributed.

Recording: `BaseClient._make_api_call` is the one path every botocore client takes, however
and whenever it was created (the services' clients are built before a test starts, adapter
clients on first use), and it runs before Stubber or moto answer.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from agentworks_local.handlers import LOCAL_ACCOUNT_ID, LOCAL_REGION

REGION = LOCAL_REGION
ACCOUNT = LOCAL_ACCOUNT_ID  # moto's default account

_function: ContextVar[str | None] = ContextVar("aws_calls_function", default=None)


@contextmanager
def running(logical_id: str) -> Iterator[None]:
    """AWS calls made inside are attributed to the function `logical_id`."""
    token = _function.set(logical_id)
    try:
        yield
    finally:
        _function.reset(token)


@dataclass(frozen=True)
class AwsCall:
    function: str
    service: str  # botocore service name: dynamodb, s3, stepfunctions, bedrock-runtime …
    operation: str  # API operation: TransactWriteItems, HeadObject …
    params: dict[str, Any] = field(hash=False, compare=False)
    error_code: str | None = None
    endpoint: str = field(default="", compare=False)  # the client's (execute-api names its API)
    # The tags the called resource had when called (a Lambda Invoke's function in moto);
    # None when unknown. What an `aws:ResourceTag/...` condition looks at.
    resource_tags: tuple[tuple[str, str], ...] | None = field(
        default=None, hash=False, compare=False
    )

    def __str__(self) -> str:
        outcome = f" -> {self.error_code}" if self.error_code else ""
        return f"{self.function}: {self.service}.{self.operation}{outcome}"


@dataclass(frozen=True)
class Permission:
    """One IAM authorization a call needs; `resource` "*" for actions without resources.
    `leading_keys`: the partition key values of a DynamoDB item request, what a
    `dynamodb:LeadingKeys` condition looks at (empty when unknown, e.g. a Query).
    `resource_tags`: the resource's tags when the call was made, for `aws:ResourceTag`."""

    action: str
    resource: str
    leading_keys: tuple[str, ...] = ()
    resource_tags: tuple[tuple[str, str], ...] | None = None  # None: not known


class CallRecorder:
    def __init__(self) -> None:
        self.calls: list[AwsCall] = []
        self.unattributed = 0

    @contextmanager
    def recording(self) -> Iterator[CallRecorder]:
        from botocore.client import BaseClient
        from botocore.exceptions import ClientError

        original = BaseClient._make_api_call
        recorder = self

        def _make_api_call(client: Any, operation_name: str, api_params: dict[str, Any]) -> Any:
            function = _function.get()
            if function is None:
                recorder.unattributed += 1
                return original(client, operation_name, api_params)
            service = client.meta.service_model.service_name
            endpoint = str(client.meta.endpoint_url or "")
            tags = _function_tags(api_params) if service == "lambda" else None
            params = dict(api_params)
            try:
                result = original(client, operation_name, api_params)
            except ClientError as error:
                code = str(error.response.get("Error", {}).get("Code", "Error"))
                recorder.calls.append(
                    AwsCall(function, service, operation_name, params, code, endpoint, tags)
                )
                raise
            recorder.calls.append(
                AwsCall(function, service, operation_name, params, None, endpoint, tags)
            )
            return result

        BaseClient._make_api_call = _make_api_call  # type: ignore[method-assign]
        try:
            yield self
        finally:
            BaseClient._make_api_call = original  # type: ignore[method-assign]


def _function_tags(params: dict[str, Any]) -> tuple[tuple[str, str], ...] | None:
    """The tags moto's Lambda holds for the called function now (None: no such function
    there, e.g. a call a Stubber answers)."""
    reference = params.get("FunctionName") or params.get("Resource")
    if not isinstance(reference, str):
        return None
    from moto.awslambda.exceptions import UnknownFunctionException
    from moto.awslambda.models import lambda_backends

    name = reference.split(":function:", 1)[-1].split(":", 1)[0]
    try:
        found = lambda_backends[ACCOUNT][REGION].get_function(name)
    except UnknownFunctionException:
        return None
    return tuple(sorted((found.tags or {}).items()))


class UnmappedCall(Exception):
    """A call whose IAM permissions this module does not know yet: add them below."""


def _table_arn(name: str, index: str | None = None) -> str:
    if name.startswith("arn:"):
        return name
    arn = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{name}"
    return f"{arn}/index/{index}" if index else arn


_TRANSACT_ITEM_ACTIONS = {
    "Put": "dynamodb:PutItem",
    "Update": "dynamodb:UpdateItem",
    "Delete": "dynamodb:DeleteItem",
    "ConditionCheck": "dynamodb:ConditionCheckItem",
}
_SINGLE_TABLE = {"GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "Scan", "DescribeTable"}

# Destination regions of Bedrock's geographic cross-region inference profiles: a profile
# call is authorized on the profile and on the foundation model in each region it may use.
PROFILE_REGIONS = {
    "us": ("us-east-1", "us-east-2", "us-west-2"),
    "eu": ("eu-central-1", "eu-west-1", "eu-west-3", "eu-north-1"),
    "apac": ("ap-northeast-1", "ap-southeast-1", "ap-southeast-2", "ap-south-1"),
}


def _leading_keys(body: dict[str, Any]) -> tuple[str, ...]:
    """The partition key value of an item request (every table's is `pk`)."""
    item = body.get("Key") or body.get("Item") or {}
    value = (item.get("pk") or {}).get("S")
    return (value,) if value is not None else ()


def _dynamodb(call: AwsCall) -> list[Permission]:
    params = call.params
    if call.operation in _SINGLE_TABLE:
        arn = _table_arn(params["TableName"], params.get("IndexName"))
        return [Permission(f"dynamodb:{call.operation}", arn, _leading_keys(params))]
    if call.operation == "TransactWriteItems":
        # IAM authorizes each item with its own action, not "TransactWriteItems".
        needed = []
        for item in params["TransactItems"]:
            ((kind, body),) = item.items()
            action, arn = _TRANSACT_ITEM_ACTIONS[kind], _table_arn(body["TableName"])
            needed.append(Permission(action, arn, _leading_keys(body)))
        return needed
    if call.operation == "TransactGetItems":
        return [
            Permission("dynamodb:GetItem", _table_arn(item["Get"]["TableName"]))
            for item in params["TransactItems"]
        ]
    if call.operation in {"BatchGetItem", "BatchWriteItem"}:
        action = f"dynamodb:{call.operation}"
        return [Permission(action, _table_arn(table)) for table in params["RequestItems"]]
    raise UnmappedCall(str(call))


def _s3(call: AwsCall) -> list[Permission]:
    bucket = call.params["Bucket"]
    operation = call.operation
    if operation in {"GetObject", "HeadObject", "PutObject", "DeleteObject"}:
        action = "s3:GetObject" if operation == "HeadObject" else f"s3:{operation}"
        needed = [Permission(action, f"arn:aws:s3:::{bucket}/{call.params['Key']}")]
        if operation in {"GetObject", "HeadObject"} and call.error_code in {
            "404",
            "NoSuchKey",
            "NotFound",
        }:
            # S3 answers 403, not 404, for a missing key unless ListBucket is allowed.
            needed.append(Permission("s3:ListBucket", f"arn:aws:s3:::{bucket}"))
        return needed
    if operation in {"ListObjectsV2", "ListObjects", "HeadBucket"}:
        return [Permission("s3:ListBucket", f"arn:aws:s3:::{bucket}")]
    raise UnmappedCall(str(call))


def _states(call: AwsCall) -> list[Permission]:
    operation, params = call.operation, call.params
    if operation == "StartExecution":
        return [Permission("states:StartExecution", params["stateMachineArn"])]
    if operation in {"DescribeExecution", "StopExecution", "GetExecutionHistory"}:
        return [Permission(f"states:{operation}", params["executionArn"])]
    if operation in {"SendTaskSuccess", "SendTaskFailure", "SendTaskHeartbeat"}:
        return [Permission(f"states:{operation}", "*")]  # a task token is not an ARN
    raise UnmappedCall(str(call))


def _function_arn(reference: str, qualifier: str | None) -> str:
    if reference.startswith("arn:"):
        arn = reference
    elif ":function:" in reference:
        arn = f"arn:aws:lambda:{REGION}:{reference}"
    else:
        arn = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{reference}"
    return f"{arn}:{qualifier}" if qualifier else arn


def _lambda(call: AwsCall) -> list[Permission]:
    if call.operation == "Invoke":
        arn = _function_arn(call.params["FunctionName"], call.params.get("Qualifier"))
        return [Permission("lambda:InvokeFunction", arn, resource_tags=call.resource_tags)]
    if call.operation == "GetFunction":
        # Its Tags come back only with lambda:ListTags (AWS leaves them out silently).
        arn = _function_arn(call.params["FunctionName"], call.params.get("Qualifier"))
        return [Permission("lambda:GetFunction", arn), Permission("lambda:ListTags", arn)]
    if call.operation == "ListTags":
        return [Permission("lambda:ListTags", call.params["Resource"])]
    raise UnmappedCall(str(call))


def _bedrock(call: AwsCall) -> list[Permission]:
    actions = {
        "Converse": "bedrock:InvokeModel",  # there is no bedrock:Converse action
        "InvokeModel": "bedrock:InvokeModel",
        "ConverseStream": "bedrock:InvokeModelWithResponseStream",
        "InvokeModelWithResponseStream": "bedrock:InvokeModelWithResponseStream",
    }
    if call.operation not in actions:
        raise UnmappedCall(str(call))
    action, model = actions[call.operation], call.params["modelId"]
    if model.startswith("arn:"):
        return [Permission(action, model)]
    geography, _, base_model = model.partition(".")
    if geography in PROFILE_REGIONS:
        profile = f"arn:aws:bedrock:{REGION}:{ACCOUNT}:inference-profile/{model}"
        return [Permission(action, profile)] + [
            Permission(action, f"arn:aws:bedrock:{region}::foundation-model/{base_model}")
            for region in PROFILE_REGIONS[geography]
        ]
    return [Permission(action, f"arn:aws:bedrock:{REGION}::foundation-model/{model}")]


_SECRET_OPERATIONS = {"GetSecretValue", "CreateSecret", "PutSecretValue", "DeleteSecret"}


def _secrets(call: AwsCall) -> list[Permission]:
    if call.operation not in _SECRET_OPERATIONS:
        raise UnmappedCall(str(call))
    secret = call.params.get("SecretId") or call.params["Name"]
    if not secret.startswith("arn:"):  # a name: its ARN ends in six random characters
        secret = f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:{secret}-AbCdEf"
    return [Permission(f"secretsmanager:{call.operation}", secret)]


def _scheduler(call: AwsCall) -> list[Permission]:
    operation, params = call.operation, call.params
    if operation not in {"CreateSchedule", "UpdateSchedule", "DeleteSchedule"}:
        raise UnmappedCall(str(call))
    group = params.get("GroupName", "default")
    arn = f"arn:aws:scheduler:{REGION}:{ACCOUNT}:schedule/{group}/{params['Name']}"
    needed = [Permission(f"scheduler:{operation}", arn)]
    if "Target" in params:  # the Scheduler assumes the target's role: PassRole
        needed.append(Permission("iam:PassRole", params["Target"]["RoleArn"]))
    return needed


def _ssm(call: AwsCall) -> list[Permission]:
    if call.operation != "GetParameter":
        raise UnmappedCall(str(call))
    name = call.params["Name"].lstrip("/")  # a parameter's ARN drops the leading slash
    return [Permission("ssm:GetParameter", f"arn:aws:ssm:{REGION}:{ACCOUNT}:parameter/{name}")]


_CONNECTION_VERBS = {
    "PostToConnection": "POST",
    "DeleteConnection": "DELETE",
    "GetConnection": "GET",
}


def _manage_connections(call: AwsCall) -> list[Permission]:
    """`https://<api>.execute-api.<region>…/<stage>` + the verb and connection of the call."""
    from urllib.parse import urlsplit

    verb = _CONNECTION_VERBS.get(call.operation)
    if verb is None:
        raise UnmappedCall(str(call))
    url = urlsplit(call.endpoint)
    api, stage = (url.hostname or "").split(".")[0], url.path.strip("/")
    arn = (
        f"arn:aws:execute-api:{REGION}:{ACCOUNT}:{api}/{stage}/{verb}/@connections/"
        f"{call.params['ConnectionId']}"
    )
    return [Permission("execute-api:ManageConnections", arn)]


_BY_SERVICE = {
    "apigatewaymanagementapi": _manage_connections,
    "dynamodb": _dynamodb,
    "s3": _s3,
    "stepfunctions": _states,
    "lambda": _lambda,
    "bedrock-runtime": _bedrock,
    "secretsmanager": _secrets,
    "scheduler": _scheduler,
    "ssm": _ssm,
}


def permissions_for(call: AwsCall) -> list[Permission]:
    """The IAM authorizations AWS checks for `call` (UnmappedCall when not known here)."""
    mapper = _BY_SERVICE.get(call.service)
    if mapper is None:
        raise UnmappedCall(str(call))
    return mapper(call)
