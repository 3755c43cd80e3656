"""Helpers for Crew and function-call tests: a Crew file like the issue's, and polling."""

from __future__ import annotations

import time
from typing import Any

CONTRACTS: dict[str, Any] = {
    "name": "contracts",
    "instructions": "Answer questions about contract clauses.",
    "messaging": True,  # YAML's bare `on`
    "adapter": {
        "type": "scripted",
        "rules": [
            {"when": "clause (\\d+)", "reply": "Clause {match.1} covers termination."},
            {"function": "summarize", "result": {"summary": "{args.text}"}},
            {
                "function": "confirm",
                "ask": "Proceed with {args.action}?",
                "result": {"confirmed": "{answer}"},
            },
            {"default": "I can only discuss clauses."},
        ],
    },
    "functions": [
        {
            "name": "summarize",
            "description": "Summarize a text",
            "input_schema": {
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
            },
            "output_schema": {
                "type": "object",
                "properties": {"summary": {"type": "string"}},
                "required": ["summary"],
            },
        },
        {
            "name": "confirm",
            "description": "Ask a person before acting",
            "input_schema": {
                "type": "object",
                "properties": {"action": {"type": "string"}},
                "required": ["action"],
            },
        },
    ],
}


def wait_for(api: Any, token: str, call_id: str, states: set[str], timeout: float = 30) -> dict:
    """Polls a call's status (as callers do) until it reaches one of `states`."""
    deadline = time.monotonic() + timeout
    while True:
        status = api("GET", f"/v1/calls/{call_id}", token)
        assert status.status == 200, status.body
        if status.body["state"] in states:
            return status.body
        assert time.monotonic() < deadline, status.body
        time.sleep(0.05)


def admit_call_record(stack: Any, caller_token: str, state: str) -> str:
    """An admitted call of crew:contracts in `state` with no execution behind it (as if the
    process died after admission); returns its id."""
    from agentworks.crews.call_store import CallStore
    from agentworks.crews.crew_store import CrewStore
    from agentworks.crews.models import CallRecord
    from agentworks.ids import new_id

    principal = stack.principal(caller_token)
    crew = CrewStore(stack.client, stack.settings.work_table).get(principal.account_id, "contracts")
    assert crew is not None
    now = int(stack.clock.now() * 1000)
    record = CallRecord(
        call_id=new_id("call", stack.clock),
        account_id=principal.account_id,
        crew_name=crew.name,
        crew_id=crew.crew_id,
        function="summarize",
        args={"text": "t"},
        caller_connection_id=principal.connection_id,
        state=state,
        created_at=now,
        updated_at=now,
    )
    CallStore(stack.client, stack.settings.work_table).admit(crew, record, "digest", None)
    return record.call_id
