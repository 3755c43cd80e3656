"""Issue 10 item 6: the runner routes' rules (/v1/runner/claim, …/renew, …/finish) against
the real API handlers — exactly one of two racing claimers gets a job; only its claimer
renews or reports it, and only once; another account's or an out-of-bounds runner finds
nothing, answered byte for byte as for an unknown job (A1, A4, A5); the scope is needed and
not a default (A2); and every bound at and just past its limit (limits.py)."""

from __future__ import annotations

import re
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from agentworks import limits
from agentworks.identity.models import DEFAULT_SCOPES, WORKFLOWS_RUNNER
from agentworks.runners.job_store import RunnerJobStore
from tests.integration.bridge_support import StackServer
from tests.integration.runner_support import CLAUDE, runner_token, wait_claim, wait_queued
from tests.integration.workflow_support import define, start, step_of, wait_run, wait_step

UNKNOWN_JOB = "rjob_01ARZ3NDEKTSV4RRFFQ69G5FAV"
_ULID = re.compile(r"[0-9A-HJKMNP-TV-Z]{26}")


def _flow(*prompts: str, **run: Any) -> dict[str, Any]:
    steps = [
        {"label": f"s{i}", "adapter": "claude-code", "prompt": p} for i, p in enumerate(prompts)
    ]
    return {"workflowId": "jobs", "stages": [{"steps": steps}], **run}


def _claim(runner_id: str = "r-one") -> dict[str, Any]:
    return {"runner_id": runner_id, "name": "one", "commands": ["claude"]}


def _report(runner_id: str = "r-one", **fields: Any) -> dict[str, Any]:
    return {"runner_id": runner_id, "output": "done", "session_id": "sess-1", **fields}


def _post(api: Any, token: str, path: str, body: dict[str, Any]) -> Any:
    return api("POST", path, token, body)


def test_two_runners_claiming_one_job_at_once_exactly_one_gets_it(
    api, stack, agents, monkeypatch
) -> None:
    define(api, stack.admin_token, CLAUDE)
    tokens = [runner_token(agents, "laptop"), runner_token(agents, "desktop")]
    run_id = start(api, stack.admin_token, _flow("Review auth.ts"))
    wait_queued(stack, 1)
    # Both claims read the queue before either writes: the conditional claim decides.
    both_read = threading.Barrier(2, timeout=10)
    queued = RunnerJobStore.queued

    def racing(self: RunnerJobStore, account_id: str, limit: int) -> Any:
        entries = queued(self, account_id, limit)
        both_read.wait()
        return entries

    monkeypatch.setattr(RunnerJobStore, "queued", racing)

    def claim(index: int) -> Any:
        return _post(api, tokens[index], "/v1/runner/claim", _claim(f"r-{index}"))

    with ThreadPoolExecutor(max_workers=2) as pool:
        answers = list(pool.map(claim, range(2)))
    monkeypatch.setattr(RunnerJobStore, "queued", queued)
    assert [a.status for a in answers] == [200, 200]
    jobs = [a.body["job"] for a in answers]
    winner = next(i for i, job in enumerate(jobs) if job)
    loser = 1 - winner
    assert jobs[loser] is None and jobs[winner]["prompt"] == "Review auth.ts"
    job_id = jobs[winner]["job_id"]
    path = f"/v1/runner/jobs/{job_id}"

    # Only the claimer renews or reports it; the other runner of the account is told so.
    refused = _post(api, tokens[loser], f"{path}/finish", _report(f"r-{loser}"))
    assert (
        refused.status == 409 and "not claimed by this runner" in refused.body["error"]["message"]
    )
    # The same login on another bridge (another runner id) is another runner too.
    same_login = _post(api, tokens[winner], f"{path}/renew", {"runner_id": "r-elsewhere"})
    assert same_login.status == 409
    assert _post(api, tokens[winner], f"{path}/renew", {"runner_id": f"r-{winner}"}).status == 200
    done = _post(api, tokens[winner], f"{path}/finish", _report(f"r-{winner}"))
    assert done.status == 200 and done.body == {
        "job_id": job_id,
        "state": "succeeded",
        "delivered": True,
    }
    again = _post(api, tokens[winner], f"{path}/finish", _report(f"r-{winner}", output="again"))
    assert (
        again.status == 409 and "a second report changes nothing" in again.body["error"]["message"]
    )
    run = wait_run(api, stack.admin_token, run_id)
    assert run["status"] == "succeeded" and step_of(run, "s0")["output"] == "done"


