"""`agentworks ops prune-versions`: McpFunction's old published versions go, the newest
few and every aliased one stay."""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import boto3
import pytest
from moto import mock_aws

from agentworks_cli.main import main
from agentworks_cli.versions import prune_versions

NAME = "agentworks-McpFunction-A1B2C3"


def _code(text: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("app.py", f"def handler(e, c):\n    return {text!r}\n")
    return buffer.getvalue()


@pytest.fixture
def lambdas() -> Any:
    with mock_aws():
        client = boto3.client("lambda", region_name="us-east-1")
        iam = boto3.client("iam", region_name="us-east-1")
        role = iam.create_role(RoleName="r", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
        client.create_function(
            FunctionName=NAME,
            Runtime="python3.12",
            Role=role,
            Handler="app.handler",
            Code={"ZipFile": _code("0")},
        )
        for deploy in range(1, 7):  # six deploys, six versions
            client.update_function_code(FunctionName=NAME, ZipFile=_code(str(deploy)))
            client.publish_version(FunctionName=NAME)
        yield client


def _left(client: Any) -> list[str]:
    versions = client.list_versions_by_function(FunctionName=NAME)["Versions"]
    return sorted((v["Version"] for v in versions if v["Version"] != "$LATEST"), key=int)


def test_the_newest_and_the_aliased_versions_stay(lambdas):
    lambdas.create_alias(FunctionName=NAME, Name="live", FunctionVersion="2")
    fates = {f.version: f.outcome for f in prune_versions(lambdas, NAME, keep=2)}
    assert fates == {
        "1": "deleted",
        "2": "kept (alias live)",
        "3": "deleted",
        "4": "deleted",
        "5": "kept (newest)",
        "6": "kept (newest)",
    }
    assert _left(lambdas) == ["2", "5", "6"]


def test_a_dry_run_deletes_nothing(lambdas):
    fates = prune_versions(lambdas, NAME, keep=3, dry_run=True)
    assert [f.outcome for f in fates].count("would delete") == 3
    assert _left(lambdas) == ["1", "2", "3", "4", "5", "6"]


def test_the_command_prints_what_it_did(lambdas, capsys, monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    assert main(["ops", "prune-versions", "--function", NAME, "--keep", "4", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert [p["outcome"] for p in printed][:2] == ["deleted", "deleted"]
    assert _left(lambdas) == ["3", "4", "5", "6"]
    assert main(["ops", "prune-versions", "--function", NAME, "--keep", "0"]) != 0
