"""Runs Lambda invocations that moto receives (Step Functions tasks, `lambda:invoke`,
`.waitForTaskToken`) with the real handlers in this process — moto would need Docker.

moto's documented seam is `LambdaFunction._invoke_lambda(self, event)`, which returns
`(payload_json, errored, logs)`. Local stack and tests only; never in a Lambda package.
"""

from __future__ import annotations

import json
import traceback
from collections.abc import Callable
from typing import Any

Dispatch = Callable[[str, Any], Any]  # (function name, event) -> result

_dispatch: Dispatch | None = None
_patched = False


def install(dispatch: Dispatch) -> None:
    """Routes every moto Lambda invocation to `dispatch` (the latest install wins)."""
    global _dispatch, _patched
    _dispatch = dispatch
    if _patched:
        return
    from moto.awslambda.models import LambdaFunction

    from agentworks_local.handlers import FunctionError

    def _invoke_lambda(self: Any, event: Any = None) -> tuple[str, bool, str]:
        if _dispatch is None:
            raise RuntimeError("no local Lambda dispatch installed")
        payload = json.loads(event) if isinstance(event, str | bytes) and event else event
        try:
            result = _dispatch(self.function_name, payload or {})
        except Exception as error:  # a failed invocation is data for the caller
            # The function host wraps what the handler raised; Lambda reports the handler's
            # own error type (an ASL Retry/Catch matches on it, e.g. RelayAttemptFailed).
            cause = error.error if isinstance(error, FunctionError) else error
            body = {"errorMessage": str(cause), "errorType": type(cause).__name__}
            return json.dumps(body), True, traceback.format_exc()
        return json.dumps(result), False, ""

    LambdaFunction._invoke_lambda = _invoke_lambda  # type: ignore[method-assign]
    _patched = True
