"""The Messages view in a real browser (issue 29, C5): the README's first flow — two named
agents, each with its own connection, messaging each other through the CLI — seen by the
admin (who talks with whom, no body) and by the worker's own connection (the newest message,
and the conversation opened with both messages). Each page is saved as a screenshot
(test-artifacts/browser/) and axe-core finds no serious or critical violation on it, at
desktop width and at 390 px."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.browser.test_run_pages import AXE, _axe
from tests.e2e.test_cli_messages import Cli

pytestmark = [pytest.mark.e2e, pytest.mark.browser]


@pytest.fixture
def cli(local_stack: Any) -> Cli:
    cli = Cli(local_stack)
    cli.env["AGENTWORKS_NO_BROWSER"] = "1"  # `agentworks inbox` prints only
    return cli


def _readme_flow(cli: Cli, tmp_path: Path) -> dict[str, Any]:
    s = uuid.uuid4().hex[:6]
    worker, reviewer = f"worker-{s}", f"reviewer-{s}"
    configs = {name: tmp_path / f"{name}.json" for name in (worker, reviewer)}
    for name, config in configs.items():
        cli.ok("connections", "create", "--name", name, "--save-config", str(config))
    cli.ok("messages", "register", reviewer, "--purpose", "Reviews pull requests",
           config=configs[reviewer])  # fmt: skip
    cli.ok("messages", "register", worker, config=configs[worker])
    sent = cli.ok(
        "messages", "send", "--agent", worker, "--target", f"agent:{reviewer}",
        "--message", "Ready for review", "--json", config=configs[worker],
    ).json()  # fmt: skip
    [first] = cli.ok(
        "messages", "read", "--agent", reviewer, "--after", "0", "--wait", "5", "--json",
        config=configs[reviewer],
    ).json()["messages"]  # fmt: skip
    cli.ok(
        "messages", "send", "--agent", reviewer, "--inbox", first["reply_address"],
        "--message", "Review received", config=configs[reviewer],
    )  # fmt: skip
    return {"worker": worker, "reviewer": reviewer, "configs": configs, "sent": sent}


def test_c5_the_messages_view_shows_the_readme_flow(
    cli: Cli, browser: Any, shots: Any, tmp_path: Path
) -> None:
    assert AXE.exists(), "axe-core is missing: make test installs it (npm ci in tools/axe)"
    flow = _readme_flow(cli, tmp_path)
    worker, reviewer = flow["worker"], flow["reviewer"]
    pair = f"agent:{worker} → agent:{reviewer}"
    violations: list[dict[str, Any]] = []

    # The admin: both names in the directory, the conversation listed without its words.
    admin = browser.new_context()
    page = admin.new_page()
    link = cli.ok("inbox", "--json").json()["url"]
    page.goto(link)
    # Signed in (the one-time link exchanged for the session cookie) before moving on.
    page.get_by_test_id("tab-needs_you").wait_for()
    page.get_by_test_id("nav-messages").click()
    page.get_by_test_id("named-agents").wait_for()
    names = page.get_by_test_id("agent-filter").all_text_contents()
    assert worker in names and reviewer in names
    row = page.locator(f"[data-conversation={flow['sent']['conversation_id']}]")
    assert pair in row.text_content()
    assert row.get_by_test_id("preview").count() == 0
    assert row.get_by_test_id("open-named-conversation").count() == 0
    assert (
        f"for {worker} and {reviewer} to read" in row.get_by_test_id("hidden-body").text_content()
    )
    assert "Ready for review" not in page.content() and "Review received" not in page.content()
    shots(page, "messages-admin")
    violations += _axe(page, "messages-admin")
    # One agent's conversations: the filter keeps the address in the page's URL.
    page.get_by_test_id("agent-filter").filter(has_text=reviewer).click()
    page.get_by_role("heading", name=f"Conversations of {reviewer}").wait_for()
    assert f"agent={reviewer}" in page.url and row.count() == 1
    admin.close()

    # The worker's own connection: the newest message, and the conversation to open.
    mine = browser.new_context()
    page = mine.new_page()
    page.goto(cli.ok("inbox", "--json", config=flow["configs"][worker]).json()["url"])
    page.get_by_test_id("tab-needs_you").wait_for()
    page.get_by_test_id("nav-messages").click()
    row = page.locator(f"[data-conversation={flow['sent']['conversation_id']}]")
    row.get_by_test_id("preview").wait_for()
    assert row.get_by_test_id("preview").text_content() == f"agent:{reviewer}: Review received"
    shots(page, "messages-worker")
    violations += _axe(page, "messages-worker")
    row.get_by_test_id("open-named-conversation").click()
    page.get_by_text("Ready for review").wait_for()
    page.get_by_text("Review received").wait_for()
    shots(page, "named-conversation")
    violations += _axe(page, "named-conversation")
    cookies = mine.cookies()
    base = page.url.split("/inbox")[0]
    mine.close()

    # A phone's width: nothing spills off the page.
    phone = browser.new_context(viewport={"width": 390, "height": 844})
    phone.add_cookies(cookies)
    small = phone.new_page()
    small.goto(f"{base}/messages")
    small.get_by_test_id("named-conversations").wait_for()
    shots(small, "messages-390px")
    overflow = small.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"the page is {overflow} px wider than a 390 px screen"
    violations += _axe(small, "messages-390px")
    phone.close()
    assert violations == [], violations
