"""The stack's own AWS calls go to the embedded endpoint's app without a socket
(agentworks_local/in_process.py): the same answers as over HTTP, errors included, writes still
journaled, and requests for anything else left to botocore."""

from __future__ import annotations

import contextlib
import io
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, EndpointConnectionError

from agentworks_local import moto_patches
from agentworks_local.aws_server import AwsServer
from agentworks_local.durable_state import DataDir, DurableState
from agentworks_local.in_process import InProcessTransport, call_app, wsgi_environ

# Nothing listens here: a request that reached a socket would fail to connect.
UNSERVED = "http://127.0.0.1:9"
TABLE = "in-process"
NO_RETRIES = Config(retries={"max_attempts": 1}, connect_timeout=1)


def _forget_everything() -> None:
    from moto.moto_api._internal.models import moto_api_backend

    moto_api_backend.reset()


@pytest.fixture(autouse=True)
def clean_moto() -> Iterator[None]:
    moto_patches.apply()
    _forget_everything()
    yield
    _forget_everything()


def _session(app: Any, url: str = UNSERVED) -> boto3.Session:
    session = boto3.Session(
        aws_access_key_id="k", aws_secret_access_key="s", region_name="us-east-1"
    )
    InProcessTransport(app, url).attach(session)
    return session


def _table(dynamodb: Any) -> None:
    dynamodb.create_table(
        TableName=TABLE,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )


def test_calls_are_served_without_a_socket_with_errors_as_over_http() -> None:
    session = _session(AwsServer().app)
    dynamodb = session.client("dynamodb", endpoint_url=UNSERVED, config=NO_RETRIES)
    _table(dynamodb)
    dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": "a"}, "n": {"N": "1"}})
    assert dynamodb.get_item(TableName=TABLE, Key={"pk": {"S": "a"}})["Item"]["n"] == {"N": "1"}
    with pytest.raises(ClientError) as refused:
        dynamodb.put_item(
            TableName=TABLE, Item={"pk": {"S": "a"}}, ConditionExpression="attribute_not_exists(pk)"
        )
    assert refused.value.response["Error"]["Code"] == "ConditionalCheckFailedException"
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400


def test_s3_bodies_and_underscored_metadata_arrive_as_over_http() -> None:
    session = _session(AwsServer().app)
    s3 = session.client("s3", endpoint_url=UNSERVED, config=NO_RETRIES)
    s3.create_bucket(Bucket="in-process-files")
    payload = bytes(range(256)) * 1000
    s3.put_object(
        Bucket="in-process-files", Key="a/b.bin", Body=io.BytesIO(payload),
        Metadata={"sha_256": "abc"},
    )  # fmt: skip
    got = s3.get_object(Bucket="in-process-files", Key="a/b.bin")
    assert got["Body"].read() == payload
    assert got["Metadata"] == {"sha_256": "abc"}


def test_writes_served_in_process_are_journaled(tmp_path: Path) -> None:
    data = DataDir(tmp_path / "data")
    data.lock()
    server = AwsServer(DurableState(data))
    server.restore()
    dynamodb = _session(server.app).client("dynamodb", endpoint_url=UNSERVED, config=NO_RETRIES)
    _table(dynamodb)
    dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": "kept"}})
    server.stop(fold=False)  # a crash: only the journal holds the writes
    data.unlock()
    _forget_everything()

    data.lock()
    again = AwsServer(DurableState(data))
    assert again.restore().replayed == 2  # CreateTable and PutItem
    dynamodb = _session(again.app).client("dynamodb", endpoint_url=UNSERVED, config=NO_RETRIES)
    assert dynamodb.get_item(TableName=TABLE, Key={"pk": {"S": "kept"}})["Item"]
    again.stop(fold=False)
    data.unlock()


def test_requests_for_another_address_are_left_to_botocore() -> None:
    served: list[str] = []

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        served.append(environ["PATH_INFO"])
        start_response("200 OK", [])
        return [b"{}"]

    session = _session(app, url="http://127.0.0.1:10")  # another port than the client's
    dynamodb = session.client("dynamodb", endpoint_url=UNSERVED, config=NO_RETRIES)
    with pytest.raises(EndpointConnectionError):
        dynamodb.list_tables()
    assert served == []


