"""A run page follows its run from the push channel (issue 29, C5): the page opens the
product's WebSocket with its session cookie (`?console=runs`, from its own Origin), a run
answered elsewhere (the CLI) is drawn again on the notice that says it changed — not by a
poll, which does not draw while the channel is open — and when the channel goes down the
page polls again until it is back."""

from __future__ import annotations

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
