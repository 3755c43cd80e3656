"""The web Inbox (C5): the pages and their headers, sign-in by one-time link (single use,
5 minutes, a revoked connection's session refused, CSRF header required on cookie-signed
changes), and GET /v1/conversations — the conversations a person may see, in tabs."""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

from agentworks import limits
from agentworks.identity.models import ALL_SCOPES
from agentworks.web.pages import CONTENT_SECURITY_POLICY
from agentworks_local.gateway import Request, build_event, lambda_response
from tests.integration.test_conversation_requests import ask
from tests.integration.test_crew_messages import crew
from tests.integration.test_crew_owners import private_crew
from tests.support.handlers import LambdaContext, _route, http_request, load_handler

CSRF = ("x-agentworks-requested-with", "inbox")


def call(
    method: str, path: str, body: Any = None, headers: list[tuple[str, str]] | None = None
) -> tuple[int, Any, list[tuple[str, str]]]:
    """One request through the gateway's event to the API function, with these headers
    (cookies among them) and no bearer token: (status, body, headers)."""
    http = http_request(method, path, body=body)
    http = Request(http.method, http.target, [*http.headers, *(headers or [])], http.body)
    route, parameters = _route(method, path)
    event = build_event(http, route, parameters, str(uuid.uuid4()))
    response = lambda_response(load_handler("api").handler(event, LambdaContext()))
    text = response.body.decode()
    is_json = dict(response.headers).get("Content-Type", "").startswith("application/json")
    return response.status, (json.loads(text) if is_json and text else text), response.headers


def sign_in(api: Any, token: str) -> str:
    """A session cookie for `token`'s connection, through a link as the page does it."""
    link = api("POST", "/v1/session/links", token)
    assert link.status == 200, link.body
    assert link.body["path"] == f"/inbox#code={link.body['code']}"
    status, body, headers = call("POST", "/v1/session", {"code": link.body["code"]}, [CSRF])
    assert status == 200, body
    [cookie] = [v for k, v in headers if k.lower() == "set-cookie"]
    return cookie


def cookie_header(set_cookie: str) -> tuple[str, str]:
    return ("cookie", set_cookie.split(";", 1)[0])