def test_a1_a4_a5_another_accounts_or_out_of_bounds_runner_finds_nothing(api, stack, agents):
    define(api, stack.admin_token, CLAUDE)
    owner = StackServer(api, runner_token(agents, "owner"))
    start(api, stack.admin_token, _flow("Secret plan 7f3a"))
    wait_queued(stack, 1)
    intruder_admin = stack.services.identity.bootstrap("intruder").token  # every scope
    bounded = runner_token(agents, "bounded", target_bounds=["workflow:elsewhere"])
    for token in (intruder_admin, bounded):
        claimed = _post(api, token, "/v1/runner/claim", _claim("r-x"))
        assert claimed.status == 200 and claimed.body == {"job": None}
    job = wait_claim(owner, _claim())  # still there: nobody else took it
    for token in (intruder_admin, bounded):
        for verb, body in (("renew", {"runner_id": "r-one"}), ("finish", _report())):
            known = _post(api, token, f"/v1/runner/jobs/{job['job_id']}/{verb}", body)
            unknown = _post(api, token, f"/v1/runner/jobs/{UNKNOWN_JOB}/{verb}", body)
            assert known.status == 404 and known.body["error"]["code"] == "unavailable"
            assert known.body == unknown.body  # byte for byte the unknown job's answer
            assert "7f3a" not in str(known.body)
    # Malformed ids answer the same.
    odd = _post(api, intruder_admin, "/v1/runner/jobs/not-a-job/finish", _report())
    assert odd.status == 404 and odd.body == unknown.body
    assert owner.finish(job["job_id"], _report())["state"] == "succeeded"


def test_a2_the_runner_scope_is_needed_and_no_default(api, stack, agents):
    assert WORKFLOWS_RUNNER not in DEFAULT_SCOPES  # a runner reads prompts of others' runs
    plain = agents.connection("plain")["token"]
    for path, body in (
        ("/v1/runner/claim", _claim()),
        (f"/v1/runner/jobs/{UNKNOWN_JOB}/renew", {"runner_id": "r-one"}),
        (f"/v1/runner/jobs/{UNKNOWN_JOB}/finish", _report()),
    ):
        refused = _post(api, plain, path, body)
        assert refused.status == 403 and refused.body["error"]["scope"] == WORKFLOWS_RUNNER


def test_report_bounds_at_and_just_past_each_limit(api, stack, agents):
    define(api, stack.admin_token, CLAUDE)
    token = runner_token(agents)
    server = StackServer(api, token)
    run_id = start(api, stack.admin_token, _flow("a", "b", "c"))
    wait_queued(stack, 3)
    jobs = [wait_claim(server, _claim()) for _ in range(3)]
    at = {
        "output": "x" * limits.RUNNER_OUTPUT_MAX_CHARS,
        "session_id": "s" * limits.RUNNER_SESSION_ID_MAX_CHARS,
        "error": "e" * limits.RUNNER_ERROR_MAX_CHARS,
        "cost_usd": limits.RUNNER_COST_MAX_USD,
    }
    past = {
        "output": at["output"] + "x",
        "session_id": at["session_id"] + "s",
        "error": at["error"] + "e",
        "cost_usd": limits.RUNNER_COST_MAX_USD + 0.01,
    }
    for field, value in past.items():
        body = _report(**{field: value})
        if field == "error":
            body.pop("output")
        refused = _post(api, token, f"/v1/runner/jobs/{jobs[0]['job_id']}/finish", body)
        assert refused.status == 400, (field, refused.body)
        assert field in refused.body["error"]["message"]
    for broken in (
        {"runner_id": "r-one", "output": "no session id"},
        {"runner_id": "r-one", "session_id": "s-1"},  # neither output nor error
        _report(cost_usd=-1),
        _report(session_id="has space"),
        {**_report(), "runner_id": "r" * (limits.RUNNER_ID_MAX_CHARS + 1)},
    ):
        refused = _post(api, token, f"/v1/runner/jobs/{jobs[0]['job_id']}/finish", broken)
        assert refused.status == 400, (broken, refused.body)
    name = {**_claim("r" * limits.RUNNER_ID_MAX_CHARS), "name": "n" * limits.RUNNER_NAME_MAX_CHARS}
    assert _post(api, token, "/v1/runner/claim", name).status == 200
    name["name"] += "n"
    assert _post(api, token, "/v1/runner/claim", name).status == 400

    by_step = {job["step"]: job["job_id"] for job in jobs}
    accepted = [
        server.finish(by_step["s0"], _report(output=at["output"], session_id=at["session_id"])),
        server.finish(by_step["s1"], {"runner_id": "r-one", "error": at["error"]}),
        server.finish(by_step["s2"], _report(cost_usd=at["cost_usd"])),
    ]
    assert [a["state"] for a in accepted] == ["succeeded", "failed", "succeeded"]
    run = wait_run(api, stack.admin_token, run_id)
    assert len(step_of(run, "s0")["output"]) == limits.RUNNER_OUTPUT_MAX_CHARS
    assert step_of(run, "s0")["sessionId"] == at["session_id"]
    # The step keeps the CLI's error within its own bound (a longer one ends with "…").
    assert step_of(run, "s1")["error"].startswith("the claude session failed on runner one: eee")
    assert len(step_of(run, "s1")["error"]) == limits.WORKFLOW_ERROR_MAX_CHARS
    assert step_of(run, "s2")["cost"] == limits.RUNNER_COST_MAX_USD


