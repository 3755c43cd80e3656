"""Adapter profiles over HTTP (issue 8): an admin without target bounds defines them, any
reader of functions sees their names and types, only an admin their settings; another
account's profile looks exactly like none; bad settings say what is wrong; the per-account
count and the stored size hold at their limits and fail just past them."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from agentworks import limits

CLAUDE_CODE: dict[str, Any] = {
    "name": "claude-code",
    "type": "scripted",
    "rules": [
        {"when": "Review (\\S+)", "reply": "Found 2 bugs in {match.1}."},
        {"when": "fail", "fail": "could not finish"},
        {"default": "Done."},
    ],
}


def _create(api: Any, token: str, profile: dict[str, Any]) -> Any:
    return api("POST", "/v1/adapters", token, copy.deepcopy(profile))


def test_an_admin_defines_reads_changes_and_deletes_a_profile(api, stack) -> None:
    admin = stack.admin_token
    created = _create(api, admin, CLAUDE_CODE)
    assert created.status == 201, created.body
    assert created.body["name"] == "claude-code" and created.body["type"] == "scripted"
    assert created.body["settings"]["rules"][0]["reply"] == "Found 2 bugs in {match.1}."
    assert created.body["version"] == 1
    again = _create(api, admin, CLAUDE_CODE)
    assert again.status == 409 and "agentworks adapters update" in again.body["error"]["message"]

    changed = {**CLAUDE_CODE, "rules": [{"default": "Only this now."}]}
    updated = api("PUT", "/v1/adapters/Claude-Code", admin, changed)
    assert updated.status == 200, updated.body
    assert updated.body["version"] == 2
    assert updated.body["settings"]["rules"] == [{"default": "Only this now."}]
    renamed = api("PUT", "/v1/adapters/claude-code", admin, {**changed, "name": "other"})
    assert renamed.status == 400 and renamed.body["error"]["field"] == "name"

    listed = api("GET", "/v1/adapters", admin)
    assert [p["name"] for p in listed.body["adapters"]] == ["claude-code"]
    deleted = api("DELETE", "/v1/adapters/claude-code", admin)
    assert deleted.status == 200 and deleted.body == {"name": "claude-code", "deleted": True}
    assert api("GET", "/v1/adapters/claude-code", admin).status == 404
    assert api("GET", "/v1/adapters", admin).body == {"adapters": []}


def test_readers_see_names_and_types_only_admins_see_settings(api, stack, agents) -> None:
    assert _create(api, stack.admin_token, CLAUDE_CODE).status == 201
    reader = agents.connection("reader")["token"]  # default scopes: functions:read among them
    seen = api("GET", "/v1/adapters/claude-code", reader).body
    assert (seen["type"], seen["settings"]) == ("scripted", None)
    assert api("GET", "/v1/adapters", reader).body["adapters"][0]["settings"] is None
    for method, path, body in (
        ("POST", "/v1/adapters", CLAUDE_CODE),
        ("PUT", "/v1/adapters/claude-code", CLAUDE_CODE),
        ("DELETE", "/v1/adapters/claude-code", None),
    ):
        refused = api(method, path, reader, copy.deepcopy(body))
        assert (refused.status, refused.body["error"]["code"]) == (403, "forbidden"), path


def test_defining_profiles_is_account_wide_administration(api, stack) -> None:
    from agentworks.identity.models import ALL_SCOPES

    body = {"name": "b2", "scopes": list(ALL_SCOPES), "target_bounds": ["crew:contracts"]}
    bounded = api("POST", "/v1/connections", stack.admin_token, body).body
    refused = _create(api, bounded["token"], CLAUDE_CODE)
    assert refused.status == 403 and "without target bounds" in refused.body["error"]["message"]
    assert api("GET", "/v1/adapters", stack.admin_token).body == {"adapters": []}


def test_another_accounts_profile_looks_exactly_like_none(api, stack) -> None:
    assert _create(api, stack.admin_token, CLAUDE_CODE).status == 201
    intruder = stack.services.identity.bootstrap("intruder").token
    theirs = api("GET", "/v1/adapters/claude-code", intruder)
    unknown = api("GET", "/v1/adapters/never-made", intruder)
    assert (theirs.status, theirs.body) == (unknown.status, unknown.body) == (404, unknown.body)
    for method, body in (("PUT", CLAUDE_CODE), ("DELETE", None)):
        tried = api(method, "/v1/adapters/claude-code", intruder, copy.deepcopy(body))
        assert (tried.status, tried.body) == (404, unknown.body)
    assert api("GET", "/v1/adapters", intruder).body == {"adapters": []}
    # Nothing changed for the owner.
    mine = api("GET", "/v1/adapters/claude-code", stack.admin_token).body
    assert mine["version"] == 1


@pytest.mark.parametrize(
    ("profile", "why"),
    [
        ({"type": "scripted", "rules": []}, "needs a name"),
        ({"name": "has space", "type": "scripted", "rules": []}, "needs a name"),
        ({"name": "x", "type": "telepathy"}, "adapter type 'telepathy' is unknown"),
        ({"name": "x", "type": "scripted", "rules": [{"when": "("}]}, "not a valid regex"),
        ({"name": "x", "type": "scripted"}, "needs 'rules', an 'entrypoint', or both"),
    ],
)
def test_bad_profiles_say_what_is_wrong_and_store_nothing(api, stack, profile, why) -> None:
    refused = _create(api, stack.admin_token, profile)
    assert refused.status == 400 and why in refused.body["error"]["message"], refused.body
    assert api("GET", "/v1/adapters", stack.admin_token).body == {"adapters": []}


def test_the_stored_size_holds_at_its_limit_and_fails_just_past_it(api, stack) -> None:
    from agentworks.crews.adapter_profile_store import settings_json

    def sized(total: int) -> dict[str, Any]:
        profile = {"name": "big", "type": "scripted", "rules": [{"default": ""}]}
        settings = {k: v for k, v in profile.items() if k != "name"}
        padding = total - len(settings_json(settings).encode())
        profile["rules"] = [{"default": "x" * padding}]
        return profile

    assert _create(api, stack.admin_token, sized(limits.ADAPTER_PROFILE_MAX_BYTES)).status == 201
    api("DELETE", "/v1/adapters/big", stack.admin_token)
    past = _create(api, stack.admin_token, sized(limits.ADAPTER_PROFILE_MAX_BYTES + 1))
    assert past.status == 400 and "bytes as JSON; at most" in past.body["error"]["message"]


def test_the_profiles_of_an_account_are_bounded(api, stack) -> None:
    for number in range(limits.ADAPTER_PROFILES_PER_ACCOUNT):
        made = _create(api, stack.admin_token, {**CLAUDE_CODE, "name": f"p{number}"})
        assert made.status == 201, made.body
    past = _create(api, stack.admin_token, {**CLAUDE_CODE, "name": "one-more"})
    assert past.status == 409 and past.body["error"]["code"] == "limit_reached", past.body
    assert len(api("GET", "/v1/adapters", stack.admin_token).body["adapters"]) == (
        limits.ADAPTER_PROFILES_PER_ACCOUNT
    )


def test_a_cli_profile_holds_runner_args_max_arguments_and_no_more(api, stack) -> None:
    """Issue 10 item 6: a cli profile with RUNNER_ARGS_MAX arguments is stored whole;
    one more is refused and nothing is stored."""
    args = ["--sandbox", "read-only"] + ["--full-auto"] * (limits.RUNNER_ARGS_MAX - 2)
    at_bound = {"name": "codex", "type": "cli", "command": "codex", "args": args}
    assert _create(api, stack.admin_token, at_bound).status == 201
    stored = api("GET", "/v1/adapters/codex", stack.admin_token)
    assert stored.status == 200 and stored.body["settings"]["args"] == args
    past = {**at_bound, "name": "codex-2", "args": [*args, "--skip-git-repo-check"]}
    refused = _create(api, stack.admin_token, past)
    assert refused.status == 400, refused.body
    assert f"at most {limits.RUNNER_ARGS_MAX}" in refused.body["error"]["message"]
    listed = api("GET", "/v1/adapters", stack.admin_token).body["adapters"]
    assert [a["name"] for a in listed] == ["codex"]
