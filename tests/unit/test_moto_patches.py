"""The moto server's remembered dispatch answers as moto's own lookups do."""

from __future__ import annotations

from agentworks_local import moto_patches


def test_remembered_host_lookups_match_moto() -> None:
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

    moto_patches.apply()
    app = DomainDispatcherApplication(create_backend_app)
    original = moto_patches._originals["get_backend_for_host"]
    hosts = [
        None,
        "moto_api",
        "dynamodb",
        "dynamodb.us-east-1.amazonaws.com",
        "s3.amazonaws.com",
        "bucket.s3.us-east-1.amazonaws.com",
        "secretsmanager.us-east-1.amazonaws.com",
        "states.us-east-1.amazonaws.com",
        "nothing.example.com",
    ]
    for _ in range(2):  # the second round answers from memory
        for host in hosts:
            assert app.get_backend_for_host(host) == original(app, host), host


def test_remembered_method_names_match_moto() -> None:
    from moto.core import responses
    from moto.dynamodb.responses import DynamoHandler
    from moto.s3.responses import S3Response

    moto_patches.apply()
    original = moto_patches._originals["method_names_from_class"]
    for handler in (DynamoHandler, S3Response, DynamoHandler):
        assert responses.method_names_from_class(handler) == original(handler)
        assert "call_action" in original(handler)
