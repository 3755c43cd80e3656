"""Issue 23: Powertools' logger keeps appended keys (`account_id`, `connection_id`,
`run_id`, `call_id`) from one invocation into the next on a warm container unless each
handler clears them (`inject_lambda_context(clear_state=True)`). Here: the JSON log lines
of a second invocation carry none of the first's keys, and every function's handler clears
its logger's state (read off the handler itself)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentworks.observability import logger
from tests.support.handlers import LambdaContext, http_event, load_handler

FUNCTIONS = Path(__file__).resolve().parents[2] / "functions"
# Relay code runs the standard library only (its package is its own folder, no layer):
# it has no Powertools logger, so no state to keep.
NO_POWERTOOLS_LOGGER = {"relay_code"}


class LogLines(logging.Handler):
    """The JSON lines the shared Powertools logger writes, formatted as it formats them."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(logger.registered_formatter)
        self.lines: list[dict[str, Any]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(json.loads(self.format(record)))

    def probes(self) -> list[dict[str, Any]]:
        return [line for line in self.lines if line.get("message") == "probe"]


@pytest.fixture
def log_lines() -> Iterator[LogLines]:
    captured = LogLines()
    logger._logger.addHandler(captured)
    try:
        yield captured
    finally:
        logger._logger.removeHandler(captured)
        logger.clear_state()


def _probing(inner: Any) -> Any:
    """`inner`, then a log line written inside the same invocation (what any line the code
    logs there would carry)."""

    def probed(*args: Any) -> Any:
        answer = inner(*args)
        logger.info("probe")
        return answer

    return probed


def test_an_unauthenticated_request_logs_nothing_of_the_previous_callers(
    stack: Any, log_lines: LogLines, monkeypatch: pytest.MonkeyPatch
) -> None:
    api = load_handler("api")
    monkeypatch.setattr(api, "resolve", _probing(api.resolve))
    me = stack.principal(stack.admin_token)
    first = api.handler(http_event("GET", "/v1/whoami", token=stack.admin_token), LambdaContext())
    assert first["statusCode"] == 200
    second = api.handler(http_event("GET", "/v1/openapi.json"), LambdaContext())
    assert second["statusCode"] == 200
    authenticated, anonymous = log_lines.probes()
    # The first line shows the keys are there to leak…
    assert authenticated["account_id"] == me.account_id
    assert authenticated["connection_id"] == me.connection_id
    # …and the next invocation's line carries none of them.
    assert "account_id" not in anonymous and "connection_id" not in anonymous


def test_each_runner_invocation_logs_its_own_ids_only(
    log_lines: LogLines, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One process serving several handlers (a warm container, or the local stack)."""

    class Engine:
        def handle(self, event: dict[str, Any], *time_left: Any) -> dict[str, Any]:
            logger.info("probe")
            return {}

    class Services:
        class crews:
            runner = Engine()

    workflow_runner, step_runner = load_handler("workflow_runner"), load_handler("step_runner")
    monkeypatch.setattr(workflow_runner, "workflow_engine", lambda: Engine())
    monkeypatch.setattr(step_runner, "services", lambda: Services())
    workflow_runner.handler({"run_id": "wrun_first", "action": "start"}, LambdaContext())
    step_runner.handler({"call_id": "call_second", "action": "turn"}, LambdaContext())
    workflow_runner.handler({"run_id": "wrun_third", "action": "finish"}, LambdaContext())
    first, second, third = log_lines.probes()
    assert (first["run_id"], first["action"]) == ("wrun_first", "start")
    assert (second["call_id"], second["action"]) == ("call_second", "turn")
    assert "run_id" not in second
    assert third["run_id"] == "wrun_third" and "call_id" not in third


def _clears_state(handler: Any) -> bool | None:
    """The `clear_state` that Powertools' inject_lambda_context closed over, found along the
    handler's chain of wrappers (None when no such decorator wraps it)."""
    while handler is not None:
        code, cells = getattr(handler, "__code__", None), getattr(handler, "__closure__", None)
        if code is not None and cells and "clear_state" in code.co_freevars:
            return bool(cells[code.co_freevars.index("clear_state")].cell_contents)
        handler = getattr(handler, "__wrapped__", None)
    return None


@pytest.mark.parametrize(
    "function", sorted(p.parent.name for p in FUNCTIONS.glob("*/app.py")), ids=str
)
def test_every_handler_clears_the_loggers_state_per_invocation(function: str) -> None:
    module = load_handler(function)
    handler = module.handler
    if function in NO_POWERTOOLS_LOGGER:
        assert _clears_state(handler) is None
        used = {
            str(getattr(value, "__module__", None) or getattr(value, "__name__", ""))
            for value in vars(module).values()
        }
        assert not [n for n in used if n.split(".")[0] in ("agentworks", "aws_lambda_powertools")]
        return
    assert _clears_state(handler) is True, f"functions/{function}: clear_state=True missing"
