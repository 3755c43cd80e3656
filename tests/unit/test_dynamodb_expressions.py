"""The local DynamoDB's placeholder checks (agentworks_local.dynamodb_expressions), each
refusal worded as DynamoDB words it, and a request through moto that only they refuse."""

from __future__ import annotations

import boto3
import pytest
from botocore.exceptions import ClientError

from agentworks_local.dynamodb_expressions import problem

PK = {":pk": {"S": "a"}}


def test_a_request_whose_placeholders_match_passes() -> None:
    assert problem({"KeyConditionExpression": "pk = :pk", "ExpressionAttributeValues": PK}) is None
    assert problem({"TableName": "t", "Key": {}}) is None  # no expressions, no values
    assert (
        problem(
            {
                "UpdateExpression": "SET #s = :s",
                "ConditionExpression": "#s <> :s AND attribute_exists(pk)",
                "ExpressionAttributeNames": {"#s": "status"},
                "ExpressionAttributeValues": {":s": {"S": "x"}},
            }
        )
        is None
    )


@pytest.mark.parametrize(
    ("request_", "refusal"),
    [
        (
            {"KeyConditionExpression": "pk = :PK", "ExpressionAttributeValues": PK},
            "Invalid KeyConditionExpression: An expression attribute value used in expression "
            "is not defined; attribute value: :PK",
        ),
        (
            {"KeyConditionExpression": "pk = :pk",
             "ExpressionAttributeValues": {**PK, ":b": {"S": "b"}, ":a": {"S": "a"}}},
            "Value provided in ExpressionAttributeValues unused in expressions: keys: {:a, :b}",
        ),
        (
            {"FilterExpression": "#x = :pk", "ExpressionAttributeValues": PK},
            "Invalid FilterExpression: An expression attribute name used in the document path "
            "is not defined; attribute name: #x",
        ),
        (
            {"TableName": "t", "ExpressionAttributeValues": PK},
            "ExpressionAttributeValues can only be specified when using expressions",
        ),
        (
            {"ConditionExpression": "attribute_exists(pk)", "ExpressionAttributeValues": {}},
            "ExpressionAttributeValues must not be empty",
        ),
        (
            {"ProjectionExpression": "pk", "ExpressionAttributeNames": {}},
            "ExpressionAttributeNames must not be empty",
        ),
    ],
)  # fmt: skip
def test_what_dynamodb_refuses_is_refused_in_its_words(request_, refusal) -> None:
    assert problem(request_) == refusal


def test_moto_answers_a_misspelt_placeholder_with_dynamodbs_refusal() -> None:
    from moto import mock_aws

    from agentworks_local import moto_patches

    moto_patches.apply()
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(
            TableName="t",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        with pytest.raises(ClientError) as refused:
            client.query(
                TableName="t", KeyConditionExpression="pk = :Pk", ExpressionAttributeValues=PK
            )
        assert refused.value.response["Error"]["Code"] == "ValidationException"
        with pytest.raises(ClientError):  # inside a transaction too
            client.transact_write_items(
                TransactItems=[
                    {"Put": {"TableName": "t", "Item": {"pk": {"S": "a"}},
                             "ConditionExpression": "attribute_not_exists(pk)",
                             "ExpressionAttributeValues": PK}}
                ]
            )  # fmt: skip
        assert client.scan(TableName="t")["Count"] == 0  # nothing was written
