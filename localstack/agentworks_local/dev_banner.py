"""The lines `agentworks dev` prints once the stack serves: what runs where, the state
kept, the admin token, and what to type next."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from agentworks import limits
from agentworks_local.configfile import default_config_path
from agentworks_local.display_paths import home_relative

if TYPE_CHECKING:
    from agentworks_local.dev import DevStack


def _cli_dir_if_not_on_path() -> str | None:
    """The folder holding this `agentworks` when a new shell wouldn't find it (e.g. .venv/bin)."""
    import shutil

    here = Path(sys.executable).parent
    if not (here / "agentworks").exists():
        return None
    found = shutil.which("agentworks")
    return None if found and Path(found).parent == here else str(here)


def _state_lines(stack: DevStack) -> list[str]:
    if stack.data is None:
        return ["State: in memory only (--ephemeral); it is lost on stop."]
    where = home_relative(stack.data.path)
    resumed = stack.resumed.waiting or stack.resumed.interrupted
    calls = [f"  Calls: {stack.resumed.describe()}."] if resumed else []
    if stack.resumed_relays:
        calls.append(f"  Relay runs resumed from their checkpoints: {len(stack.resumed_relays)}.")
    state = stack.moto.state if stack.moto is not None else None
    every = state.sync_every if state is not None else None
    disk = []
    if every == 0:
        disk = ["  Every answered write is on disk before its answer (--fsync-every 0)."]
    elif every is not None:
        disk = [
            f"  Answered writes reach the disk within {every:g} s: a power cut can lose that",
            "  much (--fsync-every 0 waits for the disk on each write).",
        ]
    return [
        f"State: kept in {where} across restarts and crashes",
        f"  ({stack.restored.describe()}).",
        *disk,
        *calls,
        "  Start afresh with `agentworks dev --reset`; `--ephemeral` keeps nothing.",
    ]


def _relay_lines(stack: DevStack) -> list[str]:
    sandbox = stack.relay_sandbox
    if sandbox.available:
        return [
            "  relays relay code runs sandboxed (bubblewrap: its own user, PID and mount "
            "namespaces; it sees its release and a temp folder, not your files or processes)"
        ]
    who = (
        "every account's relays run (--allow-unsandboxed-relays)"
        if stack.allow_unsandboxed_relays
        else "so only the first account's relays run (--allow-unsandboxed-relays for all)"
    )
    return [
        f"  relays NOT sandboxed: {sandbox.reason}. Relay code runs as your user and can "
        "read what you can (files, other processes);",
        f"         {who}. Install bubblewrap to sandbox it (docs/relays.md).",
    ]


def banner(stack: DevStack) -> str:
    assert stack.admin is not None
    url = stack.url
    config_dir = stack.config_path.parent
    default = stack.config_path == default_config_path().absolute()
    admin_env = "" if default else f"AGENTWORKS_CONFIG={home_relative(stack.config_path)} "
    worker = home_relative(config_dir / "worker.json")
    reviewer = home_relative(config_dir / "reviewer.json")
    cli_dir = _cli_dir_if_not_on_path()
    lines = [
        "AgentWorks local stack is running.",
        *_state_lines(stack),
        "",
        f"  API    {url}/v1   (OpenAPI: {url}/v1/openapi.json)",
        f"  MCP    {url}/mcp",
        f"  Push   {stack.push_url}   (WebSocket: ?agent_name=NAME or ?inbox_id=ibx_…)",
        f"  AWS    {stack.moto_url}   (embedded moto: DynamoDB, Secrets Manager, Step "
        "Functions; answers only the stack's keys, aws_access_key_id and "
        "aws_secret_access_key in the admin config)",
        f"  ticks  scheduled functions every {stack.tick_seconds:g} s, expired TTL items "
        f"swept every {stack.sweep_seconds:g} s",
        f"  logs   function output (the local CloudWatch Logs): "
        f"{home_relative(stack.output.path or config_dir)}",
        (
            "  hooks  notifyUrl and webhooks may go to this machine (--allow-loopback-webhooks)"
            if stack.allow_loopback_webhooks
            else "  hooks  notifyUrl and webhooks: public https:// addresses only, as deployed "
            "(--allow-loopback-webhooks for a receiver on this machine)"
        ),
        *_relay_lines(stack),
        "",
        f"Admin config (mode 0600): {stack.config_path}",
        *(
            [f"  (the config it replaced, for another server, is kept at {stack.kept_config})"]
            if stack.kept_config
            else []
        ),
        "Admin token (A6; keep it secret, it is also in the config):",
        f"  {stack.admin.token}",
        "",
        "Try it from another terminal:",
        *(
            [f'  export PATH="{cli_dir}:$PATH"   # puts `agentworks` on your PATH']
            if cli_dir
            else []
        ),
        f"  {admin_env}agentworks connections create --name worker --save-config {worker}",
        f"  {admin_env}agentworks connections create --name reviewer --save-config {reviewer}",
        f"  AGENTWORKS_CONFIG={reviewer} agentworks messages register --agent reviewer",
        f"  AGENTWORKS_CONFIG={worker} agentworks messages register --agent worker",
        f"  AGENTWORKS_CONFIG={worker} agentworks messages send --agent worker "
        "--target agent:reviewer --message 'Ready for review'",
        f"  AGENTWORKS_CONFIG={reviewer} agentworks messages read --agent reviewer "
        f"--after 0 --wait {limits.WAIT_MAX_SECONDS}",
        "",
        f"Follow and step into conversations in the web Inbox ({url}/inbox):",
        f"  {admin_env}agentworks inbox   # prints (and opens) a one-time sign-in link",
        "",
        "Connect Claude Code over MCP (this uses the admin token; an agent is better "
        "served by its own connection's token):",
        f"  claude mcp add --transport http agentworks {url}/mcp "
        f'--header "Authorization: Bearer {stack.admin.token}"',
        "",
        "Requests are logged below as: method path status time. Press Ctrl-C to stop.",
    ]
    return "\n".join(lines)
