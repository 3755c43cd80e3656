"""The real CLIs, configured as these tests configure them (conftest.py), reach nothing but
the scripted model on 127.0.0.1: every inet connect() and sendto() of the CLI and all its
children, seen by strace, goes to loopback, so no DNS query either. A CLI release that adds
a new call home fails here, not silently on a developer's network."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.clis.conftest import CLAUDE, CODEX, claude_env, codex_env
from tests.support.scripted_model import ScriptedModel, Text

pytestmark = pytest.mark.skipif(shutil.which("strace") is None, reason="no strace on PATH")

INET = re.compile(r"sa_family=AF_INET6?, sin6?_port=htons\((\d+)\), (?:sin_addr=inet_addr|"
                  r"sin6_flowinfo=[^,]*, inet_pton\(AF_INET6)\(?\"([^\"]+)\"")  # fmt: skip


def _destinations(command: list[str], cwd: Path, env: dict[str, str], log: Path) -> set[str]:
    done = subprocess.run(
        ["strace", "-f", "-qq", "-e", "trace=connect,sendto,sendmsg,sendmmsg", "-o", str(log),
         *command],
        cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    if done.returncode != 0 and "ptrace" in done.stderr:
        pytest.skip(f"strace cannot trace here: {done.stderr.strip()[:200]}")
    assert done.returncode == 0, done.stderr[-2000:]
    return {f"{address}:{port}" for port, address in INET.findall(log.read_text())}


@pytest.mark.parametrize("cli", ["claude", "codex"])
def test_the_cli_reaches_only_the_scripted_model(cli: str, model: ScriptedModel, tmp_path: Path):
    model.add(Text("Offline answer."))
    project = tmp_path / "project"
    project.mkdir()
    if cli == "claude":
        command = [str(CLAUDE), "-p", "hello"]
        env = claude_env(model, tmp_path / "home")
    else:
        command = [str(CODEX), "exec", "--json", "--skip-git-repo-check", "hello"]
        env = codex_env(model, tmp_path / "home")
    seen = _destinations(command, project, env, tmp_path / "strace.log")
    port = model.url.rsplit(":", 1)[1]
    assert f"127.0.0.1:{port}" in seen  # the tracing works: the model call is seen
    assert seen <= {f"127.0.0.1:{port}"}, f"{cli} reached beyond the scripted model: {seen}"
