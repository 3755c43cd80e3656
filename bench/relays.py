"""Relay runs (issue 9): Step Functions state transitions and DynamoDB requests of a run of
N durable steps (N = 1, 5, 10), and what a checkpointed `await step(...)` costs over a plain
call of the same function, through the real API, relay-runner and relay-code handlers on
moto with its Step Functions executor. The relay code runs in a process of its own and
calls the API back over HTTP, through a loopback gateway, as it does on AWS."""

from __future__ import annotations

import contextlib
import io
import statistics
import textwrap
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

import boto3
import yaml
from moto import mock_aws

STEPS = (1, 5, 10)  # report.SHOWN names the figures of each (relay_10_steps_wall_s, ...)
RUNS = 3  # of the widest relay, with steps and with plain calls, for the wall times
TERMINAL = {"succeeded", "failed", "needs_reconciliation"}

# The same function called N times: through `step` (a checkpoint before and after each
# call) or plainly. The loop times itself inside the relay's process.
SOURCE = """
    import time
    from agentworks_relay import step

    def work(i):
        return i * 2

    async def steps(INPUT):
        started = time.perf_counter()
        total = 0
        for i in range(INPUT["n"]):
            total += await step(f"work-{i}", work, i)
        return {"total": total, "seconds": time.perf_counter() - started}

    async def plain(INPUT):
        started = time.perf_counter()
        total = 0
        for i in range(INPUT["n"]):
            total += work(i)
        return {"total": total, "seconds": time.perf_counter() - started}
"""
INPUT_SCHEMA = {
    "type": "object",
    "properties": {"n": {"type": "integer", "minimum": 0}},
    "required": ["n"],
}


def relay_files() -> dict[str, str]:
    manifest = {
        "name": "bench",
        "description": "N calls of one function, as durable steps or plainly",
        "functions": [
            {"name": name, "entrypoint": f"main:{name}", "input_schema": INPUT_SCHEMA}
            for name in ("steps", "plain")
        ],
    }
    return {"relay.yaml": yaml.safe_dump(manifest), "main.py": textwrap.dedent(SOURCE)}


class _Requests:
    """Counts AWS requests by service and operation, from the clients the handlers use:
    those the relay code's API calls make (through the gateway), and those of the rest of
    the execution (moto's Step Functions runner, off the main thread)."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.execution: Counter[str] = Counter()
        self.code: Counter[str] = Counter()  # inside the relay code's API calls
        self.api_calls = 0  # the relay code's requests to the API
        self._local = threading.local()

    def hook(self, client: Any) -> None:
        client.meta.events.register("before-call.*.*", self._count)

    @contextmanager
    def serving_code(self) -> Iterator[None]:
        self._local.code = True
        self.api_calls += 1
        try:
            yield
        finally:
            self._local.code = False

    def _count(self, model: Any, **_: Any) -> None:
        key = f"{model.service_model.service_name}:{model.name}"
        self.counts[key] += 1
        if threading.current_thread() is not threading.main_thread():
            self.execution[key] += 1
            if getattr(self._local, "code", False):
                self.code[key] += 1


class _Host:
    """What the gateway asks of the local function host: the real handlers, and each
    request counted as the relay code's (tests/support/relay_gateway.py, metered)."""

    output = SimpleNamespace(path=None)

    def __init__(self, requests: _Requests) -> None:
        self._requests = requests

    def invoke(self, function: str, event: dict[str, Any]) -> Any:
        from tests.support.handlers import invoke_function

        with self._requests.serving_code():
            return invoke_function(function, event)

    def spec(self, function: str) -> Any:
        return SimpleNamespace(timeout_seconds=29)


@contextmanager
def _serving(services: Any, requests: _Requests) -> Iterator[str]:
    """The API on a free loopback port; the relay host points relay code at it."""
    from agentworks_cli.localstack.gateway import Gateway, GatewayServer

    gateway = Gateway(_Host(requests), warn=lambda line: None)  # type: ignore[arg-type]
    server = GatewayServer("127.0.0.1", 0, gateway, log=io.StringIO())  # no request log
    server.server_activate()
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    url = f"http://127.0.0.1:{server.port}"
    host = services.relays.host
    before, host.api_url = host.api_url, url
    try:
        yield url
    finally:
        host.api_url = before
        server.shutdown()
        server.server_close()


