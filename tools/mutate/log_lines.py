"""Mutants that change nothing but a log line: its words, its arguments, its `extra`.

A log line is read by the operator, never by a rule: what it reports is held by the
states, answers and metrics the tests read. Such a mutant is reported apart (with this
reason), neither as a kill nor as a survivor; docs/benchmarks.md counts them in their own
column so they stay visible.
"""

from __future__ import annotations

import ast
import difflib

LEVELS = {"debug", "info", "warning", "error", "exception", "critical"}


def only_in_log_calls(original: str, mutant: str) -> bool:
    """Whether every line the mutant changed lies inside a `logger.<level>(…)` call of
    the original function (`original` and `mutant` are the function's source, unindented)."""
    changed = _changed_lines(original.splitlines(), mutant.splitlines())
    if not changed:
        return False
    try:
        tree = ast.parse(original)
    except SyntaxError:
        return False
    spans = [
        (node.lineno, node.end_lineno or node.lineno)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "logger"
        and node.func.attr in LEVELS
    ]
    return all(any(first <= line <= last for first, last in spans) for line in changed)


def _changed_lines(original: list[str], mutant: list[str]) -> set[int]:
    """The original's line numbers (from 1) that the mutant replaced or removed; a pure
    insertion counts the line it was inserted before."""
    changed: set[int] = set()
    matcher = difflib.SequenceMatcher(a=original, b=mutant, autojunk=False)
    for tag, first, last, _, _ in matcher.get_opcodes():
        if tag in {"replace", "delete"}:
            changed.update(range(first + 1, last + 1))
        elif tag == "insert":
            changed.add(first + 1)
    return changed
