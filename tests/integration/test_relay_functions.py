"""Relay functions on the shared `functions` surface (issue 9, "From workflows"): a Relay's
functions are listed and called with target=relay:NAME like a Crew's, and a workflow's
step calls one with the workflow as caller."""

from __future__ import annotations

from typing import Any

from agentworks.crews.models import TERMINAL_STATES
from tests.integration.crew_support import wait_for
from tests.integration.relay_support import publish, relay_api, relay_files
from tests.integration.workflow_support import define, start, step_of, wait_run

__all__ = ["relay_api"]

SHOUT = relay_files(
    "shout",
    """
    async def run(INPUT):
        return {"text": INPUT["text"].upper()}
    """,
    functions=[
        {
            "name": "shout",
            "entrypoint": "main:run",
            "description": "Upper-cases a text",
            "input_schema": {
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
            },
        }
    ],
)

ASKS_THE_RELAY = {
    "name": "asks-the-relay",
    "type": "scripted",
    "rules": [
        {
            "when": "Shout (.+)",
            "call": {"target": "relay:shout", "function": "shout", "args": {"text": "{match.1}"}},
            "reply": "The relay said: {call.result.text}",
        },
    ],
}


def test_a_relays_functions_are_listed_and_called_like_a_crews(
    stack: Any, api: Any, agents: Any, relay_api: str
) -> None:
    publish(api, stack.admin_token, SHOUT)
    caller = agents.connection("caller")["token"]
    listed = api("GET", "/v1/functions", caller, query={"target": "relay:shout"})
    assert listed.status == 200, listed.body
    assert [f["name"] for f in listed.body["functions"]] == ["shout"]
    body = {
        "target": "relay:shout",
        "function": "shout",
        "args": {"text": "hi"},
        "submission_id": "s-1",
    }
    called = api("POST", "/v1/calls", caller, body)
    assert called.status in (200, 202), called.body
    assert called.body["call_id"].startswith("rrun_")
    done = wait_for(api, caller, called.body["call_id"], TERMINAL_STATES)
    assert (done["state"], done["result"]) == ("succeeded", {"text": "HI"}), done
    again = api("POST", "/v1/calls", caller, body)
    assert (again.body["call_id"], again.body["replayed"]) == (called.body["call_id"], True)
    bad = api("POST", "/v1/calls", caller, {**body, "args": {"text": 1}, "submission_id": "s-2"})
    assert bad.status == 422, bad.body


def test_a_workflow_step_calls_a_relay_function_as_the_workflow(
    stack: Any, api: Any, relay_api: str
) -> None:
    token = stack.admin_token
    publish(api, token, SHOUT)
    define(api, token, ASKS_THE_RELAY)
    step = {"label": "agent", "adapter": "asks-the-relay", "prompt": "Shout hello relays"}
    run = wait_run(
        api, token, start(api, token, {"workflowId": "nightly", "stages": [{"steps": [step]}]})
    )
    assert run["status"] == "succeeded", run
    assert step_of(run, "agent")["output"] == "The relay said: HELLO RELAYS"
    runs = [r for r in _relay_runs(stack) if r.relay == "shout"]
    assert [r.caller for r in runs] == ["workflow:nightly"]


def _relay_runs(stack: Any) -> list[Any]:
    store = stack.services.relays.host._runs
    items = stack.client.scan(TableName=stack.settings.work_table)["Items"]
    ids = [
        item["pk"]["S"].removeprefix("RRUN#")
        for item in items
        if item["pk"]["S"].startswith("RRUN#") and item["sk"]["S"] == "RUN"
    ]
    return [found[0] for run_id in ids if (found := store.get(run_id))]
