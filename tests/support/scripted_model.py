"""A scripted model server for the real Claude Code and Codex (tests/clis): it stands in for
Anthropic's Messages API and OpenAI's Responses API on 127.0.0.1, plays a script of model
turns and records every request it receives, so a test can assert what the CLI sent the
model (a delivered message appears in the next request's text) without any network.

A turn is `Text("…")` or `ToolCall("name", {...})`; each conversation request (one that
carries the CLI's tools) takes the next turn, and when the script runs out the server
answers `Text(default_text)`. Side requests a CLI makes on its own (Claude Code's title or
topic requests without tools, token counts) get a harmless answer and never consume a turn.

Shapes, as the CLIs parse them:
- Anthropic: POST /v1/messages with `stream: true` → SSE `message_start`,
  `content_block_start`, `content_block_delta` (`text_delta` / `input_json_delta`),
  `content_block_stop`, `message_delta` (stop_reason `end_turn` / `tool_use`),
  `message_stop`; without `stream`, one JSON message. POST /v1/messages/count_tokens →
  `{"input_tokens": N}`.
- OpenAI Responses: POST /v1/responses (or /responses) → SSE `response.created`,
  `response.output_item.added`, `response.output_text.delta`, `response.output_item.done`
  (an assistant `message` or a `function_call` with `call_id`, `name`, `arguments`),
  `response.completed` with usage.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "scripted-model"


@dataclass(frozen=True)
class Text:
    """The model answers with this text and ends its turn."""

    text: str


@dataclass(frozen=True)
class ToolCall:
    """The model calls the tool `name` with `input` (the CLI runs it and asks again).
    `input` may be a function of the request being answered (a `Recorded`), for arguments
    the model would read from its context, such as a delivered message's inbox id."""

    name: str
    input: dict[str, Any] | Callable[[Recorded], dict[str, Any]] = field(default_factory=dict)

    def arguments(self, request: Recorded) -> dict[str, Any]:
        return self.input(request) if callable(self.input) else self.input


Turn = Text | ToolCall


@dataclass
class Recorded:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    turn: Turn | None  # the scripted turn it was answered with (None: a side request)

    @property
    def text(self) -> str:
        """Every string in the body, joined: what a test searches for a message's text."""
        return "\n".join(_strings(self.body))


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


class ScriptedModel:
    """The server; use as a context manager. `url` is its base (http://127.0.0.1:PORT)."""

    def __init__(self, script: list[Turn] | None = None, default_text: str = "Done.") -> None:
        self._script: list[Turn] = list(script or [])
        self.default_text = default_text
        self.requests: list[Recorded] = []
        self.errors: list[str] = []  # a scripted turn that could not be played (tests check)
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> ScriptedModel:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def add(self, *turns: Turn) -> None:
        """Append turns to the script (for the CLI's next run)."""
        with self._lock:
            self._script.extend(turns)

    def conversation(self) -> list[Recorded]:
        """The requests that took a scripted turn (the CLI's conversation with the model)."""
        with self._lock:
            return [r for r in self.requests if r.turn is not None]

    def _next_turn(self) -> Turn:
        with self._lock:
            return self._script.pop(0) if self._script else Text(self.default_text)

    def _record(self, recorded: Recorded) -> None:
        with self._lock:
            self.requests.append(recorded)

    def next_id(self, prefix: str) -> str:
        return f"{prefix}_{next(self._ids):06d}"


