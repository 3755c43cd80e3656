"""The platform's HTTP API with this run's credential (standard library only).

Every call is authenticated anew: a revoked caller's run is refused at its next call
(PlatformError with status 401), whatever its code does.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from typing import Any


class PlatformError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"the platform answered {status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message


# The run's credential, handed over by relay_child.py from its standard input: never in the
# environment, where another process of the same user could read it.
_run_credential = ""


def receive_credential(credential: str) -> None:
    global _run_credential
    _run_credential = credential


class Platform:
    def __init__(self, api_url: str | None = None, credential: str | None = None) -> None:
        self._url = (api_url or os.environ.get("AGENTWORKS_API_URL", "")).rstrip("/")
        self._own_credential = credential

    @property
    def _credential(self) -> str:
        return self._own_credential or _run_credential

    def request(self, method: str, path: str, body: Any = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            self._url + path,
            data=data,
            method=method,
            headers={
                "Authorization": f"Bearer {self._credential}",
                "Content-Type": "application/json",
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                text = response.read()
        except urllib.error.HTTPError as error:
            raw = error.read()
            try:
                problem = json.loads(raw).get("error", {})
            except ValueError:
                problem = {}
            raise PlatformError(
                error.code,
                str(problem.get("code", "error")),
                str(problem.get("message", raw[:200])),
            ) from None
        return json.loads(text) if text else None

    # -- the two contracts: messages and functions ---------------------------------------

    def send(
        self,
        message: str,
        target: str | None = None,
        inbox_id: str | None = None,
        agent_name: str | None = None,
        submission_id: str | None = None,
    ) -> dict[str, Any]:
        body = {
            "message": message,
            "target": target,
            "inbox_id": inbox_id,
            "agent_name": agent_name,
            "submission_id": submission_id,
        }
        return dict(self.request("POST", "/v1/messages", _present(body)))

    def call(
        self,
        target: str,
        function: str,
        args: dict[str, Any] | None = None,
        submission_id: str | None = None,
    ) -> dict[str, Any]:
        body = {
            "target": target,
            "function": function,
            "args": args or {},
            "submission_id": submission_id,
        }
        return dict(self.request("POST", "/v1/calls", _present(body)))

    def call_status(self, call_id: str) -> dict[str, Any]:
        return dict(self.request("GET", f"/v1/calls/{urllib.parse.quote(call_id)}"))

    # -- durable steps (agentworks_relay._steps) -----------------------------------------

    def _step_path(self, name: str, verb: str) -> str:
        relay = os.environ.get("AGENTWORKS_RELAY", "")
        run = os.environ.get("AGENTWORKS_RUN_ID", "")
        return f"/api/relays/{relay}/runs/{run}/steps/{urllib.parse.quote(name, safe='')}/{verb}"

    def start_step(self, name: str, safe: bool) -> dict[str, Any]:
        return dict(self.request("POST", self._step_path(name, "start"), {"safe": safe}))

    def finish_step(self, name: str, result: Any) -> None:
        self.request("POST", self._step_path(name, "finish"), {"result": result})

    def abandon_step(self, name: str) -> None:
        self.request("POST", self._step_path(name, "abandon"), {})


def _present(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if v is not None}


platform = Platform()
