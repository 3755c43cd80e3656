"""`make run`'s console holds one line per request: what the functions print (powertools
logs, EMF metrics, tracebacks) and what moto's server logs go to the function log file,
as CloudWatch Logs would keep them (README, "Development")."""

from __future__ import annotations

import io
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from agentworks_local import unavailable
from agentworks_local.dev import route_aws_logs
from agentworks_local.handlers import (
    FunctionError,
    FunctionHost,
    FunctionOutput,
    FunctionSpec,
)

HANDLER = """
import json
from aws_lambda_powertools import Logger
from aws_lambda_powertools.metrics import MetricUnit, single_metric

logger = Logger(service="console-test")  # binds sys.stdout at import, as observability does


def handler(event, context):
    logger.warning("a powertools log line")
    with single_metric(name="Probe", unit=MetricUnit.Count, value=1, namespace="T"):
        pass
    print(json.dumps({"_aws": {"CloudWatchMetrics": []}, "Probe": 1}))
    if event.get("fail"):
        raise RuntimeError("boom")
    return {"ok": True}
"""


@contextmanager
def console_and_host(tmp_path: Path) -> Iterator[tuple[FunctionHost, FunctionOutput, Any, Any]]:
    """A FunctionHost whose output is installed over a fake console (inside the test:
    pytest puts its own capture streams back between fixture setup and the test)."""
    console_out, console_err = io.StringIO(), io.StringIO()
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = console_out, console_err
    code = tmp_path / "fn"
    code.mkdir(exist_ok=True)
    (code / "app.py").write_text(HANDLER)
    spec = FunctionSpec("ProbeFunction", code, "app.handler", 128, 3)
    output = FunctionOutput(tmp_path / "logs" / "dev-functions.log")
    output.install()
    try:
        yield FunctionHost({"ProbeFunction": spec}, output), output, console_out, console_err
    finally:
        output.uninstall()
        sys.stdout, sys.stderr = saved


def test_function_output_goes_to_the_log_file_never_the_console(tmp_path: Path) -> None:
    with console_and_host(tmp_path) as (functions, output, console_out, console_err):
        _run_probe(functions, output)
    log = output.path.read_text()
    assert "a powertools log line" in log and '"Probe"' in log
    assert "Traceback" in log and "RuntimeError: boom" in log
    assert console_out.getvalue() == ""
    assert console_err.getvalue() == "GET /v1/whoami 200 3ms\n"


def _run_probe(functions: FunctionHost, output: FunctionOutput) -> None:
    print("GET /v1/whoami 200 3ms", file=sys.stderr)  # a request line: the console's own
    assert functions.invoke("ProbeFunction", {}) == {"ok": True}
    with pytest.raises(FunctionError):
        functions.invoke("ProbeFunction", {"fail": True})
    output.flush()


def test_moto_server_errors_go_to_the_log_file(tmp_path: Path) -> None:
    root, werkzeug = logging.getLogger(), logging.getLogger("werkzeug")
    saved = list(root.handlers), list(werkzeug.handlers), werkzeug.level, werkzeug.propagate
    with console_and_host(tmp_path) as (_, output, console_out, console_err):
        try:
            _log_as_moto(output)
        finally:
            root.handlers[:], werkzeug.handlers[:] = saved[0], saved[1]
            werkzeug.setLevel(saved[2])
            werkzeug.propagate = saved[3]
    log = output.path.read_text()
    assert "Error on request:" in log and "NotImplementedError" in log
    assert "POST / 200" not in log
    assert "a warning from moto's thread" in log
    assert console_out.getvalue() == console_err.getvalue() == ""


def _log_as_moto(output: FunctionOutput) -> None:
    route_aws_logs(output)
    try:
        raise NotImplementedError("The converse action has not been implemented")
    except NotImplementedError:
        logging.getLogger("werkzeug").exception("Error on request:")
    logging.getLogger("werkzeug").info("127.0.0.1 - POST / 200")  # per-call lines: dropped
    logging.getLogger("moto.stepfunctions").warning("a warning from moto's thread")
    output.flush()


def test_bedrock_on_the_local_stack_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Crew with the bedrock adapter fails its call with a message naming the local stack,
    not moto's `500 <!doctype html>`; nothing is sent anywhere."""
    from agentworks.crews.adapters.base import AdapterError, TurnRequest
    from agentworks.crews.adapters.bedrock import BedrockAdapter

    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens there
    session = boto3.Session(
        region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    unavailable.install(session)
    client = session.client("bedrock-runtime")
    with pytest.raises(ClientError) as refused:
        client.converse(modelId="m", messages=[])
    error = refused.value.response["Error"]
    assert error["Code"] == unavailable.ERROR_CODE
    assert error["Message"].startswith("Bedrock is not available on the local stack; ")
    settings = {"type": "bedrock", "model_id": "us.anthropic.x"}
    adapter = BedrockAdapter(settings, lambda: client)
    request = TurnRequest(
        crew_name="c", instructions="i", settings=settings, kind="function", prompt="p",
        function="f", args={},
    )  # fmt: skip
    with pytest.raises(AdapterError, match="Bedrock is not available on the local stack; "):
        adapter.run_turn(request)
