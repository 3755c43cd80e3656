"""The bridge as a runner of cli workflow steps (issue 10 item 6), once the person opted in
(`agentworks bridge start --runner`, kept in the bridge's folder as runner.json, 0600).

One job at a time, in the folder the person chose: claim the oldest job this runner may run
(polling; a claim when none waits is one small request), run the CLI headless there with the
job's timeout, renew the claim while it runs, report its answer, session id and cost — or
its error — and claim the next at once. A renewal the server refuses (the run was cancelled,
the claim lapsed) stops the CLI. Stopping the bridge stops the CLI and reports that, so the
step fails now rather than when its claim lapses.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from agentworks.crews.adapters.cli import COMMANDS
from agentworks_cli.bridge import cli_sessions
from agentworks_cli.bridge.process_tree import ProcessTree
from agentworks_cli.client import EXIT_UNREACHABLE, CliError

SETTINGS_FILE = "runner.json"
POLL_SECONDS = 10.0  # between claims while none waits (each is one small request)
BACKOFF_MAX_SECONDS = 60.0
REPORT_ATTEMPTS = 6  # with a doubling pause from 1 s: about a minute of outage
WATCH_SECONDS = 0.5  # how often a running CLI is checked on (stop, timeout, renewal)
INTERRUPT_SECONDS = 3.0  # for the CLI to abort its tools on SIGINT before it is ended
LEFTOVER_SECONDS = 2.0  # what still holds the output of a CLI that exited is ended after this


@dataclass
class RunnerSettings:
    enabled: bool
    runner_id: str
    workdir: str
    name: str
    poll_seconds: float = POLL_SECONDS


def load_settings(home: Path) -> RunnerSettings | None:
    path = home / SETTINGS_FILE
    if not path.exists():
        return None
    try:
        return RunnerSettings(**json.loads(path.read_text()))
    except (ValueError, TypeError):
        return None


def opt_in(
    home: Path,
    enabled: bool,
    workdir: Path | None = None,
    name: str | None = None,
    poll_seconds: float | None = None,
) -> RunnerSettings:
    """Records the person's choice (the runner id is made once and kept)."""
    known = load_settings(home)
    settings = RunnerSettings(
        enabled=enabled,
        runner_id=known.runner_id if known else f"r-{uuid.uuid4().hex[:16]}",
        workdir=str((workdir or Path(known.workdir if known else ".")).resolve()),
        name=name or (known.name if known else platform.node() or "runner")[:64],
        poll_seconds=poll_seconds or (known.poll_seconds if known else POLL_SECONDS),
    )
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = home / SETTINGS_FILE
    path.touch(mode=0o600, exist_ok=True)
    os.chmod(path, 0o600)
    path.write_text(json.dumps(asdict(settings)))
    return settings


