"""The local stack: the whole product on this machine, on embedded AWS (moto).

The same handlers as on Lambda run behind a local HTTP API (gateway.py), with the scheduler
tick and a TTL sweeper (scheduler.py); the state is kept in a data folder
(durable_state.py) unless the stack is ephemeral. `DevStack` starts and stops the parts in
order; dev_command.py is the `agentworks dev` command around it. Nothing here is part of a
Lambda package.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from agentworks.outbound.urls import ALLOW_LOOPBACK_ENV
from agentworks_local import in_process, lambda_seam, unavailable
from agentworks_local.aws_auth import StackKeys
from agentworks_local.configfile import (
    ConfigError,
    default_config_path,
    read_config,
    write_config,
)
from agentworks_local.display_paths import home_relative
from agentworks_local.durable_state import (
    DataDir,
    DataDirError,
    DurableState,
    RestoreReport,
)
from agentworks_local.failure_destinations import FailureQueues
from agentworks_local.gateway import Gateway, GatewayServer, free_port_after, port_in_use
from agentworks_local.handlers import LOCAL_REGION, FunctionHost, FunctionOutput
from agentworks_local.moto_patches import dynamodb_lock
from agentworks_local.push_server import PushServer
from agentworks_local.relay_sandbox import RelaySandbox
from agentworks_local.scheduler import Scheduler, TtlSweeper, ttl_tables
from agentworks_local.stream_poller import StreamPoller, stream_sources
from agentworks_local.waiting_calls import Resumed, resume_calls

# What every request needs is imported at start; the rest (MCP, Tick) on first use.
EAGER_FUNCTIONS = ("ApiFunction",)
RESOURCE_PREFIX = "agentworks"
FUNCTION_LOG_NAME = "dev-functions.log"


class StartError(Exception):
    """The stack could not start; `exit_code` says how the CLI should exit."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def _no_proxy_for_loopback() -> None:
    # boto3 and urllib honour HTTP(S)_PROXY: loopback traffic to moto must never leave.
    for name in ("NO_PROXY", "no_proxy"):
        hosts = [h for h in os.environ.get(name, "").split(",") if h]
        for host in ("127.0.0.1", "localhost"):
            if host not in hosts:
                hosts.append(host)
        os.environ[name] = ",".join(hosts)


def _aws_environment(moto_url: str, moto_port: int, keys: StackKeys) -> dict[str, str]:
    """Points every AWS SDK call of this process at the embedded moto server. (Set after
    start: /proc/PID/environ shows a process's starting environment, not these.)"""
    return {
        "MOTO_PORT": str(moto_port),  # moto's Step Functions runner calls back on this port
        "AWS_ENDPOINT_URL": moto_url,
        "AWS_DEFAULT_REGION": LOCAL_REGION,
        "AWS_REGION": LOCAL_REGION,
        "AWS_ACCESS_KEY_ID": keys.access_key_id,
        "AWS_SECRET_ACCESS_KEY": keys.secret_access_key,
        "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
    }


def _powertools_environment() -> dict[str, str]:
    return {
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_NAMESPACE": "AgentWorks",
        "POWERTOOLS_SERVICE_NAME": "agentworks",
        # A developer may ask for more: POWERTOOLS_LOG_LEVEL=INFO agentworks dev
        "POWERTOOLS_LOG_LEVEL": os.environ.get("POWERTOOLS_LOG_LEVEL", "WARNING"),
    }


def route_aws_logs(output: FunctionOutput) -> None:
    """moto's server (werkzeug) logs each AWS call it serves, and a traceback for each it
    cannot; moto, botocore and the other libraries log warnings from their own threads.
    AWS-side detail, so it all goes to the function log: the console is for the API's
    request lines. (Unrouted, werkzeug adds its own stderr handler on first use and the
    rest reach stderr through logging's last-resort handler.)"""
    aws = logging.getLogger("werkzeug")
    aws.setLevel(logging.ERROR)
    aws.handlers[:] = [logging.StreamHandler(output)]
    aws.propagate = False
    logging.getLogger().handlers[:] = [logging.StreamHandler(output)]


def _keep_remote_config(path: Path) -> Path | None:
    """A config for another server (e.g. a deployed stack) is copied aside before the local
    admin config replaces it; a previous local stack's config is simply replaced."""
    try:
        previous = read_config(path)
    except ConfigError:
        return None
    host = urlsplit(str(previous.get("url", ""))).hostname or ""
    if host in ("127.0.0.1", "localhost", "::1", "0.0.0.0", ""):
        return None
    kept = path.with_name(f"{path.name}.bak")
    write_config(kept, previous)
    return kept


