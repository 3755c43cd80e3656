"""The run pages in a real browser (issue 29): a workflow run drawn as a graph — stage
columns, the barrier between them, a failed step with its error and a waiting one with its
answer box — and a timeline; a pipeline's items as rows; a function call's result as JSON
with its file to download; a Relay run's durable steps; the Runs list filtered by kind,
state and name. Pages update by themselves while a run goes on (no reload here), each page
is saved as a screenshot (test-artifacts/browser/), and axe-core finds no serious or
critical accessibility violation on any of them, at desktop width and at 390 px."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import ROOT
from tests.browser.test_inbox_pages import until
from tests.e2e.test_cli_messages import Cli

pytestmark = [pytest.mark.e2e, pytest.mark.browser]

AXE = ROOT / "tools" / "axe" / "node_modules" / "axe-core" / "axe.min.js"
PROFILE = """\
name: {name}
type: scripted
rules:
  - when: "^approve"
    ask: "Ship it to production?"
    reply: "Approved: {{answer}}."
  - when: "^fail"
    fail: "The deploy target refused the change."
  - default: "done"
"""
CREW = """\
name: {name}
instructions: Summarize.
adapter:
  type: scripted
  rules:
    - function: summarize
      result: {{summary: "{{args.text}}", words: 2}}
      files: {{"notes.txt": "Notes on {{args.text}}"}}
functions:
  - name: summarize
    input_schema: {{type: object, properties: {{text: {{type: string}}}}}}
"""
RELAY = """\
from agentworks_relay import step


async def run(INPUT):
    words = await step("count", lambda: len(INPUT["text"].split()))
    await step("double", lambda: words * 2)
    raise RuntimeError("the archive is not reachable")
"""


@pytest.fixture
def cli(local_stack: Any) -> Cli:
    cli = Cli(local_stack)
    cli.env["AGENTWORKS_NO_BROWSER"] = "1"
    return cli


def _workflow(
    cli: Cli, tmp_path: Path, name: str, stages: list[dict[str, Any]], **more: Any
) -> str:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"workflowId": name, "stages": stages, **more}))
    return str(cli.ok("workflow", "start", "--file", str(path), "--json").json()["runId"])


def _scenario(cli: Cli, tmp_path: Path) -> dict[str, str]:
    suffix = uuid.uuid4().hex[:6]
    adapter = f"pages-{suffix}"
    (tmp_path / "profile.yaml").write_text(PROFILE.format(name=adapter))
    cli.ok("adapters", "create", "--file", str(tmp_path / "profile.yaml"))

    def step(label: str, prompt: str, **more: Any) -> dict[str, Any]:
        return {"label": label, "adapter": adapter, "prompt": prompt, **more}

    waiting = _workflow(cli, tmp_path, "release", [
        {"label": "build", "steps": [step("compile", "compile it"),
                                     step("approve", "approve the release", policy="escalate")]},
        {"label": "ship", "steps": [step("deploy", "deploy it")]},
    ], maxTotalCostUsd=5)  # fmt: skip
    failed = _workflow(cli, tmp_path, "push", [
        {"label": "check", "steps": [step("lint", "lint it"), step("push", "fail now")]},
        {"label": "after", "steps": [step("announce", "announce it")]},
    ])  # fmt: skip
    pipeline = _workflow(cli, tmp_path, "batch", [
        {"label": "each", "steps": [step("handle", "handle {{ITEM}}")]},
    ], items=["alpha", "beta"])  # fmt: skip
    crew = f"notes-{suffix}"
    (tmp_path / "crew.yaml").write_text(CREW.format(name=crew))
    cli.ok("crews", "create", "--file", str(tmp_path / "crew.yaml"))
    called = cli.ok(
        "functions", "call", "--target", f"crew:{crew}", "--function", "summarize",
        "--args", '{"text": "the lease"}', "--json",
    ).json()  # fmt: skip
    (tmp_path / "page_steps.py").write_text(RELAY)
    cli.ok("relays", "publish", str(tmp_path / "page_steps.py"))
    failed_relay = cli(
        "relays", "run", "page-steps", "run", "--input", '{"text": "a b c"}', "--wait"
    )
    assert failed_relay.code == 6, failed_relay
    relay_run = re.findall(r"rrun_[0-9A-Za-z]+", failed_relay.err)[0]
    return {
        "waiting": waiting,
        "failed": failed,
        "pipeline": pipeline,
        "call": called["call_id"],
        "relay": relay_run,
    }


def _axe(page: Any, name: str) -> list[dict[str, Any]]:
    """axe-core's serious and critical violations on the page as it stands (evaluated over
    the DevTools protocol, so the page's CSP stays as strict as it is)."""
    page.evaluate(AXE.read_text(encoding="utf-8"))
    found = page.evaluate("async () => (await axe.run(document)).violations")
    serious = [v for v in found if v["impact"] in ("serious", "critical")]
    return [
        {"page": name, "id": v["id"], "help": v["help"], "where": [n["target"] for n in v["nodes"]]}
        for v in serious
    ]


