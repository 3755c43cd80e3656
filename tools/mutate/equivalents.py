"""Which surviving mutants are equivalent — edits no test can notice because the program
behaves exactly as the original — and why. They are counted apart from the survivors.

Three kinds: a change of letter case in a module that speaks only to SQLite (the bridge
journal: SQLite ignores it outside string literals); a change of case of DynamoDB
expression keywords (`AND` → `and`); and single edits listed in `explained.py`, each with
the reason it cannot be seen.
"""

from __future__ import annotations

import re

from explained import CLI, EXPLAINED, LAYER


def why_equivalent(module: str, diff: str) -> str | None:
    """Why the mutant behind `diff` of `module` is equivalent ("" for a letter-case edit
    SQLite ignores); None when it is not known to be."""
    if module.startswith(CLI + "/bridge/") and _sqlite_case_only(diff):
        return ""
    if module.startswith(LAYER + "/") and _dynamodb_keyword_case_only(diff):
        return "DynamoDB expression keywords ignore case"
    return _explained(module, diff)


def _explained(module: str, diff: str) -> str | None:
    added = [line[1:].strip() for line in diff.splitlines() if line.startswith("+")]
    for where, line, why in EXPLAINED:
        if module == where and added == [line.strip()]:
            return why
    return None


SQL_LITERAL = re.compile(r"'[^']*'")
# Keywords of DynamoDB's condition and update expressions, which it reads in any case.
DYNAMODB_KEYWORDS = {"AND", "OR", "NOT", "BETWEEN", "IN", "SET", "ADD", "REMOVE", "DELETE"}
WORD = re.compile(r"\w+")


def _dynamodb_keyword_case_only(diff: str) -> bool:
    """A mutant that changes only the letter case of expression keywords (`AND` → `and`,
    `SET` → `set`): DynamoDB parses both alike, so it behaves as the original."""
    pairs = _changed_lines(diff)
    if not pairs:
        return False
    for old, new in pairs:
        old_words, new_words = WORD.findall(old), WORD.findall(new)
        if len(old_words) != len(new_words) or old.lower() != new.lower():
            return False
        changed = [(a, b) for a, b in zip(old_words, new_words, strict=True) if a != b]
        if not changed or any(a.upper() not in DYNAMODB_KEYWORDS for a, _ in changed):
            return False
    return True


def _sqlite_case_only(diff: str) -> bool:
    """A change of letter case alone, outside SQL string literals, in a module that speaks
    only to SQLite: its keywords, table and column names and `sqlite3.Row` keys all ignore
    case, so such a mutant behaves exactly as the original (an equivalent mutant)."""
    pairs = _changed_lines(diff)
    return bool(pairs) and all(
        old != new
        and old.lower() == new.lower()
        and SQL_LITERAL.findall(old) == SQL_LITERAL.findall(new)
        for old, new in pairs
    )


def _changed_lines(diff: str) -> list[tuple[str, str]]:
    """The diff's removed and added lines side by side; none when they do not pair up."""
    removed = [line[1:] for line in diff.splitlines() if line.startswith("-")]
    added = [line[1:] for line in diff.splitlines() if line.startswith("+")]
    return list(zip(removed, added, strict=True)) if len(removed) == len(added) else []
