"""Issue 10 item 6 / SPEC §8 `cli`: a workflow step whose adapter profile is of type `cli`
runs as a local coding-agent session on a runner — the bridge's Runner, here against the
real API handlers, running the stand-in `claude`/`codex` first on its PATH — while the run
is a real execution of workflow_run.asl.json on moto's Step Functions.

Proves: output, CLI session id and cost flow into the run and a sessionRef step resumes that
session on the same runner (`--resume ID`, `codex exec resume ID`); a failing CLI fails its
step with the CLI's error; an output-schema correction resumes the session; a lapsed claim
and a job nobody claims fail their steps (never run again on their own); cancel takes the
job away; and the bridge's status says it is a runner.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentworks import limits
from agentworks_cli.bridge.daemon import status_lines
from tests.integration.bridge_support import StackServer
from tests.integration.runner_support import (
    CLAUDE,
    CODEX,
    Bench,
    drive,
    runner_token,
    wait_claim,
    wait_queued,
)
from tests.integration.workflow_support import define, start, step_of, wait_step
from tests.support import agent_clis
from tests.support.handlers import invoke_function

TWO_STAGES = {
    "workflowId": "review-then-fix",
    "stages": [
        {"steps": [{"label": "review", "adapter": "claude-code", "prompt": "Review auth.ts"}]},
        {"steps": [{"label": "fix", "sessionRef": "review", "prompt": "Now fix what you found"}]},
    ],
}


def _one_step(prompt: str, adapter: str = "claude-code", **step: Any) -> dict[str, Any]:
    return {
        "workflowId": "one",
        "stages": [{"steps": [{"label": "only", "adapter": adapter, "prompt": prompt, **step}]}],
    }


def _claim_body(runner_id: str = "r-bench", commands: tuple[str, ...] = ("claude",)) -> dict:
    return {"runner_id": runner_id, "name": "bench", "commands": list(commands)}


def test_s8_cli_step_runs_on_the_runner_and_its_session_id_flows_into_a_resuming_step(
    api, stack, agents, tmp_path
) -> None:
    define(api, stack.admin_token, CLAUDE)
    bench = Bench(tmp_path)
    runner = bench.runner(api, runner_token(agents))
    run_id = start(api, stack.admin_token, TWO_STAGES)
    run = drive(api, stack.admin_token, run_id, runner)

    assert run["status"] == "succeeded", run
    review, fix = step_of(run, "review"), step_of(run, "fix")
    assert review["output"] == "claude answered: Review auth.ts"
    assert fix["output"] == "claude answered: Now fix what you found"
    first, second = bench.runs()
    # The CLI's own session id is the step's, and the sessionRef step resumes it.
    assert review["sessionId"] == fix["sessionId"]
    assert first["argv"] == [
        "-p", "--output-format", "json", "--model", "sonnet",
        "--permission-mode", "acceptEdits", "--", "Review auth.ts",
    ]  # fmt: skip
    assert "--resume" not in first["argv"]
    assert second["argv"][-4:] == ["--resume", review["sessionId"], "--", "Now fix what you found"]
    assert first["cwd"] == second["cwd"] == str(bench.workdir)  # the runner's chosen folder
    assert (review["cost"], fix["cost"]) == (agent_clis.COST_USD, agent_clis.COST_USD)
    assert run["cost"] == 2 * agent_clis.COST_USD
    assert review["runner"] == fix["runner"] == "laptop"
    session = api(
        "GET", f"/v1/workflows/{run_id}/sessions/{review['sessionId']}", stack.admin_token
    ).body
    assert [t["content"] for t in session["turns"]] == [
        "Review auth.ts",
        "claude answered: Review auth.ts",
        "Now fix what you found",
        "claude answered: Now fix what you found",
    ]
    # `bridge status` (and `agents`, which prints it) says this bridge is a runner.
    lines = status_lines({"attachments": [], "runner": runner.status()})
    assert lines[0] == f"runner: on as laptop in {bench.workdir}"
    assert "claude (" in lines[1] and "idle; 2 turns run" in lines[1]
    assert status_lines({"attachments": []})[0].startswith("runner: off")


def test_s8_a_failing_cli_fails_its_step_with_the_clis_error(api, stack, agents, tmp_path):
    define(api, stack.admin_token, CLAUDE)
    bench = Bench(tmp_path)
    runner = bench.runner(api, runner_token(agents))
    run_id = start(api, stack.admin_token, _one_step("Please FAIL now"))
    run = drive(api, stack.admin_token, run_id, runner)
    assert run["status"] == "failed", run
    only = step_of(run, "only")
    assert only["status"] == "failed"
    assert only["error"] == (
        "the claude session failed on runner laptop: claude: Stand-in failure: the prompt "
        "asked for it"
    )
    assert only["cost"] == agent_clis.COST_USD  # a failed turn still cost what it cost
    assert run["error"].startswith("step only failed: the claude session failed")


def test_s8_codex_steps_read_its_jsonl_events_and_resume_with_exec_resume(
    api, stack, agents, tmp_path
):
    define(api, stack.admin_token, CODEX)
    bench = Bench(tmp_path)
    runner = bench.runner(api, runner_token(agents))
    flow = json.loads(json.dumps(TWO_STAGES).replace('"claude-code"', '"codex"'))
    run = drive(api, stack.admin_token, start(api, stack.admin_token, flow), runner)
    assert run["status"] == "succeeded", run
    review, fix = step_of(run, "review"), step_of(run, "fix")
    assert review["output"] == "codex answered: Review auth.ts"
    assert review["sessionId"] == fix["sessionId"] and review["cost"] == 0.0  # tokens only
    first, second = bench.runs()
    assert first["argv"] == ["exec", "--json", "--sandbox", "read-only", "--", "Review auth.ts"]
    assert second["argv"][-4:] == ["resume", review["sessionId"], "--", "Now fix what you found"]

    failing = drive(api, stack.admin_token, start(api, stack.admin_token, _one_step(
        "FAIL", adapter="codex")), runner)  # fmt: skip
    assert step_of(failing, "only")["error"].endswith("codex: Stand-in failure: asked for it")


def test_w8_an_output_schema_correction_resumes_the_same_cli_session(api, stack, agents, tmp_path):
    define(api, stack.admin_token, CLAUDE)
    bench = Bench(tmp_path)
    runner = bench.runner(api, runner_token(agents))
    schema = {"type": "object", "required": ["verdict"]}
    run_id = start(api, stack.admin_token, _one_step("Judge it", outputSchema=schema))
    run = drive(api, stack.admin_token, run_id, runner)
    assert run["status"] == "succeeded", run
    assert json.loads(step_of(run, "only")["output"]) == {"verdict": "ok"}
    first, correction = bench.runs()
    assert "only a JSON value" in first["argv"][-1] and "--resume" not in first["argv"]
    session = step_of(run, "only")["sessionId"]
    assert correction["argv"][-3:-1] == [session, "--"]
    assert correction["argv"][-1].startswith("Your last answer does not satisfy")
    assert step_of(run, "only")["cost"] == 2 * agent_clis.COST_USD


def test_a_resumed_session_goes_only_to_the_runner_that_holds_it(api, stack, agents, tmp_path):
    """Sessions live on one computer: another runner (same login, another bridge) never gets
    the continuing step; the one that holds the session does."""
    define(api, stack.admin_token, CLAUDE)
    bench = Bench(tmp_path)
    token = runner_token(agents)
    holder = bench.runner(api, token, runner_id="r-holder")
    other = StackServer(api, token)
    run_id = start(api, stack.admin_token, TWO_STAGES)
    wait_queued(stack, 1)
    assert holder.run_once()  # the review step's turn
    wait_step(api, stack.admin_token, run_id, "review", {"succeeded"})
    wait_queued(stack, 1)  # the fix step's, pinned to the holder
    assert other.claim(_claim_body("r-elsewhere"))["job"] is None
    assert holder.run_once()
    run = drive(api, stack.admin_token, run_id, holder)
    assert run["status"] == "succeeded", run
    assert step_of(run, "fix")["sessionId"] == step_of(run, "review")["sessionId"]


def test_a_lapsed_claim_fails_the_step_and_the_session_is_not_started_again(
    api, stack, agents, tmp_path
):
    define(api, stack.admin_token, CLAUDE)
    server = StackServer(api, runner_token(agents))
    run_id = start(api, stack.admin_token, _one_step("Review auth.ts"))
    job = wait_claim(server, _claim_body())
    assert job["prompt"] == "Review auth.ts" and job["resume"] is None
    assert job["renew_seconds"] == limits.RUNNER_RENEW_SECONDS
    stack.clock.advance(60)
    renewed = server.renew(job["job_id"], {"runner_id": "r-bench"})
    assert renewed["job_id"] == job["job_id"]  # the lease runs from now
    stack.clock.advance(limits.RUNNER_LEASE_SECONDS - 1)
    assert invoke_function("TickFunction", {})["runner_jobs_expired"] == 0
    assert (
        step_of(api("GET", f"/v1/workflows/{run_id}", stack.admin_token).body, "only")["status"]
        == "running"
    )
    stack.clock.advance(2)
    settled = invoke_function("TickFunction", {})
    assert settled["runner_jobs_expired"] == 1 and settled["runner_jobs_delivered"] == 1
    failed = wait_step(api, stack.admin_token, run_id, "only", {"failed"})
    assert failed["error"].startswith("runner bench stopped renewing its claim")
    assert "retry the run" in failed["error"]
    # The runner that comes back late is told the job is gone; nobody gets it again.
    late = api("POST", f"/v1/runner/jobs/{job['job_id']}/finish", server.token,
               {"runner_id": "r-bench", "output": "done", "session_id": "s-1"})  # fmt: skip
    assert late.status == 409 and "has ended (expired)" in late.body["error"]["message"]
    renew = api("POST", f"/v1/runner/jobs/{job['job_id']}/renew", server.token,
                {"runner_id": "r-bench"})  # fmt: skip
    assert renew.status == 409
    assert server.claim(_claim_body())["job"] is None


def test_a_job_no_runner_claims_fails_its_step_after_the_wait(api, stack, agents):
    define(api, stack.admin_token, CLAUDE)
    server = StackServer(api, runner_token(agents))
    waiting = start(api, stack.admin_token, _one_step("Nobody runs this"))
    wait_queued(stack, 1)
    # A runner with only codex never takes a claude job.
    assert server.claim(_claim_body(commands=("codex",)))["job"] is None
    stack.clock.advance(limits.RUNNER_QUEUE_WAIT_SECONDS + 1)
    assert server.claim(_claim_body())["job"] is None  # past its wait: not claimable
    assert invoke_function("TickFunction", {})["runner_jobs_expired"] == 1
    failed = wait_step(api, stack.admin_token, waiting, "only", {"failed"})
    assert failed["error"].startswith("no runner claimed this claude step within 24 h")


def test_cancel_takes_queued_and_claimed_jobs_away(api, stack, agents):
    define(api, stack.admin_token, CLAUDE)
    server = StackServer(api, runner_token(agents))
    two = {"workflowId": "pair", "stages": [{"steps": [
        {"label": "a", "adapter": "claude-code", "prompt": "A"},
        {"label": "b", "adapter": "claude-code", "prompt": "B"},
    ]}]}  # fmt: skip
    run_id = start(api, stack.admin_token, two)
    wait_queued(stack, 2)
    claimed = wait_claim(server, _claim_body())
    assert api("POST", f"/v1/workflows/{run_id}/cancel", stack.admin_token).status == 200
    assert server.claim(_claim_body())["job"] is None  # the queued one left the queue
    renew = api("POST", f"/v1/runner/jobs/{claimed['job_id']}/renew", server.token,
                {"runner_id": "r-bench"})  # fmt: skip
    assert renew.status == 409  # the runner stops its CLI


def test_the_await_runner_state_fails_the_step_after_its_backstop_timeout(api, stack, agents):
    asl = json.loads(
        (
            Path(__file__).resolve().parents[2] / "statemachines" / "workflow_run.asl.json"
        ).read_text()
    )
    stages = asl["States"]["Items"]["ItemProcessor"]["States"]["Stages"]
    steps = stages["ItemProcessor"]["States"]["Steps"]["ItemProcessor"]["States"]
    assert steps["AwaitRunner"]["TimeoutSeconds"] == limits.RUNNER_WAIT_TIMEOUT_SECONDS
    assert steps["AwaitRunner"]["Catch"][0]["Next"] == "StepInterrupted"
    assert {"Variable": "$.turn.next", "StringEquals": "runner", "Next": "AwaitRunner"} in steps[
        "Route"
    ]["Choices"]

    define(api, stack.admin_token, CLAUDE)
    run_id = start(api, stack.admin_token, _one_step("Review auth.ts"))
    wait_claim(StackServer(api, runner_token(agents)), _claim_body())
    event = {"action": "interrupted", "run_id": run_id, "item": 0, "stage": 0, "step": 0,
             "error": {"Error": "States.Timeout", "Cause": None}}  # fmt: skip
    stack.services.workflows.engine.handle(event)
    only = step_of(api("GET", f"/v1/workflows/{run_id}", stack.admin_token).body, "only")
    assert (only["status"], only["error"]) == ("failed", "no runner finished it within 29 h")
    assert api("POST", f"/v1/workflows/{run_id}/cancel", stack.admin_token).status == 200


def test_a_tick_settles_at_most_runner_jobs_per_tick_jobs(api, stack, agents, monkeypatch):
    """One more job past its wait than a tick settles: the tick expires
    RUNNER_JOBS_PER_TICK of them, the next tick the last one.

    The bound is lowered to 1 for speed: the tick reads `limits.RUNNER_JOBS_PER_TICK` when
    it runs, so the rule under test is the same."""
    monkeypatch.setattr(limits, "RUNNER_JOBS_PER_TICK", 1)
    define(api, stack.admin_token, CLAUDE)
    two = {"workflowId": "pair", "stages": [{"steps": [
        {"label": "a", "adapter": "claude-code", "prompt": "A"},
        {"label": "b", "adapter": "claude-code", "prompt": "B"},
    ]}]}  # fmt: skip
    run_id = start(api, stack.admin_token, two)
    wait_queued(stack, 2)
    stack.clock.advance(limits.RUNNER_QUEUE_WAIT_SECONDS + 1)
    assert invoke_function("TickFunction", {})["runner_jobs_expired"] == 1
    assert invoke_function("TickFunction", {})["runner_jobs_expired"] == 1
    assert invoke_function("TickFunction", {})["runner_jobs_expired"] == 0
    for label in ("a", "b"):
        assert wait_step(api, stack.admin_token, run_id, label, {"failed"})["status"] == "failed"
