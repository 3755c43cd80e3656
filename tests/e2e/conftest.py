"""The e2e fixture: the real local stack (`agentworks dev`) as its own process, once per module.

`local_stack` yields `.url`, `.admin_config` (Path of the admin CLI config the stack wrote),
`.env` (os.environ with AGENTWORKS_CONFIG set to that config) and `.moto_url`; at the end it
stops the stack with SIGINT and asserts a clean exit. Under xdist a worker that runs tests of
a module starts its own stack for them.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

START_TIMEOUT = 60.0
STOP_TIMEOUT = 10.0

# Loopback requests must never go through a proxy from the environment.
_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def http(
    method: str,
    url: str,
    token: str | None = None,
    body: Any = None,
    timeout: float = 35.0,
) -> tuple[int, Any, dict[str, str]]:
    """(status, parsed JSON body or None, headers) — error statuses are answers, not raises."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with _opener.open(request, timeout=timeout) as response:
            status, raw, headers = response.status, response.read(), dict(response.headers)
    except urllib.error.HTTPError as error:
        status, raw, headers = error.code, error.read(), dict(error.headers)
    return status, (json.loads(raw) if raw else None), headers


@dataclass
class LocalStack:
    url: str
    admin_config: Path
    env: dict[str, str]
    moto_url: str
    process: subprocess.Popen[bytes]
    stdout_path: Path
    stderr_path: Path
    ready: dict[str, Any] = field(default_factory=dict)

    @property
    def admin_token(self) -> str:
        return str(json.loads(self.admin_config.read_text())["token"])

    def aws(self, service: str) -> Any:
        """A boto3 client of the embedded AWS, with the keys the stack wrote to its admin
        config (the only ones it answers)."""
        import boto3

        config = json.loads(self.admin_config.read_text())
        return boto3.client(
            service,
            endpoint_url=config["aws_endpoint_url"],
            region_name=config["aws_region"],
            aws_access_key_id=config["aws_access_key_id"],
            aws_secret_access_key=config["aws_secret_access_key"],
        )

    @property
    def running(self) -> bool:
        return self.process.poll() is None

    def stdout(self) -> str:
        return self.stdout_path.read_text(errors="replace")

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def stop(self, timeout: float = STOP_TIMEOUT) -> int:
        """Ctrl-C, as a person would; the exit code (the process is killed after `timeout`)."""
        if self.running:
            self.process.send_signal(signal.SIGINT)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            pytest.fail(
                f"the local stack did not stop within {timeout} s of SIGINT\n"
                f"stderr:\n{self.stderr()[-4000:]}"
            )


EPHEMERAL = ("--ephemeral",)


def _dev_command(port: int, config: Path, options: tuple[str, ...]) -> list[str]:
    """`agentworks dev …` exactly as `make run` starts it (the venv's console script)."""
    script = Path(sys.executable).with_name("agentworks")
    prefix = [str(script)] if script.exists() else [sys.executable, "-m", "agentworks_cli.main"]
    return [*prefix, "dev", "--port", str(port), "--config", str(config), *options]


def start_local_stack(
    workdir: Path, attempts: int = 3, options: tuple[str, ...] = EPHEMERAL
) -> LocalStack:
    """Starts `agentworks dev` on a free port and waits until it serves the API; `options`
    are more `dev` flags (by default an ephemeral stack, so tests never share state)."""
    config = workdir / "agentworks" / "admin.json"  # the stack creates the 0700 directory
    ready_file = workdir / "ready.json"
    env = dict(os.environ)
    env["AGENTWORKS_CONFIG"] = str(config)
    loopback = "127.0.0.1,localhost"
    env["NO_PROXY"] = env["no_proxy"] = ",".join(filter(None, [env.get("NO_PROXY"), loopback]))
    stack_env = {
        **env,
        "PYTHONUNBUFFERED": "1",
        "AGENTWORKS_DEV_READY_FILE": str(ready_file),
        "AGENTWORKS_DEV_SWEEP_SECONDS": "1",
    }
    for attempt in range(attempts):
        port = free_port()
        stdout_path = workdir / f"stdout-{attempt}.txt"
        stderr_path = workdir / f"stderr-{attempt}.txt"
        ready_file.unlink(missing_ok=True)
        # Files, not pipes: the stack logs every request and a full pipe would block it.
        with stdout_path.open("wb") as out, stderr_path.open("wb") as err:
            process = subprocess.Popen(
                _dev_command(port, config, options),
                stdout=out,
                stderr=err,
                stdin=subprocess.DEVNULL,
                env=stack_env,
                cwd=workdir,
            )
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if process.poll() is not None:
                break
            if ready_file.exists() and _serves(url):
                ready = json.loads(ready_file.read_text())
                return LocalStack(
                    url=url,
                    admin_config=config,
                    env=env,
                    moto_url=ready["moto_url"],
                    process=process,
                    stdout_path=stdout_path,
                    stderr_path=stderr_path,
                    ready=ready,
                )
            time.sleep(0.2)
        if process.poll() == 2 and "already in use" in stderr_path.read_text():
            continue  # another process took the free port first: try a new one
        if process.poll() is None:
            process.kill()
            process.wait()
        pytest.fail(
            f"`agentworks dev` was not ready within {START_TIMEOUT:.0f} s "
            f"(exit code {process.returncode})\nstderr:\n{stderr_path.read_text()[-4000:]}"
        )
    pytest.fail(f"no free port for `agentworks dev` after {attempts} attempts")


def _serves(url: str) -> bool:
    try:
        status, _, _ = http("GET", f"{url}/v1/openapi.json", timeout=2)
    except (OSError, ValueError):
        return False
    return status == 200


@contextmanager
def running_local_stack(
    tmp_path_factory: pytest.TempPathFactory, options: tuple[str, ...] = EPHEMERAL
) -> Iterator[LocalStack]:
    """A local stack for a module's tests, stopped cleanly (SIGINT, exit 0) after them."""
    stack = start_local_stack(tmp_path_factory.mktemp("local-stack"), options=options)
    try:
        yield stack
    finally:
        if stack.running:
            code = stack.stop()
            assert code == 0, f"`agentworks dev` exited {code} on SIGINT:\n{stack.stderr()[-4000:]}"


# Outbound URLs (webhooks, MCP servers) may reach the tests' receivers on 127.0.0.1.
LOOPBACK = (*EPHEMERAL, "--allow-loopback-webhooks")


@pytest.fixture(scope="module")
def local_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    with running_local_stack(tmp_path_factory) as stack:
        yield stack