def test_run_pages_draw_graphs_results_and_steps_and_pass_axe(
    cli: Cli, browser: Any, shots: Any, tmp_path: Path
) -> None:
    assert AXE.exists(), "axe-core is missing: make test installs it (npm ci in tools/axe)"
    ids = _scenario(cli, tmp_path)
    link = cli.ok("inbox", "--json").json()
    context = browser.new_context()
    page = context.new_page()
    page.goto(link["url"])
    page.get_by_test_id("tab-needs_you").wait_for()
    violations: list[dict[str, Any]] = []

    def open_run(run_id: str) -> None:
        page.goto(f"{link['url'].split('/inbox')[0]}/runs/{run_id}")
        page.get_by_test_id("run-status").or_(page.get_by_test_id("error")).wait_for()

    # A run waiting on a question: the graph shows it, its answer box, the barrier and the
    # stage after it still pending; the page follows the run without a reload.
    open_run(ids["waiting"])
    page.locator("[data-step=approve] [data-testid=step-status]", has_text="waiting").wait_for(
        timeout=60_000
    )
    steps = dict(zip(
        page.locator("[data-testid=step]").evaluate_all("els => els.map(e => e.dataset.step)"),
        page.get_by_test_id("step-status").all_text_contents(),
        strict=True,
    ))  # fmt: skip
    assert steps == {"compile": "succeeded", "approve": "waiting", "deploy": "pending"}
    assert page.get_by_test_id("stage").count() == 2 and page.get_by_test_id("barrier").count() == 1
    assert page.get_by_test_id("step-question").text_content() == "Ship it to production?"
    assert "of $5.0000 budget" in page.get_by_test_id("run-cost").text_content()
    assert page.get_by_test_id("timeline-bar").count() == 2  # compile and approve started
    shots(page, "run-graph-waiting")
    violations += _axe(page, "run-graph-waiting")
    page.get_by_test_id("resolve-answer").fill("yes")
    page.get_by_test_id("resolve").click()
    page.locator("[data-testid=run-status]", has_text="succeeded").wait_for(timeout=60_000)
    page.locator("[data-step=deploy] [data-testid=step-status]", has_text="succeeded").wait_for()
    assert "Approved: yes." in page.locator("[data-step=approve]").text_content()
    assert page.get_by_test_id("timeline-bar").count() == 3
    shots(page, "run-graph-succeeded")

    # A failed step: its error on its box, the stage after the barrier never ran.
    open_run(ids["failed"])
    until(lambda: page.get_by_test_id("run-status").text_content() == "failed", "the failed run")
    box = page.locator("[data-step=push]")
    box.get_by_test_id("step-error").wait_for()
    assert (
        "The deploy target refused the change." in box.get_by_test_id("step-error").text_content()
    )
    assert (
        page.locator("[data-step=announce] [data-testid=step-status]").text_content() == "pending"
    )
    shots(page, "run-graph-failed")
    violations += _axe(page, "run-graph-failed")

    # A pipeline: each item a row of its own stages.
    open_run(ids["pipeline"])
    page.locator("[data-testid=run-status]", has_text="succeeded").wait_for(timeout=60_000)
    assert page.get_by_test_id("item").count() == 2
    assert "alpha" in page.get_by_test_id("item").first.text_content()
    shots(page, "run-pipeline")

    # A function call: its result as JSON and its file, downloaded through the API.
    open_run(ids["call"])
    page.locator("[data-testid=run-status]", has_text="succeeded").wait_for(timeout=60_000)
    assert json.loads(page.get_by_test_id("run-result").text_content()) == {
        "summary": "the lease",
        "words": 2,
    }
    with page.expect_download() as downloading:
        page.get_by_test_id("download").filter(has_text="notes.txt").click()
    saved = downloading.value.path()
    assert Path(saved).read_text() == "Notes on the lease"
    shots(page, "call-result")
    violations += _axe(page, "call-result")

    # A failed Relay run: its error, attempt and the durable steps it completed.
    open_run(ids["relay"])
    assert page.get_by_test_id("run-status").text_content() == "failed"
    assert "the archive is not reachable" in page.get_by_test_id("run-error").text_content()
    attempts = cli.ok("relays", "status", ids["relay"], "--json").json()["attempts"]
    assert page.get_by_test_id("attempts").text_content() == f"attempts: {attempts}"
    relay_steps = page.get_by_test_id("relay-step").all_text_contents()
    assert [row.split("completed")[0] for row in relay_steps] == ["count", "double"]
    shots(page, "relay-run")
    violations += _axe(page, "relay-run")

    # The Runs list, filtered to failed workflow runs named "push".
    page.goto(f"{link['url'].split('/inbox')[0]}/runs?kind=workflows&state=failed&name=push")
    page.get_by_test_id("runs").wait_for()
    rows = page.get_by_test_id("runs").get_by_test_id("open-run").all_text_contents()
    assert rows == [ids["failed"]]
    assert page.get_by_test_id("function-calls").count() == 0  # another kind: not listed
    shots(page, "runs-filtered")
    violations += _axe(page, "runs-filtered")

    # A phone's width: the graph scrolls inside its box, nothing spills off the page.
    phone = browser.new_context(viewport={"width": 390, "height": 844})
    small = phone.new_page()
    small.goto(page.url.split("/runs")[0] + "/inbox")  # the session cookie is per context
    phone.add_cookies(context.cookies())
    small.goto(f"{link['url'].split('/inbox')[0]}/runs/{ids['waiting']}")
    small.get_by_test_id("graph").wait_for()
    shots(small, "run-graph-390px")
    overflow = small.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"the page is {overflow} px wider than a 390 px screen"
    violations += _axe(small, "run-graph-390px")
    phone.close()
    context.close()
    assert violations == [], violations
