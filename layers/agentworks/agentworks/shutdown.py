"""Work left to do when Lambda retires an execution environment (the read tally's last
counts). Lambda sends the runtime SIGTERM before it stops only when an extension is
registered, so this registers one of its own that subscribes to no event (as AWS's
graceful-shutdown samples and the Rust runtime do) and runs the callbacks on SIGTERM;
Lambda allows the runtime ~500 ms for them.

Off Lambda (no `AWS_LAMBDA_RUNTIME_API`: tests, the local stack) nothing is registered.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Mapping
from types import FrameType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import urllib.request

EXTENSION_NAME = "agentworks-shutdown"
_callbacks: list[Callable[[], None]] = []
_enabled = False


def on_shutdown(callback: Callable[[], None]) -> None:
    """Runs `callback` at SIGTERM (after enable_in_lambda); a failing one stops no other."""
    _callbacks.append(callback)


def enable_in_lambda(environ: Mapping[str, str] = os.environ) -> bool:
    """Registers the extension and the SIGTERM handler, once, during init (Lambda refuses
    an extension registered later). False when not on Lambda or when registering failed:
    then callbacks simply never run, as before."""
    global _enabled
    api = environ.get("AWS_LAMBDA_RUNTIME_API")
    if _enabled or not api or threading.current_thread() is not threading.main_thread():
        return False
    import json
    import urllib.request  # only on Lambda: a cold start elsewhere pays nothing

    base = f"http://{api}/2020-01-01/extension"
    try:
        registered = urllib.request.urlopen(
            urllib.request.Request(
                f"{base}/register",
                data=json.dumps({"events": []}).encode(),
                headers={"Lambda-Extension-Name": EXTENSION_NAME},
                method="POST",
            ),
            timeout=2,
        )
        identifier = registered.headers["Lambda-Extension-Identifier"]
    except (OSError, KeyError):
        return False
    # An extension must ask for its next event; with none subscribed the call never answers.
    waiting = urllib.request.Request(
        f"{base}/event/next", headers={"Lambda-Extension-Identifier": identifier}
    )
    threading.Thread(target=_wait_forever, args=(waiting,), daemon=True).start()
    signal.signal(signal.SIGTERM, _on_sigterm)
    _enabled = True
    return True


def _wait_forever(request: urllib.request.Request) -> None:
    import urllib.request

    with contextlib.suppress(OSError):
        urllib.request.urlopen(request)


def _on_sigterm(_signum: int, _frame: FrameType | None) -> None:
    for callback in _callbacks:
        with contextlib.suppress(Exception):  # the next callback still runs
            callback()
    sys.exit(0)
