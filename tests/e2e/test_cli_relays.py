"""Relays through the `agentworks` CLI, run as a subprocess against the local stack (R1–R4):
the example Relay is published (again: unchanged), listed, run to its final JSON with
`--wait` and read back with `status`; a malformed folder is refused with its file and line
before anything is sent; a single .py file with a durable step fails, and its retry reuses
the completed step."""

from __future__ import annotations

import json
import re
import textwrap
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_cli_messages import Cli

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
SUMMARIZE = ROOT / "examples" / "relays" / "summarize"
TEXTS = {"texts": ["Relays run Python. They are durable.", "One more"]}
SUMMARIES = {
    "summaries": [{"summary": "Relays run Python", "words": 6}, {"summary": "One more", "words": 2}]
}
RUN_ID = re.compile(r"rrun_[0-9A-Za-z]+")


@pytest.fixture
def cli(local_stack: Any) -> Cli:
    return Cli(local_stack)


def _status(cli: Cli, run_id: str) -> dict[str, Any]:
    return dict(cli.ok("relays", "status", run_id, "--json").json())


def test_the_example_relay_is_published_listed_run_and_read_back(cli: Cli) -> None:
    published = cli.ok("relays", "publish", str(SUMMARIZE)).out
    assert "published summarize version 1 (hash " in published and ", active" in published
    assert "summarize: The first sentence of each text" in published
    short_hash = published.split("(hash ", 1)[1][:12]
    again = cli.ok("relays", "publish", str(SUMMARIZE)).out
    assert f"summarize version 1 (hash {short_hash}): unchanged (identical source)" in again

    releases = cli.ok("relays", "releases", "summarize").out.splitlines()
    assert releases[0] == "summarize: active version 1"
    assert releases[1].split() == ["VERSION", "ACTIVE", "HASH", "PUBLISHED", "FUNCTIONS"]
    row = releases[2].split()
    assert row[:3] == ["1", "*", short_hash] and row[-1] == "summarize"
    assert "summarize" in cli.ok("relays", "list").out

    waited = cli("relays", "run", "summarize", "summarize", "--input", json.dumps(TEXTS), "--wait")
    assert waited.code == 0, waited
    assert json.loads(waited.out) == SUMMARIES  # stdout is the final JSON alone
    assert ": succeeded (attempt 1)" in waited.err and "Traceback" not in waited.err

    started = cli.ok(
        "relays", "run", "summarize", "summarize", "--input", json.dumps(TEXTS), "--key", "k-1"
    ).out
    run_id = RUN_ID.findall(started)[0]
    assert f"started run {run_id} (summarize summarize, release 1)" in started
    assert cli.ok("relays", "status", run_id, "--wait").json() == SUMMARIES
    shown = cli.ok("relays", "status", run_id).out
    assert f"run:      {run_id}" in shown and "status:   succeeded (final)" in shown
    assert '"summary": "Relays run Python"' in shown
    replayed = cli.ok(
        "relays", "run", "summarize", "summarize", "--input", json.dumps(TEXTS), "--key", "k-1"
    ).out
    assert f"started run {run_id} " in replayed and "nothing new started" in replayed


def test_a_malformed_folder_is_refused_with_its_file_and_line(cli: Cli, tmp_path: Path) -> None:
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "relay.yaml").write_text(
        "name: broken\nfunctions:\n  - name: run\n    entrypoint: main:run\n"
    )
    (folder / "main.py").write_text("async def run(INPUT):\n    x = 1\n    return {\n")
    refused = cli("relays", "publish", str(folder))
    assert refused.code == 1, refused
    assert "is not a Relay: main.py line 3: Python syntax" in refused.err
    assert refused.err.startswith("error: ") and "Traceback" not in refused.err

    (folder / "main.py").write_text("async def run(INPUT):\n    return {}\n")
    (folder / "relay.yaml").write_text(
        "name: broken\nfunctions:\n  - name: run\n    entrypoint: other:run\n"
    )
    refused = cli("relays", "publish", str(folder))
    assert refused.code == 1, refused
    assert "relay.yaml line 3: function run: no module other in the folder" in refused.err
    assert "broken" not in cli.ok("relays", "list").out  # nothing was sent


def test_a_single_file_relay_fails_and_its_retry_reuses_the_completed_step(
    cli: Cli, tmp_path: Path
) -> None:
    # Relay code sees only the API (a sandbox hides this machine's files): the flag is an
    # agent name, registered between the failure and the retry.
    flag = f"flag-{uuid.uuid4().hex[:8]}"
    source = tmp_path / "word_count.py"
    source.write_text(
        textwrap.dedent(
            """\
            from agentworks_relay import platform, step


            async def run(INPUT):
                words = await step("count", lambda: len(INPUT["text"].split()))
                names = [a["agent_name"] for a in platform.request("GET", "/v1/agents")["agents"]]
                if INPUT["flag"] not in names:
                    raise RuntimeError("the flag is not there yet")
                return {"words": words}
            """
        )
    )
    published = cli.ok("relays", "publish", str(source)).out
    assert "published word-count version 1" in published and "  run\n" in published

    given = json.dumps({"text": "one two three", "flag": flag})
    failed = cli("relays", "run", "word-count", "run", "--input", given, "--wait")
    assert failed.code == 6, failed
    assert failed.out == ""  # no final JSON
    assert "… step count: completed (attempt 1)" in failed.err
    assert "failed: " in failed.err and "the flag is not there yet" in failed.err
    run_id = RUN_ID.findall(failed.err)[0]
    assert f"retry it: agentworks relays retry {run_id} --wait" in failed.err

    cli.ok("messages", "register", "--agent", flag)
    retried = cli("relays", "retry", run_id, "--wait")
    assert retried.code == 0, retried
    assert json.loads(retried.out) == {"words": 3}
    run = _status(cli, run_id)
    assert run["status"] == "succeeded" and run["attempts"] > 1
    assert [(s["name"], s["status"], s["attempt"]) for s in run["steps"]] == [
        ("count", "completed", 1)  # reused by the retry, not redone
    ]
    refused = cli("relays", "retry", run_id)
    assert refused.code == 1 and "only a failed run" in refused.err
