"""F1 bounds of Crews, each at and just past its bound, by what they do: the Crew past a bound
is refused and not created (or not changed), and one at the bound works in full."""

from __future__ import annotations

import copy
from typing import Any

from agentworks import limits
from tests.integration.crew_support import CONTRACTS


def _definition(name: str = "contracts", **changes: Any) -> dict:
    definition = copy.deepcopy(CONTRACTS)
    definition.update(name=name, **changes)
    return definition


def _functions(n: int) -> list[dict]:
    return [{"name": f"f{i}", "description": f"function {i}"} for i in range(n)]


def _crew_names(api, token) -> list[str]:
    listed = api("GET", "/v1/crews", token)
    assert listed.status == 200, listed.body
    return sorted(c["name"] for c in listed.body["crews"])


def test_f1_the_crew_past_crews_per_account_is_refused_and_not_created(api, stack):
    admin = stack.admin_token
    principal = stack.principal(admin)
    for i in range(limits.CREWS_PER_ACCOUNT - 1):  # the domain service: moto slows with HTTP
        stack.services.crews.definitions.create(principal, _definition(f"crew-{i:03d}"))
    last = api("POST", "/v1/crews", admin, _definition("the-last"))
    assert last.status == 201, last.body
    before = _crew_names(api, admin)
    assert len(before) == limits.CREWS_PER_ACCOUNT and "the-last" in before

    refused = api("POST", "/v1/crews", admin, _definition("one-too-many"))
    assert refused.status == 409 and refused.body["error"]["code"] == "limit_reached"
    assert f"{limits.CREWS_PER_ACCOUNT}" in refused.body["error"]["message"]
    assert _crew_names(api, admin) == before
    assert api("GET", "/v1/crews/one-too-many", admin).status == 404

    # Deleting one frees its place.
    assert api("DELETE", "/v1/crews/crew-000", admin).status == 200
    assert api("POST", "/v1/crews", admin, _definition("one-too-many")).status == 201


def test_f1_a_crew_holds_functions_per_crew_functions_and_no_more(api, stack):
    admin = stack.admin_token
    full = _definition(
        functions=[*CONTRACTS["functions"], *_functions(limits.FUNCTIONS_PER_CREW - 2)]
    )
    assert api("POST", "/v1/crews", admin, full).status == 201
    listed = api("GET", "/v1/functions", admin, query={"target": "crew:contracts"})
    assert listed.status == 200
    assert len(listed.body["functions"]) == limits.FUNCTIONS_PER_CREW

    over = copy.deepcopy(full)
    over["functions"].append({"name": "one_too_many", "description": "past the bound"})
    for method, path in (("PUT", "/v1/crews/contracts"), ("POST", "/v1/crews")):
        body = over if method == "PUT" else {**over, "name": "other"}
        refused = api(method, path, admin, body)
        assert refused.status == 400 and refused.body["error"]["code"] == "invalid_request"
        assert "functions" in refused.body["error"]["message"]
    names = [
        f["name"]
        for f in api("GET", "/v1/functions", admin, query={"target": "crew:contracts"}).body[
            "functions"
        ]
    ]
    assert len(names) == limits.FUNCTIONS_PER_CREW and "one_too_many" not in names
    assert api("GET", "/v1/crews/other", admin).status == 404


def test_f1_a_crews_access_list_holds_its_bound_of_entries_and_no_more(api, stack, agents):
    admin = stack.admin_token
    caller = agents.connection("caller")
    others = [agents.connection("other")["connection_id"]]
    # The caller is the last of CREW_ACCESS_MAX_ENTRIES entries: it may use the Crew.
    fillers = [f"con_{i:026d}" for i in range(limits.CREW_ACCESS_MAX_ENTRIES - 1)]
    at_bound = _definition(access=[*fillers, caller["connection_id"]])
    made = api("POST", "/v1/crews", admin, at_bound)
    assert made.status == 201, made.body
    found = api("GET", "/v1/functions", caller["token"], query={"target": "crew:contracts"})
    assert found.status == 200
    outside = api(
        "GET",
        "/v1/functions",
        agents.connection("outsider")["token"],
        query={"target": "crew:contracts"},
    )
    assert outside.status == 404

    # One more entry (a connection that would then be let in) is refused; nothing changes.
    past = _definition(access=[*at_bound["access"], *others])
    refused = api("PUT", "/v1/crews/contracts", admin, past)
    assert refused.status == 400 and refused.body["error"]["code"] == "invalid_request"
    assert "access" in refused.body["error"]["message"]
    stored = api("GET", "/v1/crews/contracts", admin).body
    assert stored["access"] == at_bound["access"]
    assert (
        api(
            "GET",
            "/v1/functions",
            agents.connection("other")["token"],
            query={"target": "crew:contracts"},
        ).status
        == 404
    )

    created = api("POST", "/v1/crews", admin, {**past, "name": "other-crew"})
    assert created.status == 400
    assert api("GET", "/v1/crews/other-crew", admin).status == 404


def test_c4_a_crews_may_ask_list_holds_its_bound_of_entries_and_no_more(api, stack):
    admin = stack.admin_token
    at_bound = _definition(may_ask=[f"crew-{i}" for i in range(limits.CREW_ACCESS_MAX_ENTRIES)])
    assert api("POST", "/v1/crews", admin, at_bound).status == 201
    past = _definition(may_ask=[*at_bound["may_ask"], "one-too-many"])
    refused = api("PUT", "/v1/crews/contracts", admin, past)
    assert refused.status == 400 and "may_ask" in refused.body["error"]["message"]
    assert api("GET", "/v1/crews/contracts", admin).body["may_ask"] == at_bound["may_ask"]
