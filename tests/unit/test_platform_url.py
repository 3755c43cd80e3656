"""Where relay code calls back: given directly (local stack), or read once from SSM."""

from __future__ import annotations

from typing import Any

import boto3
from moto import mock_aws

from agentworks.platform_url import PlatformUrl
from agentworks.settings import settings_from

NAME = "/agentworks/api-url"


class CountingSsm:
    def __init__(self, client: Any) -> None:
        self.client = client
        self.reads = 0

    def get_parameter(self, **params: Any) -> Any:
        self.reads += 1
        return self.client.get_parameter(**params)


def test_the_url_is_read_from_the_parameter_once_per_container():
    with mock_aws():
        client = boto3.client("ssm", region_name="us-east-1")
        client.put_parameter(Name=NAME, Value="https://abc.execute-api.test/", Type="String")
        ssm = CountingSsm(client)
        url = PlatformUrl(parameter=NAME, ssm=lambda: ssm)
        assert url() == "https://abc.execute-api.test"
        assert url() == "https://abc.execute-api.test"
        assert ssm.reads == 1


def test_a_given_url_wins_and_reads_nothing():
    def no_ssm() -> Any:
        raise AssertionError("the local stack's PLATFORM_API_URL needs no SSM read")

    assert PlatformUrl("http://127.0.0.1:8787", NAME, no_ssm)() == "http://127.0.0.1:8787"


def test_settings_name_the_parameter():
    required = {"IDENTITY_TABLE": "ids", "MESSAGES_TABLE": "msgs", "SIGNING_SECRET_ARN": "arn"}
    settings = settings_from({**required, "PLATFORM_API_URL_PARAMETER": NAME})
    assert settings.platform_api_url_parameter == NAME
    assert settings.platform_api_url == ""