def _handler_for(model: ScriptedModel) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def do_HEAD(self) -> None:
            self._record(None, None)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_GET(self) -> None:
            self._record(None, None)
            self._json(404, {"type": "error", "error": {"type": "not_found_error",
                                                        "message": "scripted model"}})  # fmt: skip

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body: Any = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode(errors="replace")
            path = self.path.split("?", 1)[0]
            try:
                self._route(path, body)
            except Exception as error:  # a broken script: 400, which the CLIs do not retry
                model.errors.append(f"{type(error).__name__}: {error}")
                self._json(400, {"type": "error", "error": {"type": "invalid_request_error",
                                                            "message": str(error)}})  # fmt: skip

        def _route(self, path: str, body: Any) -> None:
            if path.endswith("/messages/count_tokens"):
                self._record(body, None)
                self._json(200, {"input_tokens": 42})
            elif path.endswith("/messages"):
                self._anthropic(body)
            elif path.endswith("/responses"):
                self._responses(body)
            else:
                self._record(body, None)
                self._json(404, {"error": {"message": f"not scripted: {path}"}})

        # ---- Anthropic Messages ----

        def _anthropic(self, body: Any) -> None:
            conversation = isinstance(body, dict) and bool(body.get("tools"))
            turn = model._next_turn() if conversation else Text("Scripted side answer.")
            recorded = self._record(body, turn if conversation else None)
            message_id = model.next_id("msg")
            if isinstance(turn, Text):
                block: dict[str, Any] = {"type": "text", "text": turn.text}
                stop_reason = "end_turn"
            else:
                arguments = turn.arguments(recorded)
                block = {"type": "tool_use", "id": model.next_id("toolu"), "name": turn.name,
                         "input": arguments}  # fmt: skip
                stop_reason = "tool_use"
            usage = {"input_tokens": 12, "output_tokens": 6, "cache_creation_input_tokens": 0,
                     "cache_read_input_tokens": 0}  # fmt: skip
            requested_model = body.get("model", MODEL) if isinstance(body, dict) else MODEL
            if not (isinstance(body, dict) and body.get("stream")):
                self._json(200, {"id": message_id, "type": "message", "role": "assistant",
                                 "model": requested_model, "content": [block],
                                 "stop_reason": stop_reason, "stop_sequence": None,
                                 "usage": usage})  # fmt: skip
                return
            events: list[tuple[str, dict[str, Any]]] = [
                ("message_start", {"type": "message_start", "message": {
                    "id": message_id, "type": "message", "role": "assistant",
                    "model": requested_model, "content": [], "stop_reason": None,
                    "stop_sequence": None, "usage": {**usage, "output_tokens": 1}}}),
            ]  # fmt: skip
            if isinstance(turn, Text):
                events += [
                    ("content_block_start", {"type": "content_block_start", "index": 0,
                                             "content_block": {"type": "text", "text": ""}}),
                    ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                             "delta": {"type": "text_delta", "text": turn.text}}),
                ]  # fmt: skip
            else:
                events += [
                    ("content_block_start", {"type": "content_block_start", "index": 0,
                                             "content_block": {**block, "input": {}}}),
                    ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                             "delta": {"type": "input_json_delta",
                                                       "partial_json": json.dumps(arguments)}}),
                ]  # fmt: skip
            events += [
                ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                ("message_delta", {"type": "message_delta",
                                   "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                                   "usage": {"output_tokens": 6}}),
                ("message_stop", {"type": "message_stop"}),
            ]  # fmt: skip
            self._sse(events)

        # ---- OpenAI Responses ----

        def _responses(self, body: Any) -> None:
            turn = model._next_turn()
            recorded = self._record(body, turn)
            response_id = model.next_id("resp")
            item_id = model.next_id("item")
            if isinstance(turn, Text):
                item: dict[str, Any] = {
                    "type": "message", "role": "assistant", "id": item_id, "status": "completed",
                    "content": [{"type": "output_text", "text": turn.text, "annotations": []}],
                }  # fmt: skip
                added = {**item, "status": "in_progress", "content": []}
            else:
                item = {"type": "function_call", "id": item_id, "call_id": model.next_id("call"),
                        "name": turn.name, "arguments": json.dumps(turn.arguments(recorded)),
                        "status": "completed"}  # fmt: skip
                added = {**item, "status": "in_progress", "arguments": ""}
            created = {"id": response_id, "object": "response", "status": "in_progress",
                       "model": MODEL, "output": []}  # fmt: skip
            events: list[tuple[str, dict[str, Any]]] = [
                ("response.created", {"type": "response.created", "response": created}),
                ("response.output_item.added", {"type": "response.output_item.added",
                                                "output_index": 0, "item": added}),
            ]  # fmt: skip
            if isinstance(turn, Text):
                events.append(("response.output_text.delta", {
                    "type": "response.output_text.delta", "item_id": item_id,
                    "output_index": 0, "content_index": 0, "delta": turn.text}))  # fmt: skip
            events += [
                ("response.output_item.done", {"type": "response.output_item.done",
                                               "output_index": 0, "item": item}),
                ("response.completed", {"type": "response.completed", "response": {
                    **created, "status": "completed", "output": [item],
                    "usage": {"input_tokens": 12, "input_tokens_details": {"cached_tokens": 0},
                              "output_tokens": 6,
                              "output_tokens_details": {"reasoning_tokens": 0},
                              "total_tokens": 18}}}),
            ]  # fmt: skip
            self._sse(events)

        # ---- plumbing ----

        def _record(self, body: Any, turn: Turn | None) -> Recorded:
            recorded = Recorded(self.command, self.path, dict(self.headers), body, turn)
            model._record(recorded)
            return recorded

        def _json(self, status: int, document: Any) -> None:
            data = json.dumps(document).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _sse(self, events: list[tuple[str, dict[str, Any]]]) -> None:
            data = b"".join(
                f"event: {name}\ndata: {json.dumps(payload)}\n\n".encode()
                for name, payload in events
            )
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler
