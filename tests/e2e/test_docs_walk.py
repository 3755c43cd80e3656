"""The README's and the guides' shell blocks, walked against `agentworks dev`: every
`agentworks …` line of a ```sh, ```bash or ```console block runs as written (ids from
earlier output put in for its placeholders), so a command that stops working as the docs
write it fails CI.

Each `## ` section of a document runs in order as a new reader would: in a fresh HOME
(`~/.agentworks/…` lands there), with an account of its own whose admin config is where
`make run` writes it, with the section's `export` lines, from the repository's root
(`examples/…` resolve); the sections walk side by side. SKIPPED lists what it leaves out and
why; the count of lines run and the skips are printed and kept in test-artifacts/. A line ends as
its comment says (`# exits 6: …`) or exits 0. Runs reach their states in the background, so a
line that ends otherwise, or names an id no earlier line printed yet, is tried again (with
the line before it, which prints that id) for up to WAIT_SECONDS.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.e2e.conftest import EPHEMERAL, LocalStack, running_local_stack

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^\s*```(\w*)")
SHELL = {"sh", "bash", "console"}
WAIT_SECONDS = 30.0
REPORT = ROOT / "test-artifacts" / "docs-walk.txt"

# Lines the walk does not run, by their start, and why: each needs what a test of the local
# stack does not have, or runs until it is stopped.
SKIPPED = {
    # Real AWS: a deployed stack's tables, functions and queues (docs/deploy.md, operations.md).
    "agentworks bootstrap": "writes a deployed stack's identity table",
    "agentworks ops": "acts on a deployed stack's functions and queues",
    # Long-running: they serve until Ctrl-C (tests/e2e/test_push_channel.py, test_bridge_*).
    "agentworks listen": "listens until Ctrl-C",
    "agentworks bridge": "the bridge runs once per computer, until stopped",
    # The bridge's chats: a running bridge and a live Claude Code or Codex chat.
    "agentworks attach": "attaches a live coding-agent chat",
    "agentworks detach": "detaches a live coding-agent chat",
    "agentworks agents": "lists the bridge's attached chats (`agents --all` runs)",
    # The internet: the tools of an MCP server at a made-up address (the other mcp-servers
    # lines run; tests/e2e/test_cli_mcp_servers.py serves one).
    "agentworks mcp-servers show": "fetches tools from an MCP server on the internet",
    # A Crew whose messaging switch is `review`; examples/contracts-crew.yaml answers at once.
    "agentworks crews release": "needs a message held for review",
}
RUN_ANYWAY = ("agentworks agents --all",)

# Placeholder → what fills it: a `label:` of the same connection's output, else the latest
# id with that prefix printed by any line.
LABELLED = {
    "<reply_address>": "reply_address",
    "<inbox_id>": "inbox",
    "<message_id>": "message_id",
}
BY_PREFIX = {
    "<call_id>": "call_",
    "<request_id>": "req_",
    "<run_id>": "rrun_",
    "wfrun_…": "wfrun_",
    "WEBHOOK_ID": "whk_",
}
ID = re.compile(r"\b(call_|req_|rrun_|wfrun_|whk_)[0-9A-Z]{26}\b")
LABEL = re.compile(r"^\s*(reply_address|message_id|inbox):\s+(ibx_\w+|msg_\w+)\s*$", re.M)
UNFILLED = re.compile(r"<[A-Za-z_ ]+>|\b[A-Z][A-Z_]*_ID\b")  # a placeholder the walk misses
EXITS = re.compile(r"#\s*exits (\d+)")  # `# exits 6: failed`
# A secret the reader puts in (`export TOKEN=…`, `Bearer …`): any printable value does.
SECRET = re.compile(r"(=|Bearer )…")
OPTIONAL = re.compile(r"\s*\[--[^\]]*\]")  # `[--limit N]`: the walk leaves options out


@dataclass
class Line:
    document: str
    number: int
    command: str
    expected: int


@dataclass
class Walk:
    env: dict[str, str]
    exports: list[str] = field(default_factory=list)
    labelled: dict[tuple[str, str], str] = field(default_factory=dict)
    ids: dict[str, str] = field(default_factory=dict)

    def fill(self, line: Line) -> str | None:
        """The command with its placeholders filled in; None while an id is not known."""
        command = line.command
        who = _config(command)
        for placeholder, label in LABELLED.items():
            if placeholder in command:
                if (who, label) not in self.labelled:
                    return None
                command = command.replace(placeholder, self.labelled[who, label])
        for placeholder, prefix in BY_PREFIX.items():
            if placeholder in command:
                if prefix not in self.ids:
                    return None
                command = command.replace(placeholder, self.ids[prefix])
        left = UNFILLED.search(command)
        assert left is None, f"{line.document}:{line.number}: no value for {left.group(0)}"
        return command

    def run(self, command: str) -> subprocess.CompletedProcess[str]:
        script = "\n".join([*self.exports, command])
        done = subprocess.run(
            ["bash", "-c", script],
            env=self.env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=90,  # the longest documented wait is 25 s
        )
        output = done.stdout + done.stderr
        for match in ID.finditer(output):
            self.ids[match.group(1)] = match.group(0)
        who = _config(command)
        for label, value in LABEL.findall(output):
            self.labelled[who, label] = value
        return done


def _config(command: str) -> str:
    """Whose output it is: the line's `--config` (the quick start's $W and $R), or the admin."""
    found = re.search(r"--config\s+(\S+)", command)
    return found.group(1) if found else ""


@dataclass
class Section:
    """A document's `## ` section: a reader may start at any, so each walks on its own."""

    name: str
    lines: list[Line] = field(default_factory=list)
    exports: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def shell_lines(path: Path) -> Iterator[tuple[str, int, str]]:
    """(section, line number, text) of each line of a shell block, `\\` continuations joined
    and a console's `$ ` taken off."""
    inside, shell, pending, start, section = False, False, "", 0, ""
    for number, text in enumerate(path.read_text().splitlines(), start=1):
        fence = FENCE.match(text)
        if fence:
            inside, shell = (False, False) if inside else (True, fence.group(1) in SHELL)
            continue
        if not inside and text.startswith("## "):
            section = text[3:].strip()
        if not (inside and shell):
            continue
        text = text.strip().removeprefix("$ ")
        if not pending:
            start = number
        if text.endswith("\\"):
            pending += text[:-1].strip() + " "
            continue
        yield section, start, pending + text
        pending = ""


