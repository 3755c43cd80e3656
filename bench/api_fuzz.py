"""`make fuzz` (python -m bench.api_fuzz): schemathesis against a real `agentworks dev`, the
way an outside tester runs it, and the count of server errors (issue 24's measure: 0 over
at least 10,000 cases).

Starts an ephemeral local stack, runs the schemathesis CLI from `/v1/openapi.json` with the
admin's token (every phase: examples, boundary coverage — other methods and content types
among them — fuzzing and stateful sequences), reads every request and answer from its HAR
report, and prints the cases sent, the 5xx answers and, if any, where they came from.
Writes bench/out/api_fuzz.json; exits 1 on any 5xx or when fewer cases than asked ran.
Takes several minutes: it is not part of `make test` (test_openapi_contract.py runs a
smaller, in-process search there).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent / "out" / "api_fuzz.json"
MIN_CASES = 10_000


def _schemathesis(url: str, token: str, examples: int, har: Path, workers: int) -> int:
    """The schemathesis CLI's exit code; it runs in the report's folder (it keeps a cache
    of failing cases in its working directory)."""
    script = Path(sys.executable).with_name("schemathesis")
    command = [
        str(script),
        "run",
        f"{url}/v1/openapi.json",
        "--header",
        f"Authorization: Bearer {token}",
        "--max-examples",
        str(examples),
        "--checks",
        "not_a_server_error",
        "--continue-on-failure",
        "--workers",
        str(workers),
        "--seed",
        "24",
        "--report",
        "har",
        "--report-har-path",
        str(har),
        "--no-color",
    ]
    # The CLI's own summary goes to the console; the counts come from the HAR file.
    done = subprocess.run(command, check=False, stdin=subprocess.DEVNULL, cwd=har.parent)
    return done.returncode


def summarize(har: dict[str, Any]) -> dict[str, Any]:
    """Cases sent, answers by status class, and the 5xx answers by method, path and status."""
    entries = har["log"]["entries"]
    classes: collections.Counter[str] = collections.Counter()
    errors: collections.Counter[str] = collections.Counter()
    for entry in entries:
        status = int(entry["response"]["status"])
        classes[f"{status // 100}xx"] += 1
        if status >= 500:
            path = entry["request"]["url"].split("?", 1)[0].split("/", 3)[-1]
            errors[f"{entry['request']['method']} /{path} → {status}"] += 1
    return {
        "cases": len(entries),
        "by_status_class": dict(sorted(classes.items())),
        "server_errors": sum(errors.values()),
        "server_error_sources": dict(errors.most_common(20)),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=120, help="per operation and phase")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--min-cases", type=int, default=MIN_CASES)
    options = parser.parse_args()

    from tests.e2e.conftest import start_local_stack

    with tempfile.TemporaryDirectory(prefix="agentworks-fuzz-") as folder:
        workdir = Path(folder)
        stack = start_local_stack(workdir)
        started = time.monotonic()
        try:
            har_path = workdir / "cases.har"
            _schemathesis(stack.url, stack.admin_token, options.examples, har_path, options.workers)
            summary = summarize(json.loads(har_path.read_text()))
        finally:
            stack.stop()
    summary["seconds"] = round(time.monotonic() - started)
    summary["examples_per_operation"] = options.examples
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary, indent=2))
    enough = summary["cases"] >= options.min_cases
    if not enough:
        print(
            f"only {summary['cases']} cases ran (asked for {options.min_cases}): raise --examples"
        )
    return 0 if enough and summary["server_errors"] == 0 else 1


if __name__ == "__main__":
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    raise SystemExit(main())
