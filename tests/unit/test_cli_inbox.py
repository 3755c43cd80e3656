"""`agentworks inbox` (a one-time sign-in link, opened only where a browser can be) and
`agentworks conversations list` (the Inbox's tabs in a terminal), C5."""

from __future__ import annotations

import webbrowser

from agentworks_cli.commands.inbox import can_open_browser
from tests.unit.test_cli_commands import run

LINK = {"code": "abc", "path": "/inbox#code=abc", "expires_at": "2026-12-02T04:05:00.000+00:00"}
LISTED = {
    "conversations": [
        {
            "conversation_id": "cnv_01ARZ3NDEKTSV4RRFFQ69G5FAV",
            "status": "active",
            "tab": "needs_you",
            "tab_label": "Needs You",
            "agents": [
                {"side": "a", "address": "external", "inbox_id": "ibx_xa", "may_act": True},
                {"side": "b", "address": "crew:contracts", "inbox_id": "ibx_xb", "may_act": True},
            ],
            "open_requests": [
                {
                    "message_id": "msg_x",
                    "state": "waiting_for_review",
                    "label": "Waiting for review",
                    "created_at": "2026-12-02T04:00:00.000+00:00",
                    "updated_at": "2026-12-02T04:00:00.000+00:00",
                }
            ],
            "runs": [],
            "needs_you": 1,
            "runs_as_you": False,
            "created_at": "2026-12-02T04:00:00.000+00:00",
            "last_activity_at": "2026-12-02T04:00:00.000+00:00",
        }
    ],
    "counts": {"needs_you": 1, "active": 0, "waiting_on_others": 2, "closed": 0},
    "next_cursor": "cnv_01ARZ3NDEKTSV4RRFFQ69G5FAV",
}


def test_c5_inbox_prints_the_link_and_opens_it_only_where_it_can(
    server, config, capsys, monkeypatch
):
    server.on("POST", "/v1/session/links", LINK)
    opened: list[str] = []
    monkeypatch.setattr(webbrowser, "open", lambda url: opened.append(url))
    monkeypatch.setenv("CI", "1")
    code, out, _ = run(capsys, "inbox")
    assert code == 0 and out.splitlines()[0] == f"{server.url}/inbox#code=abc"
    assert opened == []  # CI: printed only
    monkeypatch.delenv("CI")
    monkeypatch.setenv("DISPLAY", ":0")
    assert run(capsys, "inbox")[0] == 0 and opened == [f"{server.url}/inbox#code=abc"]
    assert run(capsys, "inbox", "--no-open")[0] == 0 and len(opened) == 1


def test_c5_a_browser_is_opened_only_with_a_display_outside_ci() -> None:
    assert not can_open_browser({"CI": "true", "DISPLAY": ":0"})
    assert can_open_browser({"DISPLAY": ":0"}) or can_open_browser({})
    assert can_open_browser({"WAYLAND_DISPLAY": "wayland-0"})


def test_c5_conversations_list_shows_the_tabs(server, config, capsys):
    server.on("GET", "/v1/conversations", LISTED)
    code, out, _ = run(capsys, "conversations", "list", "--tab", "needs_you", "--limit", "5")
    assert code == 0
    assert server.last.query == {"tab": ["needs_you"], "limit": ["5"]}
    lines = out.splitlines()
    assert lines[0] == "Needs You 1 · Active 0 · Waiting on Others 2 · Closed 0"
    assert "external → crew:contracts" in out and "Waiting for review" in out
    assert "conversations list --after cnv_01ARZ3NDEKTSV4RRFFQ69G5FAV" in out
