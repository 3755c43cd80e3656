"""Every process a CLI started, whatever session or group it moved to.

Signalling the CLI's process group is not enough: Claude Code runs each Bash tool command in
a session of its own, outside the group, and such a shell outlives a stop as an orphan (and,
holding the CLI's output pipe, keeps the turn from ending). So the runner remembers each
descendant it has seen (by pid and start time, so a reused pid is never signalled) and ends
the remembered ones that still live. The runner looks every half second while the CLI runs:
a tool started and orphaned between two looks is missed. Linux reads /proc; elsewhere `ps`
lists parents (no start times there: a pid is trusted for the seconds between look and end).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

_PROC = Path("/proc")


def _table() -> dict[int, tuple[int, int]]:
    """pid -> (parent pid, start time) of every process this user can see."""
    if not _PROC.is_dir():
        return _ps_table()
    table: dict[int, tuple[int, int]] = {}
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        stat = _stat(int(entry.name))
        if stat is not None:
            table[int(entry.name)] = stat
    return table


def _stat(pid: int) -> tuple[int, int] | None:
    try:
        text = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # "pid (comm) state ppid … starttime": comm may hold spaces and parentheses.
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[1]), int(fields[19])


def _ps_table() -> dict[int, tuple[int, int]]:
    try:
        listed = subprocess.run(
            ["ps", "-A", "-o", "pid=,ppid="], capture_output=True, text=True, timeout=5
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return {}
    table: dict[int, tuple[int, int]] = {}
    for line in listed.splitlines():
        words = line.split()
        if len(words) == 2 and words[0].isdigit() and words[1].isdigit():
            table[int(words[0])] = (int(words[1]), 0)
    return table


class ProcessTree:
    def __init__(self, root: int) -> None:
        self.root = root
        self.seen: dict[int, int] = {}  # pid -> start time

    def look(self) -> None:
        """Remembers the root's descendants as they are now (an orphan keeps its place:
        its children are found through it)."""
        table = _table()
        parents = {self.root, *self.seen}
        grew = True
        while grew:
            grew = False
            for pid, (parent, started) in table.items():
                if parent in parents and pid not in parents:
                    parents.add(pid)
                    self.seen[pid] = started
                    grew = True

    def living(self) -> list[int]:
        alive = []
        for pid, started in self.seen.items():
            now = _stat(pid) if _PROC.is_dir() else (0, started)
            if now is not None and now[1] == started and _exists(pid):
                alive.append(pid)
        return alive

    def end(self, grace: float = 2.0) -> None:
        """SIGTERM to each remembered process still alive, SIGKILL after `grace`."""
        self._signal(signal.SIGTERM)
        deadline = time.monotonic() + grace
        while self.living() and time.monotonic() < deadline:
            time.sleep(0.05)
        self._signal(signal.SIGKILL)

    def _signal(self, number: int) -> None:
        for pid in self.living():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, number)


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    state = _state(pid)
    return state != "Z"  # a zombie has ended; only its parent's wait is missing


def _state(pid: int) -> str:
    try:
        text = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return ""
    return text[text.rindex(")") + 2 :].split()[0]


def start_time(pid: int) -> int | None:
    """The process's start time (in clock ticks since boot; 0 where /proc is missing), or
    None when it does not exist: with the pid, it names one process for good."""
    if not _PROC.is_dir():
        return 0 if _exists(pid) else None
    stat = _stat(pid)
    return stat[1] if stat is not None else None


def ancestors(pid: int, depth: int = 12) -> list[int]:
    """`pid`'s parent, grandparent and so on (nearest first), up to `depth`, init left out."""
    table = _table() if not _PROC.is_dir() else None
    chain: list[int] = []
    while len(chain) < depth:
        parent = (table or {}).get(pid, (0, 0))[0] if table is not None else _parent(pid)
        if parent <= 1:
            break
        chain.append(parent)
        pid = parent
    return chain


def _parent(pid: int) -> int:
    stat = _stat(pid)
    return stat[0] if stat is not None else 0


def command_line(pid: int) -> str:
    """The process's executable and first two arguments, for telling a CLI apart (Claude
    Code may run as `node …/claude-code/cli.js`)."""
    if _PROC.is_dir():
        try:
            raw = (_PROC / str(pid) / "cmdline").read_bytes().split(b"\0")[:3]
        except OSError:
            return ""
        words = [w.decode("utf-8", "replace") for w in raw if w]
    else:
        try:
            words = subprocess.run(
                ["ps", "-o", "command=", "-p", str(pid)], capture_output=True, text=True,
                timeout=5,
            ).stdout.split()[:3]  # fmt: skip
        except (OSError, subprocess.TimeoutExpired):
            return ""
    return " ".join(words)
