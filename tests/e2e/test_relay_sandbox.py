"""Relay code on the local stack reaches nothing but the API (issue 24 §2).

The attacker's probe (relay_probe.py) is published by account B's admin and run by a
non-admin connection of B, while a relay of account A is running. Sandboxed (bubblewrap),
it sees no run credential in any process, not the stack's process, not the admin config;
and the embedded AWS endpoint it finds through /proc/net/tcp refuses its well-formed but
wrongly keyed requests. Where no sandbox exists, only the first account's relays run.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import EPHEMERAL, LocalStack, start_local_stack
from tests.e2e.test_cli_messages import Cli

pytestmark = pytest.mark.e2e

PROBE = Path(__file__).with_name("relay_probe.py")
IDENTITY_TABLE = "agentworks-IdentityTable"
HOLDER = "import time\n\nasync def run(INPUT):\n    time.sleep(INPUT['seconds'])\n    return {}\n"


def _sandbox_required() -> None:
    if shutil.which("bwrap") is None:  # under CI=true a skip fails the run (.ci/run installs it)
        pytest.skip("bubblewrap is not installed (apt-get install bubblewrap)")


def _relay(folder: Path, name: str, source: str) -> Path:
    folder.mkdir(parents=True)
    (folder / "relay.yaml").write_text(
        f"name: {name}\nfunctions:\n  - name: run\n    entrypoint: main:run\n"
    )
    (folder / "main.py").write_text(source)
    return folder


def _second_account(cli: Cli, stack: LocalStack, config: Path) -> None:
    """`agentworks bootstrap` against the embedded AWS, with the keys of the admin config."""
    admin = json.loads(stack.admin_config.read_text())
    cli.env.update(
        AWS_ENDPOINT_URL=admin["aws_endpoint_url"],
        AWS_ACCESS_KEY_ID=admin["aws_access_key_id"],
        AWS_SECRET_ACCESS_KEY=admin["aws_secret_access_key"],
        AWS_DEFAULT_REGION=admin["aws_region"],
    )
    cli.ok(
        "bootstrap", "--identity-table", IDENTITY_TABLE, "--url", stack.url,
        "--account-name", "b", config=config,
    )  # fmt: skip


def _run_probe(cli: Cli, stack: LocalStack, config: Path) -> dict[str, Any]:
    probe_input = {
        "admin_config": str(stack.admin_config),
        "ready_file": str(stack.admin_config.parents[1] / "ready.json"),
        "identity_table": IDENTITY_TABLE,
    }
    done = cli("relays", "run", "probe", "run", "--input", json.dumps(probe_input), "--wait",
               config=config)  # fmt: skip
    assert done.code == 0, done
    return dict(json.loads(done.out))


def _wait_running(cli: Cli, run_id: str) -> None:
    deadline = time.monotonic() + 30
    while "status:   running" not in cli.ok("relays", "status", run_id).out:
        assert time.monotonic() < deadline, cli.ok("relays", "status", run_id).out
        time.sleep(0.2)


def _endpoint_refused(report: dict[str, Any], moto_port: int) -> None:
    """The stack's embedded AWS refused every step. (Other listeners on this machine, such as
    other tests' own moto servers, are not the stack's and are not judged.)"""
    assert str(moto_port) in report["aws"], report["ports"]  # the probe found the endpoint
    for step, answer in report["aws"][str(moto_port)].items():
        assert answer["status"] == 403, (step, answer)
        assert "TableNames" not in answer["body"] and '"Items"' not in answer["body"]


def test_relay_code_of_another_account_reaches_nothing_but_the_api(
    local_stack: LocalStack, tmp_path: Path
) -> None:
    _sandbox_required()
    assert "relay code runs sandboxed (bubblewrap" in local_stack.stdout() + local_stack.stderr()
    cli = Cli(local_stack)
    b_admin, b_worker = tmp_path / "b-admin.json", tmp_path / "b-worker.json"
    _second_account(cli, local_stack, b_admin)
    cli.ok("connections", "create", "--name", "b-worker", "--save-config", str(b_worker),
           config=b_admin)  # fmt: skip
    cli.ok("relays", "publish", str(_relay(tmp_path / "probe", "probe", PROBE.read_text())),
           config=b_admin)  # fmt: skip
    # Account A's relay holds its run credential while the probe looks for it.
    cli.ok("relays", "publish", str(_relay(tmp_path / "holder", "holder", HOLDER)))
    started = cli.ok("relays", "run", "holder", "run", "--input", '{"seconds": 6}').out
    holder_run = started.split("started run ", 1)[1].split()[0]
    _wait_running(cli, holder_run)

    report = _run_probe(cli, local_stack, b_worker)

    assert report["run_credentials_seen"] == [] and report["tokens_seen"] == []
    assert report["stack_process_seen"] is False
    assert report["config_read"] is False and report["ready_file_read"] is False
    assert report["uid"] == 65534  # a user of its own, owning nothing of this machine's
    moto_port = int(local_stack.moto_url.rsplit(":", 1)[1])
    _endpoint_refused(report, moto_port)
    cli.ok("relays", "status", holder_run, "--wait")  # A's relay ran on, undisturbed


@pytest.fixture(scope="module")
def unsandboxed_stack(tmp_path_factory: pytest.TempPathFactory) -> Any:
    workdir = tmp_path_factory.mktemp("unsandboxed")
    os.environ["AGENTWORKS_RELAY_SANDBOX"] = "off"  # as on a machine without bubblewrap
    try:
        stack = start_local_stack(workdir, options=EPHEMERAL)
    finally:
        del os.environ["AGENTWORKS_RELAY_SANDBOX"]
    try:
        yield stack
    finally:
        assert stack.stop() == 0


def test_without_a_sandbox_only_the_first_accounts_relays_run(
    unsandboxed_stack: LocalStack, tmp_path: Path
) -> None:
    stack = unsandboxed_stack
    said = stack.stdout() + stack.stderr()
    assert "relays NOT sandboxed: turned off by AGENTWORKS_RELAY_SANDBOX=off" in said
    assert "only the first account's relays run" in said
    cli = Cli(stack)
    b_admin = tmp_path / "b-admin.json"
    _second_account(cli, stack, b_admin)
    folder = _relay(tmp_path / "probe", "probe", PROBE.read_text())
    cli.ok("relays", "publish", str(folder), config=b_admin)
    refused = cli("relays", "run", "probe", "run", "--input", "{}", "--wait", config=b_admin)
    assert refused.code != 0, refused
    assert "no sandbox for relay code" in refused.err and "--allow-unsandboxed-relays" in (
        refused.err
    )
    # The first account's relay runs; the endpoint still refuses it, and no credential of
    # a run is in any process's environment or arguments.
    cli.ok("relays", "publish", str(folder))
    report = _run_probe(cli, stack, stack.admin_config)
    assert report["run_credentials_seen"] == []
    _endpoint_refused(report, int(stack.moto_url.rsplit(":", 1)[1]))
