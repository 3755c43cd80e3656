"""§8 `mailbox` adapter: every turn is handed to a named external agent as a message."""

from __future__ import annotations

import json

import pytest

from agentworks import limits
from agentworks.crews.adapters.base import AdapterError, Handoff, TurnRequest, TurnResult
from agentworks.crews.adapters.mailbox import MailboxAdapter, validate

SCHEMA = {"type": "object", "required": ["verdict"], "properties": {"verdict": {"type": "string"}}}


def handed(turn: TurnResult) -> Handoff:
    assert turn.handoff is not None
    return turn.handoff


def call(**fields):
    return TurnRequest(
        crew_name="legal",
        instructions="Review contracts carefully.",
        settings={},
        kind="function",
        prompt=(
            "Run the function 'review'.\n"
            "Description: Check a contract\nfor risky clauses.\n"
            'Arguments (JSON): {"contract": "lease.pdf", "pages": [1, 2]}'
        ),
        function="review",
        args={"contract": "lease.pdf", "pages": [1, 2]},
        **fields,
    )


def test_s8_function_turn_hands_the_call_to_the_agent_with_everything_it_needs():
    turn = MailboxAdapter({"type": "mailbox", "agent": "Codex"}).run_turn(
        call(output_schema=SCHEMA)
    )
    assert turn.handoff is not None and turn.handoff.agent_name == "codex"
    assert turn.final_text is None and turn.question is None
    text = turn.handoff.message
    assert "`review`" in text and "`legal`" in text
    assert "Check a contract\nfor risky clauses." in text
    assert text.count("lease.pdf") == 1  # the prompt's own argument line is not repeated
    assert "Review contracts carefully." in text
    assert json.dumps({"contract": "lease.pdf", "pages": [1, 2]}, indent=2, sort_keys=True) in text
    assert '"required": [\n    "verdict"\n  ]' in text and "JSON value" in text


def test_s8_without_an_output_schema_the_agent_replies_with_text():
    text = handed(MailboxAdapter({"type": "mailbox", "agent": "codex"}).run_turn(call())).message
    assert "your answer as text" in text and "JSON Schema" not in text


def test_f6_f7_answer_and_correction_are_passed_on():
    turn = MailboxAdapter({"type": "mailbox", "agent": "codex"}).run_turn(
        call(answer="Use the 2024 version.", correction="'verdict' is a required property")
    )
    assert "Use the 2024 version." in handed(turn).message
    assert "'verdict' is a required property" in handed(turn).message


def test_s8_message_turn_hands_over_the_prompt_itself():
    request = TurnRequest("legal", "ignored here", {}, "message", "Can you look at clause 4?")
    turn = MailboxAdapter({"type": "mailbox", "agent": "reviewer"}).run_turn(request)
    assert handed(turn) == Handoff("reviewer", "Can you look at clause 4?")


@pytest.mark.parametrize(
    ("settings", "problem"),
    [
        ({}, "'agent' is required"),
        ({"agent": "-bad name"}, "'agent' must be an agent name"),
        ({"agent": "a" * (limits.AGENT_NAME_MAX_CHARS + 1)}, "'agent' must be an agent name"),
        ({"agent": "ok", "queue": "x"}, "unknown setting 'queue'"),
    ],
)
def test_s8_invalid_mailbox_settings_are_reported_and_refused(settings, problem):
    problems = validate({"type": "mailbox", **settings})
    assert any(problem in text for text in problems), problems
    with pytest.raises(AdapterError, match=problem):
        MailboxAdapter({"type": "mailbox", **settings})