def _stack() -> tuple[Any, Any, Any, Any, _Requests]:
    from agentworks import runtime
    from agentworks.aws_clients import relay_lambda_config
    from agentworks.settings import Settings
    from agentworks.signing import Signer
    from agentworks_cli.localstack import lambda_seam, moto_patches
    from agentworks_cli.localstack.template import create_resources
    from tests.support.handlers import Api, invoke_function

    moto_patches.apply()
    session = boto3.Session(region_name="us-east-1")
    resources = create_resources(session, prefix="bench-relay")
    lambda_seam.install(lambda name, event: invoke_function(resources.logical_id_of(name), event))
    env = resources.environment()
    settings = Settings(
        identity_table=env["IDENTITY_TABLE"],
        messages_table=env["MESSAGES_TABLE"],
        signing_secret_arn=env["SIGNING_SECRET_ARN"],
        work_table=env["WORK_TABLE"],
        outputs_bucket=env["OUTPUTS_BUCKET"],
        function_call_state_machine_arn=env["FUNCTION_CALL_STATE_MACHINE_ARN"],
        workflow_state_machine_arn=env["WORKFLOW_STATE_MACHINE_ARN"],
        relay_state_machine_arn=env["RELAY_STATE_MACHINE_ARN"],
        relay_code_function=env["RELAY_CODE_FUNCTION"],
    )
    requests = _Requests()
    dynamodb, s3, sfn = (
        session.client("dynamodb"),
        session.client("s3"),
        session.client("stepfunctions"),
    )
    lambda_client = session.client("lambda", config=relay_lambda_config())
    for client in (dynamodb, s3, sfn, lambda_client):
        requests.hook(client)
    services = runtime.build_services(
        settings,
        dynamodb,
        Signer(b"bench-signing-key-0123456789"),
        s3=s3,
        stepfunctions=sfn,
        lambda_client=lambda_client,
    )
    runtime.install(services)
    admin = services.identity.bootstrap("bench").token
    return Api(), admin, session.client("stepfunctions"), services, requests


def _ddb(spent: Counter[str]) -> Counter[str]:
    return Counter({k.split(":", 1)[1]: n for k, n in spent.items() if k.startswith("dynamodb:")})


def _run(
    api: Any, admin: str, sfn: Any, requests: _Requests, function: str, n: int, key: str
) -> dict[str, Any]:
    before, executed = requests.counts.copy(), requests.execution.copy()
    code, calls = requests.code.copy(), requests.api_calls
    started = time.perf_counter()
    body = {"function": function, "input": {"n": n}, "idempotency_key": key}
    reply = api("POST", "/api/relays/bench/runs", admin, body)
    assert reply.status == 202, reply.body
    run_id = reply.body["run_id"]
    # The start (on this thread) and everything the execution did (off it); the caller's
    # status polls are its own choice and not counted.
    admission = _ddb(requests.counts - before - (requests.execution - executed))
    admission["GetItem"] -= 1  # the start's token check is the caller's, as for every request
    while True:
        status = api("GET", f"/api/relays/bench/runs/{run_id}", admin).body
        if status["status"] in TERMINAL:
            break
        time.sleep(0.005)
    wall = time.perf_counter() - started
    assert status["status"] == "succeeded", status
    assert status["result"]["total"] == n * (n - 1), status
    in_code = _ddb(requests.code - code)
    host = _ddb(requests.execution - executed) - in_code
    history = sfn.get_execution_history(executionArn=_execution(sfn, run_id), maxResults=1000)
    return {
        "transitions": float(
            sum(1 for e in history["events"] if e["type"].endswith("StateEntered"))
        ),
        "ddb": float((admission + host + in_code).total()),
        "admission": +admission,
        "host": host,
        "code": in_code,
        "api_calls": requests.api_calls - calls,
        "wall": wall,
        "loop": float(status["result"]["seconds"]),
    }


def _execution(sfn: Any, run_id: str) -> str:
    arn = next(
        m["stateMachineArn"]
        for m in sfn.list_state_machines()["stateMachines"]
        if m["name"].endswith("RelayRunStateMachine")
    )
    return f"{arn.replace(':stateMachine:', ':execution:', 1)}:{run_id}"