def test_the_prompt_a_cli_step_hands_over_at_and_past_its_limit(api, stack, agents):
    define(api, stack.admin_token, CLAUDE)
    server = StackServer(api, runner_token(agents))
    head = "a" * limits.WORKFLOW_VARIABLE_MAX_CHARS
    rest = limits.RUNNER_PROMPT_MAX_CHARS - len(head)
    fits = start(api, stack.admin_token, _flow("{{A}}{{B}}", input={"A": head, "B": "b" * rest}))
    job = wait_claim(server, _claim())
    assert len(job["prompt"]) == limits.RUNNER_PROMPT_MAX_CHARS
    server.finish(job["job_id"], _report())
    assert wait_run(api, stack.admin_token, fits)["status"] == "succeeded"

    over = {"A": head, "B": "b" * (rest + 1)}
    too_long = start(api, stack.admin_token, _flow("{{A}}{{B}}", input=over))
    failed = wait_step(api, stack.admin_token, too_long, "s0", {"failed"})
    assert failed["error"] == (
        "the prompt is 30,001 characters; a cli step hands the CLI at most 30,000 (shorten the "
        "prompt or its variables)"
    )


@pytest.mark.parametrize(
    ("profile", "problem"),
    [
        ({"args": ["--max-turns", "3"] * 5}, "'args' holds at most 8 entries"),
        ({"args": ["--dangerously-skip-permissions"]}, "'--dangerously-skip-permissions' is not"),
        ({"args": ["--permission-mode", "bypassPermissions"]}, "--permission-mode takes one of"),
        ({"args": ["--max-turns"]}, "--max-turns takes an integer from 1 to 200"),
        ({"command": "bash"}, "'command' is one of claude, codex"),
        ({"model": "sonnet; rm -rf"}, "'model' is a model name"),
        ({"timeout_seconds": limits.RUNNER_TIMEOUT_MIN_SECONDS - 1}, "'timeout_seconds' must be"),
        ({"timeout_seconds": limits.RUNNER_TIMEOUT_MAX_SECONDS + 1}, "'timeout_seconds' must be"),
        ({"command": "codex", "args": ["--sandbox", "danger-full-access"]}, "--sandbox takes"),
    ],
)
def test_cli_profiles_outside_the_allow_list_are_refused(api, stack, profile, problem):
    refused = api("POST", "/v1/adapters", stack.admin_token, {**CLAUDE, **profile})
    assert refused.status == 400 and problem in refused.body["error"]["message"], refused.body


