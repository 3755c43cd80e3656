"""The OpenAPI document tells the truth (issue: one error contract). Every answer must
carry a documented status code and a body that matches that code's schema, and none is a
server error:
- a scenario walks every operation's success path (201/202 and the 200 of a replay
  included), each answer checked against the document;
- schemathesis then generates requests from `/v1/openapi.json` (valid and invalid ones)
  and sends each through the real API handler, no server, with an unbounded admin token,
  a limited one (messages:read, bounded to agent:alpha) and an invalid one.

Feature ids: A3 (bearer auth, one error shape), A5 (unknown ≡ unauthorized: 404), M1–M10,
F1–F7 (every operation of those routes is generated)."""

from __future__ import annotations

import json
import os
import time
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.config import GenerationConfig
from schemathesis.core.failures import FailureGroup
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from agentworks.workflows.webhooks import SIGNATURE_HEADER, signature
from tests.integration.crew_support import CONTRACTS, wait_for
from tests.integration.workflow_support import wait_run, wait_step

HOOKED = """---
workflowId: hooked
triggers:
  - kind: webhook
    name: hook
    variables: {AREA: area}
---
## review
### look
```yaml
adapter: claude-code
```
Look at {{AREA}}.
"""
RUN_FILE = """---
workflowId: from-file
requiredVariables: [AREA]
---
## review
### look
```yaml
adapter: claude-code
```
Look at {{AREA}}.
"""

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
BASE_URL = "http://api.local"
# Generated examples per operation, mode and token: 30 operations × (2 modes × 2 tokens + 1)
# × 4 = 600 requests, and ~1,200 boundary cases: under a minute of CPU for this file. Set
# the variable for a deeper search (25: ~4 min).
EXAMPLES = int(os.environ.get("AGENTWORKS_OPENAPI_EXAMPLES", "4"))
# How often a generated identifier is swapped for a seeded one, so that not every answer
# is a 404 (hypothesis picks among the seeded values and the generated one).
SEEDED_SHARE = 2


class Checked:
    """The API as the tests call it, with every answer checked against the document."""

    def __init__(self, api: Any, schema: Any) -> None:
        self.api, self.schema = api, schema
        self.failures: list[str] = []
        self.succeeded: set[str] = set()  # operations seen answering a 2xx

    def __call__(
        self,
        method: str,
        path: str,
        token: str | None = None,
        body: Any = None,
        query: dict[str, Any] | None = None,
    ) -> Any:
        return self._checked(method, path, body, query, self.api(method, path, token, body, query))

    def raw(self, method: str, path: str, body: bytes, headers: dict[str, str]) -> Any:
        """A request with exact body bytes and headers and no token (a signed webhook)."""
        return self._checked(
            method, path, json.loads(body), None, self.api.raw(method, path, body, headers)
        )

    def _checked(
        self, method: str, path: str, body: Any, query: dict[str, Any] | None, reply: Any
    ) -> Any:
        operation = self.schema.find_operation_by_path(method, path)
        assert operation is not None, f"{method} {path} is not in the document"
        request = requests.Request(method, f"{BASE_URL}{path}", params=query, json=body)
        names = zip(operation.path.split("/"), path.split("/"), strict=True)
        parameters = {t[1:-1]: v for t, v in names if t.startswith("{")}
        payload = {} if body is None else {"body": body, "media_type": "application/json"}
        case = operation.Case(path_parameters=parameters, query=query, **payload)
        problem = verdict(case, _response(reply, request.prepare(), 0.0))
        label = f"{method} {operation.path}"
        if problem is not None:
            self.failures.append(f"{label} (scenario) {problem}")
        if 200 <= reply.status < 300:
            self.succeeded.add(label)
        return reply


def _ok(reply: Any, status: int = 200) -> dict[str, Any]:
    assert reply.status == status, (reply.status, reply.body)
    return dict(reply.body)


