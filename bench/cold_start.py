"""Cold-start import cost of each handler module, relative to `import boto3`.

Each sample is a fresh interpreter that times only the import (perf_counter around
`import app`, with sys.path = functions/<name> + the layer), in the environment a
deployed function has (table names, secret ARN, powertools settings) — no AWS call is
made at import. Rounds interleave every target so drift in machine load hits them all.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYER = ROOT / "layers" / "agentworks"
# Every function's handler module (functions/<name>/app.py), so one added later is measured.
HANDLERS = tuple(sorted(app.parent.name for app in (ROOT / "functions").glob("*/app.py")))

_TIMER = """
import sys, time
sys.path[:0] = {paths!r}
started = time.perf_counter()
import {module}
print(time.perf_counter() - started)
"""


def lambda_environment() -> dict[str, str]:
    """The environment of a deployed function at init (also tests/unit/test_import_denylist.py)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "POWERTOOLS_"))}
    env.update(
        AWS_DEFAULT_REGION="us-east-1",
        IDENTITY_TABLE="agentworks-IdentityTable",
        MESSAGES_TABLE="agentworks-MessagesTable",
        SIGNING_SECRET_ARN="arn:aws:secretsmanager:us-east-1:123456789012:secret:agentworks",
        POWERTOOLS_SERVICE_NAME="agentworks",
        POWERTOOLS_METRICS_NAMESPACE="AgentWorks",
        POWERTOOLS_LOG_LEVEL="INFO",
        # What the Lambda runtime sets. With LAMBDA_TASK_ROOT tracing is on (as deployed,
        # Tracing: Active): the tracer must still load nothing at import.
        LAMBDA_TASK_ROOT=str(Path(__file__).resolve().parents[1]),
        AWS_LAMBDA_FUNCTION_NAME="agentworks-bench",
        AWS_EXECUTION_ENV="AWS_Lambda_python3.12",
    )
    return env


def handler_path(target: str) -> list[str]:
    """What Lambda puts first on sys.path: the function's folder, then the layer."""
    return [str(ROOT / "functions" / target), str(LAYER)]


def _script(target: str) -> str:
    if target == "boto3":
        return _TIMER.format(paths=[], module="boto3")
    return _TIMER.format(paths=handler_path(target), module="app")


def import_seconds(target: str) -> float:
    """One fresh interpreter's import time of a handler module (or boto3)."""
    done = subprocess.run(
        [sys.executable, "-c", _script(target)],
        capture_output=True,
        text=True,
        env=lambda_environment(),
        cwd=ROOT,
        timeout=120,
        check=True,
    )
    return float(done.stdout.strip().splitlines()[-1])


def measure(rounds: int = 5) -> dict[str, float]:
    """Median import seconds per target over `rounds` interleaved rounds (after one
    unrecorded warm-up round that also writes any missing bytecode)."""
    targets = ("boto3", *HANDLERS)
    samples: dict[str, list[float]] = {t: [] for t in targets}
    for round_ in range(rounds + 1):
        for target in targets:
            seconds = import_seconds(target)
            if round_:
                samples[target].append(seconds)
    return {t: statistics.median(s) for t, s in samples.items()}


def heaviest_imports(target: str, top: int = 6) -> list[tuple[str, float]]:
    """Where a handler's import time goes (`python -X importtime`): self time summed per
    top-level package over the whole `import app` tree, heaviest first, in seconds.
    Work done at import (e.g. building clients) counts as its module's self time."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", _script(target)],
        capture_output=True,
        text=True,
        env=lambda_environment(),
        cwd=ROOT,
        timeout=120,
        check=True,
    )
    pattern = re.compile(r"import time:\s+(\d+) \|\s+\d+ \|( *)(\S+)")
    rows = [m for m in map(pattern.match, done.stderr.splitlines()) if m]
    # Children print before their parent; the timed module is the last top-level row.
    root = max(i for i, m in enumerate(rows) if len(m.group(2)) == 1)
    start = root
    while start > 0 and len(rows[start - 1].group(2)) > 1:
        start -= 1
    totals: dict[str, float] = {}
    for match in rows[start : root + 1]:
        package = match.group(3).split(".")[0]
        totals[package] = totals.get(package, 0.0) + int(match.group(1)) / 1e6
    return sorted(totals.items(), key=lambda kv: -kv[1])[:top]
