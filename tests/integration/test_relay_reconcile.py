"""Relay runs whose execution ended without recording an outcome (R5): the tick finds them
in the open index, ends them failed with the evidence — completed steps kept, so a retry
continues — and leaves a run whose execution still runs alone."""

from __future__ import annotations

from typing import Any

from agentworks import limits
from agentworks.relays.records import RelayRun
from tests.integration.relay_support import publish, relay_files, start, wait_run
from tests.support.handlers import LambdaContext, load_handler

ECHO = "async def run(INPUT):\n    return INPUT\n"
SLOW = "import asyncio\n\nasync def run(INPUT):\n    await asyncio.sleep(1.5)\n    return INPUT\n"


def _tick() -> dict[str, Any]:
    return dict(load_handler("tick").handler({"source": "aws.events"}, LambdaContext()))


def test_a_run_whose_execution_never_started_ends_failed_and_a_retry_completes_it(
    stack: Any, api: Any
) -> None:
    publish(api, stack.admin_token, relay_files("echo", ECHO))
    admin = stack.principal(stack.admin_token)
    now = int(stack.clock.now() * 1000)
    # Admitted, and then StartExecution never happened (its request was lost).
    orphan = RelayRun(
        run_id="rrun_01JZZZZZZZZZZZZZZZZZZZZZZZ",
        account_id=admin.account_id,
        relay="echo",
        function="run",
        version=1,
        input_json='{"a":1}',
        idempotency_key="k",
        fingerprint="f",
        caller=admin.connection_id,
        caller_connection_id=admin.connection_id,
        created_at=now,
        updated_at=now,
        execution="rrun_01JZZZZZZZZZZZZZZZZZZZZZZZ",
    )
    assert stack.services.relays.host._runs.create(orphan)
    assert _tick()["relay_runs_checked"] == 0  # within the grace period: not yet asked
    stack.clock.advance(limits.RECONCILE_GRACE_SECONDS + 1)
    ticked = _tick()
    assert (ticked["relay_runs_checked"], ticked["relay_runs_reconciled"]) == (1, 1)
    path = f"/api/relay-runs/{orphan.run_id}"
    ended = api("GET", path, stack.admin_token).body
    assert ended["status"] == "failed"
    assert ended["error"].startswith("its execution was never started")
    assert _tick()["relay_runs_checked"] == 0  # a terminal run left the index
    retried = api("POST", f"{path}/retry", stack.admin_token, {})
    assert retried.status == 202, retried.body
    done = wait_run(api, stack.admin_token, "echo", orphan.run_id)
    assert (done["status"], done["result"]) == ("succeeded", {"a": 1})


def test_a_run_whose_execution_still_runs_is_asked_about_again_later(
    stack: Any, api: Any, agents: Any
) -> None:
    publish(api, stack.admin_token, relay_files("slow", SLOW))
    caller = agents.connection("caller")["token"]
    run = start(api, caller, "slow", {"function": "run", "input": {"b": 2}, "idempotency_key": "k"})
    stack.clock.advance(limits.RECONCILE_GRACE_SECONDS + 1)
    ticked = _tick()
    assert (ticked["relay_runs_checked"], ticked["relay_runs_reconciled"]) == (1, 0)
    assert _tick()["relay_runs_checked"] == 0  # asked again only after the recheck pause
    done = wait_run(api, caller, "slow", run["run_id"])
    assert (done["status"], done["result"]) == ("succeeded", {"b": 2})