class Runner(threading.Thread):
    def __init__(
        self,
        server: Any,  # ApiServer, or a test's stand-in with claim/renew/finish
        settings: RunnerSettings,
        warn: Callable[[str], None] = lambda _: None,
        environ: dict[str, str] | None = None,
    ) -> None:
        super().__init__(name="bridge-runner", daemon=True)
        self._server = server
        self.settings = settings
        self._warn = warn
        self._environ = environ
        self.stopping = threading.Event()
        self._process: subprocess.Popen[str] | None = None
        self._lock = threading.Lock()
        self._job: dict[str, Any] | None = None
        self.turns_run = 0
        self.last_error: str | None = None

    # ---- what `bridge status` shows ----

    def commands(self) -> dict[str, str | None]:
        """Each supported CLI and where it is on the PATH (None: not found)."""
        path = (self._environ or os.environ).get("PATH")
        return {command: shutil.which(command, path=path) for command in COMMANDS}

    def status(self) -> dict[str, Any]:
        with self._lock:
            job = self._job
        return {
            "enabled": True,
            "runner_id": self.settings.runner_id,
            "name": self.settings.name,
            "workdir": self.settings.workdir,
            "commands": self.commands(),
            "state": "running" if job else "idle",
            "job": {k: job[k] for k in ("job_id", "run_id", "step", "command")} if job else None,
            "turns_run": self.turns_run,
            "last_error": self.last_error,
        }

    # ---- the loop ----

    def run(self) -> None:
        pause = self.settings.poll_seconds
        while not self.stopping.is_set():
            try:
                ran = self.run_once()
                pause = self.settings.poll_seconds
            except CliError as error:  # unreachable, or refused (a login without the scope)
                self.last_error = error.message
                self._warn(f"runner: {error.message}")
                ran, pause = False, min(max(pause * 2, 1.0), BACKOFF_MAX_SECONDS)
            if not ran:
                self.stopping.wait(pause)

    def run_once(self) -> bool:
        """Claims one job and runs it; False when none waits (or no CLI is installed)."""
        found = {c: p for c, p in self.commands().items() if p}
        if not found:
            self.last_error = "neither claude nor codex is on the PATH"
            return False
        claimed = self._server.claim(
            {"runner_id": self.settings.runner_id, "name": self.settings.name,
             "commands": sorted(found)}
        )  # fmt: skip
        job = claimed.get("job")
        if not job:
            return False
        self.run_job(job, found[job["command"]])
        return True

    def run_job(self, job: dict[str, Any], executable: str) -> None:
        with self._lock:
            self._job = job
        try:
            report = self._turn(job, executable)
            if report is not None:
                self._report(job, report)
                self.turns_run += 1
        finally:
            with self._lock:
                self._job = None

    def _turn(self, job: dict[str, Any], executable: str) -> dict[str, Any] | None:
        """The CLI's run as a report; None when the job was taken away (nothing to say)."""
        try:
            argv = cli_sessions.command_line(job, executable)
        except cli_sessions.Refused as refused:
            return {"error": f"the runner refused the job: {refused}", "cost_usd": 0.0}
        env = dict(self._environ or os.environ)
        process = subprocess.Popen(
            argv, cwd=self.settings.workdir, env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True,  # its own group: a stop ends the CLI and its children
        )  # fmt: skip
        self._process = process
        tree = ProcessTree(process.pid)
        deadline = time.monotonic() + float(job["timeout_seconds"])
        every = float(job.get("renew_seconds") or 30)
        renew_at = time.monotonic() + every
        exited_at: float | None = None
        try:
            while True:
                try:
                    stdout, stderr = process.communicate(timeout=WATCH_SECONDS)
                    break
                except subprocess.TimeoutExpired:
                    tree.look()
                if process.poll() is not None:  # done, but something it started holds on
                    exited_at = exited_at or time.monotonic()  # to its output: end that
                    if time.monotonic() - exited_at >= LEFTOVER_SECONDS:
                        tree.end()
                if self.stopping.is_set():
                    self._end(process, tree)
                    return {"error": "the runner's bridge stopped during the session",
                            "cost_usd": 0.0}  # fmt: skip
                if time.monotonic() >= deadline:
                    self._end(process, tree)
                    late = f"{job['command']} did not finish within {job['timeout_seconds']} s"
                    return {"error": f"{late} (the profile's timeout_seconds)", "cost_usd": 0.0}
                if time.monotonic() >= renew_at:
                    if not self._renew(job):
                        self._end(process, tree)
                        return None
                    renew_at = time.monotonic() + every
        finally:
            self._process = None
        tree.end()  # a tool left running in the background ends with its turn
        found = cli_sessions.outcome(job["command"], stdout, stderr, process.returncode)
        return found.report()

    def _renew(self, job: dict[str, Any]) -> bool:
        """False when the server says the job is no longer this runner's."""
        try:
            self._server.renew(job["job_id"], {"runner_id": self.settings.runner_id})
        except CliError as error:
            if error.exit_code == EXIT_UNREACHABLE:
                return True  # keep going: the report may still land in time
            self._warn(f"runner: job {job['job_id']} was taken away: {error.message}")
            return False
        return True

    def _report(self, job: dict[str, Any], report: dict[str, Any]) -> None:
        body = {"runner_id": self.settings.runner_id, **report}
        pause = 1.0
        for attempt in range(REPORT_ATTEMPTS):
            try:
                self._server.finish(job["job_id"], body)
                return
            except CliError as error:
                if error.exit_code != EXIT_UNREACHABLE or attempt + 1 == REPORT_ATTEMPTS:
                    self.last_error = f"job {job['job_id']}: {error.message}"
                    self._warn(f"runner: the report of job {job['job_id']} failed: {error}")
                    return
            self.stopping.wait(pause)
            pause *= 2

    @staticmethod
    def _end(process: subprocess.Popen[str], tree: ProcessTree) -> None:
        """Stops the CLI and everything it started. An interrupt first (Claude Code aborts its
        running tools on SIGINT), then its process group, then every descendant seen, in
        whatever session it runs."""
        tree.look()
        _signal_group(process, signal.SIGINT)
        if not _drained(process, INTERRUPT_SECONDS):
            tree.look()
            _signal_group(process, signal.SIGTERM)
            tree.end()
            if not _drained(process, 5):
                _signal_group(process, signal.SIGKILL)
                _drained(process, 5)
        tree.end()

    def stop(self) -> None:
        self.stopping.set()


def _signal_group(process: subprocess.Popen[str], number: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, number)


def _drained(process: subprocess.Popen[str], seconds: float) -> bool:
    """True once the CLI exited and its output was read to the end (nothing holds it)."""
    try:
        process.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        return False
    return True
