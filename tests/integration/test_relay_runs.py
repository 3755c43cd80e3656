"""Relay releases and runs over HTTP (R1–R3, R5): publish, pinning, idempotency keys,
schema checks, native and legacy entrypoints, executed by Step Functions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentworks import limits
from tests.integration.relay_support import publish, relay_api, relay_files, start, wait_run

__all__ = ["relay_api"]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "relays" / "summarize"

VERSIONED = """
    import asyncio

    async def run(INPUT):
        await asyncio.sleep(INPUT.get("pause", 0))
        return {"release": RELEASE, "echo": INPUT.get("echo")}

    RELEASE = {release}
"""


def example_files() -> dict[str, str]:
    return {p.name: p.read_text() for p in EXAMPLE.iterdir() if p.is_file()}


def test_the_example_relay_publishes_runs_and_answers_its_final_json(
    stack: Any, api: Any, agents: Any, relay_api: str
) -> None:
    release = publish(api, stack.admin_token, example_files())
    assert (release["relay"], release["version"], release["active"]) == ("summarize", 1, True)
    assert release["functions"][0]["entrypoint"] == "summarize:run"
    caller = agents.connection("caller")["token"]
    run = start(
        api,
        caller,
        "summarize",
        {
            "function": "summarize",
            "input": {"texts": ["Relays are programs. They run.", "One"]},
            "idempotency_key": "first",
        },
    )
    assert run["status"] == "queued" and run["version"] == 1
    done = wait_run(api, caller, "summarize", run["run_id"])
    assert done["status"] == "succeeded", done
    assert done["result"] == {
        "summaries": [
            {"summary": "Relays are programs", "words": 5},
            {"summary": "One", "words": 1},
        ]
    }
    assert done["attempts"] == 1


def test_publishing_identical_source_is_a_no_op_and_new_source_becomes_active(
    stack: Any, api: Any
) -> None:
    first = publish(
        api, stack.admin_token, relay_files("pinned", VERSIONED.replace("{release}", "1"))
    )
    again = publish(
        api, stack.admin_token, relay_files("pinned", VERSIONED.replace("{release}", "1"))
    )
    assert again["created"] is False
    assert (again["version"], again["content_hash"]) == (first["version"], first["content_hash"])
    second = publish(
        api, stack.admin_token, relay_files("pinned", VERSIONED.replace("{release}", "2"))
    )
    assert (second["version"], second["created"], second["active"]) == (2, True, True)
    listed = api("GET", "/api/relays/pinned/releases", stack.admin_token).body
    assert listed["active_version"] == 2
    assert [(r["version"], r["active"]) for r in listed["releases"]] == [(2, True), (1, False)]


def test_a_run_stays_pinned_to_its_release_across_a_publish(
    stack: Any, api: Any, agents: Any, relay_api: str
) -> None:
    admin = stack.admin_token
    publish(api, admin, relay_files("pinned", VERSIONED.replace("{release}", "1")))
    caller = agents.connection("caller")["token"]
    slow = start(
        api,
        caller,
        "pinned",
        {"function": "run", "input": {"pause": 0.5}, "idempotency_key": "slow"},
    )
    publish(api, admin, relay_files("pinned", VERSIONED.replace("{release}", "2")))  # while it runs
    fresh = start(api, caller, "pinned", {"function": "run", "input": {}, "idempotency_key": "new"})
    old = start(
        api,
        caller,
        "pinned",
        {"function": "run", "input": {}, "idempotency_key": "old", "version": 1},
    )
    assert (slow["version"], fresh["version"], old["version"]) == (1, 2, 1)
    assert wait_run(api, caller, "pinned", slow["run_id"])["result"]["release"] == 1
    assert wait_run(api, caller, "pinned", fresh["run_id"])["result"]["release"] == 2
    assert wait_run(api, caller, "pinned", old["run_id"])["result"]["release"] == 1
    # The same key after the publish is still the original run, on release 1.
    replay = start(
        api,
        caller,
        "pinned",
        {"function": "run", "input": {"pause": 0.5}, "idempotency_key": "slow"},
    )
    assert (replay["run_id"], replay["version"], replay["replayed"]) == (slow["run_id"], 1, True)


def test_the_same_key_with_other_input_is_a_conflict_and_changes_nothing(
    stack: Any, api: Any, agents: Any, relay_api: str
) -> None:
    publish(api, stack.admin_token, relay_files("keys", VERSIONED.replace("{release}", "1")))
    caller = agents.connection("caller")["token"]
    body = {"function": "run", "input": {"echo": "a"}, "idempotency_key": "k"}
    first = start(api, caller, "keys", body)
    conflict = api("POST", "/api/relays/keys/runs", caller, {**body, "input": {"echo": "b"}})
    assert conflict.status == 409, conflict.body
    assert conflict.body["error"]["code"] == "conflict"
    assert wait_run(api, caller, "keys", first["run_id"])["result"]["echo"] == "a"
    # Another caller's identical key is its own run: keys never reach across callers.
    other = agents.connection("other")["token"]
    assert start(api, other, "keys", body)["run_id"] != first["run_id"]


def test_input_is_checked_against_the_schema_before_admission(
    stack: Any, api: Any, agents: Any
) -> None:
    publish(api, stack.admin_token, example_files())
    caller = agents.connection("caller")["token"]
    bad = {"function": "summarize", "input": {"texts": "not a list"}, "idempotency_key": "k"}
    refused = api("POST", "/api/relays/summarize/runs", caller, bad)
    assert refused.status == 422, refused.body
    assert refused.body["error"]["code"] == "invalid_arguments"
    assert refused.body["error"]["path"] == "input.texts"
    # Nothing was admitted: the key is still free for the corrected input.
    good = start(api, caller, "summarize", {**bad, "input": {"texts": ["ok"]}})
    assert good["replayed"] is False
    unknown = api(
        "POST",
        "/api/relays/summarize/runs",
        caller,
        {**bad, "function": "nope", "idempotency_key": "k2"},
    )
    assert unknown.status == 400 and "summarize" in unknown.body["error"]["message"]


def test_input_and_key_sizes_at_and_just_past_their_limits(
    stack: Any, api: Any, agents: Any
) -> None:
    publish(api, stack.admin_token, relay_files("sizes", VERSIONED.replace("{release}", "1")))
    caller = agents.connection("caller")["token"]
    room = limits.RELAY_INPUT_MAX_BYTES - len('{"echo":""}')
    at = {"function": "run", "input": {"echo": "x" * room}, "idempotency_key": "k" * 128}
    assert api("POST", "/api/relays/sizes/runs", caller, at).status == 202
    past = {**at, "input": {"echo": "x" * (room + 1)}, "idempotency_key": "other"}
    refused = api("POST", "/api/relays/sizes/runs", caller, past)
    assert refused.status == 400 and refused.body["error"]["field"] == "input"
    long_key = {**at, "idempotency_key": "k" * (limits.RELAY_IDEMPOTENCY_KEY_MAX_CHARS + 1)}
    assert api("POST", "/api/relays/sizes/runs", caller, long_key).status == 400


def test_a_legacy_run_with_ctx_is_supported(
    stack: Any, api: Any, agents: Any, relay_api: str
) -> None:
    legacy = """
        def run(INPUT, ctx):
            doubled = ctx.step("double", lambda n: n * 2, INPUT["n"])
            return {"doubled": doubled, "run": ctx.run_id, "attempt": ctx.attempt}
    """
    publish(api, stack.admin_token, relay_files("legacy", legacy))
    caller = agents.connection("caller")["token"]
    run = start(
        api, caller, "legacy", {"function": "run", "input": {"n": 21}, "idempotency_key": "k"}
    )
    done = wait_run(api, caller, "legacy", run["run_id"])
    assert done["result"] == {"doubled": 42, "run": run["run_id"], "attempt": 1}, done
    assert [(s["name"], s["status"]) for s in done["steps"]] == [("double", "completed")]


def test_a_malformed_relay_is_refused_with_its_file_and_line(stack: Any, api: Any) -> None:
    files = relay_files("broken", "def run(INPUT):\n    return (\n")
    refused = api("POST", "/api/relays", stack.admin_token, {"files": files})
    assert refused.status == 400, refused.body
    assert refused.body["error"]["message"].startswith("main.py line ")
    assert api("GET", "/api/relays", stack.admin_token).body == {"relays": []}


def test_publishing_needs_admin_and_running_needs_the_scope(
    stack: Any, api: Any, agents: Any
) -> None:
    publish(api, stack.admin_token, example_files())
    plain = agents.connection("plain")["token"]
    denied = api("POST", "/api/relays", plain, {"files": example_files()})
    assert denied.status == 403
    no_scope = agents.connection("reader", scopes=["messages:read"])["token"]
    body = {"function": "summarize", "input": {"texts": []}, "idempotency_key": "k"}
    assert api("POST", "/api/relays/summarize/runs", no_scope, body).status == 403


def test_a_release_at_the_source_limit_publishes_and_one_byte_more_is_refused(
    stack: Any, api: Any
) -> None:
    files = relay_files("big", "async def run(INPUT):\n    return {}\n")
    room = limits.RELAY_SOURCE_MAX_BYTES - sum(len(t.encode()) for t in files.values())
    at = {**files, "notes.txt": "n" * room}
    assert publish(api, stack.admin_token, at)["created"] is True
    past = {**at, "notes.txt": "n" * (room + 1)}
    refused = api("POST", "/api/relays", stack.admin_token, {"files": past})
    assert refused.status == 400, refused.body
    assert f"{limits.RELAY_SOURCE_MAX_BYTES:,}" in refused.body["error"]["message"]


def test_the_releases_list_shows_the_latest_relay_releases_listed(
    stack: Any, api: Any, monkeypatch: Any
) -> None:
    """R1: `relays releases` lists the latest RELAY_RELEASES_LISTED releases, newest first.

    The bound is lowered to 2 for speed: the list reads `limits.RELAY_RELEASES_LISTED` when
    asked, so the rule under test is the same."""
    monkeypatch.setattr(limits, "RELAY_RELEASES_LISTED", 2)
    for n in range(1, 4):
        source = VERSIONED.replace("{release}", str(n))
        assert publish(api, stack.admin_token, relay_files("pinned", source))["version"] == n
    listed = api("GET", "/api/relays/pinned/releases", stack.admin_token).body
    assert [r["version"] for r in listed["releases"]] == [3, 2]
    assert listed["active_version"] == 3
