"""A2–A5, A3b, M5: the authorization matrix.

Every action of both surfaces — each route the /v1 resolver registered and each row of the
MCP tools' action tables — is tried as every kind of caller that must not get through:
no token, a garbage token, a revoked and an expired connection (A2, A3), another account
(A1), a connection missing the action's scope (A2), one whose target bounds leave the
target out (A4), one that is not on the name's allow-list or the Crew's access list (M5),
an admin limited by bounds (A3b) — and the principals derived from a connection (issue 24):
relay code holding its run's credential, a web session, and a child connection. Each
derived one answers exactly as the connection it comes from, narrowed: a run credential
has only relay code's scopes, and neither it nor a session may do what grants or stores
authority (`Row.grants`: 403); a child of the bounded admin answers as a connection with
the same bounds does. Each refusal must read exactly like the answer for an
unknown id where unknown ≡ unauthorized (A5); every 401 is the same body; a missing scope
is a 403 (`forbidden`). The tables come from the code, so a route or action without a row
here fails `test_every_route_and_action_has_a_row`.

`matrix_counts()` gives the number of cells (action rows × cases) the tests check.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from agentworks import errors
from agentworks.identity.models import (
    ADMIN,
    ALL_SCOPES,
    MCP_SERVERS_CALL,
    WORKFLOWS_RUN,
    WORKFLOWS_RUNNER,
)
from agentworks.relays.credentials import RELAY_CODE_SCOPES
from tests.integration.crew_support import CONTRACTS
from tests.integration.relay_support import live_credential
from tests.support.handlers import LambdaContext, http_event, load_handler

UNKNOWN_ULID = "01ARZ3NDEKTSV4RRFFQ69G5FAV"
_ULID = re.compile(r"[0-9A-HJKMNP-TV-Z]{26}")
# Bounds that leave every target of the world out.
ELSEWHERE = ["agent:elsewhere", "crew:elsewhere"]
# What nobody outside the owner's reach may ever read in an answer.
SECRET = "secret-plan-7f3a"
# The world's adapter profile holds the secret in its settings (only an unbounded admin
# of the account sees them); the rows' own requests carry none.
SECRET_PROFILE = {"name": "claude-code", "type": "scripted", "rules": [{"default": SECRET}]}
PROFILE = {"name": "claude-code", "type": "scripted", "rules": [{"default": "Done."}]}
# The world's run: its one step answers with the secret (only its owner may read it).
WORKFLOW = {
    "workflowId": "review",
    "stages": [{"steps": [{"label": "plan", "adapter": "claude-code", "prompt": "Plan"}]}],
}
WORKFLOW_FILE = """---
workflowId: review
---
## review
### plan
```yaml
adapter: claude-code
```
Plan
"""
# A Relay (issue 9) whose run answers with its input; its name holds "contracts" too.
RELAY_FILES = {
    "relay.yaml": "name: contracts-relay\nfunctions:\n  - {name: run, entrypoint: main:run}\n",
    "main.py": "async def run(INPUT):\n    return INPUT\n",
}
# A registered workflow (W11); its name holds "contracts", which unknown_name swaps.
REGISTERED_FILE = WORKFLOW_FILE.replace("workflowId: review", "workflowId: contracts-flow")
# A cli step (issue 10 item 6) whose runner job waits in the queue; its prompt holds the
# secret (only a runner of the account, within its bounds, may claim it).
CLI_PROFILE = {"name": "runner-cli", "type": "cli", "command": "claude"}
CLI_WORKFLOW = {
    "workflowId": "review",
    "stages": [{"steps": [{"label": "plan", "adapter": "runner-cli", "prompt": SECRET}]}],
}
# An attached MCP server (issue 28) whose secret header holds the secret (no answer may
# carry it); `.invalid` never resolves, so the owner's own calls fail fast, as 502s.
MCP_SERVER = {
    "name": "contracts-mcp",
    "url": "https://contracts-mcp.invalid/mcp",
    "headers": {"Authorization": f"Bearer {SECRET}"},
}
MCP_SERVER_PATH = "/v1/mcp-servers/contracts-mcp"
RUNNER_CLAIM = {"runner_id": "r-matrix", "name": "matrix", "commands": ["claude"]}

AUTH_CASES = ("no_token", "garbage", "revoked", "expired")
# Issue 24: each derived principal → the case whose answers it gives (then narrowed).
DERIVED = {
    "relay_run": "not_on_allow_list",  # a run of the stranger's, its credential
    "web_session": "bounded_admin",  # a session signed in with the bounded admin's token
    "child_connection": "outside_bounds",  # the bounded admin's child, ending with it
}
CASES = (
    "other_account",
    "missing_scope",
    "outside_bounds",
    "not_on_allow_list",
    "bounded_admin",
    *DERIVED,
)
CSRF = ("x-agentworks-requested-with", "inbox")
COOKIE = "cookie:"  # a world token that is a web session's cookie value


# Code → status, from the domain errors themselves (MCP carries the code, not the status).
def _error_classes(cls: type[errors.AgentWorksError]) -> list[type[errors.AgentWorksError]]:
    return [cls, *(c for sub in cls.__subclasses__() for c in _error_classes(sub))]


_STATUS_OF = {cls.code: cls.status for cls in _error_classes(errors.AgentWorksError)}


def unknown_like(value: Any) -> Any:
    """The same request with every id's ULID swapped for one nothing has: an unknown id
    of the same shape, so only existence differs."""
    text = json.dumps(value)
    return json.loads(_ULID.sub(UNKNOWN_ULID, text))


# ---------------------------------------------------------------- the world


@dataclass
class World:
    """One account holding a Crew, two named agents, a conversation, an account inbox with
    the Crew, a wakeup and a call — and every kind of caller that must be refused. The
    Crew's access list and the names' allow-lists hold the bounded and the scope-lacking
    callers, so only their bounds or scopes can refuse them."""

    ids: dict[str, str] = field(default_factory=dict)
    tokens: dict[str, str | None] = field(default_factory=dict)
    scoped: dict[str, str] = field(default_factory=dict)  # scope → token lacking only it


def _ok(reply: Any, *statuses: int) -> Any:
    assert reply.status in (statuses or (200, 201)), reply.body
    return reply.body


@pytest.fixture
def world(api: Any, stack: Any) -> World:
    w = World()
    admin = stack.admin_token

    def connection(name: str, **body: Any) -> dict[str, Any]:
        return _ok(api("POST", "/v1/connections", admin, {"name": name, **body}), 201)

    reviewer, worker, caller = (connection(n) for n in ("reviewer-c", "worker-c", "caller-c"))
    outside = connection("outside-bounds", target_bounds=ELSEWHERE)
    bounded_admin = connection("bounded-admin", scopes=list(ALL_SCOPES), target_bounds=ELSEWHERE)
    stranger = connection("stranger")
    revoked = connection("revoked", scopes=list(ALL_SCOPES))
    expired = connection("expired", scopes=list(ALL_SCOPES), expires_in_seconds=60)
    listed = [outside["connection_id"], bounded_admin["connection_id"]]
    for scope in ALL_SCOPES:
        lacking = [s for s in ALL_SCOPES if s != scope]
        made = connection(f"no-{scope.replace(':', '-')}", scopes=lacking)
        w.scoped[scope] = made["token"]
        listed.append(made["connection_id"])

    for name, owner in (("reviewer", reviewer), ("worker", worker)):
        body = {"agent_name": name, "allowed_connection_ids": [owner["connection_id"], *listed]}
        _ok(api("POST", "/v1/agents", owner["token"], body), 200, 201)

    crew = copy.deepcopy(CONTRACTS)
    crew["access"] = [caller["connection_id"], reviewer["connection_id"], *listed]
    _ok(api("POST", "/v1/crews", admin, crew), 201)
    _ok(api("POST", "/v1/adapters", admin, SECRET_PROFILE), 201)
    _ok(api("POST", "/v1/mcp-servers", admin, MCP_SERVER), 201)

    first = api(
        "POST",
        "/v1/messages",
        worker["token"],
        {"agent_name": "worker", "target": "agent:reviewer", "message": SECRET},
    )
    _ok(first, 201)
    mailbox = _ok(api("GET", "/v1/messages", reviewer["token"], query={"agent_name": "reviewer"}))
    got = mailbox["messages"][0]
    crew_sent = _ok(
        api(
            "POST",
            "/v1/messages",
            caller["token"],
            {"target": "crew:contracts", "message": f"clause 4 {SECRET}"},
        ),
        201,
    )
    crew_request = _ok(
        api(
            "POST",
            "/v1/messages",
            caller["token"],
            {"inbox_id": crew_sent["inbox_id"], "message": "clause 5", "kind": "request"},
        ),
        201,
    )
    # A conversation of its own for the pause/resume/close/delete rows (they change it).
    controlled = _ok(
        api(
            "POST",
            "/v1/messages",
            caller["token"],
            {"target": "crew:contracts", "message": "clause 6"},
        ),
        201,
    )
    wakeup = _ok(
        api(
            "POST",
            "/v1/wakeups",
            caller["token"],
            {"inbox_id": crew_sent["inbox_id"], "delay_seconds": 3600},
        ),
        201,
    )
    call = _ok(
        api(
            "POST",
            "/v1/calls",
            caller["token"],
            {"target": "crew:contracts", "function": "summarize", "args": {"text": SECRET}},
        ),
        201,
        202,
    )
    w.ids = {
        "account": stack.principal(admin).account_id,
        "root_connection": stack.principal(admin).connection_id,
        "reviewer_connection": reviewer["connection_id"],
        "reviewer_inbox": got["reply_address"],
        "reviewer_message": got["message_id"],
        "crew_inbox": crew_sent["inbox_id"],
        "crew_message": crew_sent["message_id"],
        "crew_request": crew_request["message_id"],
        "control_inbox": controlled["inbox_id"],
        "crew_conversation": "cnv_" + crew_sent["inbox_id"][4:-1],  # C5: its conversation
        "wakeup": wakeup["wakeup_id"],
        "call": call["call_id"],
    }
    hook = {"url": "https://hooks.example.com/aw", "events": ["agent_asked"]}  # C6
    w.ids["webhook"] = _ok(api("POST", "/v1/webhooks", admin, hook), 201)["webhook_id"]
    _ok(api("PUT", "/v1/workflow-definitions", admin, {"content": REGISTERED_FILE}))
    _ok(api("POST", "/api/relays", admin, {"files": RELAY_FILES}), 200)
    started = {"function": "run", "input": {"plan": SECRET}, "idempotency_key": "k"}
    relay_run = _ok(api("POST", "/api/relays/contracts-relay/runs", caller["token"], started), 202)
    w.ids["relay_run"] = relay_run["run_id"]
    run = _ok(api("POST", "/v1/workflows", admin, WORKFLOW), 202)
    from tests.integration.workflow_support import wait_run

    ran = wait_run(api, admin, run["runId"])
    w.ids.update(run=run["runId"], session=ran["stages"][0]["steps"][0]["sessionId"])
    _ok(api("POST", "/v1/adapters", admin, CLI_PROFILE), 201)
    _ok(api("POST", "/v1/workflows", admin, CLI_WORKFLOW), 202)
    from tests.integration.runner_support import queued_job_ids

    w.ids["runner_job"] = queued_job_ids(stack, 1)[0]
    derived = _derived_principals(api, stack, w, stranger["token"], bounded_admin["token"])
    _ok(api("DELETE", f"/v1/connections/{revoked['connection_id']}", admin))
    stack.clock.advance(61)  # past the expiry (the wakeup is due in an hour)
    w.tokens = {
        "no_token": None,
        "garbage": "garbage",
        "revoked": revoked["token"],
        "expired": expired["token"],
        "other_account": stack.services.identity.bootstrap("intruder").token,
        "outside_bounds": outside["token"],
        "not_on_allow_list": stranger["token"],
        "bounded_admin": bounded_admin["token"],
        "relay_caller": caller["token"],  # not a case: the relay run's own caller
        **derived,
    }
    return w


def _derived_principals(
    api: Any, stack: Any, w: World, stranger: str, bounded_admin: str
) -> dict[str, str]:
    """Issue 24's rows: a running relay run's credential (the stranger's run), a session of
    the bounded admin (through a link, as the Inbox signs in), and its child."""
    body = {"function": "run", "input": {}, "idempotency_key": "derived"}
    run_id = _ok(api("POST", "/api/relays/contracts-relay/runs", stranger, body), 202)["run_id"]
    run_credential = live_credential(stack, run_id)
    link = _ok(api("POST", "/v1/session/links", bounded_admin))
    signed_in = api("POST", "/v1/session", None, {"code": link["code"]}, headers=[CSRF])
    _ok(signed_in)
    cookie = signed_in.headers.get("Set-Cookie") or ""
    child = api(
        "POST", "/v1/connections", bounded_admin, {"name": "child", "ends_with_parent": True}
    )
    return {
        "relay_run": run_credential,
        "web_session": COOKIE + cookie.split(";", 1)[0].partition("=")[2],
        "child_connection": _ok(child, 201)["token"],
    }


# ---------------------------------------------------------------- the rows

# Expected answer of a case: "like_unknown" (404 unavailable, byte-identical to the same
# request with unknown ids), "forbidden" (403), an int (that status: a refusal with a
# reason the caller may know, e.g. 400 for bounds it asked beyond its own), "own" (allowed:
# it acts in its own account or within A3b's rule, and nothing of the world leaks).
Expect = str | int


@dataclass(frozen=True)
class Row:
    """One way to use an action: the request as the world's owner would make it."""

    name: str
    scope: str | None
    request: Callable[[World], Any]  # HTTP: (path, body, query); MCP: the arguments
    # "named": it names a target of the owner's (refused like unknown unless overridden);
    # "account": it acts on the caller's own account (nothing of the owner's may leak).
    kind: str = "named"
    # Which cases do what; omitted cases follow the kind's default.
    expect: dict[str, Expect] = field(default_factory=dict)
    # It grants or stores authority (issue 24): only a connection's own token may.
    grants: bool = False

    def expected(self, case: str) -> Expect | None:
        if case in self.expect:
            return self.expect[case]
        if case in DERIVED:
            if case in ("relay_run", "web_session") and self.grants:
                return "forbidden"
            if case == "relay_run" and self.scope and self.scope not in RELAY_CODE_SCOPES:
                return "forbidden"
            return self.expected(DERIVED[case])
        if case == "missing_scope":
            return "forbidden" if self.scope else None
        if self.scope == ADMIN and case in ("outside_bounds", "not_on_allow_list"):
            return "forbidden"
        return "like_unknown" if self.kind == "named" else "own"


OWN = "own"
# A3b: the account's (unnamed) side of a conversation is any account client's to use.
ACCOUNT_INBOX = {"not_on_allow_list": OWN}


def _http(method: str, template: str) -> tuple[str, str]:
    return (method, template)


HTTP_ROWS: dict[tuple[str, str], list[Row]] = {
    _http("GET", "/v1/whoami"): [
        Row("whoami", None, lambda w: ("/v1/whoami", None, None), kind="account")
    ],
    _http("POST", "/v1/connections"): [
        Row(
            "create",
            ADMIN,
            lambda w: ("/v1/connections", {"name": "m", "target_bounds": ["crew:contracts"]}, None),
            kind="account",
            expect={"bounded_admin": 400},
            grants=True,
        )
    ],
    _http("GET", "/v1/connections"): [
        Row("list", ADMIN, lambda w: ("/v1/connections", None, None), kind="account")
    ],
    _http("DELETE", "/v1/connections/<connection_id>"): [
        Row(
            "revoke-root",
            ADMIN,
            lambda w: (f"/v1/connections/{w.ids['root_connection']}", None, None),
        ),
        Row(
            "revoke-peer",
            ADMIN,
            lambda w: (f"/v1/connections/{w.ids['reviewer_connection']}", None, None),
        ),
    ],
    _http("POST", "/v1/agents"): [
        # Registering an unknown name succeeds, so "like unknown" means: like a name the
        # caller may not take (bounds refuse before any read).
        Row(
            "register-taken",
            "messages:send",
            lambda w: ("/v1/agents", {"agent_name": "reviewer"}, None),
            expect={"other_account": OWN, "not_on_allow_list": 409},
        )
    ],
    _http("GET", "/v1/agents"): [
        Row("list", "messages:read", lambda w: ("/v1/agents", None, None), kind="account")
    ],
    # C5 the Messages view: the account's conversations with a named agent; bodies only to
    # a connection that acts as one of its names (nothing of the owner's for anyone else).
    _http("GET", "/v1/agents/conversations"): [
        Row(
            "list",
            "messages:read",
            lambda w: ("/v1/agents/conversations", None, None),
            kind="account",
        )
    ],
    _http("DELETE", "/v1/agents/<agent_name>"): [
        Row("unregister", "messages:send", lambda w: ("/v1/agents/reviewer", None, None))
    ],
    _http("POST", "/v1/messages"): [
        Row(
            "first-contact",
            "messages:send",
            lambda w: ("/v1/messages", {"target": "agent:reviewer", "message": "x"}, None),
            expect={"not_on_allow_list": OWN},
        ),
        Row(
            "first-contact-crew",
            "messages:send",
            lambda w: ("/v1/messages", {"target": "crew:contracts", "message": "x"}, None),
        ),
        Row(
            "send-as",
            "messages:send",
            lambda w: (
                "/v1/messages",
                {"agent_name": "reviewer", "target": "agent:worker", "message": "x"},
                None,
            ),
        ),
        Row(
            "into-named-inbox",
            "messages:send",
            lambda w: ("/v1/messages", {"inbox_id": w.ids["reviewer_inbox"], "message": "x"}, None),
        ),
        Row(
            "into-account-inbox",
            "messages:send",
            lambda w: ("/v1/messages", {"inbox_id": w.ids["crew_inbox"], "message": "x"}, None),
            expect=ACCOUNT_INBOX,
        ),
    ],
    _http("GET", "/v1/requests"): [
        Row(
            "account-inbox",
            "messages:send",
            lambda w: ("/v1/requests", None, {"inbox_id": w.ids["crew_inbox"]}),
            expect=ACCOUNT_INBOX,
        )
    ],
    _http("POST", "/v1/requests/<message_id>/cancel"): [
        # Only the asker (or an unbounded admin) may: anyone else gets what unknown gets.
        Row(
            "cancel",
            "messages:send",
            lambda w: (f"/v1/requests/{w.ids['crew_request']}/cancel", {}, None),
        )
    ],
    **{
        _http("POST", f"/v1/conversations/<inbox_id>/{step}"): [
            Row(
                "asker-inbox",
                "messages:send",
                lambda w, step=step: (
                    f"/v1/conversations/{w.ids['control_inbox']}/{step}",
                    {},
                    None,
                ),
                expect=ACCOUNT_INBOX,
            )
        ]
        for step in ("pause", "resume", "close")
    },
    # C5 the Inbox: a list of what the caller may see (nothing of the owner's for anyone
    # else), and one conversation, refused like an unknown one to whoever may not see it.
    _http("GET", "/v1/conversations"): [
        Row("list", "messages:read", lambda w: ("/v1/conversations", None, None), kind="account")
    ],
    _http("GET", "/v1/conversations/<conversation_id>"): [
        Row(
            "show",
            "messages:read",
            lambda w: (f"/v1/conversations/{w.ids['crew_conversation']}", None, None),
        )
    ],
    # C5 stepping in: whoever can edit the Crew answers for it (its owner, or an admin).
    _http("POST", "/v1/conversations/<inbox_id>/answer"): [
        Row(
            "answer",
            ADMIN,
            lambda w: (
                f"/v1/conversations/{w.ids['control_inbox']}/answer",
                {"crew": "contracts", "kind": "note", "message": "from a person"},
                None,
            ),
        )
    ],
    # C5 web sign-in: any connection may ask for a link to sign in as itself.
    _http("POST", "/v1/session/links"): [
        Row(
            "link",
            None,
            lambda w: ("/v1/session/links", None, None),
            kind="account",
            grants=True,
        )
    ],
    # C5 push tickets: a web session's only (the pages' upgrade where the cookie cannot go);
    # every token, a relay run's credential and a child's included, is refused with a 403.
    _http("POST", "/v1/session/push-tickets"): [
        Row(
            "ticket",
            None,
            lambda w: ("/v1/session/push-tickets", None, None),
            kind="account",
            expect={
                "other_account": "forbidden",
                "outside_bounds": "forbidden",
                "not_on_allow_list": "forbidden",
                "bounded_admin": "forbidden",
                "relay_run": "forbidden",
                "child_connection": "forbidden",
                "web_session": OWN,
            },
        )
    ],
    _http("DELETE", "/v1/conversations/<inbox_id>"): [
        Row(
            "delete",
            ADMIN,
            lambda w: (f"/v1/conversations/{w.ids['control_inbox']}", None, None),
        )
    ],
    _http("GET", "/v1/messages"): [
        Row(
            "read-named-inbox",
            "messages:read",
            lambda w: ("/v1/messages", None, {"inbox_id": w.ids["reviewer_inbox"]}),
        ),
        Row(
            "read-mailbox",
            "messages:read",
            lambda w: ("/v1/messages", None, {"agent_name": "reviewer"}),
        ),
        Row(
            "read-account-inbox",
            "messages:read",
            lambda w: ("/v1/messages", None, {"inbox_id": w.ids["crew_inbox"]}),
            expect=ACCOUNT_INBOX,
        ),
    ],
    _http("POST", "/v1/messages/<message_id>/ack"): [
        Row(
            "ack",
            "messages:read",
            lambda w: (
                f"/v1/messages/{w.ids['reviewer_message']}/ack",
                {"delivery": "processed"},
                None,
            ),
        )
    ],
    _http("GET", "/v1/inboxes/<inbox_id>/state"): [
        Row(
            "named",
            "messages:read",
            lambda w: (f"/v1/inboxes/{w.ids['reviewer_inbox']}/state", None, None),
        ),
        Row(
            "account",
            "messages:read",
            lambda w: (f"/v1/inboxes/{w.ids['crew_inbox']}/state", None, None),
            expect=ACCOUNT_INBOX,
        ),
    ],
    # Adapter profiles are the account's, not a target's: same-account connections read
    # them (their type; settings for an unbounded admin), and only an admin without
    # target bounds defines them.
    _http("POST", "/v1/adapters"): [
        Row(
            "create",
            ADMIN,
            lambda w: ("/v1/adapters", PROFILE, None),
            kind="account",
            expect={"bounded_admin": "forbidden"},
            grants=True,
        )
    ],
    _http("GET", "/v1/adapters"): [
        Row("list", "functions:read", lambda w: ("/v1/adapters", None, None), kind="account")
    ],
    _http("GET", "/v1/adapters/<name>"): [
        Row(
            "get",
            "functions:read",
            lambda w: ("/v1/adapters/claude-code", None, None),
            expect={"outside_bounds": OWN, "not_on_allow_list": OWN, "bounded_admin": OWN},
        )
    ],
    _http("PUT", "/v1/adapters/<name>"): [
        Row(
            "update",
            ADMIN,
            lambda w: ("/v1/adapters/claude-code", PROFILE, None),
            expect={"bounded_admin": "forbidden"},
            grants=True,
        )
    ],
    _http("DELETE", "/v1/adapters/<name>"): [
        Row(
            "delete",
            ADMIN,
            lambda w: ("/v1/adapters/claude-code", None, None),
            expect={"bounded_admin": "forbidden"},
        )
    ],
    # Attached MCP servers (issue 28) are account-wide administration: an admin without
    # target bounds attaches, reads, changes and removes them; calling a tool also needs
    # mcp-servers:call. Another account's server answers exactly like an unknown name.
    _http("POST", "/v1/mcp-servers"): [
        Row(
            "add",
            ADMIN,
            lambda w: (
                "/v1/mcp-servers",
                {"name": "contracts-mcp", "url": MCP_SERVER["url"]},
                None,
            ),
            kind="account",
            expect={"bounded_admin": "forbidden"},
            grants=True,
        )
    ],
    _http("GET", "/v1/mcp-servers"): [
        Row(
            "list",
            ADMIN,
            lambda w: ("/v1/mcp-servers", None, None),
            kind="account",
            expect={"bounded_admin": "forbidden"},
        )
    ],
    _http("GET", "/v1/mcp-servers/<name>"): [
        Row(
            "show",
            ADMIN,
            lambda w: (MCP_SERVER_PATH, None, None),
            expect={"bounded_admin": "forbidden"},
        )
    ],
    _http("PATCH", "/v1/mcp-servers/<name>"): [
        Row(
            "update",
            ADMIN,
            lambda w: (MCP_SERVER_PATH, {"url": "https://contracts-mcp.invalid/v2"}, None),
            expect={"bounded_admin": "forbidden"},
            grants=True,
        )
    ],
    _http("DELETE", "/v1/mcp-servers/<name>"): [
        Row(
            "remove",
            ADMIN,
            lambda w: (MCP_SERVER_PATH, None, None),
            expect={"bounded_admin": "forbidden"},
        )
    ],
    _http("POST", "/v1/mcp-servers/<name>/tools/<tool>:call"): [
        Row(
            "call",
            MCP_SERVERS_CALL,
            lambda w: (f"{MCP_SERVER_PATH}/tools/echo:call", {"text": "x"}, None),
            expect={
                "outside_bounds": "forbidden",
                "not_on_allow_list": "forbidden",
                "bounded_admin": "forbidden",
                # Relay code is admitted by its Relay's mcp_tools, not a scope: this one
                # declares none, so the call is refused before the server is looked up.
                "relay_run": 403,
            },
        )
    ],
    # A run is its starter's and the account admin's; bounds name it `workflow:<id>`.
    _http("POST", "/v1/workflows"): [
        Row(
            "start",
            WORKFLOWS_RUN,
            lambda w: ("/v1/workflows", WORKFLOW, None),
            kind="account",
            expect={"outside_bounds": "like_unknown", "bounded_admin": "like_unknown"},
        )
    ],
    _http("POST", "/v1/workflows/run-file"): [
        Row(
            "run-file",
            WORKFLOWS_RUN,
            lambda w: ("/v1/workflows/run-file", {"content": WORKFLOW_FILE}, None),
            kind="account",
            expect={"outside_bounds": "like_unknown", "bounded_admin": "like_unknown"},
        )
    ],
    _http("GET", "/v1/workflows"): [
        Row("list", WORKFLOWS_RUN, lambda w: ("/v1/workflows", None, None), kind="account")
    ],
    _http("GET", "/v1/workflows/webhook-key"): [
        Row(
            "webhook-key",
            ADMIN,
            lambda w: ("/v1/workflows/webhook-key", None, None),
            kind="account",
            expect={"bounded_admin": "forbidden"},
            grants=True,
        )
    ],
    _http("GET", "/v1/workflows/<run_id>"): [
        Row("status", WORKFLOWS_RUN, lambda w: (f"/v1/workflows/{w.ids['run']}", None, None))
    ],
    _http("GET", "/v1/workflows/<run_id>/sessions/<session_id>"): [
        Row(
            "session",
            WORKFLOWS_RUN,
            lambda w: (f"/v1/workflows/{w.ids['run']}/sessions/{w.ids['session']}", None, None),
        )
    ],
    _http("POST", "/v1/workflows/<run_id>/cancel"): [
        Row(
            "cancel",
            WORKFLOWS_RUN,
            lambda w: (f"/v1/workflows/{w.ids['run']}/cancel", None, None),
        )
    ],
    _http("POST", "/v1/workflows/<run_id>/resolve"): [
        Row(
            "resolve",
            WORKFLOWS_RUN,
            lambda w: (
                f"/v1/workflows/{w.ids['run']}/resolve",
                {"step": "plan", "answer": "yes"},
                None,
            ),
        )
    ],
    _http("POST", "/v1/workflows/<run_id>/retry"): [
        Row(
            "retry",
            WORKFLOWS_RUN,
            lambda w: (f"/v1/workflows/{w.ids['run']}/retry", {}, None),
        )
    ],
    # Runner jobs (issue 10 item 6) are the account's; a runner needs its scope (no default:
    # the stranger and the bounded connection lack it) and claims only within its bounds.
    _http("POST", "/v1/runner/claim"): [
        Row(
            "claim",
            WORKFLOWS_RUNNER,
            lambda w: ("/v1/runner/claim", RUNNER_CLAIM, None),
            kind="account",
            expect={"outside_bounds": "forbidden", "not_on_allow_list": "forbidden"},
        )
    ],
    _http("POST", "/v1/runner/jobs/<job_id>/renew"): [
        Row(
            "renew",
            WORKFLOWS_RUNNER,
            lambda w: (
                f"/v1/runner/jobs/{w.ids['runner_job']}/renew",
                {"runner_id": "r-matrix"},
                None,
            ),
            expect={"outside_bounds": "forbidden", "not_on_allow_list": "forbidden"},
        )
    ],
    _http("POST", "/v1/runner/jobs/<job_id>/finish"): [
        Row(
            "finish",
            WORKFLOWS_RUNNER,
            lambda w: (
                f"/v1/runner/jobs/{w.ids['runner_job']}/finish",
                {"runner_id": "r-matrix", "output": "done", "session_id": "s-1"},
                None,
            ),
            expect={"outside_bounds": "forbidden", "not_on_allow_list": "forbidden"},
        )
    ],
    # Registered workflows: an admin registers; any workflows:run connection whose bounds
    # include workflow:<id> reads them.
    _http("PUT", "/v1/workflow-definitions"): [
        Row(
            "register",
            ADMIN,
            lambda w: ("/v1/workflow-definitions", {"content": REGISTERED_FILE}, None),
            kind="account",
            expect={"bounded_admin": "forbidden"},
            grants=True,
        )
    ],
    _http("GET", "/v1/workflow-definitions"): [
        Row(
            "list",
            WORKFLOWS_RUN,
            lambda w: ("/v1/workflow-definitions", None, None),
            kind="account",
        )
    ],
    _http("GET", "/v1/workflow-definitions/<workflow_id>"): [
        Row(
            "get",
            WORKFLOWS_RUN,
            lambda w: ("/v1/workflow-definitions/contracts-flow", None, None),
            expect={"not_on_allow_list": OWN},
        )
    ],
    _http("DELETE", "/v1/workflow-definitions/<workflow_id>"): [
        Row(
            "delete",
            ADMIN,
            lambda w: ("/v1/workflow-definitions/contracts-flow", None, None),
            expect={"bounded_admin": "forbidden"},
        )
    ],
    _http("POST", "/v1/crews"): [
        # An unknown Crew's definition is refused by bounds alike; others create their own.
        Row(
            "create",
            ADMIN,
            lambda w: ("/v1/crews", CONTRACTS, None),
            expect={"other_account": OWN},
            grants=True,
        )
    ],
    _http("GET", "/v1/crews"): [
        Row("list", "functions:read", lambda w: ("/v1/crews", None, None), kind="account")
    ],
    _http("GET", "/v1/crews/<name>"): [
        Row("get", "functions:read", lambda w: ("/v1/crews/contracts", None, None))
    ],
    _http("PUT", "/v1/crews/<name>"): [
        Row("update", ADMIN, lambda w: ("/v1/crews/contracts", CONTRACTS, None), grants=True)
    ],
    _http("DELETE", "/v1/crews/<name>"): [
        Row("delete", ADMIN, lambda w: ("/v1/crews/contracts", None, None))
    ],
    _http("POST", "/v1/crews/<name>/release"): [
        Row(
            "release",
            ADMIN,
            lambda w: ("/v1/crews/contracts/release", {"message_id": w.ids["crew_message"]}, None),
        )
    ],
    _http("POST", "/v1/crews/<name>/decline"): [
        Row(
            "decline",
            ADMIN,
            lambda w: ("/v1/crews/contracts/decline", {"message_id": w.ids["crew_message"]}, None),
        )
    ],
    _http("GET", "/v1/crews/<name>/state"): [
        Row("state", ADMIN, lambda w: ("/v1/crews/contracts/state", None, None))
    ],
    _http("GET", "/v1/functions"): [
        Row(
            "list",
            "functions:read",
            lambda w: ("/v1/functions", None, {"target": "crew:contracts"}),
        )
    ],
    _http("POST", "/v1/calls"): [
        Row(
            "call",
            "functions:call",
            lambda w: (
                "/v1/calls",
                {"target": "crew:contracts", "function": "summarize", "args": {"text": "t"}},
                None,
            ),
        )
    ],
    # C5 the Runs page: one's own calls (nothing of the owner's for anyone else).
    _http("GET", "/v1/calls"): [
        Row("list", "functions:read", lambda w: ("/v1/calls", None, None), kind="account")
    ],
    _http("GET", "/v1/calls/<call_id>"): [
        Row("status", "functions:read", lambda w: (f"/v1/calls/{w.ids['call']}", None, None))
    ],
    _http("GET", "/v1/calls/<call_id>/files"): [
        Row(
            "read-file",
            "functions:read",
            lambda w: (f"/v1/calls/{w.ids['call']}/files", None, {"path": "result.json"}),
        )
    ],
    _http("POST", "/v1/calls/<call_id>/reply"): [
        Row(
            "reply",
            "functions:call",
            lambda w: (
                f"/v1/calls/{w.ids['call']}/reply",
                {"request_id": "r1", "answer": "yes"},
                None,
            ),
        )
    ],
    _http("POST", "/v1/calls/<call_id>/result"): [
        Row(
            "result",
            "messages:send",
            lambda w: (
                f"/v1/calls/{w.ids['call']}/result",
                {"agent_name": "reviewer", "final_text": "done"},
                None,
            ),
        )
    ],
    _http("POST", "/v1/wakeups"): [
        Row(
            "schedule",
            "messages:send",
            lambda w: (
                "/v1/wakeups",
                {"inbox_id": w.ids["crew_inbox"], "delay_seconds": 120},
                None,
            ),
            expect=ACCOUNT_INBOX,
        )
    ],
    _http("DELETE", "/v1/wakeups/<wakeup_id>"): [
        Row(
            "cancel",
            "messages:send",
            lambda w: (f"/v1/wakeups/{w.ids['wakeup']}", None, None),
            expect=ACCOUNT_INBOX,
        )
    ],
    _http("POST", "/v1/wakeups/<wakeup_id>/reschedule"): [
        Row(
            "reschedule",
            "messages:send",
            lambda w: (f"/v1/wakeups/{w.ids['wakeup']}/reschedule", {"delay_seconds": 300}, None),
            expect=ACCOUNT_INBOX,
        )
    ],
    # A3b: the scheduler is the account's; a bounded admin may not pause it.
    _http("GET", "/v1/scheduler"): [
        Row(
            "get",
            ADMIN,
            lambda w: ("/v1/scheduler", None, None),
            kind="account",
            expect={"bounded_admin": "forbidden"},
        )
    ],
    _http("POST", "/v1/scheduler"): [
        Row(
            "pause",
            ADMIN,
            lambda w: ("/v1/scheduler", {"paused": True}, None),
            kind="account",
            expect={"bounded_admin": "forbidden"},
        )
    ],
    # Usage and cost (issue 12) are the account's: an unbounded admin's of that account.
    # Naming another account answers as an unknown one does.
    _http("GET", "/v1/usage"): [
        Row(
            "own",
            ADMIN,
            lambda w: ("/v1/usage", None, None),
            kind="account",
            expect={"bounded_admin": "forbidden"},
        ),
        Row(
            "named-account",
            ADMIN,
            lambda w: ("/v1/usage", None, {"account": w.ids["account"], "days": 2}),
            expect={"bounded_admin": "forbidden"},
        ),
    ],
    # The audit log and conversation webhooks (C6) are the account's: an unbounded admin's.
    # Another account reads its own (empty) log, and a webhook id of ours as an unknown one.
    _http("GET", "/v1/audit"): [
        Row(
            "account",
            ADMIN,
            lambda w: ("/v1/audit", None, None),
            kind="account",
            expect={"bounded_admin": "forbidden"},
        ),
        Row(
            "one-conversation",
            ADMIN,
            lambda w: ("/v1/audit", None, {"inbox_id": w.ids["crew_inbox"]}),
            kind="account",
            expect={"bounded_admin": "forbidden"},
        ),
    ],
    _http("POST", "/v1/webhooks"): [
        Row(
            "subscribe",
            ADMIN,
            lambda w: (
                "/v1/webhooks",
                {"url": "https://x.example/h", "events": ["agent_asked"]},
                None,
            ),
            kind="account",
            expect={"bounded_admin": "forbidden"},
            grants=True,
        )
    ],
    _http("GET", "/v1/webhooks"): [
        Row(
            "list",
            ADMIN,
            lambda w: ("/v1/webhooks", None, None),
            kind="account",
            expect={"bounded_admin": "forbidden"},
        )
    ],
    _http("DELETE", "/v1/webhooks/<webhook_id>"): [
        Row(
            "delete",
            ADMIN,
            lambda w: (f"/v1/webhooks/{w.ids['webhook']}", None, None),
            expect={"bounded_admin": "forbidden"},
        )
    ],
    _http("GET", "/v1/webhooks/<webhook_id>/deliveries"): [
        Row(
            "deliveries",
            ADMIN,
            lambda w: (f"/v1/webhooks/{w.ids['webhook']}/deliveries", None, None),
            expect={"bounded_admin": "forbidden"},
        )
    ],
    # Relays (issue 9): no allow-lists — any unbounded connection with relays:run may run
    # one; a run is its caller's (or an unbounded admin's) to see and retry.
    _http("POST", "/api/relays"): [
        Row(
            "publish",
            ADMIN,
            lambda w: ("/api/relays", {"files": RELAY_FILES}, None),
            kind="account",
            expect={"bounded_admin": "forbidden"},
            grants=True,
        )
    ],
    _http("GET", "/api/relays"): [
        Row("list", "relays:run", lambda w: ("/api/relays", None, None), kind="account")
    ],
    _http("GET", "/api/relays/<relay>/releases"): [
        Row(
            "releases",
            "relays:run",
            lambda w: ("/api/relays/contracts-relay/releases", None, None),
            expect={"not_on_allow_list": OWN},
        )
    ],
    _http("POST", "/api/relays/<relay>/runs"): [
        Row(
            "run",
            "relays:run",
            lambda w: (
                "/api/relays/contracts-relay/runs",
                {"function": "run", "input": {}, "idempotency_key": "m"},
                None,
            ),
            expect={"not_on_allow_list": OWN},
        )
    ],
    _http("GET", "/api/relays/<relay>/runs/<run_id>"): [
        Row(
            "status",
            "relays:run",
            lambda w: (f"/api/relays/contracts-relay/runs/{w.ids['relay_run']}", None, None),
        )
    ],
    _http("POST", "/api/relays/<relay>/runs/<run_id>/retry"): [
        Row(
            "retry",
            "relays:run",
            lambda w: (f"/api/relays/contracts-relay/runs/{w.ids['relay_run']}/retry", {}, None),
        )
    ],
    _http("GET", "/api/relay-runs/<run_id>"): [
        Row("status", "relays:run", lambda w: (f"/api/relay-runs/{w.ids['relay_run']}", None, None))
    ],
    _http("POST", "/api/relay-runs/<run_id>/retry"): [
        Row(
            "retry",
            "relays:run",
            lambda w: (f"/api/relay-runs/{w.ids['relay_run']}/retry", {}, None),
        )
    ],
    # Durable steps answer only the run's own credential: every connection token, the
    # run's caller's included, finds nothing there.
    **{
        _http("POST", f"/api/relays/<relay>/runs/<run_id>/steps/<step>/{verb}"): [
            Row(
                f"step-{verb}",
                None,
                lambda w, verb=verb: (
                    f"/api/relays/contracts-relay/runs/{w.ids['relay_run']}/steps/s/{verb}",
                    {"safe": False} if verb == "start" else {},
                    None,
                ),
            )
        ]
        for verb in ("start", "finish", "abandon")
    },
}
# The webhook route checks the trigger's signature instead (test_workflow_triggers.py).
PUBLIC_ROUTES = {
    ("GET", "/v1/openapi.json"),
    ("POST", "/v1/hooks/<trigger_id>"),
    # C5: the one-time code is the exchange's credential; sign-out ends the cookie's session.
    ("POST", "/v1/session"),
    ("POST", "/v1/session/logout"),
}


def _m(tool: str, action: str) -> tuple[str, str]:
    return (tool, action)


MCP_ROWS: dict[tuple[str, str], list[Row]] = {
    _m("relays", "publish"): [
        Row(
            "publish",
            ADMIN,
            lambda w: {"files": RELAY_FILES},
            kind="account",
            expect={"bounded_admin": "forbidden"},
            grants=True,
        )
    ],
    _m("relays", "releases"): [
        Row("list", "relays:run", lambda w: {}, kind="account"),
        Row(
            "releases",
            "relays:run",
            lambda w: {"relay": "contracts-relay"},
            expect={"not_on_allow_list": OWN},
        ),
    ],
    _m("relays", "run"): [
        Row(
            "run",
            "relays:run",
            lambda w: {
                "relay": "contracts-relay",
                "function": "run",
                "input": {},
                "idempotency_key": "m",
            },
            expect={"not_on_allow_list": OWN},
        )
    ],
    _m("relays", "status"): [Row("status", "relays:run", lambda w: {"run_id": w.ids["relay_run"]})],
    _m("relays", "retry"): [Row("retry", "relays:run", lambda w: {"run_id": w.ids["relay_run"]})],
    _m("messages", "send"): [
        Row(
            "first-contact",
            "messages:send",
            lambda w: {"target": "agent:reviewer", "message": "x"},
            expect={"not_on_allow_list": OWN},
        ),
        Row(
            "first-contact-crew",
            "messages:send",
            lambda w: {"target": "crew:contracts", "message": "x"},
        ),
        Row(
            "send-as",
            "messages:send",
            lambda w: {"agent_name": "reviewer", "target": "agent:worker", "message": "x"},
        ),
        Row(
            "into-named-inbox",
            "messages:send",
            lambda w: {"inbox_id": w.ids["reviewer_inbox"], "message": "x"},
        ),
        Row(
            "into-account-inbox",
            "messages:send",
            lambda w: {"inbox_id": w.ids["crew_inbox"], "message": "x"},
            expect=ACCOUNT_INBOX,
        ),
    ],
    _m("messages", "request"): [
        Row(
            "into-account-inbox",
            "messages:send",
            lambda w: {"inbox_id": w.ids["crew_inbox"], "message": "x"},
            expect=ACCOUNT_INBOX,
        ),
        Row(
            "first-contact-crew",
            "messages:send",
            lambda w: {"target": "crew:contracts", "message": "x"},
        ),
    ],
    _m("messages", "note"): [
        Row(
            "into-account-inbox",
            "messages:send",
            lambda w: {"inbox_id": w.ids["crew_inbox"], "message": "x"},
            expect=ACCOUNT_INBOX,
        )
    ],
    _m("messages", "reply"): [
        Row(
            "into-account-inbox",
            "messages:send",
            lambda w: {
                "inbox_id": w.ids["crew_inbox"],
                "message": "x",
                "in_reply_to": w.ids["crew_message"],
            },
            expect=ACCOUNT_INBOX,
        )
    ],
    _m("messages", "requests"): [
        Row(
            "account-inbox",
            "messages:send",
            lambda w: {"inbox_id": w.ids["crew_inbox"]},
            expect=ACCOUNT_INBOX,
        )
    ],
    _m("messages", "cancel_request"): [
        Row("cancel", "messages:send", lambda w: {"message_id": w.ids["crew_request"]})
    ],
    _m("messages", "decline"): [  # C5: as POST /v1/crews/{name}/decline
        Row(
            "decline",
            ADMIN,
            lambda w: {"target": "crew:contracts", "message_id": w.ids["crew_message"]},
        )
    ],
    _m("messages", "read"): [
        Row("named-inbox", "messages:read", lambda w: {"inbox_id": w.ids["reviewer_inbox"]}),
        Row("mailbox", "messages:read", lambda w: {"agent_name": "reviewer"}),
        Row(
            "account-inbox",
            "messages:read",
            lambda w: {"inbox_id": w.ids["crew_inbox"]},
            expect=ACCOUNT_INBOX,
        ),
    ],
    _m("messages", "state"): [
        Row("named-inbox", "messages:read", lambda w: {"inbox_id": w.ids["reviewer_inbox"]}),
        Row(
            "account-inbox",
            "messages:read",
            lambda w: {"inbox_id": w.ids["crew_inbox"]},
            expect=ACCOUNT_INBOX,
        ),
        Row("crew", ADMIN, lambda w: {"target": "crew:contracts"}),
    ],
    _m("messages", "register"): [
        Row(
            "taken",
            "messages:send",
            lambda w: {"agent_name": "reviewer"},
            expect={"other_account": OWN, "not_on_allow_list": 409},
        )
    ],
    _m("messages", "unregister"): [
        Row("unregister", "messages:send", lambda w: {"agent_name": "reviewer"})
    ],
    _m("messages", "list_agents"): [Row("list", "messages:read", lambda w: {}, kind="account")],
    _m("messages", "ack"): [
        Row(
            "ack",
            "messages:read",
            lambda w: {"message_id": w.ids["reviewer_message"], "delivery": "processed"},
        )
    ],
    _m("messages", "wakeup"): [
        Row(
            "schedule",
            "messages:send",
            lambda w: {
                "wakeup_action": "schedule",
                "inbox_id": w.ids["crew_inbox"],
                "delay_seconds": 120,
            },
            expect=ACCOUNT_INBOX,
        ),
        Row(
            "cancel",
            "messages:send",
            lambda w: {"wakeup_action": "cancel", "wakeup_id": w.ids["wakeup"]},
            expect=ACCOUNT_INBOX,
        ),
        Row(
            "reschedule",
            "messages:send",
            lambda w: {
                "wakeup_action": "reschedule",
                "wakeup_id": w.ids["wakeup"],
                "delay_seconds": 300,
            },
            expect=ACCOUNT_INBOX,
        ),
    ],
    # As over HTTP (see /v1/adapters above).
    _m("adapters", "create"): [
        Row(
            "create",
            ADMIN,
            lambda w: {"definition": PROFILE},
            kind="account",
            expect={"bounded_admin": "forbidden"},
            grants=True,
        )
    ],
    _m("adapters", "list"): [Row("list", "functions:read", lambda w: {}, kind="account")],
    _m("adapters", "get"): [
        Row(
            "get",
            "functions:read",
            lambda w: {"name": "claude-code"},
            expect={"outside_bounds": OWN, "not_on_allow_list": OWN, "bounded_admin": OWN},
        )
    ],
    _m("adapters", "update"): [
        Row(
            "update",
            ADMIN,
            lambda w: {"definition": PROFILE},
            expect={"bounded_admin": "forbidden"},
            grants=True,
        )
    ],
    _m("adapters", "delete"): [
        Row(
            "delete",
            ADMIN,
            lambda w: {"name": "claude-code"},
            expect={"bounded_admin": "forbidden"},
        )
    ],
    # As over HTTP (see /v1/mcp-servers above).
    _m("mcp_servers", "add"): [
        Row(
            "add",
            ADMIN,
            lambda w: {"definition": {"name": "contracts-mcp", "url": MCP_SERVER["url"]}},
            kind="account",
            expect={"bounded_admin": "forbidden"},
            grants=True,
        )
    ],
    _m("mcp_servers", "list"): [
        Row("list", ADMIN, lambda w: {}, kind="account", expect={"bounded_admin": "forbidden"})
    ],
    _m("mcp_servers", "show"): [
        Row(
            "show",
            ADMIN,
            lambda w: {"name": "contracts-mcp"},
            expect={"bounded_admin": "forbidden"},
        )
    ],
    _m("mcp_servers", "update"): [
        Row(
            "update",
            ADMIN,
            lambda w: {"name": "contracts-mcp", "definition": {"url": MCP_SERVER["url"]}},
            expect={"bounded_admin": "forbidden"},
            grants=True,
        )
    ],
    _m("mcp_servers", "remove"): [
        Row(
            "remove",
            ADMIN,
            lambda w: {"name": "contracts-mcp"},
            expect={"bounded_admin": "forbidden"},
        )
    ],
    # As over HTTP (see /v1/workflows above).
    _m("workflow_start", ""): [
        Row(
            "start",
            WORKFLOWS_RUN,
            lambda w: WORKFLOW,
            kind="account",
            expect={"outside_bounds": "like_unknown", "bounded_admin": "like_unknown"},
        )
    ],
    _m("workflow_run_file", ""): [
        Row(
            "run-file",
            WORKFLOWS_RUN,
            lambda w: {"content": WORKFLOW_FILE},
            kind="account",
            expect={"outside_bounds": "like_unknown", "bounded_admin": "like_unknown"},
        )
    ],
    _m("workflow_list", ""): [Row("list", WORKFLOWS_RUN, lambda w: {}, kind="account")],
    _m("workflow_status", ""): [Row("status", WORKFLOWS_RUN, lambda w: {"runId": w.ids["run"]})],
    _m("workflow_cancel", ""): [Row("cancel", WORKFLOWS_RUN, lambda w: {"runId": w.ids["run"]})],
    _m("workflow_resolve", ""): [
        Row(
            "resolve",
            WORKFLOWS_RUN,
            lambda w: {"runId": w.ids["run"], "step": "plan", "answer": "yes"},
        )
    ],
    _m("workflow_retry", ""): [Row("retry", WORKFLOWS_RUN, lambda w: {"runId": w.ids["run"]})],
    _m("crews", "create"): [
        Row(
            "create",
            ADMIN,
            lambda w: {"definition": CONTRACTS},
            expect={"other_account": OWN},
            grants=True,
        )
    ],
    _m("crews", "update"): [
        Row(
            "update",
            ADMIN,
            lambda w: {"name": "contracts", "definition": CONTRACTS},
            grants=True,
        )
    ],
    _m("crews", "get"): [Row("get", "functions:read", lambda w: {"name": "contracts"})],
    _m("crews", "list"): [Row("list", "functions:read", lambda w: {}, kind="account")],
    _m("crews", "delete"): [Row("delete", ADMIN, lambda w: {"name": "contracts"})],
    _m("crews", "release"): [
        Row("release", ADMIN, lambda w: {"name": "contracts", "message_id": w.ids["crew_message"]})
    ],
    _m("crews", "decline"): [
        Row("decline", ADMIN, lambda w: {"name": "contracts", "message_id": w.ids["crew_message"]})
    ],
    _m("crews", "audit"): [  # C6: the account's log, an unbounded admin's
        Row("audit", ADMIN, lambda w: {}, kind="account", expect={"bounded_admin": "forbidden"})
    ],
    _m("functions", "list"): [
        Row("list", "functions:read", lambda w: {"target": "crew:contracts"})
    ],
    _m("functions", "call"): [
        Row(
            "call",
            "functions:call",
            lambda w: {"target": "crew:contracts", "function": "summarize", "args": {"text": "t"}},
        )
    ],
    _m("functions", "status"): [
        Row("status", "functions:read", lambda w: {"call_id": w.ids["call"]})
    ],
    _m("functions", "read"): [
        Row("read", "functions:read", lambda w: {"call_id": w.ids["call"], "path": "result.json"})
    ],
    _m("functions", "reply"): [
        Row(
            "reply",
            "functions:call",
            lambda w: {"call_id": w.ids["call"], "request_id": "r1", "answer": "yes"},
        )
    ],
    _m("functions", "complete"): [
        Row(
            "complete",
            "messages:send",
            lambda w: {"call_id": w.ids["call"], "agent_name": "reviewer", "final_text": "done"},
        )
    ],
}


def _unknown_name(value: Any) -> Any:
    """Unknown ids, and the owner's names (agents, the Crew) swapped for unknown ones."""
    text = json.dumps(unknown_like(value))
    for known, unknown in (
        ("reviewer", "nobody-r"),
        ("worker", "nobody-w"),
        ("contracts", "nobody-c"),
        ("claude-code", "nobody-a"),
    ):
        text = text.replace(known, unknown)
    return json.loads(text)


# ---------------------------------------------------------------- the surfaces


@dataclass(frozen=True)
class Answer:
    status: int
    code: str | None
    raw: str  # the body as the caller gets it (MCP: the whole JSON-RPC response)


def _credential(token: str | None) -> tuple[str | None, list[tuple[str, str]]]:
    """A bearer token, or a web session's cookie (with the Inbox's CSRF header)."""
    if token is not None and token.startswith(COOKIE):
        return None, [("cookie", f"aw_session={token[len(COOKIE) :]}"), CSRF]
    return token, []


def http_answer(api: Any, method: str, token: str | None, request: Any) -> Answer:
    path, body, query = request
    bearer, headers = _credential(token)
    reply = api(method, path, bearer, body, query, headers=headers)
    error = reply.body.get("error") if isinstance(reply.body, dict) else None
    # Api hands back the parsed body; dumping it keeps its key order, so equal text means
    # the same bytes up to whitespace.
    raw = json.dumps(reply.body, ensure_ascii=False)
    return Answer(reply.status, error.get("code") if isinstance(error, dict) else None, raw)


_MCP_ID = 7  # one JSON-RPC id for every request, so equal answers are equal bytes


def mcp_answer(tool: str, action: str, token: str | None, arguments: dict[str, Any]) -> Answer:
    # The workflow tools are one tool per action (the seed's names): no `action` argument.
    given = {"action": action, **arguments} if action else arguments
    payload = {
        "jsonrpc": "2.0",
        "id": _MCP_ID,
        "method": "tools/call",
        "params": {"name": tool, "arguments": given},
    }
    bearer, headers = _credential(token)
    event = http_event("POST", "/mcp", token=bearer, body=payload, headers=headers)
    event["headers"]["accept"] = "application/json, text/event-stream"
    response = load_handler("mcp").handler(event, LambdaContext())
    raw = response.get("body") or ""
    reply = json.loads(raw) if raw else {}
    if response["statusCode"] != 200:
        data = (reply.get("error") or {}).get("data") or {}
        return Answer(response["statusCode"], (data.get("error") or {}).get("code"), raw)
    result = reply.get("result") or {}
    if result.get("isError"):
        code = (result.get("structuredContent") or {}).get("error", {}).get("code")
        return Answer(_STATUS_OF.get(code, 500), code, raw)
    return Answer(200, None, raw)


# ---------------------------------------------------------------- checking one cell


def _token(world: World, case: str, row: Row) -> str | None:
    if case == "missing_scope":
        assert row.scope is not None
        return world.scoped[row.scope]
    return world.tokens[case]


def _check(expect: Expect, got: Answer, baseline: Callable[[], Answer], world: World) -> str | None:
    """None when the answer is what the case must get; else what went wrong."""
    if expect == "like_unknown":
        unknown = baseline()
        if (got.status, got.code) != (404, "unavailable"):
            return f"expected 404 unavailable, got {got.status} {got.raw[:300]}"
        if got.raw != unknown.raw:
            return f"differs from the unknown-id answer: {got.raw[:300]} ≠ {unknown.raw[:300]}"
        return None
    if expect == "forbidden":
        if (got.status, got.code) != (403, "forbidden"):
            return f"expected 403 forbidden, got {got.status} {got.raw[:300]}"
        return None
    if isinstance(expect, int):
        return None if got.status == expect else f"expected {expect}, got {got.status} {got.raw}"
    assert expect == OWN
    if got.status in (401, 403, 500):
        return f"expected to act in its own reach, got {got.status} {got.raw[:300]}"
    leaked = [s for s in (SECRET, world.ids["root_connection"]) if s in got.raw]
    return f"leaked {leaked}: {got.raw[:300]}" if leaked else None


def _cells(case: str) -> list[tuple[str, Any, Row, Expect]]:
    """Every (surface, action, row) with what `case` must get. Cells that may act (OWN) go
    last, so an intruder creating its own "reviewer" or "contracts" cannot change the
    baseline of a later cell."""
    cells = [
        (surface, key, row, expect)
        for surface, table in (("http", HTTP_ROWS), ("mcp", MCP_ROWS))
        for key, rows in table.items()
        for row in rows
        if (expect := row.expected(case)) is not None
    ]
    return sorted(cells, key=lambda c: c[3] == OWN)


def _answer(api: Any, surface: str, key: Any, token: str | None, request: Any) -> Answer:
    if surface == "http":
        return http_answer(api, key[0], token, request)
    return mcp_answer(key[0], key[1], token, request)


def _run(api: Any, world: World, case: str) -> tuple[int, list[str]]:
    checked, failures = 0, []
    for surface, key, row, expect in _cells(case):
        token = _token(world, case, row)
        request = row.request(world)
        got = _answer(api, surface, key, token, request)

        def baseline(s: str = surface, k: Any = key, t: Any = token, r: Any = request) -> Answer:
            return _answer(api, s, k, t, _unknown_name(r))

        problem = _check(expect, got, baseline, world)
        checked += 1
        if problem:
            failures.append(f"{surface} {key} [{row.name}] as {case}: {problem}")
    return checked, failures


def matrix_counts() -> dict[str, int]:
    """Cells per case: one per action row, except missing-scope on a scopeless action."""
    rows = [r for table in (HTTP_ROWS, MCP_ROWS) for rs in table.values() for r in rs]
    counts = {case: len(rows) for case in AUTH_CASES}
    counts.update({case: len(_cells(case)) for case in CASES})
    return counts


# ---------------------------------------------------------------- the tests


def _registered_routes() -> set[tuple[str, str]]:
    from agentworks.http_api.app import app

    documented = app.documented()  # every group's routes, loaded or not by a request yet
    routes = [*documented._static_routes, *documented._dynamic_routes]
    return {(r.method, r.path) for r in routes}


def _mcp_actions() -> set[tuple[str, str]]:
    from agentworks.mcp_server import (
        adapters_tool,
        crews_tool,
        functions_tool,
        mcp_servers_tool,
        messages_tool,
        relays_tool,
        workflows_tool,
    )

    workflow_tools = {(workflows_tool.tool_name(action), "") for action in workflows_tool.ACTIONS}
    return workflow_tools | {
        (module.TOOL_NAME if hasattr(module, "TOOL_NAME") else tool, action)
        for tool, module in (
            ("messages", messages_tool),
            ("crews", crews_tool),
            ("functions", functions_tool),
            ("adapters", adapters_tool),
            ("mcp_servers", mcp_servers_tool),
            ("relays", relays_tool),
        )
        for action in module.ACTIONS
    }


def test_every_route_and_action_has_a_row() -> None:
    """A new route or MCP action fails here until the matrix says how it must refuse."""
    assert _registered_routes() - PUBLIC_ROUTES == set(HTTP_ROWS)
    assert _mcp_actions() == set(MCP_ROWS)


def test_a2_a3_every_action_refuses_missing_bad_revoked_and_expired_tokens_alike(
    api: Any, world: World
) -> None:
    """401 on every action for all four, and one body for all of them, per surface."""
    bodies: dict[str, set[str]] = {"http": set(), "mcp": set()}
    failures: list[str] = []
    checked = 0
    for case in AUTH_CASES:
        token = world.tokens[case]
        for (method, _template), rows in HTTP_ROWS.items():
            for row in rows:
                got = http_answer(api, method, token, row.request(world))
                checked += 1
                bodies["http"].add(got.raw)
                if (got.status, got.code) != (401, "unauthenticated"):
                    failures.append(f"http {method} {row.name} as {case}: {got.status} {got.raw}")
        for (tool, action), rows in MCP_ROWS.items():
            for row in rows:
                got = mcp_answer(tool, action, token, row.request(world))
                checked += 1
                bodies["mcp"].add(got.raw)
                if (got.status, got.code) != (401, "unauthenticated"):
                    failures.append(f"mcp {tool}.{action} as {case}: {got.status} {got.raw}")
    assert checked == sum(matrix_counts()[c] for c in AUTH_CASES)
    assert not failures, "\n".join(failures[:40])
    assert len(bodies["http"]) == 1 and len(bodies["mcp"]) == 1, bodies


@pytest.mark.parametrize("case", CASES)
def test_a1_a2_a3b_a4_a5_m5_every_action_refuses_like_unknown(
    api: Any, world: World, case: str
) -> None:
    checked, failures = _run(api, world, case)
    assert checked == matrix_counts()[case]
    assert not failures, f"{len(failures)} of {checked} cells:\n" + "\n".join(failures[:40])


def test_the_owner_can_do_what_the_matrix_refuses(api: Any, stack: Any, world: World) -> None:
    """The refusals are not an artefact of broken requests: the same reads succeed for the
    connections the world gave the rights (so each refusal above is authorization's)."""
    reviewer_reads = [
        ("/v1/messages", None, {"inbox_id": world.ids["reviewer_inbox"]}),
        ("/v1/messages", None, {"agent_name": "reviewer"}),
        (f"/v1/inboxes/{world.ids['reviewer_inbox']}/state", None, None),
    ]
    reviewer = world.scoped["admin"]  # every scope but admin, on the allow-lists
    for request in reviewer_reads:
        got = http_answer(api, "GET", reviewer, request)
        assert got.status == 200, got.raw
    for request in [
        ("/v1/crews/contracts", None, None),
        ("/v1/functions", None, {"target": "crew:contracts"}),
        (f"/v1/calls/{world.ids['call']}", None, None),
        ("/v1/crews/contracts/state", None, None),
        ("/v1/connections", None, None),
        (f"/v1/workflows/{world.ids['run']}", None, None),
        ("/v1/workflow-definitions/contracts-flow", None, None),
        (f"/api/relay-runs/{world.ids['relay_run']}", None, None),
        ("/api/relays/contracts-relay/releases", None, None),
        (f"/v1/workflows/{world.ids['run']}/sessions/{world.ids['session']}", None, None),
    ]:
        got = http_answer(api, "GET", stack.admin_token, request)
        assert got.status == 200, got.raw
    for tool, action, arguments in [
        ("messages", "read", {"agent_name": "reviewer"}),
        ("messages", "state", {"inbox_id": world.ids["reviewer_inbox"]}),
    ]:
        got = mcp_answer(tool, action, reviewer, arguments)
        assert got.status == 200, got.raw
    # The relay run's caller reads it too (it is theirs, not only the admin's).
    relay_run = (f"/api/relay-runs/{world.ids['relay_run']}", None, None)
    got = http_answer(api, "GET", world.tokens["relay_caller"], relay_run)
    assert got.status == 200, got.raw
    for tool, action, arguments in [
        ("crews", "get", {"name": "contracts"}),
        ("functions", "status", {"call_id": world.ids["call"]}),
    ]:
        assert mcp_answer(tool, action, stack.admin_token, arguments).status == 200
