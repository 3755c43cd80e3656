"""`make mutate` reports a mutant that changes only a log line apart from the survivors
(tools/mutate/log_lines.py): one inside a logger call's arguments is; one beside it is not."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools" / "mutate"))

from log_lines import only_in_log_calls

ORIGINAL = """def deliver(config, outcome):
    logger.warning(
        "push to %s: %s",
        config.config_id,
        outcome.describe(),
    )
    if outcome.final:
        return False
    logger.info("again")
    return True
"""


def _mutated(old: str, new: str) -> str:
    assert old in ORIGINAL
    return ORIGINAL.replace(old, new, 1)


def test_a_change_inside_a_logger_calls_arguments_is_a_log_line_only() -> None:
    assert only_in_log_calls(ORIGINAL, _mutated("        config.config_id,", "        None,"))
    assert only_in_log_calls(ORIGINAL, _mutated('"push to %s: %s"', '"XXpush to %s: %sXX"'))
    assert only_in_log_calls(ORIGINAL, _mutated('logger.info("again")', "logger.info(None)"))


def test_a_change_of_what_the_function_does_is_not() -> None:
    assert not only_in_log_calls(ORIGINAL, _mutated("return False", "return True"))
    assert not only_in_log_calls(ORIGINAL, _mutated("if outcome.final:", "if not outcome.final:"))
    assert not only_in_log_calls(ORIGINAL, ORIGINAL)  # nothing changed: nothing to excuse


def test_a_call_on_another_object_is_no_log_line() -> None:
    original = "def f(metrics):\n    metrics.warning('x')\n"
    assert not only_in_log_calls(original, original.replace("'x'", "'y'"))