def test_c5_pages_are_served_with_a_strict_policy(stack):
    for path in ("/inbox", "/inbox/c/cnv_x", "/runs", "/runs/wfrun_x"):
        status, body, headers = call("GET", path)
        named = dict(headers)
        assert status == 200 and named["Content-Type"].startswith("text/html"), path
        assert named["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
        assert named["X-Content-Type-Options"] == "nosniff"
        assert named["Referrer-Policy"] == "no-referrer"
        assert '<script type="module" src="/inbox/app.js"' in body and "<script>" not in body
    # Every module the page loads is served, and none builds markup from text.
    from agentworks.web.pages import ASSETS

    modules = [path for path, (_, kind) in ASSETS.items() if kind.startswith("text/javascript")]
    assert "/inbox/app.js" in modules and len(modules) > 1
    for path in modules:
        status, script, headers = call("GET", path)
        assert status == 200 and dict(headers)["Content-Type"].startswith("text/javascript")
        assert "innerHTML" not in script and "eval(" not in script, path
        assert "insertAdjacentHTML" not in script and "outerHTML" not in script, path
    app = call("GET", "/inbox/app.js")[1]
    imported = {f"/inbox/{name}" for name in re.findall(r'from "\./([a-z_]+\.js)"', app)}
    assert imported and imported <= set(modules)
    assert call("GET", "/inbox/app.css")[0] == 200
    status, icon, headers = call("GET", "/inbox/favicon.svg")
    assert status == 200 and dict(headers)["Content-Type"] == "image/svg+xml" and "<svg" in icon


def test_c5_a_link_signs_in_once_and_the_cookie_is_strict(api, stack):
    link = api("POST", "/v1/session/links", stack.admin_token).body
    status, body, headers = call("POST", "/v1/session", {"code": link["code"]}, [CSRF])
    assert status == 200, body
    [cookie] = [v for k, v in headers if k.lower() == "set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
    assert f"Max-Age={limits.WEB_SESSION_SECONDS}" in cookie
    # Second use: exactly what an unknown code gets.
    again = call("POST", "/v1/session", {"code": link["code"]}, [CSRF])
    unknown = call("POST", "/v1/session", {"code": "nope"}, [CSRF])
    assert again[0] == 401 and again[:2] == unknown[:2]
    # The cookie authenticates as the connection.
    status, whoami, _ = call("GET", "/v1/whoami", headers=[cookie_header(cookie)])
    assert status == 200 and whoami["connection_id"] == body["connection_id"]


def test_c5_links_and_sessions_expire(api, stack):
    link = api("POST", "/v1/session/links", stack.admin_token).body
    stack.clock.advance(limits.WEB_LINK_SECONDS + 1)
    assert call("POST", "/v1/session", {"code": link["code"]}, [CSRF])[0] == 401
    cookie = cookie_header(sign_in(api, stack.admin_token))
    assert call("GET", "/v1/whoami", headers=[cookie])[0] == 200
    stack.clock.advance(limits.WEB_SESSION_SECONDS + 1)
    status, body, _ = call("GET", "/v1/whoami", headers=[cookie])
    garbage = call("GET", "/v1/whoami", headers=[("cookie", "aw_session=garbage")])
    bad_token = api("GET", "/v1/whoami", "aw1.x.y.not-a-token")
    assert status == 401 and body == garbage[1] == bad_token.body


def test_c5_a_revoked_connections_session_is_refused(api, stack, agents):
    made = agents.connection("person", scopes=["messages:read", "messages:send"])
    cookie = cookie_header(sign_in(api, made["token"]))
    assert call("GET", "/v1/conversations", headers=[cookie])[0] == 200
    revoked = api("DELETE", f"/v1/connections/{made['connection_id']}", stack.admin_token)
    assert revoked.status == 200, revoked.body
    assert call("GET", "/v1/conversations", headers=[cookie])[0] == 401
    # And a link it asked for before can't be exchanged afterwards.
    again = agents.connection("person-2", scopes=["messages:read"])
    link = api("POST", "/v1/session/links", again["token"]).body
    assert (
        api("DELETE", f"/v1/connections/{again['connection_id']}", stack.admin_token).status == 200
    )
    assert call("POST", "/v1/session", {"code": link["code"]}, [CSRF])[0] == 401


def test_c5_cookie_signed_changes_need_the_csrf_header(api, stack):
    crew(api, stack, "review")
    sent = ask(api, stack.admin_token, "What does clause 3 say?").body
    cookie = cookie_header(sign_in(api, stack.admin_token))
    path = f"/v1/conversations/{sent['inbox_id']}/pause"
    status, body, _ = call("POST", path, {}, [cookie])
    assert status == 403 and body["error"]["code"] == "forbidden", body
    assert call("POST", path, {}, [cookie, CSRF])[0] == 200
    # The exchange and sign-out need it too (a cross-site form can't send it).
    link = api("POST", "/v1/session/links", stack.admin_token).body
    assert call("POST", "/v1/session", {"code": link["code"]})[0] == 403
    assert call("POST", "/v1/session/logout", None, [cookie])[0] == 403
    assert call("POST", "/v1/session/logout", None, [cookie, CSRF])[0] == 200
    assert call("GET", "/v1/whoami", headers=[cookie])[0] == 401  # signed out


def _listed(api: Any, token: str, **query: Any) -> dict:
    reply = api("GET", "/v1/conversations", token, query=query)
    assert reply.status == 200, reply.body
    return dict(reply.body)


def test_c5_conversations_sort_into_tabs(api, stack, agents):
    crew(api, stack, "review")
    caller = agents.connection("caller")["token"]
    sent = ask(api, caller, "What does clause 9 say?").body
    admin = _listed(api, stack.admin_token)
    [conv] = admin["conversations"]
    assert conv["tab"] == "needs_you" and conv["tab_label"] == "Needs You"
    assert admin["counts"]["needs_you"] == 1 and conv["needs_you"] == 1
    assert [a["address"] for a in conv["agents"]] == ["external", "crew:contracts"]
    assert conv["open_requests"][0]["state"] == "waiting_for_review"
    # The caller can't review: for it the request waits on others.
    mine = _listed(api, caller)
    [theirs] = mine["conversations"]
    assert theirs["tab"] == "waiting_on_others" and theirs["runs_as_you"] is True
    assert _listed(api, caller, tab="needs_you")["conversations"] == []
    # One agent's only.
    assert len(_listed(api, stack.admin_token, agent="crew:contracts")["conversations"]) == 1
    assert _listed(api, stack.admin_token, agent="crew:other")["conversations"] == []
    # The conversation view has every message and the request's state.
    shown = api("GET", f"/v1/conversations/{conv['conversation_id']}", stack.admin_token)
    assert shown.status == 200, shown.body
    [message] = shown.body["messages"]
    assert message["message_id"] == sent["message_id"] and message["kind"] == "request"
    assert shown.body["requests"][0]["label"] == "Waiting for review"
    closed = api("POST", f"/v1/conversations/{sent['inbox_id']}/close", caller, {})
    assert closed.status == 200, closed.body
    assert _listed(api, stack.admin_token)["conversations"][0]["tab"] == "closed"


def test_c5_visibility_across_accounts_and_private_crews(api, stack, agents):
    owner = agents.connection("owner", scopes=sorted(ALL_SCOPES))
    private_crew(api, owner["token"])
    sent = ask(api, owner["token"], "Clause 1?", target="crew:secret-counsel").body
    assert sent.get("message_id"), sent
    [mine] = _listed(api, owner["token"])["conversations"]
    # Its owner reviews requests to it: Needs You, and it may act for the Crew's side.
    assert mine["tab"] == "needs_you" and mine["agents"][1]["may_act"] is True
    # The account's admin sees nothing through a private Crew; another account nothing.
    assert _listed(api, stack.admin_token)["conversations"] == []
    stranger = stack.services.identity.bootstrap("elsewhere").token
    assert _listed(api, stranger)["conversations"] == []
    conversation_id = "cnv_" + sent["inbox_id"][4:-1]
    unknown = api("GET", "/v1/conversations/cnv_01ARZ3NDEKTSV4RRFFQ69G5FAV", stranger)
    for token in (stack.admin_token, stranger):
        seen = api("GET", f"/v1/conversations/{conversation_id}", token)
        assert (seen.status, seen.body) == (unknown.status, unknown.body) == (404, unknown.body)


def test_c5_pages_of_conversations(api, stack, agents):
    crew(api, stack, "on")
    for n in range(3):
        assert ask(api, stack.admin_token, f"Clause {n}?").status in (200, 201)
    first = _listed(api, stack.admin_token, limit=2)
    assert len(first["conversations"]) == 2 and first["next_cursor"]
    rest = _listed(api, stack.admin_token, limit=2, after=first["next_cursor"])
    assert len(rest["conversations"]) == 1 and rest["next_cursor"] is None
    ids = [c["conversation_id"] for c in first["conversations"] + rest["conversations"]]
    assert ids == sorted(ids, reverse=True)
    too_many = api("GET", "/v1/conversations", stack.admin_token, query={"limit": 1000})
    assert too_many.status == 400


def test_c5_the_cookie_is_secure_behind_https(api, stack):
    link = api("POST", "/v1/session/links", stack.admin_token).body
    https = ("x-forwarded-proto", "https")
    status, _, headers = call("POST", "/v1/session", {"code": link["code"]}, [CSRF, https])
    [cookie] = [v for k, v in headers if k.lower() == "set-cookie"]
    assert status == 200 and "; Secure" in cookie


def test_c5_the_pages_answer_get_only(stack):
    from agentworks.web.pages import serve

    event = {"rawPath": "/inbox", "requestContext": {"http": {"method": "POST"}}}
    refused = serve(event)
    assert refused is not None and refused["statusCode"] == 405
    assert serve({"rawPath": "/inboxes"}) is None  # not a page: the API routes it


def test_c5_a_page_holds_limit_conversations_from_the_newest_scanned_per_crew(
    api, stack, agents, monkeypatch
):
    """C5: a page is at most CONVERSATIONS_PAGE_MAX conversations (CONVERSATIONS_PAGE_DEFAULT
    without a limit), the next page the rest; each Crew brings its newest
    CONVERSATIONS_SCANNED_PER_CREW conversations, so its oldest past those is not listed.

    The three are lowered for speed (at 100, 101 conversations take ~5 s on moto): the
    listing reads them from `limits` when asked, so the rules under test are the same."""
    monkeypatch.setattr(limits, "CONVERSATIONS_PAGE_MAX", 10)
    monkeypatch.setattr(limits, "CONVERSATIONS_SCANNED_PER_CREW", 10)
    monkeypatch.setattr(limits, "CONVERSATIONS_PAGE_DEFAULT", 4)
    crew(api, stack, "review")
    crew(api, stack, "review", name="second")
    caller = agents.connection("caller")["token"]

    def first_contact(target: str) -> str:
        stack.clock.advance(0.001)
        sent = ask(api, caller, "Clause 1?", target=target)
        assert sent.status == 201, sent.body
        return "cnv_" + sent.body["inbox_id"][4:-1]

    oldest = first_contact("crew:contracts")
    for _ in range(limits.CONVERSATIONS_SCANNED_PER_CREW - 1):
        first_contact("crew:contracts")
    other = first_contact("crew:second")
    admin = stack.admin_token

    full = _listed(api, admin, limit=limits.CONVERSATIONS_PAGE_MAX)
    assert len(full["conversations"]) == limits.CONVERSATIONS_PAGE_MAX
    assert full["conversations"][0]["conversation_id"] == other
    rest = _listed(api, admin, after=full["next_cursor"])
    assert [c["conversation_id"] for c in rest["conversations"]] == [oldest]
    assert rest["next_cursor"] is None
    assert len(_listed(api, admin)["conversations"]) == limits.CONVERSATIONS_PAGE_DEFAULT

    # One more of contracts: its oldest falls out of the crew's newest scanned.
    newest = first_contact("crew:contracts")
    listed = _listed(api, admin, limit=limits.CONVERSATIONS_PAGE_MAX)
    rest = _listed(api, admin, after=listed["next_cursor"])
    ids = [c["conversation_id"] for c in listed["conversations"] + rest["conversations"]]
    assert ids[0] == newest and other in ids and oldest not in ids
    assert len(ids) == limits.CONVERSATIONS_SCANNED_PER_CREW + 1
    assert sum(listed["counts"].values()) == limits.CONVERSATIONS_SCANNED_PER_CREW + 1


def test_c5_a_conversation_shows_its_newest_messages_and_requests(api, stack, agents, monkeypatch):
    """C5: a conversation's view holds its newest CONVERSATION_MESSAGES_SHOWN messages and
    REQUESTS_SHOWN_PER_CONVERSATION requests; older ones are left out, never a longer list.

    Both are lowered for speed (at 100, the sends take ~3 s on moto): the view reads them
    from `limits` when asked, so the rules under test are the same."""
    monkeypatch.setattr(limits, "CONVERSATION_MESSAGES_SHOWN", 10)
    monkeypatch.setattr(limits, "REQUESTS_SHOWN_PER_CONVERSATION", 5)
    crew(api, stack, "review")
    caller = agents.connection("caller")["token"]
    first = ask(api, caller, "Request 0?")
    assert first.status == 201, first.body
    inbox, sent = first.body["inbox_id"], [first.body["message_id"]]
    for n in range(1, limits.CONVERSATION_MESSAGES_SHOWN + 1):
        stack.clock.advance(3600 / limits.RATE_LIMIT_MESSAGES + 1)  # within the rate limit
        more = ask(api, caller, f"Request {n}?", inbox_id=inbox)
        assert more.status == 201, more.body
        sent.append(more.body["message_id"])
    shown = api("GET", f"/v1/conversations/cnv_{inbox[4:-1]}", stack.admin_token)
    assert shown.status == 200, shown.body
    messages = [m["message_id"] for m in shown.body["messages"]]
    assert messages == sent[-limits.CONVERSATION_MESSAGES_SHOWN :]
    requests = {r["message_id"] for r in shown.body["requests"]}
    assert requests == set(sent[-limits.REQUESTS_SHOWN_PER_CONVERSATION :])


def test_c5_the_pages_may_connect_to_the_push_channel_only(stack, monkeypatch):
    """The shell names the push channel's URL for the pages to follow their runs, and the
    policy lets them connect to that one origin besides their own; a URL that is not a
    WebSocket's adds nothing."""
    monkeypatch.setenv("PUSH_URL", "wss://abc123.execute-api.eu-west-1.amazonaws.com/v1")
    status, body, headers = call("GET", "/runs/wfrun_x")
    assert status == 200
    assert dict(headers)["Content-Security-Policy"] == CONTENT_SECURITY_POLICY.replace(
        "connect-src 'self';",
        "connect-src 'self' wss://abc123.execute-api.eu-west-1.amazonaws.com;",
    )
    assert (
        '<meta name="agentworks-push" '
        'content="wss://abc123.execute-api.eu-west-1.amazonaws.com/v1">' in body
    )
    for wrong in ("https://abc123.example/v1", 'ws://"><script>x</script>', ""):
        monkeypatch.setenv("PUSH_URL", wrong)
        status, body, headers = call("GET", "/inbox")
        assert dict(headers)["Content-Security-Policy"] == CONTENT_SECURITY_POLICY, wrong
        assert '<meta name="agentworks-push" content="">' in body and "<script>x" not in body


def test_c5_a_bearer_token_is_what_authenticates_whatever_cookie_comes_with_it(api, agents, stack):
    """A request with both a token and the web session's cookie is the token's."""
    worker = agents.named("worker")
    cookie = cookie_header(sign_in(api, worker))
    admin_id = api("GET", "/v1/whoami", stack.admin_token).body["connection_id"]
    bearer = ("authorization", f"Bearer {stack.admin_token}")
    status, body, _ = call("GET", "/v1/whoami", None, [bearer, cookie, CSRF])
    assert status == 200 and body["connection_id"] == admin_id
