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
from typing import Any

import yaml
from moto import mock_aws

from bench.stack import Requests, executing_stack
from tests.support.relay_gateway import serving

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


class _Requests(Requests):
    """Counts AWS requests by service and operation, from the clients the handlers use:
    those the relay code's API calls make (through the gateway), and those of the rest of
    the execution (moto's Step Functions runner, off the main thread)."""

    def __init__(self) -> None:
        super().__init__()
        self.code: Counter[str] = Counter()  # inside the relay code's API calls
        self.api_calls = 0  # the relay code's requests to the API
        self._local = threading.local()

    @contextmanager
    def serving_code(self) -> Iterator[None]:
        self._local.code = True
        self.api_calls += 1
        try:
            yield
        finally:
            self._local.code = False

    def _count(self, model: Any, **_: Any) -> None:
        super()._count(model)
        if getattr(self._local, "code", False):  # the gateway's threads, off the main one
            self.code[f"{model.service_model.service_name}:{model.name}"] += 1


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
        requests = _Requests()
        stack = executing_stack("bench-relay", requests)
        api, admin, sfn, services = (
            stack.api,
            stack.admin_token,
            stack.stepfunctions,
            stack.services,
        )
        reply = api("POST", "/api/relays", admin, {"files": relay_files()})
        assert reply.status == 200, reply.body
        with serving(services, around=requests.serving_code):
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