RELAY_FILES = {
    "relay.yaml": "name: seeded\nfunctions:\n  - {name: run, entrypoint: main:run}\n",
    "main.py": "async def run(INPUT):\n"
    "    return {'x': 'y' * 300_000} if INPUT.get('big') else INPUT\n",
}


def _until(api: Any, token: str, path: str, status: str) -> None:
    deadline = time.monotonic() + 30
    while _ok(api("GET", path, token))["status"] != status:
        assert time.monotonic() < deadline, path
        time.sleep(0.05)


class Seed:
    """Walks every operation's success path once (each answer checked), and leaves a Crew
    under review, two registered agents with conversations, calls and connections: the
    identifiers that generated requests are then pointed at."""

    def __init__(self, api: Checked, admin: str, clock: Any) -> None:
        review = {**CONTRACTS, "messaging": "review"}
        _ok(api("POST", "/v1/crews", admin, review), 201)
        _ok(api("POST", "/v1/crews", admin, {**CONTRACTS, "name": "scratch"}), 201)
        alpha, beta = (self._named(api, admin, name) for name in ("alpha", "beta"))
        _ok(api("GET", "/v1/whoami", alpha))
        limited = _ok(
            api(
                "POST",
                "/v1/connections",
                admin,
                {"name": "limited", "scopes": ["messages:read"], "target_bounds": ["agent:alpha"]},
            ),
            201,
        )
        spare = _ok(api("POST", "/v1/connections", admin, {"name": "spare"}), 201)
        gone = _ok(api("POST", "/v1/connections", admin, {"name": "gone"}), 201)
        _ok(api("DELETE", f"/v1/connections/{gone['connection_id']}", admin))
        _ok(api("GET", "/v1/connections", admin))
        _ok(api("POST", "/v1/agents", alpha, {"agent_name": "gamma"}))
        _ok(api("DELETE", "/v1/agents/gamma", alpha))
        _ok(api("GET", "/v1/agents", alpha))

        # M1–M7: a conversation, a replayed send, reads, a receipt and the inbox's state.
        first = {"target": "agent:alpha", "message": "hi", "submission_id": "s-1"}
        sent = _ok(api("POST", "/v1/messages", beta, first), 201)
        _ok(api("POST", "/v1/messages", beta, first))  # the replay answers 200
        mailbox = _ok(api("GET", "/v1/messages", alpha, query={"agent_name": "alpha"}))
        received = mailbox["messages"][0]
        answer = {"agent_name": "alpha", "inbox_id": received["reply_address"], "message": "yo"}
        _ok(api("POST", "/v1/messages", alpha, answer), 201)
        _ok(api("GET", "/v1/messages", beta, query={"inbox_id": sent["inbox_id"]}))
        ack = {"delivery": "typed"}
        _ok(api("POST", f"/v1/messages/{received['message_id']}/ack", alpha, ack))
        _ok(api("GET", f"/v1/inboxes/{sent['inbox_id']}/state", beta))
        # C5 the Messages view: the conversation just made, a page at a time.
        _ok(api("GET", "/v1/agents/conversations", alpha, query={"limit": 1}))

        # F1–F7: the Crew, its functions, a call replayed and one answered.
        _ok(api("GET", "/v1/crews", alpha))
        _ok(api("GET", "/v1/crews/contracts", alpha))
        _ok(api("PUT", "/v1/crews/contracts", admin, review))
        _ok(api("GET", "/v1/functions", alpha, query={"target": "crew:contracts"}))
        work = {
            "target": "crew:contracts",
            "function": "summarize",
            "args": {"text": "t"},
            "submission_id": "c-1",
        }
        call = _ok(api("POST", "/v1/calls", alpha, work), 202)
        _ok(api("POST", "/v1/calls", alpha, work))  # the replay answers 200
        wait_for(api, alpha, call["call_id"], {"succeeded"})
        ask = {"target": "crew:contracts", "function": "confirm", "args": {"action": "x"}}
        asking = _ok(api("POST", "/v1/calls", alpha, ask), 202)
        question = wait_for(api, alpha, asking["call_id"], {"input_required"})
        reply = {"request_id": question["pending_inputs"][0]["request_id"], "answer": "yes"}
        _ok(api("POST", f"/v1/calls/{asking['call_id']}/reply", alpha, reply))
        older = _ok(api("GET", "/v1/calls", alpha, query={"limit": 1}))["next_before"]
        _ok(api("GET", "/v1/calls", alpha, query={"limit": 5, "before": older}))

        # M8–M10: messages to the Crew held for review, released and declined; wakeups.
        to_crew = {"target": "crew:contracts", "message": "About clause 8"}
        held = _ok(api("POST", "/v1/messages", beta, to_crew), 201)
        again = {"inbox_id": held["inbox_id"], "message": "And clause 9?"}
        second = _ok(api("POST", "/v1/messages", beta, again), 201)
        release = {"message_id": held["message_id"]}
        _ok(api("POST", "/v1/crews/contracts/release", admin, release))
        decline = {"message_id": second["message_id"], "reason": "not now"}
        _ok(api("POST", "/v1/crews/contracts/decline", admin, decline))
        later = {"inbox_id": held["inbox_id"], "delay_seconds": 600}
        wakeup = _ok(api("POST", "/v1/wakeups", beta, later), 201)
        moved = {"delay_seconds": 900}
        _ok(api("POST", f"/v1/wakeups/{wakeup['wakeup_id']}/reschedule", beta, moved))
        _ok(api("DELETE", f"/v1/wakeups/{wakeup['wakeup_id']}", beta))
        _ok(api("GET", "/v1/crews/contracts/state", admin))
        _ok(api("GET", "/v1/scheduler", admin))
        _ok(api("POST", "/v1/scheduler", admin, {"paused": False}))
        _ok(api("GET", "/v1/usage", admin, query={"days": 3}))
        # C1, C2, C4: a request and a note to the Crew, its requests, a cancel, and the
        # conversation paused, resumed, closed and deleted.
        asked = {"target": "crew:contracts", "message": "Clause 3?", "kind": "request"}
        request = _ok(api("POST", "/v1/messages", beta, asked), 201)
        noted = {"inbox_id": request["inbox_id"], "message": "FYI", "kind": "note"}
        _ok(api("POST", "/v1/messages", beta, noted), 201)
        _ok(api("GET", "/v1/requests", beta, query={"inbox_id": request["inbox_id"]}))
        _ok(api("POST", f"/v1/requests/{request['message_id']}/cancel", beta, {}))
        # C5: the Inbox's list and conversation view, and a sign-in link.
        listed = _ok(api("GET", "/v1/conversations", admin, query={"tab": "active"}))
        shown = listed["conversations"][0]["conversation_id"]
        _ok(api("GET", f"/v1/conversations/{shown}", admin))
        _ok(api("POST", "/v1/session/links", beta))
        stepped = {"crew": "contracts", "kind": "note", "message": "From a person."}
        _ok(api("POST", f"/v1/conversations/{request['inbox_id']}/answer", admin, stepped), 201)
        controls = f"/v1/conversations/{request['inbox_id']}"
        for step in ("pause", "resume", "close"):
            _ok(api("POST", f"{controls}/{step}", beta, {}))
        _ok(api("DELETE", controls, admin))
        # C6: the audit log of those changes; a conversation webhook and its deliveries.
        _ok(api("GET", "/v1/audit", admin, query={"inbox_id": request["inbox_id"], "limit": 5}))
        hook = {"url": "https://hooks.example.com/aw", "events": ["agent_asked"]}
        webhook = _ok(api("POST", "/v1/webhooks", admin, hook), 201)
        _ok(api("GET", "/v1/webhooks", admin))
        _ok(api("GET", f"/v1/webhooks/{webhook['webhook_id']}/deliveries", admin))
        _ok(api("DELETE", f"/v1/webhooks/{webhook['webhook_id']}", admin))
        _ok(api("DELETE", "/v1/crews/scratch", admin))
        profile = {"name": "claude-code", "type": "scripted", "rules": [{"default": "Done."}]}
        _ok(api("POST", "/v1/adapters", admin, profile), 201)
        _ok(api("POST", "/v1/adapters", admin, {**profile, "name": "scratch-a"}), 201)
        _ok(api("GET", "/v1/adapters", admin))
        _ok(api("GET", "/v1/adapters/claude-code", admin))
        _ok(api("PUT", "/v1/adapters/claude-code", admin, profile))
        _ok(api("DELETE", "/v1/adapters/scratch-a", admin))
        # Issue 28: an attached MCP server (`.invalid` never resolves: show says why).
        attached = {"name": "tools", "url": "https://tools.invalid/mcp"}
        _ok(api("POST", "/v1/mcp-servers", admin, attached), 201)
        _ok(api("POST", "/v1/mcp-servers", admin, {**attached, "name": "scratch-m"}), 201)
        _ok(api("GET", "/v1/mcp-servers", admin))
        _ok(api("GET", "/v1/mcp-servers/tools", admin))
        _ok(api("PATCH", "/v1/mcp-servers/tools", admin, {"headers": {"X-Key": "k"}}))
        _ok(api("DELETE", "/v1/mcp-servers/scratch-m", admin))

        # W1–W7: a run that escalates and is resolved, one from a file, one cancelled and
        # retried.
        asker = {
            "name": "asker",
            "type": "scripted",
            "rules": [{"ask": "Which?", "when": "Plan", "reply": "ok {answer}"}],
        }
        _ok(api("POST", "/v1/adapters", admin, asker), 201)
        step = {"label": "plan", "adapter": "asker", "policy": "escalate", "prompt": "Plan"}
        flow = {"workflowId": "contract", "stages": [{"steps": [step]}]}
        run = _ok(api("POST", "/v1/workflows", admin, flow), 202)
        wait_step(api, admin, run["runId"], "plan", {"waiting"})
        _ok(api("GET", f"/v1/workflows/{run['runId']}", admin))
        _ok(api("GET", "/v1/workflows/webhook-key", admin))
        answer = {"step": "plan", "answer": "this"}
        _ok(api("POST", f"/v1/workflows/{run['runId']}/resolve", admin, answer))
        ran = wait_run(api, admin, run["runId"])
        session = ran["stages"][0]["steps"][0]["sessionId"]
        _ok(api("GET", f"/v1/workflows/{run['runId']}/sessions/{session}", admin))
        from_file = {"content": RUN_FILE, "input": {"AREA": "auth"}}
        filed = _ok(api("POST", "/v1/workflows/run-file", admin, from_file), 202)
        wait_run(api, admin, filed["runId"])
        parked = _ok(api("POST", "/v1/workflows", admin, flow), 202)
        wait_step(api, admin, parked["runId"], "plan", {"waiting"})
        _ok(api("POST", f"/v1/workflows/{parked['runId']}/cancel", admin))
        retried = _ok(api("POST", f"/v1/workflows/{parked['runId']}/retry", admin, {}), 202)
        wait_step(api, admin, retried["runId"], "plan", {"waiting"})
        _ok(api("POST", f"/v1/workflows/{retried['runId']}/cancel", admin))
        _ok(api("GET", "/v1/workflows", admin))
        # Issue 10 item 6: a cli step's job claimed, renewed and reported by a runner.
        cli = {"name": "local-cli", "type": "cli", "command": "claude"}
        _ok(api("POST", "/v1/adapters", admin, cli), 201)
        local = {"label": "local", "adapter": "local-cli", "prompt": "Plan"}
        cli_run = _ok(
            api("POST", "/v1/workflows", admin, {**flow, "stages": [{"steps": [local]}]}), 202
        )
        runner = {"runner_id": "r-seed", "name": "seed", "commands": ["claude"]}
        deadline = time.monotonic() + 30
        while not (claimed := _ok(api("POST", "/v1/runner/claim", admin, runner))["job"]):
            assert time.monotonic() < deadline, "no runner job was handed out"
            time.sleep(0.05)
        job_path = f"/v1/runner/jobs/{claimed['job_id']}"
        _ok(api("POST", f"{job_path}/renew", admin, {"runner_id": "r-seed"}))
        report = {"runner_id": "r-seed", "output": "Planned.", "session_id": "s-seed"}
        _ok(api("POST", f"{job_path}/finish", admin, report))
        wait_run(api, admin, cli_run["runId"])
        # W11: a registered workflow with a webhook trigger, fired once, then removed.
        registered = _ok(api("PUT", "/v1/workflow-definitions", admin, {"content": HOOKED}))
        hook = registered["triggers"][0]
        body = json.dumps({"area": "auth"}).encode()
        signed = {SIGNATURE_HEADER: signature(hook["secret"], int(clock.now()), body)}
        fired = api.raw("POST", hook["path"], body, signed)
        assert fired.status == 202, fired.body
        wait_run(api, admin, fired.body["runId"])
        _ok(api("GET", "/v1/workflow-definitions", admin))
        _ok(api("GET", "/v1/workflow-definitions/hooked", admin))
        _ok(
            api(
                "PUT",
                "/v1/workflow-definitions",
                admin,
                {"content": HOOKED.replace("hooked", "scratch-w")},
            )
        )
        _ok(api("DELETE", "/v1/workflow-definitions/scratch-w", admin))

        # R1–R4: a Relay published, run, and a failed run retried (a final JSON over its
        # bound fails the run at once, with no attempt left to retry in).
        _ok(api("POST", "/api/relays", admin, {"files": RELAY_FILES}))
        _ok(api("GET", "/api/relays", admin))
        _ok(api("GET", "/api/relays/seeded/releases", admin))
        runs = "/api/relays/seeded/runs"
        relay_run = _ok(
            api("POST", runs, admin, {"function": "run", "input": {}, "idempotency_key": "r-1"}),
            202,
        )
        failing = _ok(
            api(
                "POST",
                runs,
                admin,
                {"function": "run", "input": {"big": True}, "idempotency_key": "r-2"},
            ),
            202,
        )
        failed = f"{runs}/{failing['run_id']}"
        _until(api, admin, failed, "failed")
        _ok(api("GET", f"{runs}/{relay_run['run_id']}", admin))
        _ok(api("POST", f"{failed}/retry", admin, {}), 202)
        _until(api, admin, failed, "failed")
        _ok(api("POST", f"/api/relay-runs/{failing['run_id']}/retry", admin, {}), 202)
        _ok(api("GET", f"/api/relay-runs/{relay_run['run_id']}", admin))

        # The limited token first: the admin's deletions would remove what it reads.
        self.tokens = {"limited": limited["token"], "admin": admin, "invalid": "aw1.x.y.z"}
        # Parameter name → values a request may carry instead of the generated one.
        self.values: dict[str, list[str]] = {
            "name": ["contracts", "claude-code"],
            "agent_name": ["alpha", "beta"],
            "inbox_id": [sent["inbox_id"], held["inbox_id"]],
            "message_id": [sent["message_id"], held["message_id"]],
            "call_id": [call["call_id"], asking["call_id"]],
            "connection_id": [spare["connection_id"]],
            "wakeup_id": [wakeup["wakeup_id"]],
            "target": ["crew:contracts", "agent:alpha"],
            "path": ["result.json"],
            "function": ["summarize"],
            "run_id": [run["runId"], parked["runId"], relay_run["run_id"], failing["run_id"]],
            "relay": ["seeded"],
            "step": ["s"],
            "workflow_id": ["hooked"],
            "trigger_id": [hook["triggerId"]],
            "session_id": [session],
            "job_id": [claimed["job_id"]],
        }

    @staticmethod
    def _named(api: Checked, admin: str, name: str) -> str:
        token = str(_ok(api("POST", "/v1/connections", admin, {"name": name}), 201)["token"])
        _ok(api("POST", "/v1/agents", token, {"agent_name": name}))
        return token