def test_an_app_that_fails_answers_500_as_a_server_does() -> None:
    def broken(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        raise RuntimeError("boom")

    environ = wsgi_environ("POST", "/", "", {"Content-Type": "x"}, b"{}", "127.0.0.1:9")
    status, _, body = call_app(broken, environ)
    assert status == 500 and b"RuntimeError: boom" in body
    dynamodb = _session(broken).client("dynamodb", endpoint_url=UNSERVED, config=NO_RETRIES)
    with pytest.raises(ClientError) as failed:
        dynamodb.list_tables()
    assert failed.value.response["ResponseMetadata"]["HTTPStatusCode"] == 500


def test_headers_become_the_environ_werkzeug_builds() -> None:
    environ = wsgi_environ(
        "PUT", "/b/k", "x=1",
        {"Content-Type": "text/plain", "X-Amz-Meta-A_b": "1", "X_Spoof": "no", "Host": "h:1"},
        b"abc", "h:1",
    )  # fmt: skip
    assert environ["CONTENT_TYPE"] == "text/plain"
    assert environ["CONTENT_LENGTH"] == "3"
    assert environ["HTTP_X_AMZ_META_A_B"] == "1"
    assert "HTTP_X_SPOOF" not in environ
    assert environ["moto.preserved_header_names"] == {"HTTP_X_AMZ_META_A_B": "X-Amz-Meta-A_b"}
    assert (environ["SERVER_NAME"], environ["SERVER_PORT"]) == ("h", "1")
    assert environ["wsgi.input"].read() == b"abc"


def _answers_of(app: Any) -> list[tuple[int, str, bytes]]:
    """(status, content type, body) of a run of DynamoDB requests, errors included."""
    session = _session(app)
    dynamodb = session.client("dynamodb", endpoint_url=UNSERVED, config=NO_RETRIES)
    _table(dynamodb)  # its answer carries the creation time: not compared
    answers: list[tuple[int, str, bytes]] = []

    def keep(http_response: Any, **_: Any) -> None:
        body, headers = http_response.content, http_response.headers
        answers.append((http_response.status_code, headers["Content-Type"], body))
        assert int(headers["x-amz-crc32"]) == zlib.crc32(body)

    dynamodb.meta.events.register("after-call.dynamodb", keep)
    key = {"pk": {"S": "a"}}
    by_key = {"KeyConditionExpression": "pk = :a", "ExpressionAttributeValues": {":a": key["pk"]}}
    bad_key = {**by_key, "KeyConditionExpression": "nope = :a"}
    requests: list[tuple[str, dict[str, Any]]] = [
        ("put_item", {"Item": {**key, "n": {"N": "1"}, "b": {"B": b"\x00\xff"}}}),
        ("put_item", {"Item": key, "ConditionExpression": "attribute_not_exists(pk)"}),
        ("get_item", {"Key": key}),
        ("update_item", {
            "Key": key, "UpdateExpression": "ADD n :one",
            "ExpressionAttributeValues": {":one": {"N": "1"}}, "ReturnValues": "ALL_NEW",
        }),
        ("query", by_key),
        ("query", bad_key),
        ("delete_item", {"Key": key, "ReturnValues": "ALL_OLD"}),
        ("get_item", {"Key": {"wrong": {"S": "a"}}}),
    ]  # fmt: skip
    for operation, params in requests:
        with contextlib.suppress(ClientError):
            getattr(dynamodb, operation)(TableName=TABLE, **params)
    check = {"TableName": TABLE, "Key": key, "ConditionExpression": "attribute_exists(pk)"}
    with contextlib.suppress(ClientError):
        dynamodb.transact_write_items(TransactItems=[{"ConditionCheck": check}])
    with contextlib.suppress(ClientError):
        dynamodb.get_item(TableName="no-such-table", Key=key)
    return answers


def test_dynamodb_direct_answers_byte_for_byte_as_moto_server_app() -> None:
    """The Flask-less path (DynamoDBDirect) gives the same status, content type and body
    as moto's server app for successes and each kind of error, with a matching CRC32."""
    from agentworks_local.in_process import DynamoDBDirect

    through_flask = _answers_of(AwsServer().moto_app)
    _forget_everything()
    direct = _answers_of(DynamoDBDirect(AwsServer().moto_app))
    assert direct == through_flask
    assert len(direct) >= 8 and {status for status, _, _ in direct} >= {200, 400}


def test_dynamodb_direct_fails_as_moto_server_app_on_requests_moto_cannot_take() -> None:
    """An unknown action or a body without the table name makes moto raise; both paths
    answer the same 500 (and a table that does not exist the same 400)."""
    from agentworks_local.in_process import DynamoDBDirect

    auth = (
        "AWS4-HMAC-SHA256 Credential=k/20261201/us-east-1/dynamodb/aws4_request, "
        "SignedHeaders=host, Signature=0"
    )
    cases = [
        ("NoSuchAction", b"{}"),
        ("GetItem", b"{}"),
        ("GetItem", b'{"TableName": "absent", "Key": {"pk": {"S": "a"}}}'),
    ]
    for action, body in cases:
        headers = {
            "X-Amz-Target": f"DynamoDB_20120810.{action}",
            "Content-Type": "application/x-amz-json-1.0",
            "Authorization": auth,
        }
        answers = [
            call_app(app, wsgi_environ("POST", "/", "", headers, body, "127.0.0.1:9"))
            for app in (AwsServer().moto_app, DynamoDBDirect(AwsServer().moto_app))
        ]
        (flask_status, _, flask_body), (direct_status, _, direct_body) = answers
        assert (direct_status, direct_body) == (flask_status, flask_body)
        assert direct_status == (400 if b"absent" in body else 500)


def test_install_and_uninstall_route_new_sessions_and_then_stop() -> None:
    import botocore.handlers

    from agentworks_local import in_process

    before = list(botocore.handlers.BUILTIN_HANDLERS)
    transport = in_process.install(AwsServer().app, UNSERVED)
    try:
        dynamodb = boto3.Session(
            aws_access_key_id="k", aws_secret_access_key="s", region_name="us-east-1"
        ).client("dynamodb", endpoint_url=UNSERVED, config=NO_RETRIES)
        assert dynamodb.list_tables()["TableNames"] == []  # served in process
        assert ("before-send", transport) in botocore.handlers.BUILTIN_HANDLERS
    finally:
        in_process.uninstall()
    assert before == botocore.handlers.BUILTIN_HANDLERS
    after = boto3.Session(
        aws_access_key_id="k", aws_secret_access_key="s", region_name="us-east-1"
    ).client("dynamodb", endpoint_url=UNSERVED, config=NO_RETRIES)
    with pytest.raises(EndpointConnectionError):
        after.list_tables()  # over HTTP again: nothing listens there