def measure() -> tuple[dict[str, float], dict[str, str]]:
    """The figures, and what they are made of (DynamoDB requests by operation)."""
    # The handlers' metric lines (EMF on stdout, as on Lambda) stay off the report.
    with (
        contextlib.redirect_stdout(io.StringIO()),
        mock_aws(config={"stepfunctions": {"execute_state_machine": True}}),
    ):
        api, admin, sfn, services, requests = _stack()
        reply = api("POST", "/api/relays", admin, {"files": relay_files()})
        assert reply.status == 200, reply.body
        with _serving(services, requests):
            _run(api, admin, sfn, requests, "plain", 1, "warm-up")  # first imports aside
            by_n = {n: _run(api, admin, sfn, requests, "steps", n, f"steps-{n}") for n in STEPS}
            widest = max(STEPS)
            stepped = [by_n[widest]] + [
                _run(api, admin, sfn, requests, "steps", widest, f"steps-{widest}-{i}")
                for i in range(1, RUNS)
            ]
            plain = [
                _run(api, admin, sfn, requests, "plain", widest, f"plain-{i}") for i in range(RUNS)
            ]
    first, last = by_n[min(STEPS)], by_n[widest]
    span = widest - min(STEPS)
    step_loop = statistics.median(r["loop"] for r in stepped)
    plain_loop = statistics.median(r["loop"] for r in plain)
    results = {
        # Every run measured, with steps or without: the worst is the headline.
        "relay_run_state_transitions": max(
            r["transitions"] for r in (*stepped, *by_n.values(), *plain)
        ),
        "relay_transitions_per_step": (last["transitions"] - first["transitions"]) / span,
        "relay_run_ddb_requests_no_steps": statistics.median(r["ddb"] for r in plain),
        "relay_step_ddb_requests": (last["ddb"] - first["ddb"]) / span,
        "relay_step_api_calls": (last["api_calls"] - first["api_calls"]) / span,
        "relay_step_ms": step_loop / widest * 1000,
        "relay_plain_call_ms": plain_loop / widest * 1000,
        "relay_step_overhead_ms": (step_loop - plain_loop) / widest * 1000,
        f"relay_{widest}_steps_wall_s": statistics.median(r["wall"] for r in stepped),
        f"relay_{widest}_plain_wall_s": statistics.median(r["wall"] for r in plain),
    }
    for n, run in by_n.items():
        results[f"relay_{n}_steps_state_transitions"] = run["transitions"]
        results[f"relay_{n}_steps_ddb_requests"] = run["ddb"]
    return results, _details(by_n, plain[0], results)


def _details(
    by_n: dict[int, dict[str, Any]], plain: dict[str, Any], results: dict[str, float]
) -> dict[str, str]:
    first, last = by_n[min(STEPS)], by_n[max(STEPS)]
    span = max(STEPS) - min(STEPS)
    added = {part: last[part] - first[part] for part in ("admission", "host", "code")}
    per_step = {part: Counter({op: n / span for op, n in c.items()}) for part, c in added.items()}
    transitions = ", ".join(f"{by_n[n]['transitions']:g}" for n in STEPS)
    widest = max(STEPS)
    details = {f"relay_{n}_steps_ddb_requests": _parts(run) for n, run in by_n.items()}
    details.update(
        {
            "relay_run_state_transitions": f"StateEntered events of a run, worst of all; "
            f"N = {', '.join(map(str, STEPS))} steps: {transitions}",
            "relay_transitions_per_step": f"added by one more step, N = {min(STEPS)} → {widest}",
            "relay_run_ddb_requests_no_steps": f"{_parts(plain)}; token check and polls aside",
            "relay_step_ddb_requests": f"added by one more step: {_parts(per_step)}, in its "
            f"{results['relay_step_api_calls']:g} API calls (start, finish)",
            "relay_step_overhead_ms": f"`await step` {results['relay_step_ms']:.1f} ms vs a "
            f"plain call {results['relay_plain_call_ms']:.4f} ms; median of {RUNS} "
            f"{widest}-step loops timed in the relay process",
            f"relay_{widest}_steps_wall_s": f"median of {RUNS}, start to terminal status",
            f"relay_{widest}_plain_wall_s": f"median of {RUNS}, the same calls without steps",
        }
    )
    return details


def _parts(run: dict[str, Counter[Any]]) -> str:
    """DynamoDB requests by where they happen: the start, the host's task, the relay code's
    API calls."""
    named = (("start", "admission"), ("host", "host"), ("relay code", "code"))
    return "; ".join(f"{label} {_describe(run[part])}" for label, part in named if +run[part])


def _describe(operations: Counter[Any]) -> str:
    return " + ".join(f"{n:g}×{op}" for op, n in sorted(operations.items()) if n)


if __name__ == "__main__":
    import os

    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    figures, described = measure()
    for name, value in figures.items():
        print(f"{name}: {value:.3f}  {described.get(name, '')}")
