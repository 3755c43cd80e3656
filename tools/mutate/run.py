"""`make mutate`: mutation testing of the rules that matter, with mutmut.

mutmut names a mutant by its file's path (`src/` stripped) and must find the tests importing
the same dotted name, so each group runs in a staging folder of its own (`.mutate/<group>`)
where the layer, the CLI and the local AWS sit under `src/` and everything the tests read
(the template, the state machines, the handlers) is copied beside them.
The repository is never touched.

Each group mutates a few modules and runs only the test files that drive them: mutmut runs
that selection twice up front (to learn which tests reach which function), then, per
mutant, only the tests that reached the mutated function, fastest first, stopping at the
first failure.

    python tools/mutate/run.py                  # every group, then the report
    python tools/mutate/run.py --group identity # one group
    python tools/mutate/run.py --report         # the report of the last runs only
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

from mutmut.stats import status_by_exit_code

ROOT = Path(__file__).resolve().parents[2]
STAGING = ROOT / ".mutate"
REPORT = STAGING / "report.json"
# What the tests read from beside the code: handlers, the template, the state machines,
# and the layer's own sources (tests that scan them). Copied into each run by mutmut.
ALSO_COPY = [
    "functions",
    "statemachines",
    "template.yaml",
    "layers",
    "events",
    "skills",
    "examples",
]
LAYER = "src/agentworks"
CLI = "src/agentworks_cli"
LOCAL = "src/agentworks_local"


@dataclass(frozen=True)
class Group:
    name: str
    modules: tuple[str, ...]  # files under src/, as mutmut sees them
    tests: tuple[str, ...]  # the test files that drive them
    # mutmut leaves decorated functions alone; these decorators are dropped from the staged
    # copy so the functions under them are mutated too (only ones the tests do not need).
    undecorate: tuple[str, ...] = ()


GROUPS = (
    Group(
        "messaging",
        modules=(
            f"{LAYER}/messaging/service.py",
            f"{LAYER}/messaging/message_page_store.py",
            f"{LAYER}/messaging/submissions.py",
            f"{LAYER}/messaging/submission_store.py",
            f"{LAYER}/messaging/access.py",
        ),
        tests=(
            "tests/integration/test_http_messages.py",
            "tests/integration/test_message_access.py",
            "tests/integration/test_message_chain.py",
            "tests/integration/test_message_concurrency.py",
            "tests/integration/test_message_limits.py",
            "tests/integration/test_stale_head.py",
            "tests/integration/test_conversation_requests.py",
            "tests/integration/test_stepping_in.py",
            "tests/integration/test_crew_messages.py",
            "tests/integration/test_crew_views.py",
            "tests/integration/test_crew_ask_back.py",
            "tests/integration/test_mailbox_adapter.py",
            "tests/integration/test_store_reads.py",
            "tests/unit/test_domain_rules.py",
        ),
    ),
    Group(
        "identity",
        modules=(
            f"{LAYER}/identity/service.py",
            f"{LAYER}/identity/bearer.py",
            f"{LAYER}/authentication.py",
            f"{LAYER}/identity/tokens.py",
        ),
        tests=(
            "tests/integration/test_authorization_matrix.py",
            "tests/integration/test_narrowed_principals.py",
            "tests/integration/test_child_connections.py",
            "tests/integration/test_connection_bounds.py",
            "tests/integration/test_identity_rules.py",
            "tests/integration/test_identity_service_rules.py",
            "tests/integration/test_web_inbox.py",
            "tests/unit/test_domain_rules.py",
        ),
    ),
    Group(
        "crew_calls",
        modules=(
            f"{LAYER}/crews/calls.py",
            f"{LAYER}/crews/call_bounds.py",
        ),
        tests=(
            "tests/integration/test_function_calls.py",
            "tests/integration/test_function_rules.py",
            "tests/integration/test_call_list.py",
            "tests/integration/test_crew_limits.py",
            "tests/integration/test_restart_calls.py",
            "tests/integration/test_call_reconciliation.py",
            "tests/integration/test_mailbox_adapter.py",
            "tests/integration/test_workflow_functions.py",
            "tests/integration/test_operation_metrics.py",
            "tests/integration/test_call_rules.py",
            "tests/unit/test_call_bounds.py",
        ),
    ),
    Group(
        "relay_runs",
        modules=(f"{LAYER}/relays/run_store.py",),
        tests=(
            "tests/integration/test_relay_runs.py",
            "tests/integration/test_relay_steps.py",
            "tests/integration/test_relay_step_limit.py",
            "tests/integration/test_relay_write_faults.py",
            "tests/integration/test_relay_item_sizes.py",
            "tests/integration/test_relay_run_rules.py",
            "tests/integration/test_store_reads.py",
            "tests/integration/test_relay_reconcile.py",
        ),
    ),
    Group(
        "bridge_journal",
        modules=(f"{CLI}/bridge/journal.py", f"{CLI}/bridge/outbox.py"),
        tests=("tests/unit/test_bridge_journal.py", "tests/unit/test_bridge_journal_rules.py"),
        # One lock around each call, for the daemon's threads; the tests here use one thread.
        undecorate=("@locked",),
    ),
    Group(
        "workflow_engine",
        modules=(f"{LAYER}/workflows/engine.py",),
        tests=(
            "tests/integration/test_workflow_engine_steps.py",
            "tests/integration/test_workflow_runs.py",
            "tests/integration/test_workflow_rules.py",
            "tests/integration/test_workflow_pipelines.py",
            "tests/integration/test_workflow_waits.py",
            "tests/integration/test_workflow_policies.py",
            "tests/integration/test_workflow_plans.py",
            "tests/integration/test_workflow_crew_steps.py",
            "tests/integration/test_runner_steps.py",
        ),
    ),
)


def stage(group: Group) -> Path:
    """The group's staging folder, refreshed from the repository (mutmut keeps its results
    in `mutants/` and reuses those whose function did not change)."""
    folder = STAGING / group.name
    folder.mkdir(parents=True, exist_ok=True)
    for source, target in (
        (ROOT / "layers/agentworks/agentworks", folder / LAYER),
        (ROOT / "cli/agentworks_cli", folder / CLI),
        (ROOT / "localstack/agentworks_local", folder / LOCAL),
        (ROOT / "tests", folder / "tests"),
        *((ROOT / name, folder / name) for name in ALSO_COPY),
    ):
        _mirror(source, target)
    for module in group.modules if group.undecorate else ():
        source = folder / module
        kept = [
            line
            for line in source.read_text().splitlines(keepends=True)
            if line.strip() not in group.undecorate
        ]
        source.write_text("".join(kept))
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    pytest_options = pyproject["tool"]["pytest"]["ini_options"]
    (folder / "pyproject.toml").write_text(_toml(group, pytest_options))
    return folder


def _mirror(source: Path, target: Path) -> None:
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    elif target.exists():
        target.unlink()
    if source.is_dir():
        shutil.copytree(
            source, target, ignore=shutil.ignore_patterns("__pycache__", "node_modules")
        )
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)


def _toml(group: Group, pytest_options: dict[str, object]) -> str:
    def value(item: object) -> str:
        return json.dumps(item)

    lines = ["[tool.mutmut]", 'source_paths = ["src"]']
    lines.append(f"only_mutate = {value(list(group.modules))}")
    lines.append(f"also_copy = {value(ALSO_COPY)}")
    lines.append(f"pytest_add_cli_args_test_selection = {value(list(group.tests))}")
    # No parallel pytest inside a mutant's run (mutmut runs mutants side by side) and no
    # cache writes from a hundred forks.
    lines.append(f"pytest_add_cli_args = {value(['-p', 'no:xdist', '-p', 'no:cacheprovider'])}")
    lines.append("")
    lines.append("[tool.pytest.ini_options]")
    for key, item in pytest_options.items():
        lines.append(f"{key} = {value(item)}")
    return "\n".join(lines) + "\n"


def run_group(group: Group, max_children: int, minutes: float | None) -> None:
    folder = stage(group)
    print(f"\n== {group.name}: {len(group.modules)} modules, {len(group.tests)} test files")
    started = time.monotonic()
    deadline = started + minutes * 60 if minutes else None
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    # mutmut keeps a verdict until the mutated function changes, so a survivor would stay
    # one after a new test kills it: the survivors of the last run are tried again first.
    again = _survivors(group)
    for names in ([again] if again else []) + [[]]:
        command = [sys.executable, "-m", "mutmut", "run", "--max-children", str(max_children)]
        left = deadline - time.monotonic() if deadline else None
        if left is not None and left <= 0:
            break
        # Its own process group: on the deadline mutmut and the forks it runs stop together.
        process = subprocess.Popen([*command, *names], cwd=folder, env=env, start_new_session=True)
        try:
            process.wait(timeout=left)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGINT)  # mutmut saves what it has on an interrupt
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
            print(f"\n   {group.name}: stopped at its {minutes:g}-minute budget; the rest pending")
    print(f"   {group.name} took {time.monotonic() - started:.0f} s")


def _survivors(group: Group) -> list[str]:
    names = []
    for module in group.modules:
        meta = STAGING / group.name / "mutants" / f"{module}.meta"
        if meta.exists():
            codes = json.loads(meta.read_text())["exit_code_by_key"]
            names += [k for k, c in codes.items() if status_by_exit_code[c] in LEFT]
    return names


# A mutant counts as killed when a test failed, the run broke or it ran out of time.
KILLED = {"killed", "timeout", "caught by type check"}


def results(group: Group) -> dict[str, dict[str, object]]:
    """Per module: killed, equivalent, and the survivors with their diffs."""
    folder = STAGING / group.name
    by_module: dict[str, dict[str, object]] = {}
    for module in group.modules:
        meta = folder / "mutants" / f"{module}.meta"
        if not meta.exists():
            continue
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        status = {name: status_by_exit_code[code] for name, code in codes.items()}
        killed = [k for k, s in status.items() if s in KILLED]
        timeouts = [k for k, s in status.items() if s == "timeout"]
        pending = [k for k, s in status.items() if s == "not checked"]
        equivalent: dict[str, str] = {}
        survivors: dict[str, str] = {}
        for name in sorted(k for k, s in status.items() if s in LEFT):
            diff = _diff(folder, module, name)
            if module.startswith(CLI + "/bridge/") and _sqlite_case_only(diff):
                equivalent[name] = diff
            elif module.startswith(LAYER + "/") and _dynamodb_keyword_case_only(diff):
                equivalent[name] = f"{diff}\n# DynamoDB expression keywords ignore case"
            elif why := _explained(module, diff):
                equivalent[name] = f"{diff}\n# {why}"
            else:
                survivors[name] = f"[{status[name]}]\n{diff}"
        total = len(killed) + len(equivalent) + len(survivors)
        tested = total - len(equivalent)
        by_module[module.removeprefix("src/")] = {
            "mutants": total,
            "killed": len(killed),
            "of_which_timeouts": len(timeouts),
            "equivalent": equivalent,
            "survivors": survivors,
            "pending": len(pending),
            "score": round(100 * len(killed) / tested, 1) if tested else None,
        }
    return by_module


LEFT = {"survived", "suspicious", "no tests"}

# Survivors that behave exactly as the original, each with the reason: (module, the mutated
# line as mutmut writes it, why no test can tell them apart). Matched by text, not by
# mutant number, so an edit elsewhere in the module keeps the explanation attached.
EXPLAINED = (
    (
        f"{LAYER}/messaging/message_page_store.py",
        '":first": keys.message(conversation, max(1, seq - 3 * limit))["sk"],',
        "the window read before a request: a wider one reads more and answers the same "
        "newest `limit` notes",
    ),
    (
        f"{LAYER}/messaging/message_page_store.py",
        '":before": keys.message(None, max(1, seq - 1))["sk"],',
        "a message's sort key is its seq alone (the conversation is in the partition key)",
    ),
    (
        f"{LAYER}/messaging/message_page_store.py",
        '":first": keys.message(None, max(1, seq - 2 * limit))["sk"],',
        "a message's sort key is its seq alone (the conversation is in the partition key)",
    ),
    (
        f"{LAYER}/messaging/submissions.py",
        "payload = json.dumps([destination, sender, body], ensure_ascii=None).encode()",
        "any one encoding hashes the same send alike (bindings last a day; the encoding "
        "does not change under a live binding)",
    ),
    (
        f"{LAYER}/messaging/submissions.py",
        "payload = json.dumps([destination, sender, body], ).encode()",
        "any one encoding hashes the same send alike (bindings last a day; the encoding "
        "does not change under a live binding)",
    ),
    (
        f"{LAYER}/messaging/submissions.py",
        "payload = json.dumps([destination, sender, body], ensure_ascii=True).encode()",
        "any one encoding hashes the same send alike (bindings last a day; the encoding "
        "does not change under a live binding)",
    ),
    (
        f"{LAYER}/messaging/message_page_store.py",
        '"Limit": 3 * limit,',
        "the page size of a filtered query: a larger page reads more per request and "
        "answers the same records (the loop reads on until it has `limit`)",
    ),
    (
        f"{LAYER}/messaging/message_page_store.py",
        "while len(records) <= limit:",
        "one page more when exactly `limit` were found, cut back to `limit`: the same answer",
    ),
    (
        f"{LAYER}/messaging/service.py",
        "digest = content_hash(inbox.inbox_id, None, hashed_body(body, framing))",
        "the inbox id names the party whose address this is: the digest binds it already",
    ),
    (
        f"{LAYER}/workflows/engine.py",
        'if self.step(run_id, at) == "XXdoneXX":',
        "a step that answers done has saved a terminal record (or has none to save): the "
        "check that follows finds it terminal and does nothing either way",
    ),
    (
        f"{LAYER}/workflows/engine.py",
        'if self.step(run_id, at) == "DONE":',
        "a step that answers done has saved a terminal record (see the line above)",
    ),
    (
        f"{LAYER}/workflows/engine.py",
        "if found is not None or not found[0].terminal:",
        "the step was just run, so its record exists: `or` and `and` read the same record",
    ),
    (
        f"{LAYER}/workflows/engine.py",
        'outcome = self._runner.outcome(context.run.account_id, context.record.job_id or "XXXX")',
        "reached only when the step holds a job id (`_run_turns` checks it first)",
    ),
    (
        f"{LAYER}/relays/run_store.py",
        'start: dict[str, Any] | None = ""',
        "the first page is asked for when `start` is falsy: None and an empty string alike",
    ),
    (
        f"{LAYER}/messaging/submission_store.py",
        'sender=data["pk"].split("#", )[2],',
        "a binding's key is SUB#<account>#<sender>: neither an account id nor a sender "
        "address can hold '#', so every split of it reads the same two parts",
    ),
    (
        f"{LAYER}/messaging/submission_store.py",
        'sender=data["pk"].rsplit("#", 2)[2],',
        "a binding's key is SUB#<account>#<sender>: neither an account id nor a sender "
        "address can hold '#', so every split of it reads the same two parts",
    ),
    (
        f"{LAYER}/messaging/submission_store.py",
        'sender=data["pk"].split("#", 3)[2],',
        "a binding's key is SUB#<account>#<sender>: neither an account id nor a sender "
        "address can hold '#', so every split of it reads the same two parts",
    ),
    (
        f"{LAYER}/messaging/submission_store.py",
        'account_id=data["pk"].split("#", )[1],',
        "a binding's key is SUB#<account>#<sender>: neither an account id nor a sender "
        "address can hold '#', so every split of it reads the same two parts",
    ),
    (
        f"{LAYER}/messaging/submission_store.py",
        'account_id=data["pk"].rsplit("#", 2)[1],',
        "a binding's key is SUB#<account>#<sender>: neither an account id nor a sender "
        "address can hold '#', so every split of it reads the same two parts",
    ),
    (
        f"{LAYER}/messaging/submission_store.py",
        'account_id=data["pk"].split("#", 3)[1],',
        "a binding's key is SUB#<account>#<sender>: neither an account id nor a sender "
        "address can hold '#', so every split of it reads the same two parts",
    ),
    (
        f"{LAYER}/messaging/submissions.py",
        'created_at=iso(binding.created_at) or "XXXX",',
        "a binding is replayed only once it names its message, and complete_binding writes "
        "the message's time with it: created_at is never missing there",
    ),
    (
        f"{LAYER}/relays/run_store.py",
        '"Key": to_item({"pk": f"RRUN#{run_id}", "sk": "XXSTEPSXX"}),',
        "the step count's key is built here alone, for every write and read of the count, "
        "so any fixed key counts alike",
    ),
    (
        f"{LAYER}/relays/run_store.py",
        '"Key": to_item({"pk": f"RRUN#{run_id}", "sk": "steps"}),',
        "the step count's key is built here alone, so any fixed key counts alike",
    ),
    (
        f"{LAYER}/relays/run_store.py",
        '"XXcountXX": self._counted(run_id, -1),',
        "a transaction item's label names it in a cancellation; forgetting never fails "
        "on the count (it only goes down), so no cancellation names it",
    ),
    (
        f"{LAYER}/relays/run_store.py",
        '"COUNT": self._counted(run_id, -1),',
        "a transaction item's label; forgetting never fails on the count",
    ),
    (
        f"{LAYER}/crews/calls.py",
        "payload = json.dumps([target, function, args], sort_keys=True, separators=None)",
        "any fixed separators give the same hash for the same arguments; only sorted keys "
        "matter (held by the key-order test)",
    ),
    (
        f"{LAYER}/crews/calls.py",
        "payload = json.dumps([target, function, args], sort_keys=True, )",
        "any fixed separators give the same hash for the same arguments",
    ),
    (
        f"{LAYER}/crews/calls.py",
        'payload = json.dumps([target, function, args], sort_keys=True, separators=("XX,XX", ":"))',
        "any fixed separators give the same hash for the same arguments",
    ),
    (
        f"{LAYER}/crews/calls.py",
        'payload = json.dumps([target, function, args], sort_keys=True, separators=(",", "XX:XX"))',
        "any fixed separators give the same hash for the same arguments",
    ),
    (
        f"{LAYER}/crews/calls.py",
        'content, encoding = chunk.content.decode("UTF-8"), "utf-8"',
        "Python's codec names ignore case: `UTF-8` and `utf-8` are one codec",
    ),
    (
        f"{LAYER}/relays/run_store.py",
        "if change >= 0:",
        "a step count moves by +1 or -1, never 0: `> 0` and `>= 0` choose alike",
    ),
    (
        f"{CLI}/bridge/journal.py",
        "    if excess >= 0:",
        "with excess 0 the DELETE's LIMIT 0 removes nothing: `> 0` and `>= 0` do the same",
    ),
    (
        f"{CLI}/bridge/journal.py",
        "\"DELETE FROM MESSAGES WHERE STATE != 'QUEUED' AND OFFERED_AT < ?\",",
        "a queued message was never offered (offered_at is NULL), so `state != 'QUEUED'` "
        "matches no more rows than `state != 'queued'`",
    ),
)


def _explained(module: str, diff: str) -> str | None:
    added = [line[1:].strip() for line in diff.splitlines() if line.startswith("+")]
    for where, line, why in EXPLAINED:
        if module == where and added == [line.strip()]:
            return why
    return None


def _diff(folder: Path, module: str, name: str) -> str:
    from mutmut.mutation.diff_apply import get_diff_for_mutant

    cwd = Path.cwd()
    os.chdir(folder)
    try:
        diff = get_diff_for_mutant(name, path=Path(module))
    finally:
        os.chdir(cwd)
    return "\n".join(line for line in diff.splitlines()[2:] if line[:1] in "+-")


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


def report(groups: tuple[Group, ...]) -> None:
    summary = json.loads(REPORT.read_text()) if REPORT.exists() else {}
    for group in groups:
        found = results(group)
        if found:
            summary[group.name] = found
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(json.dumps(summary, indent=2) + "\n")
    print(f"\n{'module':<46} {'mutants':>7} {'killed':>7} {'equiv.':>7} {'score':>7}")
    for modules in summary.values():
        for module, row in modules.items():
            if not row["mutants"]:
                continue
            left = len(row["survivors"])
            print(
                f"{module:<46} {row['mutants']:>7} {row['killed']:>7} "
                f"{len(row['equivalent']):>7} {row['score']:>6}%"
                + (f"  ({left} left: see {REPORT.relative_to(ROOT)})" if left else "")
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--group", action="append", choices=[g.name for g in GROUPS])
    parser.add_argument("--report", action="store_true", help="only print the last results")
    parser.add_argument("--max-children", type=int, default=os.cpu_count() or 2)
    parser.add_argument(
        "--minutes", type=float, help="stop each group after this long (verdicts so far kept)"
    )
    args = parser.parse_args()
    chosen = tuple(g for g in GROUPS if not args.group or g.name in args.group)
    if not args.report:
        for group in chosen:
            run_group(group, args.max_children, args.minutes)
    report(chosen)


if __name__ == "__main__":
    main()
