"""What fences relay code in on the local stack (issue 24 §2), part by part: the embedded AWS
answers only the stack's keys, a run's credential reaches its process on a pipe, and the
function runs an account's relays unsandboxed only where the stack allowed it."""

from __future__ import annotations

import io
import json
import sys
import urllib.request
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from agentworks_local.aws_auth import StackKeys
from agentworks_local.aws_server import AwsServer
from agentworks_local.relay_sandbox import RelaySandbox

sys.path.append(str(Path(__file__).resolve().parents[2] / "functions" / "relay_code"))
from relay_isolation import UNSANDBOXED_REFUSAL, Isolation, account_of


@pytest.fixture(scope="module")
def endpoint() -> Any:
    keys = StackKeys.generate()
    server = AwsServer(keys=keys)
    server.start()
    try:
        yield server, keys
    finally:
        server.stop()


def _client(server: AwsServer, service: str, key: str, secret: str) -> Any:
    return boto3.client(
        service,
        endpoint_url=server.url,
        region_name="us-east-1",
        aws_access_key_id=key,
        aws_secret_access_key=secret,
    )


def test_the_stacks_keys_reach_every_service_the_stack_uses(endpoint: Any) -> None:
    server, keys = endpoint
    key, secret = keys.access_key_id, keys.secret_access_key
    dynamodb = _client(server, "dynamodb", key, secret)
    dynamodb.create_table(
        TableName="signed",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    dynamodb.put_item(TableName="signed", Item={"pk": {"S": "ü/ +x"}})
    assert dynamodb.scan(TableName="signed")["Count"] == 1
    s3 = _client(server, "s3", key, secret)
    s3.create_bucket(Bucket="signed-bucket")
    s3.put_object(Bucket="signed-bucket", Key="a b/ü+x.txt", Body=b"body")
    assert s3.get_object(Bucket="signed-bucket", Key="a b/ü+x.txt")["Body"].read() == b"body"
    s3.upload_fileobj(io.BytesIO(b"y" * 9_000_000), "signed-bucket", "multipart")  # chunked
    assert s3.head_object(Bucket="signed-bucket", Key="multipart")["ContentLength"] == 9_000_000
    secrets = _client(server, "secretsmanager", key, secret)
    secrets.create_secret(Name="signed", SecretString="v")
    assert secrets.get_secret_value(SecretId="signed")["SecretString"] == "v"
    assert "stateMachines" in _client(server, "stepfunctions", key, secret).list_state_machines()


@pytest.mark.parametrize(
    "who", ["the keys every local stack used to take", "the stack's key id, a wrong secret"]
)
def test_any_other_signature_is_refused_before_moto_sees_it(endpoint: Any, who: str) -> None:
    server, keys = endpoint
    key, secret = (
        ("agentworks-local", "agentworks-local")
        if who.startswith("the keys")
        else (keys.access_key_id, "not-the-secret")
    )
    with pytest.raises(ClientError) as refused:
        _client(server, "dynamodb", key, secret).list_tables()
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    assert "signed with the stack's own keys" in str(refused.value)


@pytest.mark.parametrize("path", ["/moto-api/data.json", "/moto-api/reset"])
def test_mocks_own_api_is_refused_on_the_socket(endpoint: Any, path: str) -> None:
    server, _ = endpoint
    method = "POST" if path.endswith("reset") else "GET"
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with pytest.raises(urllib.error.HTTPError) as refused:
        opener.open(urllib.request.Request(server.url + path, method=method), timeout=5)
    assert refused.value.code == 403


def test_a_sandboxed_or_lambda_attempt_runs_for_any_account() -> None:
    assert (
        Isolation(sandbox="bwrap", unsandboxed_accounts=frozenset({"acct_a"})).refusal("acct_b")
        is None
    )
    assert Isolation().refusal("acct_b") is None  # Lambda: neither setting is there


def test_unsandboxed_only_the_allowed_accounts_run() -> None:
    first_only = Isolation(unsandboxed_accounts=frozenset({"acct_a"}))
    assert first_only.refusal("acct_a") is None
    assert first_only.refusal("acct_b") == UNSANDBOXED_REFUSAL
    assert first_only.refusal("") == UNSANDBOXED_REFUSAL  # a malformed credential
    assert Isolation(unsandboxed_accounts=frozenset({"*"})).refusal("acct_b") is None


def test_the_stack_tells_the_function_what_it_found() -> None:
    assert RelaySandbox("bwrap").environment("acct_a", False) == {"RELAY_SANDBOX": "bwrap"}
    none = RelaySandbox("", "bubblewrap (bwrap) is not installed")
    assert none.environment("acct_a", False) == {"RELAY_UNSANDBOXED_ACCOUNTS": "acct_a"}
    assert none.environment("acct_a", True) == {"RELAY_UNSANDBOXED_ACCOUNTS": "*"}


def test_the_sandbox_command_binds_only_what_the_attempt_needs(tmp_path: Path) -> None:
    command = Isolation(sandbox="bwrap").command(["python", "-I"], tmp_path, [Path("/sdk")])
    assert command[0] == "bwrap" and command[-3:] == ["--", "python", "-I"]
    joined = " ".join(command)
    for flag in ("--unshare-user", "--unshare-pid", "--die-with-parent", "--proc /proc"):
        assert flag in joined
    writable = [command[i + 1] for i, word in enumerate(command) if word == "--bind"]
    assert writable == [str(tmp_path)]
    assert "--ro-bind /sdk /sdk" in joined and str(Path.home()) + " " not in joined
    assert Isolation().command(["python"], tmp_path, []) == ["python"]


def test_the_account_is_read_from_the_run_credential() -> None:
    assert account_of("awr1.acct_1.rrun_2.secret") == "acct_1"
    assert account_of("aw1.something") == "" and account_of("") == ""


def test_the_credential_is_not_in_the_relay_processes_environment() -> None:
    from tests.support.handlers import load_handler

    relay_app = load_handler("relay_code")
    environment = relay_app._environment(
        {"api_url": "http://x", "credential": "awr1.a.b.c", "run_id": "r", "relay": "x",
         "attempt": 1},
        Path("/home"),
    )  # fmt: skip
    assert not any("awr1." in value for value in environment.values())
    assert json.dumps(environment).count("CREDENTIAL") == 0
