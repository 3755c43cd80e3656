"""§8 adapter registry: the type picks the adapter, bad settings are found at definition
time, and AWS clients are created only when an adapter that needs one runs."""

from __future__ import annotations

from typing import Any

import pytest

from agentworks.crews.adapters.a2a_agent import A2aAdapter
from agentworks.crews.adapters.base import AdapterError, TurnRequest
from agentworks.crews.adapters.bedrock import BedrockAdapter
from agentworks.crews.adapters.cli import CliAdapter
from agentworks.crews.adapters.lambda_adapter import LambdaAdapter
from agentworks.crews.adapters.mailbox import MailboxAdapter
from agentworks.crews.adapters.registry import (
    ADAPTER_TYPES,
    AdapterClients,
    build_adapter,
    validate_adapter_settings,
)
from agentworks.crews.adapters.scripted import ScriptedAdapter

VALID: dict[str, dict[str, Any]] = {
    "scripted": {"type": "scripted", "rules": [{"default": "hi"}]},
    "bedrock": {"type": "bedrock", "model_id": "amazon.nova-lite-v1:0"},
    "lambda": {"type": "lambda", "function_name": "agentworks-agent-x"},
    "mailbox": {"type": "mailbox", "agent": "codex"},
    "cli": {"type": "cli", "command": "claude"},
    "a2a": {"type": "a2a", "card_url": "https://agents.example.com"},
}
EXPECTED = {
    "scripted": ScriptedAdapter,
    "bedrock": BedrockAdapter,
    "lambda": LambdaAdapter,
    "mailbox": MailboxAdapter,
    "cli": CliAdapter,
    "a2a": A2aAdapter,
}


class FakeBedrock:
    def __init__(self) -> None:
        self.calls = 0

    def converse(self, **_: Any) -> dict[str, Any]:
        self.calls += 1
        return {
            "output": {"message": {"role": "assistant", "content": [{"text": "hello"}]}},
            "stopReason": "end_turn",
            "usage": {"inputTokens": 1, "outputTokens": 1},
        }


def refusing_factory() -> Any:
    raise AssertionError("no client may be created for this adapter")


def test_s8_registry_knows_the_four_required_types_and_the_others():
    assert ADAPTER_TYPES == ("a2a", "bedrock", "cli", "lambda", "mailbox", "scripted")


@pytest.mark.parametrize("kind", sorted(VALID))
def test_s8_build_adapter_picks_the_type_without_creating_clients(kind):
    clients = AdapterClients(
        bedrock_runtime_factory=refusing_factory,
        lambda_factory=refusing_factory,
        secrets_factory=refusing_factory,
    )
    assert validate_adapter_settings(VALID[kind]) == []
    assert isinstance(build_adapter(VALID[kind], clients), EXPECTED[kind])


def test_s8_scripted_and_mailbox_turns_never_create_clients():
    clients = AdapterClients(
        bedrock_runtime_factory=refusing_factory, lambda_factory=refusing_factory
    )
    request = TurnRequest("c", "", {}, "message", "hello")
    assert build_adapter(VALID["scripted"], clients).run_turn(request).final_text == "hi"
    assert build_adapter(VALID["mailbox"], clients).run_turn(request).handoff is not None


def test_s8_clients_are_created_once_on_first_use():
    made: list[FakeBedrock] = []

    def factory() -> FakeBedrock:
        made.append(FakeBedrock())
        return made[-1]

    clients = AdapterClients(bedrock_runtime_factory=factory, lambda_factory=refusing_factory)
    adapter = build_adapter(VALID["bedrock"], clients)
    assert made == []
    request = TurnRequest("c", "", {}, "message", "hello")
    assert adapter.run_turn(request).final_text == "hello"
    assert adapter.run_turn(request).final_text == "hello"
    assert len(made) == 1 and made[0].calls == 2


def test_s8_unknown_type_lists_the_known_types():
    known = "known types: a2a, bedrock, cli, lambda, mailbox, scripted"
    problems = validate_adapter_settings({"type": "openai"})
    assert problems == [f"adapter type 'openai' is unknown; {known}"]
    with pytest.raises(AdapterError, match=known):
        build_adapter({"type": "openai"}, AdapterClients())
    assert "known types" in validate_adapter_settings({})[0]
    assert validate_adapter_settings("scripted") == ["adapter must be a mapping with a 'type'"]


def test_s8_every_problem_is_reported_at_once():
    problems = validate_adapter_settings({"type": "bedrock", "max_turns": 0, "modle_id": "x"})
    assert len(problems) == 3
    with pytest.raises(AdapterError, match=r"^invalid adapter settings: "):
        build_adapter({"type": "bedrock"}, AdapterClients())


def test_a_crew_is_told_only_of_the_types_a_crew_can_use():
    """`cli` runs workflow steps on a runner: a Crew's problems never offer it."""
    unknown = validate_adapter_settings({"type": "openai"}, for_crew=True)
    assert unknown == [
        "adapter type 'openai' is unknown; known types: a2a, bedrock, lambda, mailbox, scripted"
    ]
    runner = validate_adapter_settings({"type": "cli", "command": "claude"}, for_crew=True)
    assert runner == [
        "adapter type 'cli' runs workflow steps on a local runner; a Crew's calls need one of "
        "a2a, bedrock, lambda, mailbox, scripted (define the cli block as an adapter profile for "
        "workflow steps)"
    ]
    assert validate_adapter_settings({"type": "cli", "command": "claude"}) == []