def _seeded(case: Any, values: dict[str, list[str]], draw: Any) -> None:
    for where in (case.path_parameters, case.query, case.body):
        if not isinstance(where, dict):
            continue
        for key in list(where):
            if key in values:
                choice = draw(st.sampled_from([None] * SEEDED_SHARE + values[key]))
                if choice is not None:
                    where[key] = choice


def _send(api: Any, case: Any, token: str) -> schemathesis.Response:
    """The case as HTTP API would hand it to the api function, and its answer."""
    kwargs = case.as_transport_kwargs(base_url=BASE_URL)
    prepared = requests.Request(
        method=kwargs["method"],
        url=kwargs["url"],
        headers=kwargs.get("headers"),
        params=kwargs.get("params"),
        json=kwargs.get("json"),
        data=kwargs.get("data"),
    ).prepare()
    url = urlsplit(prepared.url or "")
    body = prepared.body
    raw = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    started = time.perf_counter()
    reply = api(
        prepared.method or "GET",
        url.path,
        token=token,
        query=dict(parse_qsl(url.query, keep_blank_values=True)),
        raw_body=raw,
    )
    return _response(reply, prepared, time.perf_counter() - started)


def _response(reply: Any, request: Any, elapsed: float) -> schemathesis.Response:
    content = b"" if reply.body is None else json.dumps(reply.body).encode()
    return schemathesis.Response(
        status_code=reply.status,
        headers={k: [v] for k, v in reply.headers.items()},
        content=content,
        request=request,
        elapsed=elapsed,
        verify=True,
    )


