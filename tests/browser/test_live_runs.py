"""A run page follows its run from the push channel (issue 29, C5): the page opens the
product's WebSocket with its session cookie (`?console=runs`, from its own Origin), a run
answered elsewhere (the CLI) is drawn again on the notice that says it changed — not by a
poll, which does not draw while the channel is open — and when the channel goes down the
page polls again until it is back."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.browser.test_run_pages import PROFILE, _workflow
from tests.e2e.test_cli_messages import Cli

pytestmark = [pytest.mark.e2e, pytest.mark.browser]

# A browser whose WebSockets never stay open: each closes as soon as it is made.
DOWN = """
window.WebSocket = class {
  constructor() { this.handlers = {}; setTimeout(() => (this.handlers.close || (() => {}))(), 0); }
  addEventListener(type, handler) { this.handlers[type] = handler; }
  send() {}
};
"""


@pytest.fixture
def cli(local_stack: Any) -> Cli:
    cli = Cli(local_stack)
    cli.env["AGENTWORKS_NO_BROWSER"] = "1"
    return cli


def test_c5_a_run_page_is_drawn_again_on_the_push_channels_notice(
    cli: Cli, browser: Any, shots: Any, tmp_path: Path
) -> None:
    adapter = f"live-{uuid.uuid4().hex[:6]}"
    (tmp_path / "profile.yaml").write_text(PROFILE.format(name=adapter))
    cli.ok("adapters", "create", "--file", str(tmp_path / "profile.yaml"))
    step = {"label": "approve", "adapter": adapter, "prompt": "approve it", "policy": "escalate"}
    run_id = _workflow(cli, tmp_path, "live", [{"label": "gate", "steps": [step]}])
    link = cli.ok("inbox", "--json").json()["url"]
    context = browser.new_context()
    page = context.new_page()
    page.goto(link)
    page.get_by_test_id("tab-needs_you").wait_for()
    page.goto(f"{link.split('/inbox')[0]}/runs/{run_id}")
    page.locator("body[data-push=open]").wait_for(timeout=30_000)
    status = page.locator("[data-step=approve] [data-testid=step-status]")
    status.filter(has_text="waiting").wait_for(timeout=60_000)
    assert page.evaluate("document.body.dataset.redrawn") in (None, "notice")

    cli.ok("workflow", "resolve", run_id, "--step", "approve", "--answer", "yes")
    page.locator("[data-testid=run-status]", has_text="succeeded").wait_for(timeout=60_000)
    assert page.evaluate("document.body.dataset.redrawn") == "notice"
    assert "Approved: yes." in page.locator("[data-step=approve]").text_content()
    shots(page, "run-followed-by-push")
    context.close()

    # The channel down (every socket closes as it opens): the page polls, and still follows.
    second = _workflow(cli, tmp_path, "polled", [{"label": "gate", "steps": [step]}])
    context = browser.new_context()
    context.add_init_script(DOWN)
    page = context.new_page()
    page.goto(cli.ok("inbox", "--json").json()["url"])
    page.get_by_test_id("tab-needs_you").wait_for()
    page.goto(f"{link.split('/inbox')[0]}/runs/{second}")
    page.locator("body[data-push=closed]").wait_for()
    status = page.locator("[data-step=approve] [data-testid=step-status]")
    status.filter(has_text="waiting").wait_for(timeout=60_000)
    cli.ok("workflow", "resolve", second, "--step", "approve", "--answer", "yes")
    page.locator("[data-testid=run-status]", has_text="succeeded").wait_for(timeout=60_000)
    assert page.evaluate("document.body.dataset.redrawn") == "poll"
    context.close()


def test_c5_a_push_ticket_signs_the_socket_in_where_the_cookie_cannot_go(
    cli: Cli, browser: Any, local_stack: Any, shots: Any, tmp_path: Path
) -> None:
    """Deployed, the push API has its own host name, so the pages' host-only session cookie
    never reaches the upgrade. Here the pages stay at http://127.0.0.1:PORT and name the
    push channel ws://localhost:PORT+1 (the same server under another host name: the
    browser keeps 127.0.0.1's cookie from it). Without a ticket the upgrade is refused;
    the page's own socket, signed in by its ticket, opens, and the run is drawn again on
    the channel's notice."""
    push_url = local_stack.ready["push_url"]
    elsewhere = push_url.replace("ws://127.0.0.1:", "ws://localhost:")
    assert elsewhere != push_url and "localhost" in elsewhere

    def other_host(route: Any) -> None:
        # The pages' HTML (its push meta tag) and its policy's connect-src, both renamed.
        if route.request.resource_type != "document":
            route.continue_()
            return
        response = route.fetch()
        headers = {k: v.replace(push_url, elsewhere) for k, v in response.headers.items()}
        body = response.text().replace(push_url, elsewhere)
        route.fulfill(response=response, body=body, headers=headers)

    adapter = f"ticket-{uuid.uuid4().hex[:6]}"
    (tmp_path / "profile.yaml").write_text(PROFILE.format(name=adapter))
    cli.ok("adapters", "create", "--file", str(tmp_path / "profile.yaml"))
    step = {"label": "approve", "adapter": adapter, "prompt": "approve it", "policy": "escalate"}
    run_id = _workflow(cli, tmp_path, "ticketed", [{"label": "gate", "steps": [step]}])
    link = cli.ok("inbox", "--json").json()["url"]
    pages = link.split("/inbox")[0]
    assert pages.startswith("http://127.0.0.1:")
    # Chromium's Local Network Access checks would refuse a socket from 127.0.0.1's page to
    # localhost for another reason than the one this test is about: off, in a browser of
    # its own (a deployed page and its push API are both public).
    own = browser.browser_type.launch(
        executable_path=shutil.which("chromium"),
        args=["--no-sandbox", "--disable-features=LocalNetworkAccessChecks"],
        headless=True,
    )
    context = own.new_context()
    page = context.new_page()
    page.route(lambda url: url.startswith(pages), other_host)
    sockets: list[str] = []
    page.on("websocket", lambda socket: sockets.append(socket.url))
    page.goto(link)
    page.get_by_test_id("tab-needs_you").wait_for()
    session = {c["name"]: c for c in context.cookies()}["aw_session"]
    assert session["domain"] == "127.0.0.1"
    page.goto(f"{pages}/runs/{run_id}")
    assert page.locator('meta[name="agentworks-push"]').get_attribute("content") == elsewhere

    # The cookie does not reach the push channel's host: a socket without a ticket, from the
    # page's own Origin, is refused.
    refused = page.evaluate(
        """(url) => new Promise((done) => {
          const socket = new WebSocket(`${url}/?console=runs`);
          socket.addEventListener("open", () => { socket.close(); done("open"); });
          socket.addEventListener("close", () => done("closed"));
        })""",
        elsewhere,
    )
    assert refused == "closed"

    page.locator("body[data-push=open]").wait_for(timeout=30_000)
    opened = [url for url in sockets if "ticket=" in url]
    assert opened and all(url.startswith(f"{elsewhere}/?console=runs&ticket=") for url in opened)
    assert all(session["value"] not in url for url in sockets)  # the secret stays out of URLs
    status = page.locator("[data-step=approve] [data-testid=step-status]")
    status.filter(has_text="waiting").wait_for(timeout=60_000)
    assert page.evaluate("document.body.dataset.redrawn") in (None, "notice")

    cli.ok("workflow", "resolve", run_id, "--step", "approve", "--answer", "yes")
    page.locator("[data-testid=run-status]", has_text="succeeded").wait_for(timeout=60_000)
    assert page.evaluate("document.body.dataset.redrawn") == "notice"
    assert page.evaluate("document.body.dataset.push") == "open"
    shots(page, "run-followed-by-push-ticket")
    context.close()
    own.close()
