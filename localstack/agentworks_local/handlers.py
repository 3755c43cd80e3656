"""Hosts the Lambda functions of template.yaml in this process: the same handler files
(functions/<dir>/app.py, found through each function's CodeUri and Handler) called with a
Lambda-like context, their output kept off the console as CloudWatch Logs would keep it.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import IO, Any

from agentworks_local.template import REPO_ROOT, load_template, resources_of_type

LOCAL_ACCOUNT_ID = "123456789012"
LOCAL_REGION = "us-east-1"

Handler = Callable[[dict[str, Any], Any], Any]


class HandlerMissing(Exception):
    """The function's handler file does not exist (yet)."""


class FunctionError(Exception):
    """The handler raised; on AWS the integration would answer 500."""

    def __init__(self, logical_id: str, error: BaseException) -> None:
        super().__init__(f"{logical_id} raised {type(error).__name__}: {error}")
        self.logical_id = logical_id
        self.error = error


@dataclass(frozen=True)
class FunctionSpec:
    """One AWS::Serverless::Function of the template, as the local host needs it."""

    logical_id: str
    code_dir: Path
    handler: str  # "app.handler": module path inside code_dir, then the attribute
    memory_mb: int
    timeout_seconds: int
    events: dict[str, Any] = field(default_factory=dict)

    @property
    def module_file(self) -> Path:
        module = self.handler.rsplit(".", 1)[0]
        return self.code_dir.joinpath(*module.split(".")).with_suffix(".py")

    @property
    def handler_attribute(self) -> str:
        return self.handler.rsplit(".", 1)[1]

    @property
    def module_name(self) -> str:
        # Every function's file is app.py: a unique name keeps them apart in sys.modules.
        return f"agentworks_fn_{self.code_dir.name}"

    @property
    def function_name(self) -> str:
        return f"agentworks-{self.logical_id}"


def function_specs(template: dict[str, Any] | None = None) -> dict[str, FunctionSpec]:
    """Every serverless function of template.yaml, keyed by logical id."""
    template = template if template is not None else load_template()
    defaults = (template.get("Globals") or {}).get("Function") or {}
    specs = {}
    for logical_id, resource in resources_of_type(template, "AWS::Serverless::Function").items():
        properties = resource.get("Properties") or {}
        specs[logical_id] = FunctionSpec(
            logical_id=logical_id,
            code_dir=REPO_ROOT / str(properties.get("CodeUri", defaults.get("CodeUri", "."))),
            handler=str(properties.get("Handler", defaults.get("Handler", "app.handler"))),
            # Lambda's own defaults when neither the function nor Globals say.
            memory_mb=int(properties.get("MemorySize", defaults.get("MemorySize", 128))),
            timeout_seconds=int(properties.get("Timeout", defaults.get("Timeout", 3))),
            events=properties.get("Events") or {},
        )
    return specs


class LambdaContext:
    """The attributes and method of Lambda's context object that handlers and powertools use."""

    def __init__(self, spec: FunctionSpec, region: str, account_id: str) -> None:
        self.function_name = spec.function_name
        self.function_version = "$LATEST"
        self.invoked_function_arn = (
            f"arn:aws:lambda:{region}:{account_id}:function:{spec.function_name}"
        )
        self.memory_limit_in_mb = spec.memory_mb
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{spec.function_name}"
        self.log_stream_name = f"local/[$LATEST]{uuid.uuid4().hex}"
        self.identity = None
        self.client_context = None
        self._deadline = time.monotonic() + spec.timeout_seconds

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


class _RoutedStream:
    """Stands in for sys.stdout/sys.stderr: writes made while a function runs on this thread
    go to the function log; everything else (banner, request lines) to the console."""

    def __init__(self, console: IO[str], output: FunctionOutput) -> None:
        self._console = console
        self._output = output

    def write(self, text: str) -> int:
        if self._output.capturing():
            return self._output.write(text)
        return self._console.write(text)

    def flush(self) -> None:
        if self._output.capturing():
            self._output.flush()
        else:
            self._console.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._console, name)


class FunctionOutput:
    """The local CloudWatch Logs: one file that every function's stdout and stderr go to
    (powertools JSON logs, EMF metric blobs, tracebacks), so the console stays readable."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._local = threading.local()
        self._lock = threading.Lock()
        self._file: IO[str] | None = None
        self._saved: tuple[Any, Any] | None = None

    def install(self) -> None:
        if self.path is not None:
            # The log sits next to token-holding configs: create their directory private.
            if not self.path.parent.is_dir():
                self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                self.path.parent.chmod(0o700)
            self._file = self.path.open("w", encoding="utf-8", buffering=1)
        self._saved = (sys.stdout, sys.stderr)
        sys.stdout = _RoutedStream(sys.stdout, self)
        sys.stderr = _RoutedStream(sys.stderr, self)

    def uninstall(self) -> None:
        if self._saved is not None:
            sys.stdout, sys.stderr = self._saved
            self._saved = None
        if self._file is not None:
            with self._lock:
                self._file.close()
                self._file = None

    def capturing(self) -> bool:
        return bool(getattr(self._local, "depth", 0))

    def write(self, text: str) -> int:
        with self._lock:
            if self._file is not None:
                self._file.write(text)
        return len(text)

    def flush(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.flush()

    def __enter__(self) -> FunctionOutput:
        self._local.depth = getattr(self._local, "depth", 0) + 1
        return self

    def __exit__(self, *exc: object) -> None:
        self._local.depth -= 1


class FunctionHost:
    """Loads handlers on first use (by file path, as Lambda does from CodeUri) and invokes them."""

    def __init__(
        self,
        specs: dict[str, FunctionSpec] | None = None,
        output: FunctionOutput | None = None,
        region: str = LOCAL_REGION,
        account_id: str = LOCAL_ACCOUNT_ID,
    ) -> None:
        self.specs = specs if specs is not None else function_specs()
        self.output = output or FunctionOutput(None)
        self.region = region
        self.account_id = account_id
        self._handlers: dict[str, Handler] = {}
        self._lock = threading.Lock()

    def spec(self, logical_id: str) -> FunctionSpec:
        return self.specs[logical_id]

    def handler(self, logical_id: str) -> Handler:
        """The function's handler; HandlerMissing while its file does not exist (not cached,
        so a handler written while the stack runs is picked up on the next request)."""
        loaded = self._handlers.get(logical_id)
        if loaded is not None:
            return loaded  # no lock once loaded: a slow first import must not stall the rest
        with self._lock:
            if logical_id not in self._handlers:
                self._handlers[logical_id] = self._load(self.specs[logical_id])
            return self._handlers[logical_id]

    def _load(self, spec: FunctionSpec) -> Handler:
        path = spec.module_file
        if not path.is_file():
            raise HandlerMissing(f"{spec.logical_id} has no handler file {path}")
        module_spec = importlib.util.spec_from_file_location(spec.module_name, path)
        if module_spec is None or module_spec.loader is None:
            raise HandlerMissing(f"{spec.logical_id}: cannot load {path}")
        module: ModuleType = importlib.util.module_from_spec(module_spec)
        # As on Lambda, the function's folder is on sys.path: its sibling modules import by
        # name (functions/relay_code/relay_isolation.py).
        if str(spec.code_dir) not in sys.path:
            sys.path.append(str(spec.code_dir))
        sys.modules[spec.module_name] = module
        with self.output:  # import-time output (and an import error) is function output too
            try:
                module_spec.loader.exec_module(module)
            except BaseException:
                traceback.print_exc()
                del sys.modules[spec.module_name]
                raise
        handler = getattr(module, spec.handler_attribute, None)
        if not callable(handler):
            raise HandlerMissing(f"{path} has no callable {spec.handler_attribute!r}")
        return handler

    def invoke(self, logical_id: str, event: dict[str, Any]) -> Any:
        """Runs the handler once, as a synchronous Lambda invoke would."""
        spec = self.specs[logical_id]
        try:
            handler = self.handler(logical_id)
        except HandlerMissing:
            raise
        except Exception as error:  # an init error: on AWS the invoke fails, the API says 500
            raise FunctionError(logical_id, error) from error
        context = LambdaContext(spec, self.region, self.account_id)
        with self.output:
            try:
                return handler(event, context)
            except Exception as error:
                # Lambda logs the unhandled error to the function's log stream.
                traceback.print_exc()
                raise FunctionError(logical_id, error) from error

    def functions_with_event(self, event_type: str) -> list[FunctionSpec]:
        """Functions that declare at least one event source of this type (HttpApi, Schedule)."""
        return [
            spec
            for spec in self.specs.values()
            if any((e or {}).get("Type") == event_type for e in spec.events.values())
        ]
