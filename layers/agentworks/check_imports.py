"""Imports every function's handler the way Lambda does, with only the layer's packages
(plus boto3, which the runtime provides): `make check` fails on a missing runtime need.

Not part of the layer (the Makefile's build target copies agentworks/ only).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from importlib.metadata import packages_distributions

ENVIRONMENT = {
    "STAGE": "check",
    "IDENTITY_TABLE": "check-identity",
    "MESSAGES_TABLE": "check-messages",
    "WORK_TABLE": "check-work",
    "OUTPUTS_BUCKET": "check-outputs",
    "SIGNING_SECRET_ARN": "arn:aws:secretsmanager:us-east-1:123456789012:secret:check",
    "FUNCTION_CALL_STATE_MACHINE_ARN": "arn:aws:states:us-east-1:123456789012:stateMachine:c",
    "AWS_DEFAULT_REGION": "us-east-1",
    "POWERTOOLS_SERVICE_NAME": "agentworks",
    "POWERTOOLS_METRICS_NAMESPACE": "AgentWorks",
}


def main(repo: str) -> None:
    os.environ.update(ENVIRONMENT)
    for folder in ("api", "mcp", "a2a", "tick", "step_runner", "workflow_runner", "relay_runner"):
        path = os.path.join(repo, "functions", folder, "app.py")
        spec = importlib.util.spec_from_file_location(f"check_{folder}", path)
        assert spec and spec.loader
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
    # Built per MCP request; its request_state codec needs cryptography (AES-GCM).
    from agentworks.mcp_server.server import asgi_app

    asgi_app()
    # Modules loaded on first use, not at handler import.
    from aws_lambda_powertools import Tracer

    import agentworks.a2a_server.lambda_adapter  # the a2a function's first request
    import agentworks.crews.adapters.registry
    import agentworks.crews.schema_check
    import agentworks.http_api.app
    import agentworks.relays.host
    import agentworks.relays.reconcile  # noqa: F401
    from agentworks.http_api.app import app

    app.documented()  # every API route group (each loads on its first request)

    # What agentworks.observability.tracer does on the first sampled invocation: load
    # aws_xray_sdk and patch the runtime's botocore (and http.client).
    from agentworks.observability import TRACED_MODULES

    Tracer(service="check", disabled=False, auto_patch=True, patch_modules=TRACED_MODULES)
    loaded = {name.split(".")[0] for name in sys.modules}
    names = packages_distributions()
    print("loaded:", ", ".join(sorted({d for top in loaded for d in names.get(top, [])})))


if __name__ == "__main__":
    main(sys.argv[1])
