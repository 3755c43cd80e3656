"""`agentworks dev`: runs the local stack (dev.py) until Ctrl-C or SIGTERM.

Tuning for tests and experiments (environment):
  AGENTWORKS_DEV_TICK_SECONDS   seconds between scheduled-function runs (default 5)
  AGENTWORKS_DEV_SWEEP_SECONDS  seconds between TTL sweeps (default 5)
  AGENTWORKS_DEV_TTL_LAG_SECONDS  how long expired items stay before the sweep deletes
                                them (default 0; AWS lags by up to 172800)
  AGENTWORKS_DEV_READY_FILE     where to write a JSON note once the stack serves requests
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

from agentworks_local.dev import DevStack, StartError
from agentworks_local.dev_banner import banner
from agentworks_local.display_paths import home_relative
from agentworks_local.durable_state import DEFAULT_DATA_DIR, DataDir, DataDirError


def _env_seconds(name: str, default: float, allow_zero: bool = False) -> float:
    raw = os.environ.get(name, "")
    try:
        value = float(raw) if raw else default
    except ValueError:
        raise StartError(f"{name} must be a number of seconds (got {raw!r})", 2) from None
    if value < 0 or (value == 0 and not allow_zero):
        least = "0 or more" if allow_zero else "more than 0"
        raise StartError(f"{name} must be {least} seconds (got {raw!r})", 2)
    return value


def run_dev(
    port: int = 8787,
    config_path: Path | None = None,
    host: str = "127.0.0.1",
    ready_file: Path | None = None,
    data_dir: Path | None = DEFAULT_DATA_DIR,
    reset: bool = False,
    assume_yes: bool = False,
    push_port: int | None = None,
    fsync_every: float | None = None,
    allow_loopback_webhooks: bool = False,
    allow_unsandboxed_relays: bool = False,
) -> int:
    """Runs the local stack until Ctrl-C or SIGTERM; returns the process exit code
    (0 after a clean stop, 2 when the port is taken, 1 when the stack could not start).
    `data_dir` None is an ephemeral stack; `reset` empties the data folder first (asking)."""
    if reset:
        if data_dir is None:
            print("error: --reset empties a data folder; --ephemeral has none", file=sys.stderr)
            return 2
        code = reset_data_dir(DataDir(data_dir), assume_yes)
        if code:
            return code
    stop = threading.Event()
    previous = _install_signal_handlers(stop)
    stack: DevStack | None = None
    try:
        env_ready = os.environ.get("AGENTWORKS_DEV_READY_FILE")
        stack = DevStack(
            port=port,
            config_path=Path(config_path) if config_path is not None else None,
            host=host,
            ready_file=ready_file or (Path(env_ready) if env_ready else None),
            tick_seconds=_env_seconds("AGENTWORKS_DEV_TICK_SECONDS", 5.0),
            sweep_seconds=_env_seconds("AGENTWORKS_DEV_SWEEP_SECONDS", 5.0),
            ttl_lag_seconds=_env_seconds("AGENTWORKS_DEV_TTL_LAG_SECONDS", 0.0, allow_zero=True),
            data_dir=data_dir,
            push_port=push_port,
            fsync_every=fsync_every,
            allow_loopback_webhooks=allow_loopback_webhooks,
            allow_unsandboxed_relays=allow_unsandboxed_relays,
        )
        print("Starting the AgentWorks local stack…", file=sys.stderr, flush=True)
        stack.start()
        print(banner(stack), flush=True)
        while not stop.wait(1.0):
            pass
        return 0
    except StartError as error:
        print(f"error: {error}", file=sys.stderr, flush=True)
        return error.exit_code
    except Exception as error:  # one line, never a traceback on the console
        print(
            f"error: the local stack could not start: {type(error).__name__}: {error}",
            file=sys.stderr,
            flush=True,
        )
        return 1
    finally:
        if stack is not None:
            stack.stop()
        _restore_signal_handlers(previous)
        if stop.is_set():
            print("stopped", flush=True)


def _install_signal_handlers(stop: threading.Event) -> dict[int, Any]:
    """SIGINT/SIGTERM ask for a clean stop; a second one ends the process at once."""
    if threading.current_thread() is not threading.main_thread():
        return {}  # signals can only be handled on the main thread

    def on_signal(signum: int, frame: FrameType | None) -> None:
        if stop.is_set():
            os._exit(128 + signum)
        stop.set()

    previous: dict[int, Any] = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        previous[signum] = signal.signal(signum, on_signal)
    return previous


def _restore_signal_handlers(previous: dict[int, Any]) -> None:
    for signum, handler in previous.items():
        signal.signal(signum, handler)


def reset_data_dir(data: DataDir, assume_yes: bool) -> int:
    """Empties the data folder after a yes (typed, or --yes); 0 when done."""
    where = home_relative(data.path)
    if not data.holds_state():
        print(f"{where} holds no saved state; nothing to reset", file=sys.stderr)
        return 0
    if not assume_yes:
        if not sys.stdin.isatty():
            print(
                f"error: --reset deletes everything the local stack keeps in {where}; "
                "confirm in a terminal, or add --yes",
                file=sys.stderr,
            )
            return 2
        answer = input(f"Delete every token, message, Crew and call kept in {where}? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print("nothing was deleted", file=sys.stderr)
            return 1
    try:
        data.lock()  # never under a running stack
    except DataDirError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    try:
        data.reset()
    finally:
        data.unlock()
    print(f"emptied {where}", file=sys.stderr)
    return 0
