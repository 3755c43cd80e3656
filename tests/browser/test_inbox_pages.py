"""The web Inbox and Runs pages in a real browser (C5): sign in by a one-time link, see a
request under Needs You, release it and see it answered, pause and close the conversation,
answer a workflow step's question on the Runs page, and a message body holding <script>
shown as text. Each page is saved as a screenshot (test-artifacts/browser/)."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_cli_messages import Cli

pytestmark = [pytest.mark.e2e, pytest.mark.browser]

CREW_YAML = """\
name: {name}
instructions: Answer questions about contract clauses.
messaging: review
adapter:
  type: scripted
  rules:
    - when: "clause (\\\\d+)"
      reply: "Clause {{match.1}} covers termination."
    - function: summarize
      result: {{summary: "{{args.text}}"}}
    - default: I can only discuss clauses.
functions:
  - name: summarize
    input_schema: {{type: object, properties: {{text: {{type: string}}}}}}
"""
ASKER_YAML = """\
name: {name}
type: scripted
rules:
  - when: "Deploy"
    ask: "Which region?"
    reply: "Deployed to {{answer}}."
"""
SCRIPT = "<script>window.__injected = 1</script><img src=x onerror=window.__injected=2>"


def until(check: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.3)


@pytest.fixture
def cli(local_stack: Any) -> Cli:
    cli = Cli(local_stack)
    cli.env["AGENTWORKS_NO_BROWSER"] = "1"  # `agentworks inbox` prints only
    return cli


def _scenario(cli: Cli, tmp_path: Path) -> dict[str, str]:
    """A Crew under review with a request waiting and a note holding a script, and a
    workflow run whose step waits on a question."""
    crew = f"contracts-{uuid.uuid4().hex[:6]}"
    (tmp_path / "crew.yaml").write_text(CREW_YAML.format(name=crew))
    cli.ok("crews", "create", "--file", str(tmp_path / "crew.yaml"))
    caller = tmp_path / "caller.json"
    cli.ok(
        "connections", "create", "--name", f"caller-{uuid.uuid4().hex[:6]}",
        "--scopes", "messages:read,messages:send", "--save-config", str(caller),
    )  # fmt: skip
    asked = cli.ok(
        "conversations", "request", "--target", f"crew:{crew}",
        "--message", "What does clause 7 say?", "--json", config=caller,
    ).json()  # fmt: skip
    cli.ok(
        "conversations", "note", "--inbox", asked["inbox_id"], "--message", SCRIPT,
        config=caller,
    )  # fmt: skip
    asker = f"asker-{uuid.uuid4().hex[:6]}"
    (tmp_path / "asker.yaml").write_text(ASKER_YAML.format(name=asker))
    cli.ok("adapters", "create", "--file", str(tmp_path / "asker.yaml"))
    definition = {
        "workflowId": "deploy",
        "stages": [{"steps": [{"label": "go", "adapter": asker, "policy": "escalate",
                               "prompt": "Deploy the service."}]}],
    }  # fmt: skip
    (tmp_path / "deploy.json").write_text(json.dumps(definition))
    run_id = cli.ok("workflow", "start", "--file", str(tmp_path / "deploy.json"), "--json")
    called = cli.ok(
        "functions", "call", "--target", f"crew:{crew}", "--function", "summarize",
        "--args", '{"text": "a direct call"}', "--json",
    ).json()  # fmt: skip
    return {
        "crew": crew,
        "inbox": asked["inbox_id"],
        "run": run_id.json()["runId"],
        "call": called["call_id"],
    }


def test_c5_the_inbox_and_runs_in_a_browser(
    cli: Cli, browser: Any, shots: Any, tmp_path: Path, local_stack: Any
) -> None:
    ids = _scenario(cli, tmp_path)
    listed = cli.ok("conversations", "list", "--tab", "needs_you").out
    assert f"crew:{ids['crew']}" in listed and "Needs You 1" in listed
    link = cli.ok("inbox", "--json").json()
    assert link["url"] == f"{local_stack.url}/inbox#code={link['code']}"

    context = browser.new_context()
    page = context.new_page()
    page.goto(link["url"])
    # Signed in: the code left the address, the cookie is HttpOnly and strict.
    page.get_by_test_id("tab-needs_you").wait_for()
    assert "code=" not in page.url
    [cookie] = [c for c in context.cookies() if c["name"] == "aw_session"]
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    assert page.get_by_test_id("needs-count").text_content() == "1"
    row = page.get_by_test_id("conversation")
    assert f"crew:{ids['crew']}" in row.text_content()
    assert "Waiting for review" in row.text_content()
    assert f"waits on crew:{ids['crew']}" in row.get_by_test_id("waits").text_content()
    # The row's preview is the newest message (the note), its script shown as text.
    assert SCRIPT in row.get_by_test_id("preview").text_content()
    assert page.evaluate("window.__injected") is None
    shots(page, "inbox-needs-you")

    # One agent's conversations only.
    page.get_by_test_id("agent-filter").select_option(f"crew:{ids['crew']}")
    page.wait_for_url("**agent=crew*")
    assert page.get_by_test_id("conversation").count() == 1

    # The conversation: every message, the request's state and deadline, and the script
    # in the note shown as text, never run.
    page.get_by_test_id("open-conversation").click()
    page.get_by_test_id("release").wait_for()
    bodies = page.get_by_test_id("message-body").all_text_contents()
    assert SCRIPT in bodies and "What does clause 7 say?" in bodies
    assert page.evaluate("window.__injected") is None
    assert page.locator("main script, main img").count() == 0
    assert page.get_by_test_id("request-state").first.text_content() == "Waiting for review"
    assert page.get_by_test_id("deadline").count() == 1
    shots(page, "conversation-waiting")

    page.get_by_test_id("release").click()

    def answered() -> bool:
        # The run posts its reply, then records the request answered as it finishes.
        page.reload()
        page.get_by_test_id("messages").wait_for()
        replied = "Clause 7 covers termination." in page.get_by_test_id("messages").text_content()
        state = page.get_by_test_id("request-state").first.text_content()
        return replied and state == "Answered"

    until(answered, "the Crew's answer")
    shots(page, "conversation-answered")

    # Writing in the account's own side of it (a note starts no run).
    page.get_by_test_id("answer-as").select_option(label="external")
    page.get_by_test_id("answer-kind").select_option("note")
    page.get_by_test_id("answer-text").fill("Thanks, that settles it.")
    page.get_by_test_id("answer-send").click()
    page.get_by_test_id("message-body").filter(has_text="Thanks, that settles it.").wait_for()

    page.get_by_test_id("pause").click()
    page.get_by_test_id("resume").wait_for()
    assert page.get_by_test_id("conversation-status").text_content() == "paused"
    shots(page, "conversation-paused")
    page.get_by_test_id("close").click()
    # (No wait_for_function: the page's CSP refuses the string eval it needs.)
    page.locator("[data-testid=conversation-status]", has_text="closed").wait_for()
    assert page.get_by_test_id("pause").count() == 0
    shots(page, "conversation-closed")
    page.get_by_test_id("nav-inbox").click()
    page.get_by_test_id("tab-closed").click()
    page.get_by_test_id("conversation").wait_for()
    shots(page, "inbox-closed")

    # Runs: the workflow run is listed; its step waits on a question answered here.
    page.get_by_test_id("nav-runs").click()
    page.locator(f"a[href='/runs/{ids['run']}']").click()

    def waiting() -> bool:
        page.reload()
        page.get_by_test_id("run-status").or_(page.get_by_test_id("error")).wait_for()
        statuses = page.get_by_test_id("step-status").all_text_contents()
        return statuses == ["waiting"]

    try:
        until(waiting, "the step's question")
    finally:
        shots(page, "run-page")
    assert page.get_by_test_id("step-question").text_content() == "Which region?"
    shots(page, "run-waiting")
    page.get_by_test_id("resolve-answer").fill("eu-west-1")
    page.get_by_test_id("resolve").click()

    def succeeded() -> bool:
        page.reload()
        page.get_by_test_id("run-status").wait_for()
        return page.get_by_test_id("run-status").text_content() == "succeeded"

    until(succeeded, "the run to finish")
    assert "Deployed to eu-west-1." in page.get_by_test_id("step-output").text_content()
    shots(page, "run-succeeded")
    page.get_by_test_id("nav-runs").click()
    page.get_by_test_id("runs").first.wait_for()
    tables = page.get_by_test_id("runs")
    assert ids["run"] in tables.first.text_content() and "succeeded" in tables.first.text_content()
    assert "Answered" in tables.last.text_content()  # the Crew's run for the request
    direct = page.get_by_test_id("function-calls")  # the direct call, with its state
    assert ids["call"] in direct.text_content() and "summarize" in direct.text_content()
    shots(page, "runs")
    # The Crew's run: a function-call run page with its state and output.
    tables.last.get_by_test_id("open-run").first.click()
    page.get_by_test_id("run-output").wait_for()
    assert page.get_by_test_id("run-status").text_content() == "succeeded"
    assert page.get_by_test_id("run-output").text_content() == "Clause 7 covers termination."
    shots(page, "call-run")

    # The link was spent: a second browser gets the sign-in page.
    other = browser.new_context().new_page()
    other.goto(link["url"])
    other.get_by_test_id("sign-in-help").wait_for()
    shots(other, "link-used-twice")
    context.close()