def test_cli_profiles_at_their_limits_are_accepted_and_crews_refuse_the_type(api, stack):
    from tests.integration.crew_support import CONTRACTS

    at = {
        **CLAUDE,
        "args": ["--max-turns", "200", "--permission-mode", "plan"] * 2,  # 8 entries
        "timeout_seconds": limits.RUNNER_TIMEOUT_MAX_SECONDS,
    }
    assert api("POST", "/v1/adapters", stack.admin_token, at).status == 201
    low = {**CLAUDE, "name": "quick", "timeout_seconds": limits.RUNNER_TIMEOUT_MIN_SECONDS}
    assert api("POST", "/v1/adapters", stack.admin_token, low).status == 201
    crew = {**CONTRACTS, "adapter": {"type": "cli", "command": "claude"}}
    refused = api("POST", "/v1/crews", stack.admin_token, crew)
    assert refused.status == 400 and "runs workflow steps on a local runner" in str(refused.body)


def test_unknown_ids_are_shaped_like_real_ones() -> None:
    assert _ULID.search(UNKNOWN_JOB)


def test_a_claim_looks_at_the_oldest_runner_claim_scan_max_queued_jobs(
    api, stack, agents, monkeypatch
) -> None:
    """A claim looks at the account's oldest RUNNER_CLAIM_SCAN_MAX queued jobs: a codex
    runner finds nothing behind that many claude jobs, and finds its job once one of them is
    taken.

    The bound is lowered to 2 for speed: a claim reads `limits.RUNNER_CLAIM_SCAN_MAX` when
    it is made, so the rule under test is the same."""
    from tests.integration.runner_support import CODEX

    monkeypatch.setattr(limits, "RUNNER_CLAIM_SCAN_MAX", 2)
    define(api, stack.admin_token, CLAUDE, CODEX)
    token = runner_token(agents)
    claude_run = start(api, stack.admin_token, _flow("First", "Second"))
    wait_queued(stack, limits.RUNNER_CLAIM_SCAN_MAX)
    late = {"label": "c0", "adapter": "codex", "prompt": "Late"}
    codex_flow = {"workflowId": "codex-jobs", "stages": [{"steps": [late]}]}
    codex_run = start(api, stack.admin_token, codex_flow)
    wait_queued(stack, limits.RUNNER_CLAIM_SCAN_MAX + 1)
    codex_claim = {"runner_id": "r-codex", "name": "codex", "commands": ["codex"]}
    assert _post(api, token, "/v1/runner/claim", codex_claim).body["job"] is None
    taken = _post(api, token, "/v1/runner/claim", _claim()).body["job"]
    assert taken["prompt"] in ("First", "Second")
    found = _post(api, token, "/v1/runner/claim", codex_claim).body["job"]
    assert found is not None and found["prompt"] == "Late"

    # Let both runs end: every job reported.
    path = "/v1/runner/jobs/{}/finish"
    assert _post(api, token, path.format(taken["job_id"]), _report()).status == 200
    assert _post(api, token, path.format(found["job_id"]), _report("r-codex")).status == 200
    last = _post(api, token, "/v1/runner/claim", _claim()).body["job"]
    assert _post(api, token, path.format(last["job_id"]), _report()).status == 200
    assert wait_run(api, stack.admin_token, claude_run)["status"] == "succeeded"
    assert wait_run(api, stack.admin_token, codex_run)["status"] == "succeeded"


def test_an_ended_job_is_kept_runner_job_retention_seconds(api, stack, agents) -> None:
    """An ended job stays readable RUNNER_JOB_RETENTION_SECONDS (a second report is told it
    ended); then it is gone, answered as an unknown job."""
    define(api, stack.admin_token, CLAUDE)
    token = runner_token(agents)
    run_id = start(api, stack.admin_token, _flow("Only"))
    wait_queued(stack, 1)
    job = _post(api, token, "/v1/runner/claim", _claim()).body["job"]
    path = f"/v1/runner/jobs/{job['job_id']}/finish"
    assert _post(api, token, path, _report()).status == 200
    assert wait_run(api, stack.admin_token, run_id)["status"] == "succeeded"
    stack.clock.advance(limits.RUNNER_JOB_RETENTION_SECONDS - 1)
    assert _post(api, token, path, _report()).status == 409
    stack.clock.advance(1)
    gone = _post(api, token, path, _report())
    unknown = _post(api, token, f"/v1/runner/jobs/{UNKNOWN_JOB}/finish", _report())
    assert (gone.status, gone.body) == (404, unknown.body)
