"""§8 `scripted` adapter: rules, templates, F6 results and corrections, F7 questions."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentworks.crews.adapters.base import AdapterError, Handoff, TurnRequest, TurnResult
from agentworks.crews.adapters.scripted import ScriptedAdapter, validate
from agentworks.crews.adapters.scripted_template import TemplateContext, render

RULES: list[dict[str, Any]] = [
    {"when": r"clause (\d+)", "reply": "Clause {match.1} covers termination."},
    {"function": "summarize", "result": {"summary": "{args.text}", "meta": ["{args.n}"]}},
    {"function": "confirm", "ask": "Proceed with {args.action}?", "result": {"ok": "{answer}"}},
    {"function": "fix", "result": {"wrong": 1}, "result_on_correction": {"summary": "fixed"}},
    {"function": "explode", "fail": "cannot {args.action}"},
    {"function": "delegate", "handoff": {"agent": "codex", "message": "do {args.action}"}},
    {"function": "report", "reply": "wrote it", "files": {"out/{args.name}.md": "# {args.name}"}},
    {"function": "count", "result": {"count": "{args.n}", "label": "n={args.n}"}},
    {"default": "I can only discuss clauses."},
]


def scripted(rules: list[dict[str, Any]] | None = None, **extra: Any) -> ScriptedAdapter:
    settings: dict[str, Any] = {"type": "scripted", **extra}
    if rules is not None:
        settings["rules"] = rules
    return ScriptedAdapter(settings)


def message(prompt: str, **fields: Any) -> TurnRequest:
    return TurnRequest(
        crew_name="legal", instructions="", settings={}, kind="message", prompt=prompt, **fields
    )


def call(function: str, args: dict[str, Any] | None = None, **fields: Any) -> TurnRequest:
    return TurnRequest(
        crew_name="legal",
        instructions="",
        settings={},
        kind="function",
        prompt=f"Call {function}",
        function=function,
        args=args or {},
        **fields,
    )


def test_s8_message_rule_matches_case_insensitively_and_templates_groups():
    turn = scripted(RULES).run_turn(message("What does CLAUSE 12 say?"))
    assert turn.final_text == "Clause 12 covers termination."
    assert not turn.has_result and turn.question is None and turn.handoff is None


def test_s8_first_match_wins_and_default_catches_the_rest():
    rules = [{"when": "hello", "reply": "first"}, {"when": "hel+o", "reply": "second"}]
    adapter = scripted([*rules, {"default": "fallback"}])
    assert adapter.run_turn(message("hello there")).final_text == "first"
    assert adapter.run_turn(message("something else")).final_text == "fallback"


def test_s8_without_a_matching_rule_a_message_gets_empty_text_and_a_function_fails():
    adapter = scripted([{"when": "clause", "reply": "x"}])
    assert adapter.run_turn(message("weather?")).final_text == ""
    with pytest.raises(AdapterError, match="no rule for function lookup"):
        adapter.run_turn(call("lookup"))


def test_s8_when_rules_match_messages_only_unless_combined_with_function():
    adapter = scripted(
        [
            {"when": "Call", "reply": "message rule"},
            {"function": "grep", "when": r"pattern=(\w+)", "reply": "found {match.1}"},
        ]
    )
    with pytest.raises(AdapterError, match="no rule for function other"):
        adapter.run_turn(call("other"))  # `when` alone ignores function turns
    turn = adapter.run_turn(replace(call("grep"), prompt="grep pattern=abc"))
    assert turn.final_text == "found abc"
    with pytest.raises(AdapterError, match="no rule for function grep"):
        adapter.run_turn(replace(call("grep"), prompt="no match"))


def test_f6_function_result_templates_every_string_leaf_recursively():
    turn = scripted(RULES).run_turn(call("summarize", {"text": "short", "n": {"a": [1, 2]}}))
    assert turn.has_result
    assert turn.result == {"summary": "short", "meta": [{"a": [1, 2]}]}
    assert turn.final_text == ""


def test_f6_non_string_args_render_as_json_inside_text_and_keep_type_as_a_whole_leaf():
    turn = scripted(RULES).run_turn(call("count", {"n": 3}))
    assert turn.result == {"count": 3, "label": "n=3"}
    flags = scripted([{"function": "f", "reply": "{args.on} {args.items} {args.none}"}])
    reply = flags.run_turn(call("f", {"on": True, "items": ["a"], "none": None}))
    assert reply.final_text == 'true ["a"] null'


def test_s8_missing_template_keys_render_empty_and_never_crash():
    adapter = scripted([{"default": "[{args.nope}] [{match.3}] [{answer}] [{unknown.key}]"}])
    assert adapter.run_turn(message("hi")).final_text == "[] [] [] []"
    missing_leaf = scripted([{"function": "f", "result": {"v": "{args.absent}"}}])
    assert missing_leaf.run_turn(call("f")).result == {"v": ""}


def test_s8_double_braces_are_literal():
    adapter = scripted([{"default": '{{"json": "{prompt}"}}'}])
    assert adapter.run_turn(message("x")).final_text == '{"json": "x"}'


def test_f7_ask_raises_a_question_then_the_answer_completes_the_call():
    adapter = scripted(RULES)
    first = adapter.run_turn(call("confirm", {"action": "deploy"}))
    assert first.question == "Proceed with deploy?"
    assert first.final_text is None and not first.has_result
    second = adapter.run_turn(call("confirm", {"action": "deploy"}, answer="yes"))
    assert second.question is None
    assert second.has_result and second.result == {"ok": "yes"}


def test_f6_result_on_correction_is_used_only_on_the_correction_turn():
    adapter = scripted(RULES)
    assert adapter.run_turn(call("fix")).result == {"wrong": 1}
    corrected = adapter.run_turn(call("fix", correction="'summary' is a required property"))
    assert corrected.result == {"summary": "fixed"}


def test_s8_fail_rule_raises_adapter_error_with_the_templated_message():
    with pytest.raises(AdapterError, match=r"^cannot launch$"):
        scripted(RULES).run_turn(call("explode", {"action": "launch"}))


def test_s8_handoff_rule_returns_a_handoff():
    turn = scripted(RULES).run_turn(call("delegate", {"action": "review"}))
    assert turn.handoff == Handoff("codex", "do review")
    assert turn.final_text is None


def test_f6_files_are_templated_text_files_and_reply_sets_final_text():
    turn = scripted(RULES).run_turn(call("report", {"name": "q3"}))
    assert turn.final_text == "wrote it" and not turn.has_result
    assert turn.files == {"out/q3.md": b"# q3"}


def echo_entrypoint(request: TurnRequest) -> Any:
    """Entrypoint used by the tests below (referenced by its import path)."""
    if request.prompt == "text":
        return "plain"
    if request.prompt == "dict":
        return {"echo": request.args}
    if request.prompt == "turn":
        return TurnResult(question="why?")
    if request.prompt == "boom":
        raise ValueError("bad input")
    return 42


ENTRY = "tests.unit.test_adapter_scripted:echo_entrypoint"


def test_s8_entrypoint_returns_text_result_or_turn_result():
    adapter = scripted(entrypoint=ENTRY)
    assert adapter.run_turn(message("text")).final_text == "plain"
    as_result = adapter.run_turn(replace(call("f", {"a": 1}), prompt="dict"))
    assert as_result.has_result and as_result.result == {"echo": {"a": 1}}
    assert adapter.run_turn(message("turn")).question == "why?"


def test_s8_entrypoint_failures_become_adapter_errors():
    adapter = scripted(entrypoint=ENTRY)
    with pytest.raises(AdapterError, match="raised ValueError: bad input"):
        adapter.run_turn(message("boom"))
    with pytest.raises(AdapterError, match="returned int"):
        adapter.run_turn(message("other"))
    with pytest.raises(AdapterError, match="cannot load entrypoint"):
        scripted(entrypoint="tests.unit.no_such_module:f").run_turn(message("x"))


def test_s8_rules_come_before_the_entrypoint():
    adapter = scripted([{"when": "^text$", "reply": "rule"}], entrypoint=ENTRY)
    assert adapter.run_turn(message("text")).final_text == "rule"
    assert adapter.run_turn(message("dict")).result == {"echo": None}


@pytest.mark.parametrize(
    ("settings", "problem"),
    [
        ({"type": "scripted"}, "needs 'rules', an 'entrypoint', or both"),
        ({"type": "scripted", "rules": {}}, "'rules' must be a list"),
        ({"type": "scripted", "rules": [{"when": "("}]}, "not a valid regex"),
        ({"type": "scripted", "rules": [{"when": "x"}]}, "needs an action"),
        ({"type": "scripted", "rules": [{"reply": "x"}]}, "needs 'when'"),
        ({"type": "scripted", "rules": [{"default": "x", "when": "y"}]}, "cannot be combined"),
        ({"type": "scripted", "rules": [{"default": 3}]}, "'default' must be the reply text"),
        ({"type": "scripted", "rules": [{"when": "x", "replay": "y"}]}, "unknown setting 'replay'"),
        ({"type": "scripted", "rules": [{"function": "f", "files": ["a"]}]}, "'files' must map"),
        ({"type": "scripted", "rules": [{"function": "f", "handoff": "bob"}]}, "'handoff' must"),
        ({"type": "scripted", "entrypoint": "no-colon"}, "'entrypoint' must look like"),
        ({"type": "scripted", "rules": [], "model": "x"}, "unknown setting 'model'"),
    ],
)
def test_s8_invalid_scripted_settings_are_reported_and_refused(settings, problem):
    problems = validate(settings)
    assert any(problem in text for text in problems), problems
    with pytest.raises(AdapterError) as refused:
        ScriptedAdapter(settings)
    assert problem in str(refused.value)


def test_s8_valid_scripted_settings_have_no_problems():
    assert validate({"type": "scripted", "rules": RULES}) == []
    assert validate({"type": "scripted", "entrypoint": ENTRY}) == []


@given(st.text(max_size=60), st.dictionaries(st.text(max_size=5), st.integers(), max_size=3))
def test_s8_rendering_never_raises(template, args):
    assert isinstance(render(template, TemplateContext(prompt="p", args=args)), str)


def test_history_renders_the_sessions_earlier_turns_oldest_first() -> None:
    """Issue 8: `{history}` in a reply is the session's earlier turns, a `role: text` line
    each, oldest first (empty on a session's first turn)."""
    adapter = scripted([{"default": "Done. Before this I said: {history}"}])
    earlier = (
        {"role": "user", "content": "Review auth.ts"},
        {"role": "assistant", "content": "Found 2 bugs in auth.ts."},
    )
    later = adapter.run_turn(message("Now fix what you found.", history=earlier))
    assert later.final_text == (
        "Done. Before this I said: user: Review auth.ts\nassistant: Found 2 bugs in auth.ts."
    )
    assert adapter.run_turn(message("first")).final_text == "Done. Before this I said: "


def test_fail_action_ends_the_turn_with_the_sessions_error() -> None:
    adapter = scripted([{"when": "fail", "fail": "could not finish {prompt}"}])
    with pytest.raises(AdapterError, match="could not finish please fail"):
        adapter.run_turn(message("please fail"))


class _Functions:
    """A FunctionAccess that answers with a given status and keeps what was called."""

    def __init__(self, status: dict) -> None:
        self.status_, self.calls = status, []

    def list(self, target: str) -> dict:
        return {"target": target, "functions": []}

    def call_and_wait(self, target: str, function: str, args: dict) -> dict:
        self.calls.append((target, function, args))
        return self.status_

    def status(self, call_id: str) -> dict:
        return self.status_


def test_w10_a_call_rule_calls_as_the_step_and_renders_the_outcome() -> None:
    adapter = ScriptedAdapter({"type": "scripted", "rules": [{
        "when": "sum (.+)",
        "call": {"target": "crew:c", "function": "summarize", "args": {"text": "{match.1}"}},
        "reply": "got {call.result.summary} from {call.call_id}",
    }]})  # fmt: skip
    request = TurnRequest(crew_name="workflow:w", instructions="", settings={}, kind="message",
                          prompt="sum the lease")  # fmt: skip
    with pytest.raises(AdapterError, match="only a workflow step's session"):
        adapter.run_turn(request)
    done = _Functions({"call_id": "call_1", "state": "succeeded", "result": {"summary": "ok"}})
    result = adapter.run_turn(replace(request, functions=done))
    assert result.final_text == "got ok from call_1"
    assert done.calls == [("crew:c", "summarize", {"text": "the lease"})]
    failed = _Functions({"call_id": "call_2", "state": "failed", "errors": ["boom"]})
    with pytest.raises(AdapterError, match="call_2 did not succeed: boom"):
        adapter.run_turn(replace(request, functions=failed))