@dataclass
class Admin:
    account_id: str
    connection_id: str
    token: str


class DevStack:
    """Starts and stops the local stack's parts in order (dev_command.py adds signals)."""

    def __init__(
        self,
        port: int = 8787,
        config_path: Path | None = None,
        host: str = "127.0.0.1",
        ready_file: Path | None = None,
        tick_seconds: float = 5.0,
        sweep_seconds: float = 5.0,
        ttl_lag_seconds: float = 0.0,
        data_dir: Path | None = None,
        push_port: int | None = None,
        fsync_every: float | None = None,
        allow_loopback_webhooks: bool = False,
        allow_unsandboxed_relays: bool = False,
    ) -> None:
        # Outbound URLs (agentworks.outbound) may reach this machine: a developer's receiver.
        self.allow_loopback_webhooks = allow_loopback_webhooks
        # Without a sandbox only the first account's relay code runs, unless this is set.
        self.allow_unsandboxed_relays = allow_unsandboxed_relays
        self.relay_sandbox = RelaySandbox("", "not checked yet")
        # None: ephemeral, everything in memory (tests, experiments).
        self.data = DataDir(data_dir) if data_dir is not None else None
        self.fsync_every = fsync_every  # None: the journal's default (durable_state.py)
        self.restored = RestoreReport()
        self.resumed = Resumed()
        self.resumed_relays: list[str] = []
        self.config_path = (config_path or default_config_path()).expanduser().absolute()
        self.host = host
        self.requested_port = port
        # The push channel's WebSocket listens next to the API (any free port with port 0).
        self.requested_push_port = push_port if push_port is not None else (port + 1 if port else 0)
        self.push_port_chosen = push_port is not None  # else any free port will do
        self.push: PushServer | None = None
        self.streams: StreamPoller | None = None
        self.ready_file = ready_file
        self.tick_seconds = tick_seconds
        self.sweep_seconds = sweep_seconds
        self.ttl_lag_seconds = ttl_lag_seconds
        self.output = FunctionOutput(self.config_path.parent / FUNCTION_LOG_NAME)
        self.functions = FunctionHost(output=self.output)
        self.server: GatewayServer | None = None
        self.moto: Any = None
        self.moto_url = ""
        # The embedded AWS answers only these (aws_auth.py): new at every start.
        self.aws_keys = StackKeys.generate()
        self.scheduler: Scheduler | None = None
        self.admin: Admin | None = None
        self.kept_config: Path | None = None
        self._serving: threading.Thread | None = None

    @property
    def url(self) -> str:
        # Listening on every interface is reached through loopback from this machine.
        host = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}.get(self.host, self.host)
        host = f"[{host}]" if ":" in host else host
        port = self.server.port if self.server else self.requested_port
        return f"http://{host}:{port}"

    @property
    def push_url(self) -> str:
        port = self.push.port if self.push else self.requested_push_port
        return f"ws://{self.url.split('://', 1)[1].rsplit(':', 1)[0]}:{port}"

    def _port_taken(self) -> str:
        # The next port up is often the running stack's push channel: suggest one that is
        # free now, with its neighbour for this stack's own push channel.
        said = f"port {self.requested_port} on {self.host} is already in use"
        free = free_port_after(self.host, self.requested_port)
        if free is None:
            return f"{said}; stop what uses it or pick a free port with --port N"
        return (
            f"{said} (another agentworks dev?); stop what uses it or pick a free port: "
            f"agentworks dev --port {free} (from the Makefile: make run PORT={free})"
        )

    def start(self) -> None:
        """Everything up and listening, or StartError (with what started stopped again)."""
        try:
            self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self) -> None:
        # Bind first: a busy port is reported before moto and the handlers start.
        gateway = Gateway(self.functions, warn=self._warn)
        try:
            self.server = GatewayServer(self.host, self.requested_port, gateway)
        except OSError as error:
            if port_in_use(error):
                raise StartError(self._port_taken(), 2) from None
            raise StartError(
                f"cannot listen on {self.host}:{self.requested_port}: {error.strerror or error}", 2
            ) from None

        try:
            self.push = self._push_server()
        except OSError as error:
            if port_in_use(error):
                raise StartError(
                    f"port {self.requested_push_port} (the push channel's WebSocket) on "
                    f"{self.host} is already in use; pick another with --push-port N",
                    2,
                ) from None
            raise
        gateway.manage_connections = self.push.manage

        if self.data is not None:
            try:
                self.data.lock()  # before anything reads or writes the folder
            except DataDirError as error:
                raise StartError(str(error), 2) from None

        _no_proxy_for_loopback()
        os.environ.update(_powertools_environment())
        # The handlers run in this process: they read the option from the environment, as
        # they would on Lambda (where the template never sets it). Only the flag turns it on.
        if self.allow_loopback_webhooks:
            os.environ[ALLOW_LOOPBACK_ENV] = "1"
        else:
            os.environ.pop(ALLOW_LOOPBACK_ENV, None)
        self._start_moto()
        os.environ.update(_aws_environment(self.moto_url, self.moto.port, self.aws_keys))
        # Services moto lacks (Bedrock) answer with an error that names the local stack.
        unavailable.install()
        self._enable_step_functions()

        import boto3

        from agentworks_local.template import create_resources

        session = boto3.Session()
        resources = create_resources(session, prefix=RESOURCE_PREFIX)
        os.environ.update(resources.environment())
        os.environ["PLATFORM_API_URL"] = self.url  # where relay code calls back (issue 9)
        os.environ["PUSH_ENDPOINT"] = self.url  # the notifier posts to /@connections/{id} here
        os.environ["PUSH_URL"] = self.push_url  # the web pages follow their runs on it
        # Step Functions tasks invoke the real handlers in this process.
        lambda_seam.install(
            lambda name, event: self.functions.invoke(resources.logical_id_of(name), event)
        )

        # Handlers print to stdout/stderr as on Lambda; that output goes to the function log.
        self.output.install()
        for function in EAGER_FUNCTIONS:
            if function in self.functions.specs:
                self.functions.handler(function)

        self.admin = self._saved_admin() or self._bootstrap_admin()
        self._isolate_relays(self.admin.account_id)
        if not self.restored.empty:
            self.resumed = self._resume_calls(session, resources)
            # Relay runs whose executions the stop lost continue from their checkpoints.
            from agentworks.runtime import services

            self.resumed_relays = services().relays.reconciler.resume_all()
        self.kept_config = _keep_remote_config(self.config_path)
        write_config(
            self.config_path,
            {
                "url": self.url,
                "token": self.admin.token,
                "account_id": self.admin.account_id,
                "connection_id": self.admin.connection_id,
                "push_url": self.push_url,
                # For `aws --endpoint-url` and boto3 against the embedded AWS: nothing else
                # it answers.
                "aws_endpoint_url": self.moto_url,
                "aws_access_key_id": self.aws_keys.access_key_id,
                "aws_secret_access_key": self.aws_keys.secret_access_key,
                "aws_region": LOCAL_REGION,
            },
        )

        from agentworks_local.dynamodb_index import ttl_candidates

        sweeper = TtlSweeper(
            session.client("dynamodb"),
            ttl_tables(resources),
            lag_seconds=self.ttl_lag_seconds,
            candidates=ttl_candidates(),  # the TTL index of moto's tables, not a scan of each
        )
        # What an asynchronous path gives up on goes to the template's queues, as on AWS.
        failures = FailureQueues(session.client("sqs"), resources)
        self.scheduler = Scheduler(
            self.functions,
            sweeper,
            self.tick_seconds,
            self.sweep_seconds,
            warn=self._warn,
            failures=failures,
        )
        self.scheduler.start()
        # The messages table's stream feeds the notifier, as Lambda's poller does on AWS.
        self.streams = StreamPoller(
            self.functions,
            stream_sources(self.functions, resources),
            dynamodb_lock(),
            self._warn,
            failures=failures,
        )
        self.streams.start()
        self.push.start()

        self.server.server_activate()
        self._serving = threading.Thread(
            target=self.server.serve_forever, name="agentworks-gateway", daemon=True
        )
        self._serving.start()
        if self.ready_file is not None:
            self._write_ready_file(self.ready_file)

    def _isolate_relays(self, first_account: str) -> None:
        """Before any relay runs (a restored stack resumes some at once)."""
        from agentworks_local import relay_sandbox

        self.relay_sandbox = relay_sandbox.detect()
        for name in (relay_sandbox.SANDBOX_ENV, relay_sandbox.UNSANDBOXED_ACCOUNTS_ENV):
            os.environ.pop(name, None)
        os.environ.update(
            self.relay_sandbox.environment(first_account, self.allow_unsandboxed_relays)
        )

    def _push_server(self) -> PushServer:
        """On the next port by default; a busy one is only an error when it was asked for
        (`make run` next to something on 8788 still starts, on a free port it reports)."""
        try:
            return PushServer(self.host, self.requested_push_port, self.functions, self._warn)
        except OSError as error:
            if self.push_port_chosen or not port_in_use(error):
                raise
            return PushServer(self.host, 0, self.functions, self._warn)

    def _resume_calls(self, session: Any, resources: Any) -> Resumed:
        """The restart lost the executions of open calls: waits resume, the rest end."""
        from agentworks.runtime import services

        return resume_calls(
            session.client("dynamodb"),
            resources.tables["WorkTable"],
            session.client("stepfunctions"),
            resources.state_machines["FunctionCallStateMachine"],
            services().crews.reconciler.interrupt,
        )

    def _saved_admin(self) -> Admin | None:
        """The admin of a restored account, when its token still authenticates."""
        if self.data is None or self.restored.empty or not self.data.admin.exists():
            return None
        from agentworks.errors import Unauthenticated
        from agentworks.runtime import services

        try:
            saved = json.loads(self.data.admin.read_text(encoding="utf-8"))
            services().identity.authenticate(saved["token"])
        except (OSError, ValueError, KeyError, Unauthenticated):
            self._warn("warning: the saved admin token no longer works; a new account is made")
            return None
        return Admin(saved["account_id"], saved["connection_id"], saved["token"])

    def _bootstrap_admin(self) -> Admin:
        from agentworks.runtime import services

        issued = services().identity.bootstrap("local")  # A6
        admin = Admin(
            account_id=issued.connection.account_id,
            connection_id=issued.connection.connection_id,
            token=issued.token,
        )
        if self.data is not None:
            write_config(self.data.admin, dict(vars(admin)))
        return admin

    def _start_moto(self) -> None:
        from agentworks_local import moto_patches
        from agentworks_local.aws_server import AwsServer

        moto_patches.apply()  # the in-process server shares moto's modules
        route_aws_logs(self.output)
        durable = None
        if self.data is not None:
            durable = (
                DurableState(self.data)
                if self.fsync_every is None
                else DurableState(self.data, sync_every=self.fsync_every)
            )
        self.moto = AwsServer(durable, keys=self.aws_keys)
        if self.data is not None and self.data.holds_state():
            self._warn(f"Restoring the saved state from {home_relative(self.data.path)}…")
        try:
            self.restored = self.moto.restore()
        except DataDirError as error:
            raise StartError(str(error)) from None
        self.moto.start()
        self.moto_url = self.moto.url
        # This process's own AWS calls skip the socket (see in_process.py).
        in_process.install(self.moto.local_app, self.moto_url)

    def _enable_step_functions(self) -> None:
        """moto's runner is off by default; switched on in process (the socket would ask
        for a signature moto's config endpoint has no place for)."""
        body = json.dumps({"stepfunctions": {"execute_state_machine": True}}).encode()
        environ = in_process.wsgi_environ(
            "POST", "/moto-api/config", "", {"Content-Type": "application/json"}, body,
            urlsplit(self.moto_url).netloc,
        )  # fmt: skip
        status, _, answer = in_process.call_app(self.moto.moto_app, environ)
        if not 200 <= status < 300:  # moto answers 201
            raise StartError(f"the embedded AWS refused its configuration: {answer[:200]!r}")

    def _write_ready_file(self, path: Path) -> None:
        note = {
            "url": self.url,
            "mcp_url": f"{self.url}/mcp",
            "push_url": self.push_url,
            "moto_url": self.moto_url,
            "config": str(self.config_path),
            "function_log": str(self.output.path),
            "pid": os.getpid(),
        }
        path = path.expanduser()
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(json.dumps(note, indent=2) + "\n", encoding="utf-8")
        tmp.replace(path)

    def stop(self) -> None:
        """Stops what started, newest first; safe to call more than once."""
        if self.push is not None:
            self.push.stop()
            self.push = None
        if self.streams is not None:
            self.streams.stop()
            self.streams = None
        if self.server is not None:
            if self._serving is not None:
                self.server.shutdown()
                self._serving.join(5)
                self._serving = None
            self.server.server_close()
            self.server = None
        if self.scheduler is not None:
            if not self.scheduler.stop(10):
                self._warn("warning: the scheduler was still busy at shutdown")
            self.scheduler = None
        if self.moto is not None:
            in_process.uninstall()
            self.moto.stop()  # a durable stack folds its journal into the snapshot here
            self.moto = None
        if self.data is not None:
            self.data.unlock()
        self.output.uninstall()

    def _warn(self, line: str) -> None:
        with contextlib.suppress(OSError, ValueError):  # a closed console is no reason to fail
            print(line, file=sys.stderr, flush=True)