def verdict(case: Any, response: schemathesis.Response) -> str | None:
    """None when the answer is documented and matches its schema; else what is wrong."""
    try:
        case.validate_response(response, checks=CHECKS)
    except FailureGroup as group:
        titles = "; ".join(sorted({failure.title for failure in group.exceptions}))
        return f"→ {response.status_code}: {titles}: {response.content[:300]!r}"
    return None


class Fuzz:
    """Generated cases of each operation, sent with one token at a time; counts what ran
    and keeps what broke the contract."""

    def __init__(self, api: Any, seed: Seed) -> None:
        self.api, self.seed = api, seed
        self.failures: list[str] = []
        self.examples: dict[str, int] = {}
        self.boundaries: dict[str, int] = {}
        self._strategies: dict[tuple[str, str], Any] = {}

    def run(self, operation: Any, mode: GenerationMode, label: str) -> None:
        key = (operation.label, mode.value)
        if key not in self._strategies:
            self._strategies[key] = operation.as_strategy(generation_mode=mode)
        token = self.seed.tokens[label]

        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,
            derandomize=True,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        @given(case=self._strategies[key], data=st.data())
        def probe(case: Any, data: Any) -> None:
            _seeded(case, self.seed.values, data.draw)
            response = _send(self.api, case, token)
            self.examples[label] = self.examples.get(label, 0) + 1
            problem = verdict(case, response)
            if problem is not None:
                self.failures.append(f"{operation.label} [{mode.value}, {label}] {problem}")

        probe()

    def cover(self, operation: Any, label: str) -> None:
        """schemathesis' coverage phase: boundary and just-outside values of every
        parameter and body field (lengths, types, missing fields), each sent once."""
        cases = operation.schema.iter_coverage_cases(
            operation,
            generation_modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE],
            generation_config=GenerationConfig(),
        )
        for case in cases:
            if case.method.upper() != operation.method.upper():
                # Other methods on the path: API Gateway answers those without a function.
                continue
            response = _send(self.api, case, self.seed.tokens[label])
            self.boundaries[label] = self.boundaries.get(label, 0) + 1
            problem = verdict(case, response)
            if problem is not None:
                self.failures.append(f"{operation.label} [coverage, {label}] {problem}")


