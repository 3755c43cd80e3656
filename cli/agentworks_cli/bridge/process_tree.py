"""Every process a CLI started, whatever session or group it moved to (psutil does the
reading, on Linux and macOS alike).

Signalling the CLI's process group is not enough: Claude Code runs each Bash tool command in
a session of its own, outside the group, and such a shell outlives a stop as an orphan (and,
holding the CLI's output pipe, keeps the turn from ending). So the runner remembers each
descendant it has seen (by pid and start time, so a reused pid is never signalled) and ends
the remembered ones that still live. The runner looks every half second while the CLI runs:
a tool started and orphaned between two looks is missed.
"""

from __future__ import annotations

import contextlib

import psutil


class ProcessTree:
    def __init__(self, root: int) -> None:
        self.root = root
        self.seen: dict[int, float] = {}  # pid -> start time (psutil's create_time)

    def look(self) -> None:
        """Remembers the root's descendants as they are now (an orphan keeps its place:
        its children are found through it)."""
        for process in [self.root, *self.seen]:
            with contextlib.suppress(psutil.Error):  # gone, or not ours to read
                for child in psutil.Process(process).children(recursive=True):
                    with contextlib.suppress(psutil.Error):
                        self.seen.setdefault(child.pid, child.create_time())

    def living(self) -> list[psutil.Process]:
        """The remembered processes still running: the same ones (start time), not zombies."""
        alive = []
        for pid, started in self.seen.items():
            with contextlib.suppress(psutil.Error):
                process = psutil.Process(pid)
                if process.create_time() == started and process.status() != psutil.STATUS_ZOMBIE:
                    alive.append(process)
        return alive

    def end(self, grace: float = 2.0) -> None:
        """SIGTERM to each remembered process still alive, SIGKILL after `grace`."""
        living = self.living()
        for process in living:
            with contextlib.suppress(psutil.Error):
                process.terminate()
        _, stubborn = psutil.wait_procs(living, timeout=grace)
        for process in stubborn:
            with contextlib.suppress(psutil.Error):
                process.kill()


def start_time(pid: int) -> float | None:
    """The process's start time, or None when it does not exist: with the pid, it names
    one process for good."""
    try:
        return float(psutil.Process(pid).create_time())
    except psutil.Error:
        return None


def ancestors(pid: int) -> list[int]:
    """`pid`'s parent, grandparent and so on (nearest first), init left out."""
    try:
        return [p.pid for p in psutil.Process(pid).parents() if p.pid > 1]
    except psutil.Error:
        return []


def command_line(pid: int) -> str:
    """The process's executable and first two arguments, for telling a CLI apart (Claude
    Code may run as `node …/claude-code/cli.js`)."""
    try:
        return " ".join(psutil.Process(pid).cmdline()[:3])
    except psutil.Error:
        return ""
