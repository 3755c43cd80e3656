"""Every bound in `agentworks.limits` is named by a test (issue 26): a limit no test names is
a limit nothing holds, and a change to it (or to the rule that applies it) breaks nothing.

A test names a limit as `limits.NAME` (or patches it: `setattr(limits, "NAME", …)`), or as
`NAME` in a file that imports it from `agentworks.limits`. The few constants that are not a
rule a test could hold are listed below, each with its reason.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from agentworks import limits

ROOT = Path(__file__).resolve().parents[2]
LIMITS_SOURCE = ROOT / "layers" / "agentworks" / "agentworks" / "limits.py"
TESTS = ROOT / "tests"

# Constants that are not a bound a request, a page or a tick can meet.
NOT_A_RULE = {
    "USAGE_ACCOUNT_CACHE": "the size of an in-memory lookup cache: no answer changes with it",
    "RUN_ACCOUNTS_REMEMBERED": "the size of an in-memory lookup cache: no notice changes with it",
}

# Limits no test holds yet. Each is a gap, not an exemption: a test that names one makes
# this test fail until the entry is removed, so the list only shrinks. (Empty: every
# limit is held. A new limit goes here only with the reason no test can hold it yet.)
NOT_YET_HELD: dict[str, str] = {}


def _limit_names() -> list[str]:
    tree = ast.parse(LIMITS_SOURCE.read_text())
    return [
        target.id
        for node in tree.body
        if isinstance(node, ast.Assign | ast.AnnAssign)
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name) and target.id.isupper()
    ]


def _named_in(text: str) -> set[str]:
    names = set(re.findall(r"\blimits\.([A-Z][A-Z0-9_]*)\b", text))
    names |= set(re.findall(r"setattr\(\s*limits\s*,\s*[\"']([A-Z][A-Z0-9_]*)[\"']", text))
    for block in re.findall(r"from agentworks\.limits import\s*(\([^)]*\)|[^\n]*)", text):
        names |= set(re.findall(r"\b([A-Z][A-Z0-9_]*)\b", block))
    return names


def _named_by_tests() -> set[str]:
    named: set[str] = set()
    for path in TESTS.rglob("*.py"):
        if path.resolve() != Path(__file__).resolve():
            named |= _named_in(path.read_text())
    return named


def test_the_parser_reads_every_limit_the_module_defines():
    names = _limit_names()
    assert len(names) == len(set(names))
    assert set(names) == {n for n in vars(limits) if n.isupper()}


def test_a_test_names_a_limit_as_an_attribute_or_an_import():
    assert _named_in("x = limits.PAGE_MAX + 1") == {"PAGE_MAX"}
    assert _named_in(
        "from agentworks.limits import (\n    PAGE_MAX,\n    WAIT_MAX_SECONDS,\n)"
    ) == {
        "PAGE_MAX",
        "WAIT_MAX_SECONDS",
    }
    assert _named_in("from agentworks.limits import PAGE_MAX") == {"PAGE_MAX"}
    assert _named_in('monkeypatch.setattr(limits, "PAGE_MAX", 3)') == {"PAGE_MAX"}
    # A bare word in a file that does not import it from limits is not a mention.
    assert _named_in("PAGE_MAX = 3\nassert PAGE_MAX") == set()


def test_every_limit_is_named_by_a_test():
    named = _named_by_tests()
    unheld = [
        n
        for n in _limit_names()
        if n not in named and n not in NOT_A_RULE and n not in NOT_YET_HELD
    ]
    assert not unheld, f"limits no test names (add a test at and past each bound): {unheld}"


def test_the_exemption_lists_are_current():
    names = set(_limit_names())
    assert not (set(NOT_A_RULE) | set(NOT_YET_HELD)) - names, "exempt names that are no limit"
    held_now = set(NOT_YET_HELD) & _named_by_tests()
    assert not held_now, f"now held by a test: remove from NOT_YET_HELD: {sorted(held_now)}"
    exempt_but_named = set(NOT_A_RULE) & _named_by_tests()
    assert not exempt_but_named, f"a test names these: remove from NOT_A_RULE: {exempt_but_named}"
