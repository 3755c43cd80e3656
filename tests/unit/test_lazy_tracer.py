"""The tracer loads the X-Ray SDK on the first sampled invocation and then records what the
eager powertools Tracer did: the `## handler` subsegment (ColdStart, Service) and one
subsegment per AWS call. Each case runs in a fresh interpreter with a UDP socket standing in
for the X-Ray daemon, since loading the SDK patches botocore for the whole process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

_CASE = """
import json, os, socket, sys
daemon = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
daemon.bind(("127.0.0.1", 0))
daemon.settimeout(0.5)
os.environ["AWS_XRAY_DAEMON_ADDRESS"] = "127.0.0.1:%d" % daemon.getsockname()[1]
sys.path.insert(0, {layer!r})

import boto3
from moto import mock_aws

from agentworks.observability import tracer

@tracer.capture_lambda_handler(capture_response=False)
def handler(event, context):
    boto3.client("sqs", region_name="us-east-1").list_queues()
    return event

seen = []
with mock_aws():
    for n, sampled in enumerate({samples!r}):
        os.environ["_X_AMZN_TRACE_ID"] = (
            "Root=1-5759e988-bd862e3fe1be46a99427279%d;Parent=53995c3f42cd8ad%d;Sampled=%d"
            % (n, n, sampled)
        )
        assert handler({{"n": n}}, None) == {{"n": n}}
        seen.append("aws_xray_sdk" in sys.modules)
segments = []
while True:
    try:
        packet = daemon.recv(65536).decode()
    except TimeoutError:
        break
    document = json.loads(packet.split("\\n", 1)[1])
    keys = ("trace_id", "parent_id", "name", "annotations")
    segments.append({{k: document.get(k) for k in keys}})
print(json.dumps({{"sdk_loaded": seen, "segments": segments}}))
"""


def _run(samples: list[int], **environment: str) -> dict[str, Any]:
    env = {
        "PATH": "/usr/bin:/bin",
        "LAMBDA_TASK_ROOT": str(ROOT),
        "AWS_LAMBDA_FUNCTION_NAME": "agentworks-test",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "POWERTOOLS_SERVICE_NAME": "agentworks",
        **environment,
    }
    script = _CASE.format(layer=str(ROOT / "layers" / "agentworks"), samples=samples)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _handler_segments(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in result["segments"] if s["name"] == "## handler"]


def test_unsampled_invocations_never_load_the_sdk() -> None:
    result = _run([0, 0])
    assert result == {"sdk_loaded": [False, False], "segments": []}


def test_the_first_sampled_invocation_is_traced_as_before() -> None:
    result = _run([1, 0, 1])
    assert result["sdk_loaded"] == [True, True, True]
    handlers = _handler_segments(result)
    assert [s["trace_id"][-1] for s in handlers] == ["0", "2"]  # nothing for the unsampled
    assert handlers[0]["parent_id"] == "53995c3f42cd8ad0"  # under Lambda's own segment
    assert handlers[0]["annotations"] == {"ColdStart": True, "Service": "agentworks"}
    assert handlers[1]["annotations"]["ColdStart"] is False
    calls = [s for s in result["segments"] if s["name"] == "sqs"]
    assert len(calls) == 2


def test_a_cold_start_spent_unsampled_is_not_annotated_on_the_next() -> None:
    result = _run([0, 1])
    assert result["sdk_loaded"] == [False, True]
    (handler,) = _handler_segments(result)
    assert handler["annotations"]["ColdStart"] is False


def test_disabled_tracing_never_loads_the_sdk() -> None:
    assert _run([1], POWERTOOLS_TRACE_DISABLED="true")["sdk_loaded"] == [False]
    assert _run([1], AWS_SAM_LOCAL="true")["sdk_loaded"] == [False]
