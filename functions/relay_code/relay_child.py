"""Runs one attempt of a relay's entrypoint, in a process of its own (see app.py).

argv: the release's folder, the outcome file. stdin: {"module", "attribute", "input",
"credential"}: the credential is read once, from the pipe, and handed to the SDK in memory.
The outcome file receives {"outcome": "succeeded", "result"} | {"outcome": "failed",
"error"} | {"outcome": "needs_reconciliation", "evidence"}.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import sys
import traceback
from pathlib import Path
from typing import Any

# `python -I` leaves this script's folder off sys.path; the SDK (agentworks_relay) is in it.
sys.path.insert(0, str(Path(__file__).resolve().parent))


def _call(function: Any, value: dict[str, Any]) -> Any:
    from agentworks_relay import Context

    legacy = len(inspect.signature(function).parameters) >= 2  # run(INPUT, ctx)
    result = function(value, Context()) if legacy else function(value)
    if inspect.isawaitable(result):
        result = asyncio.run(_awaited(result))
    return result


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


def _attempt(source: str, spec: dict[str, Any]) -> dict[str, Any]:
    from agentworks_relay import NeedsReconciliation, PlatformError

    sys.path.insert(0, source)
    try:
        module = importlib.import_module(spec["module"])
        function = getattr(module, spec["attribute"])
        result = _call(function, spec["input"])
        json.dumps(result)  # the final JSON must be JSON
    except NeedsReconciliation as uncertain:
        return {"outcome": "needs_reconciliation", "evidence": uncertain.evidence}
    except PlatformError as refused:
        final = refused.status == 401  # the credential is dead: another attempt cannot help
        return {"outcome": "failed", "error": str(refused), "final": final}
    except Exception as error:  # the relay's failure is its outcome, with the traceback logged
        trace = traceback.format_exc(limit=8)
        print(trace, file=sys.stderr, flush=True)
        return {"outcome": "failed", "error": f"{type(error).__name__}: {error}"}
    return {"outcome": "succeeded", "result": result}


def _end_with_parent() -> None:
    """The process that started this one is gone (the local stack was killed): end too,
    rather than run on with a credential nobody will honour."""
    import os
    import threading
    import time

    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(70)

    threading.Thread(target=watch, daemon=True).start()


def main() -> None:
    _end_with_parent()
    source, outcome_path = sys.argv[1], sys.argv[2]
    spec = json.load(sys.stdin)
    from agentworks_relay import _platform

    _platform.receive_credential(spec.pop("credential"))
    outcome = _attempt(source, spec)
    with open(outcome_path, "w", encoding="utf-8") as file:
        json.dump(outcome, file)


if __name__ == "__main__":
    main()
