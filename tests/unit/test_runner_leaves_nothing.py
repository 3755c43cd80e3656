"""Issue 25 item 8: a runner's stop ends the CLI and every tool command it started, even one
in a session of its own (as Claude Code's Bash tool runs), after interrupting it first."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from agentworks_cli.bridge.process_tree import ProcessTree
from agentworks_cli.bridge.runner import Runner

# A CLI that starts a tool command in its own session (holding the CLI's output, as a
# shell does), notes an interrupt and carries on regardless, until SIGTERM.
STUBBORN_CLI = r"""
import os, signal, subprocess, sys, time
notes = sys.argv[1]
def interrupted(*_):
    open(os.path.join(notes, "interrupted"), "w").close()
signal.signal(signal.SIGINT, interrupted)
tool = subprocess.Popen(["sleep", "300"], start_new_session=True)
with open(os.path.join(notes, "tool.pid"), "w") as f:
    f.write(str(tool.pid))
if "exit" in sys.argv:
    time.sleep(1)  # the runner looks every half second while the CLI runs
    sys.exit(0)  # done, leaving its tool behind
while True:
    time.sleep(0.1)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0] != "Z"


def _start(tmp_path: Path, *extra: str) -> tuple[subprocess.Popen[str], int]:
    process = subprocess.Popen(
        [sys.executable, "-c", STUBBORN_CLI, str(tmp_path), *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 10
    while not (tmp_path / "tool.pid").exists() or not (tmp_path / "tool.pid").read_text():
        assert time.monotonic() < deadline
        time.sleep(0.02)
    return process, int((tmp_path / "tool.pid").read_text())


def test_a_stop_interrupts_first_then_ends_the_tool_in_its_own_session(tmp_path: Path) -> None:
    process, tool = _start(tmp_path)
    assert os.getsid(tool) != os.getsid(process.pid)  # outside the group a killpg reaches
    Runner._end(process, ProcessTree(process.pid))
    assert (tmp_path / "interrupted").exists()  # SIGINT came first
    assert process.poll() is not None and not _alive(tool)


def test_a_tool_left_running_by_a_finished_cli_is_ended(tmp_path: Path) -> None:
    process, tool = _start(tmp_path, "exit")
    tree = ProcessTree(process.pid)
    tree.look()  # as the runner does while the CLI runs
    process.wait(10)
    assert _alive(tool)  # orphaned, and still holding the CLI's output
    tree.end()
    assert not _alive(tool)
    process.communicate(timeout=5)  # nothing holds the output any more


def test_a_reused_pid_is_never_signalled(tmp_path: Path) -> None:
    tree = ProcessTree(os.getpid())
    tree.seen[os.getpid()] = 1  # this process, with another start time: not the one seen
    assert tree.living() == []