def sections(path: Path) -> list[Section]:
    """Each section's `agentworks` lines the walk runs, its `export` lines, and the lines it
    skips (with why)."""
    found: dict[str, Section] = {}
    for name, number, text in shell_lines(path):
        section = found.setdefault(name, Section(f"{path.name} {name}".strip()))
        if text.startswith("export "):
            section.exports.append(SECRET.sub(r"\1docs-walk-secret", text.split("#")[0]))
        if not text.startswith("agentworks "):
            continue
        bare = re.sub(r"--config\s+\S+\s+", "", text)  # `agentworks --config $R listen`
        reason = next((why for start, why in SKIPPED.items() if bare.startswith(start)), None)
        if reason and not bare.startswith(RUN_ANYWAY):
            section.skipped.append(f"{path.name}:{number} {reason}")
            continue
        expected = EXITS.search(text)
        command = SECRET.sub(r"\1docs-walk-secret", OPTIONAL.sub("", text))
        # `webhooks list | delete --id ID`: the subcommands a line offers, each in turn.
        head, *alternatives = [part.strip() for part in command.split(" | ")]
        group = " ".join(head.split()[:2])  # `agentworks webhooks`
        for variant in [head, *(f"{group} {alternative}" for alternative in alternatives)]:
            section.lines.append(
                Line(path.name, number, variant, int(expected.group(1)) if expected else 0)
            )
    return list(found.values())


