"""Relay code: one attempt of a run, in a process that holds only the run's credential.

The host (RelayRunnerFunction) invokes this function with the pinned release's archive,
the entrypoint, the input and the attempt's credential. The release is unpacked into a
fresh folder and run by relay_child.py in a new interpreter (`python -I`). The credential
reaches it once, on its standard input, never in its environment or arguments (which other
processes of the same user can read); its environment holds the API's URL and the run's
names, not this function's AWS credentials, and nothing of another run: a warm Lambda
reused by the next run shares no memory with it. The role of this function reaches no
table; relay code reaches the platform through the API. Locally the same handler runs in
the stack's process, and the child runs in a sandbox where the host has one (relay_isolation.py).

Standard library only: this function's package is this folder, not the platform layer.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import subprocess
import tempfile
import zipfile
from pathlib import Path, PurePosixPath
from typing import Any

from relay_isolation import Isolation, account_of

CHILD = Path(__file__).resolve().with_name("relay_child.py")
_LOG_TAIL = 4000


def _content_hash(files: dict[str, bytes]) -> str:
    """The release's name (agentworks.relays.package.content_hash, restated)."""
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(path.encode() + b"\0" + files[path] + b"\0")
    return digest.hexdigest()


def _unpack(archive: bytes, folder: Path) -> str:
    files: dict[str, bytes] = {}
    with zipfile.ZipFile(io.BytesIO(archive)) as packed:
        for name in packed.namelist():
            pure = PurePosixPath(name)
            if pure.is_absolute() or ".." in pure.parts:
                raise ValueError(f"archive entry {name} leaves the folder")
            files[name] = packed.read(name)
    for name, content in files.items():
        target = folder.joinpath(*PurePosixPath(name).parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    return _content_hash(files)


def _environment(event: dict[str, Any], home: Path) -> dict[str, str]:
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "TMPDIR": str(home),
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "AGENTWORKS_API_URL": str(event["api_url"]),
        "AGENTWORKS_RUN_ID": str(event["run_id"]),
        "AGENTWORKS_RELAY": str(event["relay"]),
        "AGENTWORKS_ATTEMPT": str(event["attempt"]),
    }


def run_attempt(
    event: dict[str, Any], timeout: float, isolation: Isolation | None = None
) -> dict[str, Any]:
    isolation = isolation or Isolation.from_environment()
    refusal = isolation.refusal(account_of(str(event["credential"])))
    if refusal:
        return {"outcome": "failed", "error": refusal, "final": True}
    with tempfile.TemporaryDirectory(prefix="relay-") as work:
        root = Path(work)
        source, home = root / "source", root / "home"
        source.mkdir()
        home.mkdir()
        if _unpack(base64.b64decode(event["archive_b64"]), source) != event["content_hash"]:
            return {"outcome": "failed", "error": "the release's archive does not match its hash"}
        outcome_file = root / "outcome.json"
        spec = {
            "module": event["module"],
            "attribute": event["attribute"],
            "input": event["input"],
            "credential": event["credential"],
        }
        argv = [isolation.interpreter(), "-I", str(CHILD), str(source), str(outcome_file)]
        try:
            finished = subprocess.run(
                isolation.command(argv, root, readable=[CHILD.parent]),
                input=json.dumps(spec).encode(),
                capture_output=True,
                cwd=source,
                env=_environment(event, home),
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return {"outcome": "failed", "error": f"the attempt ran over {timeout:.0f} s"}
        for stream in (finished.stdout, finished.stderr):
            if stream:
                print(stream.decode("utf-8", "replace")[-_LOG_TAIL:], flush=True)
        if outcome_file.exists():
            return dict(json.loads(outcome_file.read_text(encoding="utf-8")))
        tail = finished.stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
        return {
            "outcome": "failed",
            "error": f"the relay process exited with code {finished.returncode} before it "
            f"finished{': ' + ' | '.join(tail) if tail else ''}",
        }


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    remaining = context.get_remaining_time_in_millis() / 1000 if context else 900.0
    timeout = max(1.0, min(float(event.get("timeout_seconds", 840)), remaining - 5))
    os.umask(0o077)
    return run_attempt(event, timeout)
