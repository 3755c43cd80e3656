"""Where the platform is called back: the HTTP API's URL (relay code, the web pages' origin,
an external A2A agent's push notifications).

Deployed, the relay runner cannot be given the URL in its environment: the API's routes
reach a function that starts relay runs, whose machine invokes the runner, so a `!Sub` of
the API in the runner's environment closes a dependency cycle CloudFormation rejects. The
template writes the URL to an SSM parameter instead and names the parameter
(PLATFORM_API_URL_PARAMETER); the runner reads it once per container, on its first
attempt. The local stack and the tests set PLATFORM_API_URL directly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

SsmClient = Callable[[], Any]


class PlatformUrl:
    """The API URL, given (`url`) or read once from the SSM parameter `parameter`."""

    def __init__(self, url: str = "", parameter: str = "", ssm: SsmClient | None = None) -> None:
        self._url = url
        self._parameter = parameter
        self._ssm = ssm

    def __call__(self) -> str:
        if not self._url and self._parameter:
            self._url = self._read()
        return self._url

    def _read(self) -> str:
        if self._ssm is None:
            from agentworks.aws_clients import ssm

            self._ssm = ssm
        answer = self._ssm().get_parameter(Name=self._parameter)
        return str(answer["Parameter"]["Value"]).rstrip("/")