@pytest.fixture(scope="module")
def docs_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    # Each document's account runs relays: sandboxed where bubblewrap is, else anyway.
    with running_local_stack(tmp_path_factory, (*EPHEMERAL, "--allow-unsandboxed-relays")) as s:
        yield s


def reader(stack: LocalStack, home: Path, name: str) -> dict[str, str]:
    """A reader of one section: an account of its own (a section names its Crews and
    profiles as if it were the first), its admin config where `make run` writes it
    (~/.agentworks/config.json), the `agentworks` of this environment on PATH."""
    aws = json.loads(stack.admin_config.read_text())
    env = {key: value for key, value in stack.env.items() if key != "AGENTWORKS_CONFIG"}
    env.update(
        HOME=str(home),
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        BROWSER="true",  # `agentworks inbox` opens its link: with nothing, here
    )
    tables = stack.aws("dynamodb").list_tables()["TableNames"]
    identity = next(table for table in tables if "Identity" in table)
    bootstrap = subprocess.run(
        ["agentworks", "bootstrap", "--identity-table", identity, "--url", stack.url,
         "--account-name", name],
        env={
            **env,
            "AWS_ENDPOINT_URL": aws["aws_endpoint_url"],
            "AWS_DEFAULT_REGION": aws["aws_region"],
            "AWS_ACCESS_KEY_ID": aws["aws_access_key_id"],
            "AWS_SECRET_ACCESS_KEY": aws["aws_secret_access_key"],
        },
        capture_output=True,
        text=True,
        timeout=60,
    )  # fmt: skip
    assert bootstrap.returncode == 0, bootstrap
    return env


def walk_section(stack: LocalStack, home: Path, section: Section) -> list[str]:
    """Runs a section's lines in order; what each ran, with its time."""
    home.mkdir()
    walk = Walk(env=reader(stack, home, f"docs-{home.name}"), exports=section.exports)
    log: list[str] = []
    previous: str | None = None
    for line in section.lines:
        began = time.monotonic()
        where = f"{line.document}:{line.number}: {line.command}"
        while True:
            command = walk.fill(line)
            done = walk.run(command) if command is not None else None
            assert done is None or "Traceback" not in done.stderr, (where, done.stderr)
            if done is not None and done.returncode == line.expected:
                break
            if time.monotonic() > began + WAIT_SECONDS:
                if done is None:
                    pytest.fail(f"{where}\nno earlier line printed the id it names")
                pytest.fail(
                    f"{where}\nexited {done.returncode}, the docs say {line.expected}\n"
                    f"{done.stdout[-2000:]}{done.stderr[-2000:]}"
                )
            if previous is not None:
                walk.run(previous)  # it prints the ids this line needs, once they exist
            time.sleep(0.5)
        log.append(f"{time.monotonic() - began:5.1f} s  {line.document}:{line.number} {command}")
        previous = command
    return log


def test_every_documented_command_runs_as_written(docs_stack: LocalStack, tmp_path: Path) -> None:
    started = time.monotonic()
    every = [section for document in DOCUMENTS for section in sections(document)]
    skipped = [why for section in every for why in section.skipped]
    walked = [section for section in every if section.lines]
    # Each section has its own account: they walk side by side.
    with ThreadPoolExecutor(max_workers=4) as pool:
        logs = list(
            pool.map(
                lambda n: walk_section(docs_stack, tmp_path / str(n), walked[n]),
                range(len(walked)),
            )
        )
    ran = sum(len(log) for log in logs)
    seconds = time.monotonic() - started
    report = "\n".join(
        [
            f"docs walk: {ran} commands run, {len(skipped)} skipped, {seconds:.0f} s",
            *(line for log in logs for line in log),
            *(f"  skipped {reason}" for reason in skipped),
        ]
    )
    print("\n" + report)
    # Kept beside the browser tests' screenshots: a run under xdist shows no test's output.
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(report + "\n")
    assert ran >= 50, ran  # 56 when written: a floor, so a parser that finds nothing fails