# Success paths without a scenario here: a file page needs a Crew that writes files, a
# posted result needs the mailbox adapter (tests/integration/test_mailbox_adapter.py).
# A durable step's routes answer only a running relay's credential, which relay code holds
# in its own process (tests/integration/test_relay_steps.py drives them).
# The web sign-in's exchange and sign-out, and a session's push ticket, need the page's
# header and cookie (tests/integration/test_web_inbox.py and test_push_tickets.py drive them).
# A tool call's success needs a live MCP server (tests/integration/test_mcp_servers.py
# starts one and drives it).
NO_SCENARIO = {
    "POST /v1/mcp-servers/{name}/tools/{tool}:call",
    "POST /v1/session",
    "POST /v1/session/logout",
    "POST /v1/session/push-tickets",
    "GET /v1/calls/{call_id}/files",
    "POST /v1/calls/{call_id}/result",
    *(
        f"POST /api/relays/{{relay}}/runs/{{run_id}}/steps/{{step}}/{verb}"
        for verb in ("start", "finish", "abandon")
    ),
}


@pytest.mark.timeout(max(240, 40 * EXAMPLES))  # a deeper search gets its time
def test_a3_openapi_document_matches_every_answer(api: Any, stack: Any) -> None:
    document = api("GET", "/v1/openapi.json")
    assert document.status == 200
    assert document.body["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    assert document.body["security"] == [{"bearer": []}]
    schema = schemathesis.openapi.from_dict(document.body)
    operations = [result.ok() for result in schema.get_all_operations()]
    checked = Checked(api, schema)
    seed = Seed(checked, stack.admin_token, stack.clock)
    every = {f"{op.method.upper()} {op.path}" for op in operations}
    assert every - checked.succeeded == NO_SCENARIO
    # Deletions last: they remove the seeded Crew, agent and connection the others use.
    operations.sort(key=lambda op: op.method.lower() == "delete")
    fuzz = Fuzz(api, seed)
    for label in seed.tokens:
        # A refused token is refused before the body is read: valid requests suffice.
        modes = [GenerationMode.POSITIVE]
        if label != "invalid":
            modes.append(GenerationMode.NEGATIVE)
        for operation in operations:
            for mode in modes:
                fuzz.run(operation, mode, label)
            if label != "invalid":
                fuzz.cover(operation, label)
    print(f"schemathesis examples per token: {fuzz.examples}, boundary cases: {fuzz.boundaries}")
    assert all(n >= len(operations) for n in fuzz.examples.values()), fuzz.examples
    assert all(n >= 10 * len(operations) for n in fuzz.boundaries.values()), fuzz.boundaries
    failures = checked.failures + fuzz.failures
    assert not failures, "\n".join(failures)


def test_a3_contract_check_refuses_what_the_document_does_not_say(api: Any, stack: Any) -> None:
    """The check above can fail: an undocumented code, API Gateway's bare refusal body and
    a success body without its fields are each reported; a true answer is not."""
    schema = schemathesis.openapi.from_dict(api("GET", "/v1/openapi.json").body)
    case = schema["/v1/whoami"]["GET"].Case()
    request = requests.Request("GET", f"{BASE_URL}/v1/whoami").prepare()

    def answer(status: int, body: Any) -> str | None:
        response = schemathesis.Response(
            status_code=status,
            headers={"content-type": ["application/json"]},
            content=json.dumps(body).encode(),
            request=request,
            elapsed=0.0,
            verify=True,
        )
        return verdict(case, response)

    assert "Undocumented status code" in (
        answer(418, {"error": {"code": "x", "message": "y"}}) or ""
    )
    assert answer(401, {"message": "Unauthorized"}) is not None
    assert answer(200, {"account_id": "acct_1"}) is not None
    assert answer(500, {"error": {"code": "internal", "message": "retry"}}) is not None
    real = api("GET", "/v1/whoami", stack.admin_token)
    assert answer(real.status, real.body) is None
